"""Difficulty e^S, percentile thresholds, buckets and the repository order, on fixtures with
known S values, and the curriculum over a store's merged view."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from builders import repo_trace, theorem

from curriculum.difficulty import Bucket, Thresholds, bucket, log_difficulty, percentile, thresholds
from curriculum.ordering import curriculum_of, order_repositories
from curriculum.results import TheoremSummary
from curriculum.store import Store
from lean_env.records import TheoremStatus

PROVEN, SORRY, OURS = TheoremStatus.PROVEN, TheoremStatus.SORRY, TheoremStatus.PROVED_BY_US


def summaries(location: str, steps: list[int | None], *, commit: str = "c1") -> list[TheoremSummary]:
    """Theorems with the given S values (None: a `sorry`)."""
    return [
        TheoremSummary(location, commit, f"{location}.t{i}", SORRY if s is None else PROVEN, s or 0)
        for i, s in enumerate(steps)
    ]


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        pytest.param([1, 1, 2, 3, 5, 8], 33, 1.65, id="interpolated-33"),
        pytest.param([1, 1, 2, 3, 5, 8], 67, 3.7, id="interpolated-67"),
        pytest.param([4], 33, 4.0, id="single"),
        pytest.param([3, 1, 2], 0, 1.0, id="min"),
        pytest.param([3, 1, 2], 100, 3.0, id="max"),
    ],
)
def test_percentile_known_values(values: list[int], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_matches_numpy_default() -> None:
    rng = random.Random(7)
    for _ in range(200):
        values = [rng.randint(1, 30) for _ in range(rng.randint(1, 40))]
        q = rng.uniform(0, 100)
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


@pytest.mark.parametrize(
    ("status", "steps", "expected"),
    [
        pytest.param(PROVEN, 1, 1, id="term-mode-or-one-tactic"),
        pytest.param(PROVEN, 12, 12, id="tactics"),
        pytest.param(SORRY, 0, None, id="sorry"),
        pytest.param(OURS, 0, None, id="proved-by-us-has-no-proof-of-its-own"),
        pytest.param(PROVEN, 0, None, id="proof-not-read"),
    ],
)
def test_log_difficulty(status: TheoremStatus, steps: int, expected: int | None) -> None:
    assert log_difficulty(status, steps) == expected


def test_a_term_mode_proof_counts_as_one_step() -> None:
    assert theorem("t", steps=0).num_steps == 1 and not theorem("t", steps=0).tactics


def test_buckets_on_a_fixture_with_known_s_values() -> None:
    # S = 1, 1, 2, 3, 5, 8 (+ two sorries, left out): thresholds 1.65 and 3.7.
    order = order_repositories(summaries("r", [1, 1, 2, 3, 5, 8, None, None]))
    assert order.thresholds == Thresholds(pytest.approx(1.65), pytest.approx(3.7))  # type: ignore[arg-type]
    [repo] = order.repos
    assert (repo.easy, repo.medium, repo.hard, repo.hard_no_proof, repo.unknown) == (2, 2, 2, 2, 0)
    # Boundaries are inclusive: S equal to a threshold is in the lower bucket.
    exact = Thresholds(2.0, 3.0)
    assert [bucket(PROVEN, s, exact) for s in (2, 3, 4)] == [
        Bucket.EASY,
        Bucket.MEDIUM,
        Bucket.HARD,
    ]


def test_sorries_do_not_move_the_thresholds() -> None:
    proved = [1, 2, 3, 4, 5, 6]
    with_sorries = order_repositories(summaries("r", [*proved, *[None] * 4])).thresholds
    assert with_sorries == thresholds(proved) == Thresholds(pytest.approx(2.65), pytest.approx(4.35))  # type: ignore[arg-type]
    # LeanAgent's way (sorries as infinite difficulty inside the percentiles) shifts them up.
    leanagent_33 = float(np.percentile([math.exp(s) for s in proved] + [math.inf] * 4, 33))
    assert math.log(leanagent_33) == pytest.approx(3.98, abs=0.01)  # vs 2.65 without them


def test_log_space_buckets_equal_difficulty_space_buckets() -> None:
    rng = random.Random(3)
    for _ in range(100):
        steps = [rng.randint(1, 40) for _ in range(rng.randint(1, 30))]
        bounds = thresholds(steps)
        assert bounds is not None
        e33, e67 = np.percentile([math.exp(s) for s in steps], [33, 67])
        for s in steps:
            d = math.exp(s)
            in_difficulty_space = Bucket.EASY if d <= e33 else Bucket.MEDIUM if d <= e67 else Bucket.HARD
            assert bucket(PROVEN, s, bounds) is in_difficulty_space


def test_long_proofs_do_not_overflow() -> None:
    # Thresholds: 33rd = 1.99, 67th = 842 (e^842 is beyond float range).
    order = order_repositories(summaries("r", [1, 2, 800, 5000]))
    assert order.thresholds is not None
    assert order.thresholds.as_difficulty()[1] == math.inf
    repo = order.repos[0]
    assert (repo.easy, repo.medium, repo.hard) == (1, 2, 1)


def test_repositories_ordered_by_easy_theorems_with_deterministic_ties() -> None:
    # Global thresholds over S = [1,1,1,1,2,2,3,3,5,9,9,9]: 33rd = 1.63, 67th = 3.74.
    theorems = [
        *summaries("/z-one", [1, 2, 9]),          # easy 1
        *summaries("/b-two", [1, 1, 3, None]),    # easy 2
        *summaries("/a-one", [1, 9, 9, None]),    # easy 1, tie with /z-one: location decides
        *summaries("/c-none", [2, 3, 5]),         # easy 0
    ]  # fmt: skip
    order = order_repositories(reversed(theorems), repositories=[("/d-empty", "c1")])
    assert [(r.location, r.easy) for r in order.repos] == [
        ("/b-two", 2), ("/a-one", 1), ("/z-one", 1), ("/c-none", 0), ("/d-empty", 0),
    ]  # fmt: skip
    assert [r.total for r in order.repos] == [4, 4, 3, 3, 0]
    as_dict = order.as_dict()
    assert [e["rank"] for e in as_dict["order"]] == [1, 2, 3, 4, 5]
    assert as_dict["order"][0]["hard_no_proof"] == 1


def test_no_proved_theorems_means_no_thresholds() -> None:
    order = order_repositories(summaries("r", [None, None]))
    assert order.thresholds is None and order.repos[0].hard_no_proof == 2
    with pytest.raises(ValueError, match="thresholds"):
        bucket(PROVEN, 3, None)


def test_curriculum_over_the_merged_view(store: Store) -> None:
    store.add_trace(
        repo_trace("/r", commit="old", theorems=[theorem(f"o{i}", steps=1) for i in range(9)])
    )  # replaced below
    store.add_trace(
        repo_trace(
            "/r",
            commit="new",
            theorems=[theorem("a", steps=1), theorem("b", steps=4), theorem("c", steps=None)],
        )
    )
    store.add_trace(
        repo_trace(
            "/s",
            commit="c1",
            theorems=[
                theorem("a", steps=1),
                theorem("b", steps=1),
                theorem("c", steps=2),
                theorem("d", steps=0),
            ],
        )
    )
    store.add_trace(repo_trace("/t", commit="c1"))
    order = curriculum_of(store)
    # S over the merged view: /r: 1, 4; /s: 1, 1, 2, 1 -> [1,1,1,1,2,4]: 33rd = 1.0, 67th = 1.35.
    assert order.thresholds == Thresholds(pytest.approx(1.0), pytest.approx(1.35))  # type: ignore[arg-type]
    assert [(r.location, r.commit, r.easy, r.medium, r.hard, r.hard_no_proof) for r in order.repos] == [
        ("/s", "c1", 3, 0, 1, 0),
        ("/r", "new", 1, 0, 1, 1),
        ("/t", "c1", 0, 0, 0, 0),
    ]
