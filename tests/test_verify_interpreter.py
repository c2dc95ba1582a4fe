"""The reference semantics, checked against values worked out by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from verify_synth import SynthConfig, random_spec

import verify.model.interpreter as ref
from verify.errors import VerifyInputError
from verify.model.spec import (
    Attention,
    EncoderSpec,
    Head,
    Layer,
    Overflow,
    Positional,
    PositionalKind,
    Readout,
    ReadoutPosition,
    Rounding,
    validate,
)

F, U, E = Rounding.FLOOR, Rounding.HALF_UP, Rounding.HALF_EVEN


@pytest.mark.parametrize(
    "num, den, floor, half_up, half_even",
    [
        pytest.param(7, 2, 3, 4, 4, id="3.5"),
        pytest.param(5, 2, 2, 3, 2, id="2.5"),
        pytest.param(-5, 2, -3, -2, -2, id="-2.5"),
        pytest.param(-7, 2, -4, -3, -4, id="-3.5"),
        pytest.param(7, 3, 2, 2, 2, id="2.33"),
        pytest.param(8, 3, 2, 3, 3, id="2.67"),
        pytest.param(-8, 3, -3, -3, -3, id="-2.67"),
        pytest.param(6, 3, 2, 2, 2, id="exact"),
        pytest.param(1, 1 << 40, 0, 0, 0, id="tiny"),
    ],
)
def test_division_rounding(num: int, den: int, floor: int, half_up: int, half_even: int) -> None:
    for dtype in (np.int64, object):
        a = np.array([num], dtype=dtype)
        assert [int(ref.div_round(a, den, r)[0]) for r in (F, U, E)] == [floor, half_up, half_even]


@pytest.mark.parametrize(
    "value, saturate, wrap",
    [
        pytest.param(200, 127, -56, id="above"),
        pytest.param(-200, -128, 56, id="below"),
        pytest.param(128, 127, -128, id="one-above"),
        pytest.param(-129, -128, 127, id="one-below"),
        pytest.param(-5, -5, -5, id="inside"),
    ],
)
def test_overflow_to_eight_bits(value: int, saturate: int, wrap: int) -> None:
    a = np.array([value])
    assert int(ref.overflow(a, 8, Overflow.SATURATE)[0]) == saturate
    assert int(ref.overflow(a, 8, Overflow.WRAP)[0]) == wrap


def _eye(n: int) -> np.ndarray:
    return np.eye(n, dtype=np.int64)


def _hand_spec(attention: Attention, rounding: Rounding, *, keys: np.ndarray) -> EncoderSpec:
    """Two symbols a=[1,0], b=[0,1]; one head q=x, k=x@keys, v=x; output = head; score = component 0."""
    return validate(
        EncoderSpec(
            vocab=("a", "b"),
            d_model=2,
            width=8,
            weight_width=8,
            rounding=rounding,
            overflow=Overflow.SATURATE,
            embedding=_eye(2),
            positional=Positional(),
            layers=(
                Layer(
                    heads=(Head(wq=_eye(2), wk=keys, wv=_eye(2)),),
                    wo=_eye(2),
                    attention=attention,
                    residual=False,
                    exp_table=(3, 1) if attention is Attention.SOFTMAX_TABLE else (),
                ),
            ),
            readout=Readout(weight=np.array([[1], [0]]), bias=np.array([0]), position=ReadoutPosition.LAST),
        )
    )


NO_KEYS = np.zeros((2, 2), dtype=np.int64)  # every score is 0: everything ties


@pytest.mark.parametrize(
    "attention, rounding, keys, word, score",
    [
        # all tie -> the leftmost position, whatever comes after
        pytest.param(Attention.UNIQUE_HARDMAX, F, NO_KEYS, "abbb", 1, id="unique-leftmost-a"),
        pytest.param(Attention.UNIQUE_HARDMAX, F, NO_KEYS, "baaa", 0, id="unique-leftmost-b"),
        # all tie -> mean of the a-indicator, rounded
        pytest.param(Attention.AVERAGE_HARDMAX, F, NO_KEYS, "ab", 0, id="average-half-floor"),
        pytest.param(Attention.AVERAGE_HARDMAX, U, NO_KEYS, "ab", 1, id="average-half-up"),
        pytest.param(Attention.AVERAGE_HARDMAX, E, NO_KEYS, "ab", 0, id="average-half-even"),
        pytest.param(Attention.AVERAGE_HARDMAX, F, NO_KEYS, "aab", 0, id="average-two-thirds-floor"),
        pytest.param(Attention.AVERAGE_HARDMAX, E, NO_KEYS, "aab", 1, id="average-two-thirds-even"),
        pytest.param(Attention.AVERAGE_HARDMAX, U, NO_KEYS, "abbb", 0, id="average-quarter-up"),
        # keys = x: last symbol a scores 1 at a's (weight 3), 0 at b's (gap 1, weight 1)
        pytest.param(Attention.SOFTMAX_TABLE, F, _eye(2), "ba", 0, id="softmax-3/4-floor"),
        pytest.param(Attention.SOFTMAX_TABLE, U, _eye(2), "ba", 1, id="softmax-3/4-up"),
        pytest.param(Attention.SOFTMAX_TABLE, E, _eye(2), "bbba", 0, id="softmax-1/2-even"),
        pytest.param(Attention.SOFTMAX_TABLE, U, _eye(2), "bbba", 1, id="softmax-1/2-up"),
        pytest.param(Attention.SOFTMAX_TABLE, F, _eye(2), "aaaa", 1, id="softmax-all-max"),
    ],
)
def test_attention_kinds_by_hand(
    attention: Attention, rounding: Rounding, keys: np.ndarray, word: str, score: int
) -> None:
    out = ref.run(_hand_spec(attention, rounding, keys=keys), word)
    assert out.scores == (score,)
    assert out.accepted is (score > 0)
    assert out.label == int(score > 0)


def test_python_integers_and_int64_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    ids = np.array(list(itertools.product(range(3), repeat=4)))
    for attention in Attention:
        config = SynthConfig(
            attention=attention,
            layers=2,
            ffn_dim=2,
            positional=PositionalKind.PERIODIC,
            overflow=Overflow.WRAP,
            rounding=E,
        )
        spec = random_spec(rng, config)
        fast = ref.run_batch(spec, ids)
        with monkeypatch.context() as m:
            m.setattr(ref, "_needs_python_ints", lambda spec, length: True)
            exact = ref.run_batch(spec, ids)
        assert exact.scores.dtype == object
        assert (fast.scores == exact.scores).all()


def test_cls_symbol_is_prepended_and_not_a_word_symbol() -> None:
    spec = random_spec(np.random.default_rng(0), SynthConfig(readout=ReadoutPosition.CLS))
    assert "<cls>" in spec.vocab and "<cls>" not in spec.word_alphabet
    with pytest.raises(VerifyInputError, match="not in the alphabet"):
        ref.run(spec, ["a", "<cls>"])
    cls = spec.token_id("<cls>")
    whole = ref.forward(spec, np.array([[cls, 0, 1]]))[-1][0, 0]
    expected = tuple(int(v) for v in whole @ spec.readout.weight + spec.readout.bias)
    assert ref.run(spec, "ab").scores == expected


def test_positional_table_limits_the_length() -> None:
    spec = random_spec(np.random.default_rng(0), SynthConfig(positional=PositionalKind.TABLE, positional_rows=3))
    assert ref.max_word_length(spec) == 3
    ref.run(spec, "abc")
    with pytest.raises(VerifyInputError, match="positional table"):
        ref.run(spec, "abca")


def test_empty_word_is_rejected() -> None:
    spec = random_spec(np.random.default_rng(0), SynthConfig())
    with pytest.raises(VerifyInputError, match="empty"):
        ref.run(spec, "")
