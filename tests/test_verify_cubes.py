"""Cube and conquer: a length's words split on their first symbols, the cubes decided in
parallel child processes; the verdicts are those of one question (and of enumeration)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pysmt.environment import Environment
from pysmt.typing import BVType
from verify_synth import SynthConfig, random_spec

import verify.model.interpreter as ref
from verify.model.spec import Accept, Attention, Mask, PositionalKind, ReadoutPosition, spec_from_dict
from verify.queries.questions import equiv, robust, trsat
from verify.queries.results import QueryOptions
from verify.queries.words import cubes
from verify.smt.portfolio import make_portfolio, solve_cubes
from verify.smt.solvers import Problem, Verdict


@pytest.mark.parametrize(
    "sizes, count",
    [
        pytest.param([3, 3, 3], 8, id="two-positions"),
        pytest.param([5, 2], 2, id="first-cut-in-parts"),
        pytest.param([1, 1, 4], 16, id="fixed-positions-first"),
        pytest.param([2, 2], 100, id="fewer-words-than-asked"),
    ],
)
def test_cubes_split_the_words_between_them(sizes: list[int], count: int) -> None:
    domains = [tuple(f"s{k}" for k in range(size)) for size in sizes]
    split = cubes(domains, count)
    every = list(itertools.product(*domains))
    covered = [w for cube in split for w in itertools.product(*cube)]
    assert sorted(covered) == sorted(every)  # each word in exactly one cube
    assert len(split) >= min(count, len(every))


def _problem(bound: int) -> Problem:
    """x < bound for an 8-bit x: SAT iff bound > 0."""
    m = Environment().formula_manager
    x = m.Symbol("x", BVType(8))
    return Problem.of([m.BVULT(x, m.BV(bound, 8))], [x])


@pytest.mark.parametrize(
    "bounds, verdict, index",
    [
        pytest.param([0, 0, 0], Verdict.UNSAT, -1, id="every-cube-unsat"),
        pytest.param([0, 5, 0], Verdict.SAT, 1, id="one-sat-cube"),
        pytest.param([0], Verdict.UNSAT, -1, id="one-cube"),
    ],
)
def test_solve_cubes(bounds: list[int], verdict: Verdict, index: int) -> None:
    found, outcome = solve_cubes(make_portfolio("z3"), [_problem(b) for b in bounds], jobs=2, timeout=30)
    assert (outcome.verdict, found) == (verdict, index)
    if verdict is Verdict.SAT:
        assert outcome.model["x"] < bounds[index]


CASES = [
    pytest.param(
        SynthConfig(attention=Attention.SOFTMAX_TABLE, mask=Mask.CAUSAL, accept=Accept.ARGMAX, classes=3), id="causal"
    ),
    pytest.param(SynthConfig(attention=Attention.AVERAGE_HARDMAX, accept=Accept.ARGMAX, classes=3), id="sorted-words"),
    pytest.param(
        SynthConfig(positional=PositionalKind.PERIODIC, positional_rows=2, accept=Accept.ARGMAX, classes=3),
        id="least-repeat",
    ),
    pytest.param(SynthConfig(readout=ReadoutPosition.CLS, accept=Accept.ARGMAX, classes=3), id="first-occurrence"),
]


@pytest.mark.parametrize("config", CASES)
def test_jobs_give_the_verdicts_of_one_process(config: SynthConfig) -> None:
    """With the symmetry breaking of each kind, trsat in cubes agrees with one question and
    with enumeration for every label (solver only); witnesses replay."""
    spec = random_spec(np.random.default_rng(91), config)
    words = np.array(list(itertools.product(range(3), repeat=3)))
    reachable = set(ref.run_batch(spec, words).labels.tolist())
    for label in range(3):
        one = trsat(spec, max_len=3, exact_len=True, label=label, options=QueryOptions(presearch=0))
        split = trsat(spec, max_len=3, exact_len=True, label=label, options=QueryOptions(presearch=0, jobs=2))
        expected = Verdict.SAT if label in reachable else Verdict.UNSAT
        assert one.verdict is split.verdict is expected
        assert split.checks[0].cubes == 9 and one.checks[0].cubes == 1  # 3 x 3 first symbols
        if split.witness is not None:
            assert ref.run(spec, split.witness.word).label == label


def test_robust_and_equiv_in_cubes() -> None:
    spec = random_spec(np.random.default_rng(92), SynthConfig(mask=Mask.CAUSAL, accept=Accept.ARGMAX, classes=3))
    options = QueryOptions(presearch=0, jobs=2)
    word = ("a", "b", "c")
    assert (
        robust(spec, word, distance=1, options=options).verdict
        is robust(spec, word, distance=1, options=QueryOptions(presearch=0)).verdict
    )
    data = spec.to_json_dict()
    data["width"] = 4
    other = spec_from_dict(data)
    assert (
        equiv(spec, other, max_len=2, options=options).verdict
        is equiv(spec, other, max_len=2, options=QueryOptions(presearch=0)).verdict
    )


@pytest.fixture(scope="module")
def ray_session():
    """One Ray of two CPUs for the module's Ray tests (starting one costs seconds)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024**2)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.ray
def test_cubes_on_ray_workers_give_the_verdicts_of_child_processes(ray_session) -> None:
    """``--workers N``: the cubes decided on Ray give what the child processes give, for the
    combination rules (a SAT cube, every cube UNSAT) and for trsat on a random encoder, whose
    witnesses replay."""
    from verify.smt.ray_cubes import solve_cubes_on_ray

    portfolio = make_portfolio("z3")
    for bounds, verdict, index in [([0, 0, 0], Verdict.UNSAT, -1), ([0, 0, 5], Verdict.SAT, 2)]:
        found, outcome = solve_cubes_on_ray(portfolio, [_problem(b) for b in bounds], workers=2, timeout=60)
        assert (outcome.verdict, found) == (verdict, index)
        assert outcome.solver == "z3"
    spec = random_spec(np.random.default_rng(91), CASES[0].values[0])
    reachable = set(ref.run_batch(spec, np.array(list(itertools.product(range(3), repeat=3)))).labels.tolist())
    for label in range(3):
        on_ray = trsat(spec, max_len=3, exact_len=True, label=label, options=QueryOptions(presearch=0, workers=2))
        assert on_ray.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)
        assert on_ray.checks[0].cubes == 9
        if on_ray.witness is not None:
            assert ref.run(spec, on_ray.witness.word).label == label


def test_jobs_and_workers_together_are_refused() -> None:
    from verify.errors import VerifyInputError

    with pytest.raises(VerifyInputError, match="give one of them"):
        QueryOptions(jobs=2, workers=2)
