"""The SMT encoding agrees with the reference interpreter: bit for bit on fixed words, and on
trSAT verdicts against brute-force enumeration, for every attention kind, rounding and overflow."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pysmt.environment import Environment
from pysmt.typing import BVType
from verify_synth import SynthConfig, random_spec

import verify.model.interpreter as ref
from verify.errors import WitnessMismatchError
from verify.model.spec import (
    Accept,
    Attention,
    EncoderSpec,
    Mask,
    Overflow,
    PositionalKind,
    ReadoutPosition,
    Rounding,
    spec_from_dict,
)
from verify.queries.questions import trsat
from verify.queries.results import QueryOptions
from verify.smt.encoding import EncodingOptions, PositionInput, encode
from verify.smt.solvers import Verdict

ALL_OPTIONS = [
    pytest.param(EncodingOptions(), id="full"),
    pytest.param(EncodingOptions(tabulate=False), id="no-tabulate"),
    pytest.param(EncodingOptions(prune=False), id="no-prune"),
]
# The interpreter pre-pass off: every verdict below comes from the solver on the encoding.
SMT_ONLY = QueryOptions(presearch=0)
MODES = [
    pytest.param(attention, rounding, overflow, id=f"{attention.value}-{rounding.value}-{overflow.value}")
    for attention in Attention
    for rounding in Rounding
    for overflow in Overflow
]


def _random_config(
    rng: np.random.Generator, attention: Attention, rounding: Rounding, overflow: Overflow
) -> SynthConfig:
    """A tiny encoder with the given modes and everything else drawn at random."""
    return SynthConfig(
        vocab_size=3,
        d_model=2,
        attention=attention,
        rounding=rounding,
        overflow=overflow,
        width=int(rng.integers(3, 6)),
        layers=int(rng.choice([1, 1, 2])),
        ffn_dim=int(rng.choice([0, 2])),
        mask=Mask(rng.choice(["none", "causal"])),
        positional=PositionalKind(rng.choice(["none", "periodic", "table"])),
        positional_rows=4,
        readout=ReadoutPosition(rng.choice(["first", "last", "cls"])),
        accept=Accept(rng.choice(["positive", "argmax"])),
        classes=3,
    )


def _symbolic_scores_differ(spec: EncoderSpec, word_ids: list[int], options: EncodingOptions) -> Verdict:
    """SAT iff the encoding, with the word fixed by assertions, can yield other scores than the interpreter."""
    env = Environment()
    m = env.formula_manager
    width = max(1, (len(spec.vocab) - 1).bit_length())
    alphabet = [spec.token_id(s) for s in spec.word_alphabet]
    variables = [m.Symbol(f"w_{i}", BVType(width)) for i in range(len(word_ids))]
    inputs = [PositionInput(v, tuple((t, t) for t in alphabet)) for v in variables]
    if spec.readout.position is ReadoutPosition.CLS:
        inputs.insert(0, PositionInput(None, ((0, spec.token_id("<cls>")),)))
    run = encode(spec, inputs, env, options=options)
    expected = ref.run_ids(spec, word_ids).scores
    b = run.builder
    fixed = [m.Equals(v, m.BV(t, width)) for v, t in zip(variables, word_ids)]
    differ = m.Or([m.Not(b.eq(s, b.const(e))) for s, e in zip(run.scores, expected)])
    with env.factory.Solver(name="z3", logic="QF_BV") as solver:
        solver.add_assertion(m.And([*fixed, differ]))
        return Verdict.SAT if solver.solve() else Verdict.UNSAT


@pytest.mark.parametrize("options", ALL_OPTIONS)
@pytest.mark.parametrize("attention, rounding, overflow", MODES)
def test_encoding_equals_interpreter_bit_for_bit(attention, rounding, overflow, options: EncodingOptions) -> None:
    rng = np.random.default_rng(
        [11, list(Attention).index(attention), list(Rounding).index(rounding), list(Overflow).index(overflow)]
    )
    spec = random_spec(rng, _random_config(rng, attention, rounding, overflow))
    word = [spec.token_id(s) for s in rng.choice(spec.word_alphabet, size=3)]
    assert _symbolic_scores_differ(spec, word, options) is Verdict.UNSAT


def _labels_by_enumeration(spec: EncoderSpec, n: int) -> set[int]:
    alphabet = [spec.token_id(s) for s in spec.word_alphabet]
    ids = np.array(list(itertools.product(alphabet, repeat=n)))
    return set(ref.run_batch(spec, ids).labels.tolist())


@pytest.mark.parametrize("seed", [5, 6])
@pytest.mark.parametrize("attention, rounding, overflow", MODES)
def test_trsat_verdicts_match_enumeration(attention, rounding, overflow, seed: int) -> None:
    rng = np.random.default_rng(
        [seed, list(Attention).index(attention), list(Rounding).index(rounding), list(Overflow).index(overflow)]
    )
    spec = random_spec(rng, _random_config(rng, attention, rounding, overflow))
    n = 3
    reachable = _labels_by_enumeration(spec, n)
    labels = (0, 1) if spec.readout.accept is Accept.POSITIVE else (0, 1, 2)
    for label in labels:
        result = trsat(spec, max_len=n, exact_len=True, label=label, options=SMT_ONLY)
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT), (label, reachable)
        if result.witness is not None:
            assert len(result.witness.word) == n
            assert ref.run(spec, result.witness.word).label == label


@pytest.mark.parametrize("options", ALL_OPTIONS[1:])
@pytest.mark.parametrize("attention", list(Attention), ids=lambda a: a.value)
def test_ablations_give_the_same_verdicts(attention: Attention, options: EncodingOptions) -> None:
    rng = np.random.default_rng([17, list(Attention).index(attention)])
    spec = random_spec(rng, _random_config(rng, attention, Rounding.HALF_EVEN, Overflow.SATURATE))
    reachable = _labels_by_enumeration(spec, 2)
    for label in (0, 1):
        result = trsat(
            spec, max_len=2, exact_len=True, label=label, options=QueryOptions(encoding=options, presearch=0)
        )
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)


def test_any_length_search_returns_a_shortest_witness() -> None:
    rng = np.random.default_rng(2)
    for _ in range(3):
        spec = random_spec(
            rng, SynthConfig(vocab_size=2, positional=PositionalKind.PERIODIC, positional_rows=2, mask=Mask.CAUSAL)
        )
        shortest = next((n for n in range(1, 5) if 1 in _labels_by_enumeration(spec, n)), None)
        result = trsat(spec, max_len=4, options=SMT_ONLY)
        if shortest is None:
            assert result.verdict is Verdict.UNSAT and [c.length for c in result.checks] == [1, 2, 3, 4]
            assert result.claim.endswith("unknown beyond 4") and not result.all_lengths
        else:
            assert result.verdict is Verdict.SAT and len(result.witness.word) == shortest
            assert [c.length for c in result.checks] == list(range(1, shortest + 1))


def test_a_witness_the_interpreter_rejects_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = random_spec(np.random.default_rng(0), SynthConfig())
    found = trsat(spec, max_len=3, options=SMT_ONLY)
    assert found.verdict is Verdict.SAT
    honest = ref.run

    def lying(spec: EncoderSpec, word) -> ref.EncoderOutput:
        out = honest(spec, word)
        return ref.EncoderOutput(out.scores, 1 - out.label, not out.accepted)

    monkeypatch.setattr(ref, "run", lying)
    with pytest.raises(WitnessMismatchError, match="replays to label"):
        trsat(spec, max_len=3, options=SMT_ONLY)


@pytest.mark.parametrize("positional", [PositionalKind.NONE, PositionalKind.PERIODIC], ids=lambda p: p.value)
@pytest.mark.parametrize("attention", list(Attention), ids=lambda a: a.value)
def test_class_encoding_matches_enumeration_on_longer_words(attention: Attention, positional: PositionalKind) -> None:
    """The per-class encoding (no mask; no or periodic positions) on words of length 5, two layers."""
    rng = np.random.default_rng([31, list(Attention).index(attention), list(PositionalKind).index(positional)])
    config = SynthConfig(
        vocab_size=2,
        d_model=2,
        attention=attention,
        positional=positional,
        positional_rows=2,
        layers=2,
        rounding=Rounding.HALF_EVEN,
        accept=Accept.ARGMAX,
        classes=3,
    )
    spec = random_spec(rng, config)
    word = [spec.token_id(s) for s in rng.choice(spec.word_alphabet, size=5)]
    assert _symbolic_scores_differ(spec, word, EncodingOptions()) is Verdict.UNSAT
    reachable = _labels_by_enumeration(spec, 5)
    for label in range(3):
        result = trsat(spec, max_len=5, exact_len=True, label=label, options=SMT_ONLY)
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)


def _differential_specs() -> list[EncoderSpec]:
    """The encoders of ``test_trsat_verdicts_match_enumeration``, rebuilt the same way."""
    specs = []
    for seed in (5, 6):
        for attention in Attention:
            for rounding in Rounding:
                for overflow in Overflow:
                    rng = np.random.default_rng(
                        [
                            seed,
                            list(Attention).index(attention),
                            list(Rounding).index(rounding),
                            list(Overflow).index(overflow),
                        ]
                    )
                    specs.append(random_spec(rng, _random_config(rng, attention, rounding, overflow)))
    return specs


def _first_layer_has_a_tie(spec: EncoderSpec, ids: np.ndarray) -> bool:
    """Some query of the first head of layer 1 has two keys at its maximal score."""
    x = ref.forward(spec, ids)[0]  # (B, n, d)
    head = spec.layers[0].heads[0]
    q = ref.requantize(x @ head.wq, head.q_requant, spec)
    k = ref.requantize(x @ head.wk, head.k_requant, spec)
    scores = q @ np.swapaxes(k, 1, 2)  # (B, n, n)
    return bool(((scores == scores.max(axis=2, keepdims=True)).sum(axis=2) >= 2).any())


def test_differential_models_overflow_and_tie() -> None:
    """The random encoders of the differential tests really saturate, wrap and tie on their words:
    the same encoder at 32 bits (where nothing overflows) gives other scores on some word."""
    overflowing = {Overflow.SATURATE: 0, Overflow.WRAP: 0}
    ties = 0
    for spec in _differential_specs():
        n = 3
        ids = np.array(list(itertools.product([spec.token_id(s) for s in spec.word_alphabet], repeat=n)))
        wide = spec.to_json_dict()
        wide["width"] = 32
        if not np.array_equal(ref.run_batch(spec, ids).scores, ref.run_batch(spec_from_dict(wide), ids).scores):
            overflowing[spec.overflow] += 1
        if spec.readout.position is ReadoutPosition.CLS:
            ids = np.concatenate([np.full((len(ids), 1), spec.token_id("<cls>")), ids], axis=1)
        ties += _first_layer_has_a_tie(spec, ids)
    # of 18 encoders per overflow mode, and 36 in all
    assert overflowing[Overflow.SATURATE] >= 15 and overflowing[Overflow.WRAP] >= 15, overflowing
    assert ties >= 30, ties
