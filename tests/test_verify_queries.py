"""robust, equiv, word constraints and the complete class, each against brute-force enumeration."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from verify_synth import SynthConfig, random_spec

import verify.model.interpreter as ref
from verify.errors import VerifyInputError
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
from verify.queries.completeness import (
    first_occurrence_word,
    joint_bound,
    length_bound,
    padding_position,
    permutable_positions,
)
from verify.queries.questions import equiv, export_smt, robust, search_lengths, trsat
from verify.queries.results import CheckMethod, QueryOptions
from verify.queries.words import WordConstraints, canonical_words, reduction
from verify.smt.solvers import Verdict

# The interpreter pre-pass off: every verdict below comes from the solver on the encoding.
SMT_ONLY = QueryOptions(presearch=0)


def _words(alphabet, n: int):
    return [tuple(w) for w in itertools.product(alphabet, repeat=n)]


def _labels(spec: EncoderSpec, words) -> list[int]:
    ids = np.array([[spec.token_id(s) for s in w] for w in words])
    return ref.run_batch(spec, ids).labels.tolist()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("distance", [1, 2])
def test_robust_matches_enumeration(seed: int, distance: int) -> None:
    rng = np.random.default_rng([3, seed])
    spec = random_spec(
        rng, SynthConfig(attention=list(Attention)[seed % 3], mask=Mask.CAUSAL if seed % 2 else Mask.NONE)
    )
    word = tuple(rng.choice(spec.word_alphabet, size=4))
    original = ref.run(spec, word).label
    neighbours = [w for w in _words(spec.word_alphabet, 4) if sum(a != b for a, b in zip(w, word)) <= distance]
    fragile = any(label != original for label in _labels(spec, neighbours))
    result = robust(spec, word, distance=distance, options=SMT_ONLY)
    assert result.verdict is (Verdict.SAT if fragile else Verdict.UNSAT)
    if fragile:
        assert result.counterexample is not None
        assert sum(a != b for a, b in zip(result.counterexample.word, word)) <= distance
        assert result.counterexample.output.label != original
        assert result.claim.startswith("not robust")


def test_robust_at_distance_zero_is_trivially_robust() -> None:
    spec = random_spec(np.random.default_rng(0), SynthConfig())
    assert robust(spec, "abc", distance=0, options=SMT_ONLY).verdict is Verdict.UNSAT


@pytest.mark.parametrize("seed", range(4))
def test_equiv_of_two_quantizations_matches_enumeration(seed: int) -> None:
    rng = np.random.default_rng([4, seed])
    config = SynthConfig(
        attention=list(Attention)[seed % 3], width=4, positional=PositionalKind.PERIODIC, positional_rows=2
    )
    first = random_spec(rng, config)
    # The same weights at a wider width: saturation differs, so the two may disagree.
    data = first.to_json_dict()
    data["width"] = 6
    second = spec_from_dict(data)
    differing = next(
        (
            n
            for n in range(1, 4)
            if _labels(first, _words(first.word_alphabet, n)) != _labels(second, _words(first.word_alphabet, n))
        ),
        None,
    )
    result = equiv(first, second, max_len=3, options=SMT_ONLY)
    if differing is None:
        assert result.verdict is Verdict.UNSAT and "unknown beyond 3" in result.claim
    else:
        assert result.verdict is Verdict.SAT
        a, b = result.counterexample
        assert len(a.word) == differing and a.output.label != b.output.label
        assert ref.run(first, a.word).label == a.output.label and ref.run(second, a.word).label == b.output.label


def test_equiv_of_a_model_with_itself_is_unsat() -> None:
    spec = random_spec(np.random.default_rng(1), SynthConfig(attention=Attention.SOFTMAX_TABLE))
    assert equiv(spec, spec, max_len=3, options=SMT_ONLY).verdict is Verdict.UNSAT


@pytest.mark.parametrize(
    "constraints",
    [
        pytest.param(WordConstraints(alphabet=("a", "b")), id="alphabet"),
        pytest.param(WordConstraints(prefix=("b",)), id="prefix"),
        pytest.param(WordConstraints(suffix=("c", "a")), id="suffix"),
        pytest.param(WordConstraints(alphabet=("a", "c"), prefix=("c",), suffix=("a",)), id="all-three"),
        pytest.param(WordConstraints(prefix=("a", "b", "c", "a")), id="prefix-longer-than-word"),
    ],
)
def test_word_constraints_match_enumeration(constraints: WordConstraints) -> None:
    rng = np.random.default_rng(8)
    spec = random_spec(rng, SynthConfig(accept=Accept.ARGMAX, classes=3, mask=Mask.CAUSAL))
    alphabet = constraints.alphabet or spec.word_alphabet

    def fits(w: tuple[str, ...]) -> bool:
        return w[: len(constraints.prefix)] == constraints.prefix and (
            not constraints.suffix or w[-len(constraints.suffix) :] == constraints.suffix
        )

    words = [w for w in _words(alphabet, 3) if fits(w)]
    reachable = set(_labels(spec, words)) if words else set()
    for label in range(3):
        result = trsat(spec, max_len=3, exact_len=True, label=label, constraints=constraints, options=SMT_ONLY)
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)
        if result.witness is not None:
            assert fits(result.witness.word) and set(result.witness.word) <= set(alphabet)


@pytest.mark.parametrize(
    "bad, message",
    [
        pytest.param(
            {"constraints": WordConstraints(alphabet=("z",))}, "not in the model's word alphabet", id="unknown-symbol"
        ),
        pytest.param({"max_len": 0}, "at least 1", id="zero-length"),
        pytest.param({"label": 5}, "class 5", id="unknown-class"),
        pytest.param({"options": QueryOptions(solver="yices")}, "unknown solver", id="unknown-solver"),
    ],
)
def test_bad_query_options_are_input_errors(bad: dict, message: str) -> None:
    spec = random_spec(np.random.default_rng(0), SynthConfig())
    kwargs = {"max_len": 2, **bad}
    with pytest.raises(VerifyInputError, match=message):
        trsat(spec, **kwargs)


def test_length_beyond_the_positional_table_is_an_input_error() -> None:
    spec = random_spec(np.random.default_rng(0), SynthConfig(positional=PositionalKind.TABLE, positional_rows=3))
    with pytest.raises(VerifyInputError, match="positional table"):
        trsat(spec, max_len=4)


# --- the complete class -----------------------------------------------------------------------------


def _class_spec(
    seed: int, readout: ReadoutPosition, layers: int = 2, *, stream: int = 21, **config: object
) -> EncoderSpec:
    """A random all-unique-hardmax encoder (the all-lengths class), argmax over 3 labels."""
    rng = np.random.default_rng([stream, seed])
    settings = SynthConfig(
        layers=layers,
        heads=2,
        ffn_dim=2,
        readout=readout,
        accept=Accept.ARGMAX,
        classes=3,
        rounding=list(Rounding)[seed % 3],
        overflow=list(Overflow)[seed % 2],
    )
    return random_spec(rng, dataclasses.replace(settings, **config))


@pytest.mark.parametrize("readout", list(ReadoutPosition), ids=lambda r: r.value)
@pytest.mark.parametrize("seed", range(3))
def test_first_occurrence_word_keeps_the_output(seed: int, readout: ReadoutPosition) -> None:
    """The completeness argument, checked on every word up to length 6 (two layers, two heads)."""
    spec = _class_spec(seed, readout)
    keep_last = readout is ReadoutPosition.LAST
    for n in range(1, 7):
        words = _words(spec.word_alphabet, n)
        ids = np.array([[spec.token_id(s) for s in w] for w in words])
        scores = ref.run_batch(spec, ids).scores
        for w, s in zip(words, scores):
            reduced = first_occurrence_word(w, keep_last=keep_last)
            assert ref.run(spec, reduced).scores == tuple(int(v) for v in s), (w, reduced)
            # the canonical word of the same length that trsat's symmetry breaking keeps
            sigma = first_occurrence_word(w, keep_last=False)
            canonical = sigma + (w[padding_position(spec)],) * (n - len(sigma))
            assert ref.run(spec, canonical).scores == tuple(int(v) for v in s), (w, canonical)


@pytest.mark.parametrize(
    "readout, seed",
    [
        pytest.param(ReadoutPosition.FIRST, 0, id="first"),
        pytest.param(ReadoutPosition.LAST, 0, id="last"),
        pytest.param(ReadoutPosition.CLS, 2, id="cls"),
    ],
)
def test_all_length_claim_agrees_with_longer_enumeration(readout: ReadoutPosition, seed: int) -> None:
    spec = _class_spec(seed, readout, layers=1)
    bound = length_bound(spec, alphabet_size=3).bound
    assert bound == (4 if readout is ReadoutPosition.LAST else 3)
    reachable = set()
    for n in range(1, bound + 3):
        reachable |= set(_labels(spec, _words(spec.word_alphabet, n)))
    assert 0 < len(reachable) < 3, "these seeds have both reachable and unreachable labels"
    for label in range(3):
        result = trsat(spec, max_len=bound, label=label, options=SMT_ONLY)
        if label in reachable:
            assert result.verdict is Verdict.SAT
        else:
            assert result.verdict is Verdict.UNSAT and result.all_lengths
            assert result.claim.startswith("no word of any length")


def _periodic_spec(seed: int, readout: ReadoutPosition, period: int = 2) -> EncoderSpec:
    """The same, over two symbols, with a periodic positional encoding."""
    return _class_spec(
        seed, readout, stream=23, vocab_size=2, positional=PositionalKind.PERIODIC, positional_rows=period
    )


def _cut_repeated_blocks(word: tuple[str, ...], *, period: int, keep_last: bool, offset: int) -> tuple[str, ...]:
    """The shortening of verify.queries.completeness, written out independently: drop blocks of
    ``period`` positions that are not first occurrences of their (symbol, position mod p)
    class (never the last position when it is read out), and a trailing run of repeats
    when it is not."""
    w = list(word)
    while True:
        seen: set[tuple[str, int]] = set()
        repeat = []
        for i, s in enumerate(w):
            c = (s, (i + offset) % period)
            repeat.append(c in seen)
            seen.add(c)
        if not keep_last and w and repeat[-1]:
            w.pop()
            continue
        limit = len(w) - period - (1 if keep_last else 0)
        j = next((j for j in range(limit + 1) if all(repeat[j : j + period])), None)
        if j is None:
            return tuple(w)
        del w[j : j + period]


@pytest.mark.parametrize("readout", list(ReadoutPosition), ids=lambda r: r.value)
@pytest.mark.parametrize("period", [2, 3])
def test_cutting_repeated_periodic_blocks_keeps_the_output(readout: ReadoutPosition, period: int) -> None:
    """The periodic argument, checked on every word up to length 8 (two layers, two heads)."""
    spec = _periodic_spec(period, readout, period)
    bound = length_bound(spec, alphabet_size=2).bound
    keep_last = readout is ReadoutPosition.LAST
    assert bound == 2 * period * period + (1 if keep_last else 1 - period)
    offset = 1 if readout is ReadoutPosition.CLS else 0
    longest_cut = 0
    for n in range(1, 9):
        words = _words(spec.word_alphabet, n)
        cut = [_cut_repeated_blocks(w, period=period, keep_last=keep_last, offset=offset) for w in words]
        assert all(len(c) <= bound for c in cut)
        longest_cut = max(longest_cut, max(n - len(c) for c in cut))
        for w, c in zip(words, cut, strict=True):
            assert ref.run(spec, w).scores == ref.run(spec, c).scores, (w, c)
    assert longest_cut >= period, "some words were really shortened"


@pytest.mark.parametrize(
    "readout, seed",
    [
        pytest.param(ReadoutPosition.FIRST, 0, id="first"),
        pytest.param(ReadoutPosition.LAST, 0, id="last"),
        pytest.param(ReadoutPosition.CLS, 1, id="cls"),
    ],
)
def test_periodic_all_length_claim_agrees_with_longer_enumeration(readout: ReadoutPosition, seed: int) -> None:
    spec = _periodic_spec(seed, readout)
    bound = length_bound(spec, alphabet_size=2)
    assert bound.bound == (9 if readout is ReadoutPosition.LAST else 7) and not bound.pads
    reachable = set()
    for n in range(1, bound.bound + 3):
        reachable |= set(_labels(spec, _words(spec.word_alphabet, n)))
    assert 0 < len(reachable) < 3, "these seeds have both reachable and unreachable labels"
    for label in range(3):
        result = trsat(spec, max_len=bound.bound + 2, label=label)
        if label in reachable:
            assert result.verdict is Verdict.SAT
        else:
            assert result.verdict is Verdict.UNSAT and result.all_lengths
            assert result.claim.startswith("no word of any length")
            assert [c.length for c in result.checks] == list(range(1, bound.bound + 1))


def test_periodic_exact_length_beyond_the_bound_is_solved_as_asked() -> None:
    """Shorter witnesses need not pad to a longer length when positions are periodic."""
    spec = _periodic_spec(0, ReadoutPosition.FIRST)
    bound = length_bound(spec, alphabet_size=2).bound
    assert search_lengths(spec, max_len=bound + 3, exact_len=True) == range(bound + 3, bound + 4)
    assert search_lengths(spec, max_len=bound + 3) == range(1, bound + 1)


def test_joint_bound_uses_the_common_period() -> None:
    two = _periodic_spec(0, ReadoutPosition.FIRST, 2)
    three = _periodic_spec(0, ReadoutPosition.LAST, 3)
    joint = joint_bound([two, three], alphabet_size=2)
    assert joint.bound == 2 * 6 * 6 + 1 and "period 6" in joint.reason
    no_positions = _class_spec(0, ReadoutPosition.FIRST)
    assert joint_bound([no_positions, two], alphabet_size=2).bound == length_bound(two, alphabet_size=2).bound


def test_average_hardmax_breaks_the_first_occurrence_argument() -> None:
    """Counts matter for average hardmax: some word's output differs from its reduced word's."""
    broken = False
    for seed in range(20):
        spec = random_spec(
            np.random.default_rng([22, seed]),
            SynthConfig(attention=Attention.AVERAGE_HARDMAX, accept=Accept.ARGMAX, classes=3),
        )
        for w in _words(spec.word_alphabet, 4):
            if ref.run(spec, w).scores != ref.run(spec, first_occurrence_word(w, keep_last=True)).scores:
                broken = True
                break
        if broken:
            break
    assert broken
    assert length_bound(spec, alphabet_size=3).bound is None


@pytest.mark.parametrize(
    "config, fixes, reason",
    [
        pytest.param(SynthConfig(attention=Attention.AVERAGE_HARDMAX), False, "average_hardmax", id="average"),
        pytest.param(SynthConfig(attention=Attention.SOFTMAX_TABLE), False, "softmax_table", id="softmax"),
        pytest.param(SynthConfig(mask=Mask.CAUSAL), False, "causal mask", id="mask"),
        pytest.param(SynthConfig(positional=PositionalKind.TABLE), False, "positional", id="table-positions"),
        pytest.param(SynthConfig(), True, "prefix or suffix", id="affixes"),
    ],
)
def test_no_bound_outside_the_class(config: SynthConfig, fixes: bool, reason: str) -> None:
    spec = random_spec(np.random.default_rng(0), config)
    bound = length_bound(spec, alphabet_size=3, fixes_affixes=fixes)
    assert bound.bound is None and reason in bound.reason
    result = trsat(
        spec,
        max_len=2,
        label=2 if spec.readout.accept is Accept.ARGMAX else 0,
        constraints=WordConstraints(prefix=("a",)) if fixes else WordConstraints(),
        options=SMT_ONLY,
    )
    assert not result.all_lengths


def test_export_smt_is_a_complete_script() -> None:
    spec = random_spec(np.random.default_rng(0), SynthConfig(readout=ReadoutPosition.CLS))
    script = export_smt(spec, length=3, label=0)
    assert script.count("(declare-fun w_") == 3
    assert "(check-sat)" in script and "(get-value (w_0 w_1 w_2))" in script
    assert "; codes: 0=a, 1=b, 2=c" in script


@pytest.mark.parametrize("readout", list(ReadoutPosition), ids=lambda r: r.value)
@pytest.mark.parametrize("attention", [Attention.AVERAGE_HARDMAX, Attention.SOFTMAX_TABLE], ids=lambda a: a.value)
def test_symmetry_breaking_is_sound(attention: Attention, readout: ReadoutPosition) -> None:
    """Averaging heads without mask or positions ignore the order of the non-readout positions,
    so searching sorted words only (what trsat does) loses no label."""
    rng = np.random.default_rng([41, list(Attention).index(attention), list(ReadoutPosition).index(readout)])
    spec = random_spec(
        rng, SynthConfig(attention=attention, readout=readout, layers=2, ffn_dim=2, accept=Accept.ARGMAX, classes=3)
    )
    free = permutable_positions(spec, 4)
    assert free is not None and len(free) == (4 if readout is ReadoutPosition.CLS else 3)
    for w in _words(spec.word_alphabet, 4):
        sorted_word = list(w)
        for i, s in zip(free, sorted(w[i] for i in free)):
            sorted_word[i] = s
        assert ref.run(spec, w).scores == ref.run(spec, sorted_word).scores
    # the solver's part at length 3 (two or three sorted positions) keeps the test fast
    reachable = set(_labels(spec, _words(spec.word_alphabet, 3)))
    for label in range(3):
        assert trsat(spec, max_len=3, exact_len=True, label=label, options=SMT_ONLY).verdict is (
            Verdict.SAT if label in reachable else Verdict.UNSAT
        )
    assert permutable_positions(random_spec(rng, SynthConfig(attention=attention, mask=Mask.CAUSAL)), 4) is None
    assert permutable_positions(random_spec(rng, SynthConfig()), 4) is None


MODES = [
    pytest.param(attention, rounding, overflow, id=f"{attention.value}-{rounding.value}-{overflow.value}")
    for attention in Attention
    for rounding in Rounding
    for overflow in Overflow
]


@pytest.mark.parametrize("attention, rounding, overflow", MODES)
def test_robust_and_equiv_match_enumeration_in_every_mode(
    attention: Attention, rounding: Rounding, overflow: Overflow
) -> None:
    rng = np.random.default_rng(
        [51, list(Attention).index(attention), list(Rounding).index(rounding), list(Overflow).index(overflow)]
    )
    config = SynthConfig(
        attention=attention,
        rounding=rounding,
        overflow=overflow,
        d_model=2,
        width=int(rng.integers(3, 6)),
        mask=Mask(rng.choice(["none", "causal"])),
        positional=PositionalKind(rng.choice(["none", "periodic"])),
        positional_rows=2,
        readout=ReadoutPosition(rng.choice(["first", "last", "cls"])),
        accept=Accept.ARGMAX,
        classes=3,
    )
    spec = random_spec(rng, config)
    word = tuple(rng.choice(spec.word_alphabet, size=3))
    original = ref.run(spec, word).label
    ball = [w for w in _words(spec.word_alphabet, 3) if sum(a != b for a, b in zip(w, word)) <= 1]
    fragile = any(label != original for label in _labels(spec, ball))
    result = robust(spec, word, distance=1, options=SMT_ONLY)
    assert result.verdict is (Verdict.SAT if fragile else Verdict.UNSAT)
    if fragile:
        assert ref.run(spec, result.counterexample.word).label != original
    # the other overflow mode: saturating and wrapping encoders that may disagree
    data = spec.to_json_dict()
    data["overflow"] = "wrap" if overflow is Overflow.SATURATE else "saturate"
    other = spec_from_dict(data)
    differing = next(
        (
            n
            for n in (1, 2)
            if _labels(spec, _words(spec.word_alphabet, n)) != _labels(other, _words(spec.word_alphabet, n))
        ),
        None,
    )
    result = equiv(spec, other, max_len=2, options=SMT_ONLY)
    assert result.verdict is (Verdict.UNSAT if differing is None else Verdict.SAT)
    if differing is not None:
        a, b = result.counterexample
        assert len(a.word) == differing and ref.run(spec, a.word).label != ref.run(other, a.word).label


# --- the interpreter pre-pass and the complete-class reduction --------------------------------------


@pytest.mark.parametrize("attention", list(Attention), ids=lambda a: a.value)
def test_presearch_decides_short_lengths_and_samples_long_ones(attention: Attention) -> None:
    spec = random_spec(
        np.random.default_rng([61, list(Attention).index(attention)]),
        SynthConfig(attention=attention, mask=Mask.CAUSAL, accept=Accept.ARGMAX, classes=3),
    )
    for label in range(3):
        # 27 words: the pre-pass runs all of them and decides without a solver
        result = trsat(spec, max_len=3, exact_len=True, label=label)
        assert result.checks[0].method is CheckMethod.ENUMERATE
        assert result.verdict is (
            Verdict.SAT if label in set(_labels(spec, _words(spec.word_alphabet, 3))) else Verdict.UNSAT
        )
        if result.witness is not None:
            assert ref.run(spec, result.witness.word).label == label
    # 3^9 words, more than the pre-pass runs and (with no enumeration budget) than it may
    # enumerate, so a sample; a label most words have is found in it
    ids = np.random.default_rng(0).integers(0, 3, size=(2000, 9))
    common = int(np.bincount(ref.run_batch(spec, ids).labels).argmax())
    result = trsat(spec, max_len=9, exact_len=True, label=common, options=QueryOptions(presearch=256, enumeration=0))
    assert result.verdict is Verdict.SAT and result.checks[0].method is CheckMethod.SAMPLE
    assert ref.run(spec, result.witness.word).label == common and len(result.witness.word) == 9


@pytest.mark.parametrize("presearch", [pytest.param(1024, id="ball-enumerated"), pytest.param(8, id="ball-sampled")])
def test_presearch_for_robust_and_equiv_matches_enumeration(presearch: int) -> None:
    for seed in range(3):
        spec = random_spec(
            np.random.default_rng([62, seed]),
            SynthConfig(attention=list(Attention)[seed], accept=Accept.ARGMAX, classes=3),
        )
        word = tuple(np.random.default_rng(seed).choice(spec.word_alphabet, size=4))
        original = ref.run(spec, word).label
        ball = [w for w in _words(spec.word_alphabet, 4) if sum(a != b for a, b in zip(w, word)) <= 2]
        fragile = any(label != original for label in _labels(spec, ball))
        result = robust(spec, word, distance=2, options=QueryOptions(presearch=presearch))
        assert result.verdict is (Verdict.SAT if fragile else Verdict.UNSAT)
        if fragile:
            found = result.counterexample.word
            assert ref.run(spec, found).label != original and sum(a != b for a, b in zip(found, word)) <= 2
        data = spec.to_json_dict()
        data["width"] = 4
        other = spec_from_dict(data)
        differing = next(
            (
                n
                for n in (1, 2, 3)
                if _labels(spec, _words(spec.word_alphabet, n)) != _labels(other, _words(spec.word_alphabet, n))
            ),
            None,
        )
        result = equiv(spec, other, max_len=3, options=QueryOptions(presearch=presearch))
        assert result.verdict is (Verdict.UNSAT if differing is None else Verdict.SAT)
        if differing is not None:
            assert len(result.counterexample[0].word) == differing


@pytest.mark.parametrize("readout", list(ReadoutPosition), ids=lambda r: r.value)
def test_exact_length_beyond_the_bound_is_answered_by_shorter_words(readout: ReadoutPosition) -> None:
    """For the complete class an exact length n > bound reduces to lengths <= bound; the
    padded witness has length n and replays, and the verdicts equal enumeration at n."""
    spec = _class_spec(1, readout, layers=1)
    n = length_bound(spec, alphabet_size=3).bound + 2
    reachable = set(_labels(spec, _words(spec.word_alphabet, n)))
    for label in range(3):
        result = trsat(spec, max_len=n, exact_len=True, label=label, options=SMT_ONLY)
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)
        assert [c.length for c in result.checks][-1] <= n - 2
        if result.witness is not None:
            assert len(result.witness.word) == n and ref.run(spec, result.witness.word).label == label
        else:
            assert result.all_lengths and result.claim.startswith("no word of any length")


def _satisfies(found, word: tuple[int, ...]) -> bool:
    """The symmetry-breaking constraints of ``found``, evaluated on one word of codes."""
    if found.kind == "sorted":
        return all(word[i] <= word[j] for i, j in zip(found.positions, found.positions[1:]))
    if found.kind == "least_repeat":
        p, n = found.period, len(word)
        return all(
            word[i] == min(word[r] for r in range(i % p, i, p))
            for i in range(n)
            if word[i] in word[i % p : i : p] and not (found.keep_last and i == n - 1)
        )
    for i in range(1, len(word)):
        if word[i] in word[:i]:
            return all(c == word[found.pad] for c in word[i:])
    return True


@pytest.mark.parametrize(
    "attention, readout",
    [
        pytest.param(attention, readout, id=f"{attention.value}-{readout.value}")
        for attention in Attention
        for readout in ReadoutPosition
    ],
)
def test_symmetry_breaking_keeps_every_output(attention: Attention, readout: ReadoutPosition) -> None:
    """The words the constraints keep reach every output; for sorted reductions they are
    exactly the canonical words the pre-pass lists."""
    spec = random_spec(
        np.random.default_rng(0), SynthConfig(attention=attention, readout=readout, accept=Accept.ARGMAX, classes=3)
    )
    for n in (1, 2, 4, 5):
        domains = [spec.word_alphabet] * n
        found = reduction([spec], domains)
        assert found is not None and found.kind == (
            "first_occurrence" if attention is Attention.UNIQUE_HARDMAX else "sorted"
        )
        codes = [[0, 1, 2]] * n
        every = list(itertools.product(*codes))
        kept = [w for w in every if _satisfies(found, w)]
        assert len(kept) < len(every) or n <= 2

        def outputs(codes_list):
            ids = np.array([[spec.token_id(spec.word_alphabet[c]) for c in w] for w in codes_list])
            return {tuple(row) for row in ref.run_batch(spec, ids).scores.tolist()}

        assert outputs(kept) == outputs(every)
        if found.kind == "sorted":
            listed = list(canonical_words(found, codes))
            assert len(listed) == len(set(listed)) and set(listed) == set(kept)


@pytest.mark.parametrize("attention", list(Attention), ids=lambda a: a.value)
def test_presearch_over_canonical_words_matches_enumeration(attention: Attention) -> None:
    """3^7 words are too many to run, their canonical words (signature words for unique
    hardmax) are not: the pre-pass decides."""
    spec = random_spec(
        np.random.default_rng([63, list(Attention).index(attention)]),
        SynthConfig(attention=attention, layers=2, accept=Accept.ARGMAX, classes=4),
    )
    reachable = set(_labels(spec, _words(spec.word_alphabet, 7)))
    assert 0 < len(reachable) < 4
    for label in range(4):
        result = trsat(spec, max_len=7, exact_len=True, label=label, options=QueryOptions(presearch=512))
        # a sample runs first and may find a witness; an UNSAT answer needs every canonical word
        assert result.checks[-1].method in (CheckMethod.ENUMERATE, CheckMethod.SAMPLE)
        assert result.checks[-1].method is CheckMethod.ENUMERATE or result.verdict is Verdict.SAT
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)
        if result.witness is not None:
            assert len(result.witness.word) == 7 and ref.run(spec, result.witness.word).label == label


@pytest.mark.parametrize("readout", list(ReadoutPosition), ids=lambda r: r.value)
@pytest.mark.parametrize("period", [2, 3])
def test_least_repeat_symmetry_breaking_keeps_every_output(readout: ReadoutPosition, period: int) -> None:
    """Unique hardmax with periodic positions: the words whose repeated classes hold the least
    symbol seen at their residue reach every output (scores) of every length, fewer words
    than all; trsat with the solver alone, which searches only those, agrees with enumeration."""
    spec = _class_spec(period, readout, stream=71, positional=PositionalKind.PERIODIC, positional_rows=period)
    for n in range(1, 8):
        found = reduction([spec], [spec.word_alphabet] * n)
        assert found is not None and (found.kind, found.period) == ("least_repeat", period)
        assert found.keep_last is (readout is ReadoutPosition.LAST)
        every = list(itertools.product(range(3), repeat=n))
        kept = [w for w in every if _satisfies(found, w)]
        assert len(kept) < len(every) or n <= 2 * period + 1  # a residue needs two earlier symbols

        def outputs(codes_list):
            ids = np.array([[spec.token_id(spec.word_alphabet[c]) for c in w] for w in codes_list])
            return {tuple(row) for row in ref.run_batch(spec, ids).scores.tolist()}

        assert outputs(kept) == outputs(every), n
    # one layer keeps the solver's part fast; length 5 has a residue with two earlier symbols
    spec = _class_spec(period, readout, 1, stream=72, positional=PositionalKind.PERIODIC, positional_rows=period)
    reachable = set(_labels(spec, _words(spec.word_alphabet, 5)))
    for label in range(3):
        result = trsat(spec, max_len=5, exact_len=True, label=label, options=SMT_ONLY)
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)
        if result.witness is not None:
            assert ref.run(spec, result.witness.word).label == label


def test_the_timeout_bounds_a_lengths_encoding_too() -> None:
    """An encoding that would take minutes (3000 symbols: the class-wise encoding pairs
    every two of them) stops at the deadline, and the length is UNKNOWN, not solved late."""
    import time

    from verify.queries.results import QueryOptions

    spec = random_spec(np.random.default_rng(0), SynthConfig(vocab_size=3000, d_model=4))
    started = time.perf_counter()
    result = trsat(spec, max_len=1, exact_len=True, options=QueryOptions(presearch=0, timeout=0.05))
    assert time.perf_counter() - started < 5
    (check,) = result.checks
    assert check.verdict is Verdict.UNKNOWN and check.solve_seconds == 0.0 and check.solver is None
    assert 0.05 <= check.encode_seconds < 5 and result.undecided == (1,)


def test_an_encoding_past_its_deadline_stops() -> None:
    import time

    from pysmt.environment import Environment

    from verify.smt.bitvec import Builder, OutOfTime

    builder = Builder(Environment(), deadline=time.perf_counter() - 1)
    with pytest.raises(OutOfTime):
        for value in range(10_000):
            builder.const(value)
    assert Builder(Environment(), deadline=None).const(7).const == 7
