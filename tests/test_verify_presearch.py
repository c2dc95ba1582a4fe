"""The interpreter's routes to an exact answer: word numbering, the sample's budget, and
deciding a length by cost (every word run when that is cheaper than the solver's budget)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from verify_synth import SynthConfig, random_spec

import verify.model.interpreter as ref
from verify.model.spec import Accept, Attention, Mask, PositionalKind, spec_from_dict
from verify.queries.presearch import decode, enumerate_words, search_product, word_count
from verify.queries.questions import equiv, trsat
from verify.queries.results import ENUMERATION_SECONDS, CheckMethod, QueryOptions
from verify.smt.solvers import Verdict


@pytest.mark.parametrize(
    "domains",
    [
        pytest.param([[0, 1]] * 5, id="binary"),
        pytest.param([[2], [0, 1, 3], [1, 2], [0, 1, 2, 3]], id="uneven"),
        pytest.param([[4, 0, 2]] * 3, id="unsorted-codes"),
    ],
)
def test_decode_numbers_words_as_itertools_product_does(domains: list[list[int]]) -> None:
    every = np.array(list(itertools.product(*domains)), dtype=np.int64)
    arrays = [np.asarray(d) for d in domains]
    assert word_count(domains) == len(every)
    assert (decode(arrays, np.arange(len(every))) == every).all()
    some = np.random.default_rng(0).integers(0, len(every), size=7)
    assert (decode(arrays, some) == every[some]).all()


def _never(codes: np.ndarray) -> np.ndarray:
    return np.zeros(len(codes), dtype=bool)


@pytest.mark.parametrize("n", [8, 64, 200])
def test_the_sample_runs_its_budget_at_every_length(n: int) -> None:
    """``--presearch W`` runs W words however long they are (batches are capped, not the budget)."""
    result = search_product([[0, 1, 2]] * n, _never, budget=3000, seed=1)
    assert result.found is None and not result.exhaustive
    assert result.words == 3000 and result.ordered == 750 and result.word_seconds is not None


def test_enumeration_resumes_after_the_ordered_words_and_stops_at_a_hit() -> None:
    domains = [[0, 1, 2]] * 6
    target = (2, 0, 1, 1, 0, 2)

    def hit(codes: np.ndarray) -> np.ndarray:
        return (codes == np.array(target)).all(axis=1)

    number = list(itertools.product(*domains)).index(target)
    found = enumerate_words(domains, hit, start=100)
    assert found.found == target and found.exhaustive and found.ordered > number  # the end of its batch
    missed = enumerate_words(domains, hit, start=number + 1)
    assert missed.found is None and missed.exhaustive and missed.words == 3**6 - number - 1
    cut = enumerate_words(domains, hit, stop=number)
    assert cut.found is None and not cut.exhaustive


def test_enumeration_stops_at_its_deadline() -> None:
    result = enumerate_words([[0, 1]] * 30, _never, deadline=0.0)
    assert result.found is None and not result.exhaustive and result.words == 0


@pytest.mark.parametrize(
    "options, budget",
    [
        pytest.param(QueryOptions(), ENUMERATION_SECONDS, id="default"),
        pytest.param(QueryOptions(timeout=8), 4.0, id="half-the-timeout"),
        pytest.param(QueryOptions(timeout=8, enumeration=1.5), 1.5, id="given"),
        pytest.param(QueryOptions(enumeration=0), 0.0, id="off"),
    ],
)
def test_the_enumeration_budget(options: QueryOptions, budget: float) -> None:
    assert options.enumeration_budget() == budget


def _labels(spec, n: int) -> set[int]:
    words = np.array(list(itertools.product(range(len(spec.word_alphabet)), repeat=n)))
    ids = np.array([spec.token_id(s) for s in spec.word_alphabet])[words]
    return set(ref.run_batch(spec, ids).labels.tolist())


# Seeds whose encoders leave one label unreachable and make another rare (50-188 of 3^7 words).
CAUSAL = [
    pytest.param(Attention.UNIQUE_HARDMAX, 5, id="unique_hardmax"),
    pytest.param(Attention.AVERAGE_HARDMAX, 5, id="average_hardmax"),
    pytest.param(Attention.SOFTMAX_TABLE, 10, id="softmax_table"),
]


@pytest.mark.parametrize("attention, seed", CAUSAL)
def test_a_length_is_decided_by_cost_beyond_the_presearch_budget(attention: Attention, seed: int) -> None:
    """3^7 words, 64 in the sample: no reduction applies (causal mask, positional table), so
    every word runs, and the verdicts are enumeration's, SAT and UNSAT alike; with no
    enumeration budget the solver answers the same at a length it can afford."""
    spec = random_spec(
        np.random.default_rng([81, seed]),
        SynthConfig(
            attention=attention,
            mask=Mask.CAUSAL,
            positional=PositionalKind.TABLE,
            positional_rows=7,
            accept=Accept.ARGMAX,
            classes=4,
            layers=2,
        ),
    )
    reachable = _labels(spec, 7)
    assert 0 < len(reachable) < 4
    for label in range(4):
        result = trsat(spec, max_len=7, exact_len=True, label=label, options=QueryOptions(presearch=64))
        (check,) = result.checks
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)
        assert check.solver is None and check.solve_seconds == 0.0
        if result.verdict is Verdict.UNSAT:
            assert check.method is CheckMethod.ENUMERATE and check.words == 64 - 16 + 3**7
        else:
            assert ref.run(spec, result.witness.word).label == label and len(result.witness.word) == 7
    short = _labels(spec, 3)
    for label in range(4):
        by_solver = trsat(
            spec, max_len=3, exact_len=True, label=label, options=QueryOptions(presearch=4, enumeration=0)
        )
        assert by_solver.verdict is (Verdict.SAT if label in short else Verdict.UNSAT)
        if by_solver.verdict is Verdict.UNSAT:
            assert by_solver.checks[0].method is CheckMethod.SMT


def test_equiv_is_decided_by_cost_too() -> None:
    spec = random_spec(np.random.default_rng(82), SynthConfig(mask=Mask.CAUSAL, accept=Accept.ARGMAX, classes=3))
    data = spec.to_json_dict()
    data["width"] = 4
    other = spec_from_dict(data)

    def differ(n: int) -> bool:
        ids = np.array(list(itertools.product(range(3), repeat=n)))
        return bool((ref.run_batch(spec, ids).labels != ref.run_batch(other, ids).labels).any())

    first = next((n for n in range(1, 7) if differ(n)), None)
    result = equiv(spec, other, max_len=6, options=QueryOptions(presearch=16))
    assert all(c.solver is None for c in result.checks)
    assert result.verdict is (Verdict.UNSAT if first is None else Verdict.SAT)
    if first is None:
        assert result.checks[-1].method is CheckMethod.ENUMERATE
    else:
        assert len(result.counterexample[0].word) == first
