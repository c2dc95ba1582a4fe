"""Theorem difficulty for the curriculum: e^S, with S the number of proof steps.

Definitions (after LeanAgent, with two deliberate differences noted below):

* A theorem the repository proves has difficulty ``e^S``, where ``S`` is its number of
  top-level tactic steps (:attr:`lean_env.records.Theorem.num_steps`). A term-mode proof
  counts as one step.
* A theorem without a proof of its own (status ``sorry``, and ``proved_by_us``, whose proof
  came from us and not from the repository) is **hard (no proof)**. Unlike LeanAgent, which
  gives these difficulty infinity and leaves them in the percentiles (so a repository full
  of `sorry`s drags the thresholds up), we leave them out of the percentiles entirely.
* The thresholds are the 33rd and 67th percentiles (linear interpolation, NumPy's default)
  of the difficulties of all proved theorems of the merged view. A theorem is **easy** when
  its difficulty is <= the 33rd percentile, **medium** when <= the 67th, else **hard**.
* A theorem the repository proves but whose proof text was not read (``proof is None``,
  so S is unknown) is **unknown**: not in the percentiles, not easy, not hard.

We compute in log space: S itself instead of e^S. ``e^S`` overflows a float for S > 709
(long proofs exist), and since ``exp`` is strictly increasing, comparing S values gives the
same order. For the percentiles the buckets are the same too: a linearly interpolated
percentile falls between two neighbouring sorted values a <= b at the same fraction f in
either space (e^a + f(e^b - e^a) vs a + f(b - a)), and equals b in one space exactly when
it does in the other (f = 1 or a = b); so every theorem lands in the same bucket.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lean_env.records import TheoremStatus

EASY_PERCENTILE = 33.0
HARD_PERCENTILE = 67.0


class Bucket(enum.StrEnum):
    """The difficulty class of one theorem."""

    EASY = "easy"  # S <= the 33rd percentile
    MEDIUM = "medium"  # 33rd < S <= 67th percentile
    HARD = "hard"  # S > the 67th percentile
    HARD_NO_PROOF = "hard_no_proof"  # no proof in the repository (`sorry`)
    UNKNOWN = "unknown"  # proved in the repository, but the proof was not read


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The bucket boundaries, in S (log-difficulty) units."""

    easy_max: float  # the 33rd percentile of S
    medium_max: float  # the 67th percentile of S

    def as_difficulty(self) -> tuple[float, float]:
        """The same boundaries as difficulties e^S (``inf`` beyond float range)."""
        return (_exp(self.easy_max), _exp(self.medium_max))


def log_difficulty(status: TheoremStatus, num_steps: int) -> int | None:
    """S = ln(difficulty) of a theorem, or None when it has no readable proof of its own."""
    if status is not TheoremStatus.PROVEN or num_steps < 1:
        return None
    return num_steps


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` by linear interpolation between the
    closest ranks (NumPy's default method)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def thresholds(log_difficulties: Iterable[int]) -> Thresholds | None:
    """The 33rd/67th percentile boundaries of the given S values; None if there are none."""
    values = list(log_difficulties)
    if not values:
        return None
    return Thresholds(percentile(values, EASY_PERCENTILE), percentile(values, HARD_PERCENTILE))


def bucket(status: TheoremStatus, num_steps: int, bounds: Thresholds | None) -> Bucket:
    """The bucket of one theorem, given the thresholds over all proved theorems."""
    s = log_difficulty(status, num_steps)
    if s is None:
        return Bucket.UNKNOWN if status is TheoremStatus.PROVEN else Bucket.HARD_NO_PROOF
    if bounds is None:
        raise ValueError("a proved theorem needs thresholds computed over proved theorems")
    if s <= bounds.easy_max:
        return Bucket.EASY
    return Bucket.MEDIUM if s <= bounds.medium_max else Bucket.HARD


def _exp(s: float) -> float:
    try:
        return math.exp(s)
    except OverflowError:
        return math.inf
