"""The signature reduction (verify.queries.signatures): its words stand for every word of a length.

The property that makes it sound: over all words of a length, the encoders reach exactly
the outputs they reach on the representatives. Checked against enumeration on random encoders
of the class built to tie often (narrow widths, small weights), with periodic and no
positions, every readout, several layers and heads, restricted domains and two encoders at
once; and shown to need its refinement (the first-occurrence order of tying classes).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from verify_synth import SynthConfig, random_spec

from verify.model import interpreter as ref
from verify.model.spec import Accept, Attention, EncoderSpec, PositionalKind, ReadoutPosition
from verify.queries.questions import equiv, trsat
from verify.queries.results import CheckMethod, QueryOptions
from verify.queries.signatures import _representatives, signature_words
from verify.queries.words import WordConstraints, WordSpace
from verify.smt.solvers import Verdict


def _spec(
    seed: int, *, readout: ReadoutPosition, period: int, layers: int = 2, heads: int = 1, vocab: int = 2
) -> EncoderSpec:
    positional = PositionalKind.PERIODIC if period > 1 else PositionalKind.NONE
    config = SynthConfig(
        vocab_size=vocab,
        layers=layers,
        heads=heads,
        width=4,
        weight_width=3,
        weight_range=2,
        positional=positional,
        positional_rows=period,
        readout=readout,
        accept=Accept.ARGMAX,
        classes=3,
    )
    return random_spec(np.random.default_rng([17, seed]), config)


def _scores(specs: list[EncoderSpec], words: WordSpace, codes: np.ndarray) -> set[tuple[int, ...]]:
    """The distinct joint readout scores of ``specs`` on words given as codes (W, n)."""
    joint = np.concatenate([ref.run_batch(s, words.ids(s, codes)).scores for s in specs], axis=1)
    return {tuple(int(v) for v in row) for row in joint}


def _all_words(domains: list[list[int]]) -> np.ndarray:
    return np.array(list(itertools.product(*domains)), dtype=np.int64)


CASES = [
    pytest.param(seed, readout, period, id=f"{readout.value}-p{period}-{seed}")
    for readout in ReadoutPosition
    for period in (1, 2, 3)
    for seed in range(6)
]


@pytest.mark.parametrize("seed, readout, period", CASES)
def test_representatives_reach_every_output_of_the_length(seed: int, readout: ReadoutPosition, period: int) -> None:
    spec = _spec(seed, readout=readout, period=period, heads=1 + seed % 2)
    words = WordSpace(spec, WordConstraints())
    for n in (1, 4, 7):
        domains = [list(range(len(spec.word_alphabet)))] * n
        found = signature_words([spec], words, domains, limit=10_000)
        assert found is not None and len(found) <= 2**n
        assert _scores([spec], words, found) == _scores([spec], words, _all_words(domains))


def test_restricted_domains_and_two_encoders() -> None:
    """A fixed prefix and suffix, a vocabulary of 3, and a pair of encoders with periods 2 and 1."""
    first = _spec(1, readout=ReadoutPosition.LAST, period=2, vocab=3)
    second = _spec(2, readout=ReadoutPosition.FIRST, period=1, vocab=3)
    words = WordSpace(first, WordConstraints())
    domains = [[1]] + [[0, 1, 2]] * 8 + [[2]]
    found = signature_words([first, second], words, domains, limit=10_000)
    assert found is not None and len(found) < 3**8
    assert all(row[0] == 1 and row[-1] == 2 for row in found)
    assert _scores([first, second], words, found) == _scores([first, second], words, _all_words(domains))


def test_the_order_of_tying_classes_is_needed() -> None:
    """Without the refinement (one word per class set and readout symbol) some encoder loses an
    output; with it none does: the refinement is what makes the reduction sound under ties."""
    lost = 0
    for seed in range(40):
        spec = _spec(seed, readout=ReadoutPosition.LAST, period=2, layers=2)
        words = WordSpace(spec, WordConstraints())
        domains = [[0, 1]] * 7
        everything = _scores([spec], words, _all_words(domains))
        coarse = _representatives(domains, 2, frozenset(), keep_first=False, keep_last=True, limit=10_000)
        assert coarse is not None
        lost += _scores([spec], words, coarse) != everything
        found = signature_words([spec], words, domains, limit=10_000)
        assert found is not None and _scores([spec], words, found) == everything
    assert lost > 0


def test_outside_the_class_or_over_the_limit_gives_none() -> None:
    average = random_spec(np.random.default_rng(0), SynthConfig(attention=Attention.AVERAGE_HARDMAX))
    words = WordSpace(average, WordConstraints())
    assert signature_words([average], words, [[0, 1, 2]] * 3, limit=1000) is None
    spec = _spec(0, readout=ReadoutPosition.LAST, period=3, vocab=3)
    words = WordSpace(spec, WordConstraints())
    assert signature_words([spec], words, [[0, 1, 2]] * 8, limit=5) is None


@pytest.mark.parametrize("readout", list(ReadoutPosition), ids=lambda r: r.value)
def test_trsat_decides_exact_periodic_lengths_by_signatures(readout: ReadoutPosition) -> None:
    """3^8 words, a sample of 64: every label's answer comes from the signature words and
    agrees with enumeration; witnesses have the asked length and replay."""
    spec = _spec(5, readout=readout, period=3, vocab=3)
    reachable = {
        int(label)
        for label in ref.run_batch(
            spec, WordSpace(spec, WordConstraints()).ids(spec, _all_words([[0, 1, 2]] * 8))
        ).labels
    }
    for label in range(3):
        result = trsat(spec, max_len=8, exact_len=True, label=label, options=QueryOptions(presearch=64))
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)
        if result.verdict is Verdict.UNSAT:
            assert result.checks[-1].method is CheckMethod.ENUMERATE
        else:
            assert result.witness is not None and len(result.witness.word) == 8
            assert ref.run(spec, result.witness.word).label == label


def test_equiv_of_periodic_encoders_by_signatures() -> None:
    first = _spec(3, readout=ReadoutPosition.LAST, period=2)
    second = _spec(4, readout=ReadoutPosition.LAST, period=2)
    words = WordSpace(first, WordConstraints())
    domains = [[0, 1]] * 9
    codes = _all_words(domains)
    differ = (
        ref.run_batch(first, words.ids(first, codes)).labels != ref.run_batch(second, words.ids(second, codes)).labels
    )
    result = equiv(first, second, max_len=9, options=QueryOptions(presearch=16))
    shortest = next(
        (
            n
            for n in range(1, 10)
            if (
                differ
                if n == 9
                else ref.run_batch(first, words.ids(first, _all_words([[0, 1]] * n))).labels
                != ref.run_batch(second, words.ids(second, _all_words([[0, 1]] * n))).labels
            ).any()
        ),
        None,
    )
    assert result.verdict is (Verdict.SAT if shortest is not None else Verdict.UNSAT)
    if shortest is not None:
        assert result.counterexample is not None and len(result.counterexample[0].word) == shortest
