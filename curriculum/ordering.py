"""Ordering repositories for lifelong learning: the ones with most easy theorems first.

Over the merged view (the newest version of every repository), each theorem gets a
difficulty bucket (:mod:`curriculum.difficulty`, thresholds computed over all repositories
together); repositories are then ordered by their number of easy theorems, descending.
Ties are broken by location, then commit (ascending), so the order is a pure function of
what is stored.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from curriculum.difficulty import Bucket, Thresholds, bucket, log_difficulty, thresholds
from curriculum.results import TheoremSummary
from curriculum.store import Store
from lean_env.records import RepoTrace


@dataclass(frozen=True, slots=True)
class RepoCurriculum:
    """One repository's place in the curriculum and its bucket counts."""

    location: str
    commit: str
    easy: int
    medium: int
    hard: int
    hard_no_proof: int
    unknown: int

    @property
    def total(self) -> int:
        return self.easy + self.medium + self.hard + self.hard_no_proof + self.unknown


@dataclass(frozen=True, slots=True)
class Curriculum:
    """Repositories in learning order, with the thresholds that bucketed their theorems."""

    thresholds: Thresholds | None
    repos: tuple[RepoCurriculum, ...]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (thresholds in S units; the order is the list order)."""
        return {
            "thresholds": None
            if self.thresholds is None
            else {
                "easy_max_steps": self.thresholds.easy_max,
                "medium_max_steps": self.thresholds.medium_max,
            },
            "order": [
                {
                    "rank": rank,
                    "location": r.location,
                    "commit": r.commit,
                    **{b.value: getattr(r, b.value) for b in Bucket},
                    "total": r.total,
                }
                for rank, r in enumerate(self.repos, start=1)
            ],
        }


def order_repositories(
    summaries: Iterable[TheoremSummary], *, repositories: Iterable[tuple[str, str]] = ()
) -> Curriculum:
    """Bucket every theorem and order the repositories (see the module docs).

    ``repositories`` lists (location, commit) pairs to include even when they have no
    theorems (they still bring premises), with zero counts.
    """
    theorems = list(summaries)
    bounds = thresholds(s for t in theorems if (s := log_difficulty(t.status, t.num_steps)) is not None)
    counts: defaultdict[tuple[str, str], Counter[Bucket]] = defaultdict(
        Counter, {key: Counter() for key in repositories}
    )
    for t in theorems:
        counts[(t.location, t.commit)][bucket(t.status, t.num_steps, bounds)] += 1
    repos = [
        RepoCurriculum(location, commit, **{b.value: c[b] for b in Bucket}) for (location, commit), c in counts.items()
    ]
    repos.sort(key=lambda r: (-r.easy, r.location, r.commit))
    return Curriculum(bounds, tuple(repos))


def curriculum_of(store: Store) -> Curriculum:
    """The curriculum over the store's merged view (every repository's newest version)."""
    latest = [(v.location, v.commit) for v in store.versions() if v.latest]
    return order_repositories(store.theorem_summaries(), repositories=latest)


def traces_in_curriculum_order(store: Store, curriculum: Curriculum) -> list[RepoTrace]:
    """The newest version of every repository in ``store``, in the order of ``curriculum``
    (the store's, computed by the caller, who often shows it too); repositories the
    curriculum does not list come last."""
    by_location = {t.spec.location: t for t in store.latest_traces()}
    order = [r.location for r in curriculum.repos if r.location in by_location]
    ordered = set(order)
    return [by_location[loc] for loc in order] + [t for loc, t in by_location.items() if loc not in ordered]
