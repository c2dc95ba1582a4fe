"""A cheap exact pre-pass: candidate words run through the reference interpreter before any solver call.

The interpreter *is* the semantics, so a word it finds with the wanted outcome is a witness
(the query still replays it like any other), and a length all of whose words it ran has no
witness at all. Per question and length:

* words that stand for all words of the length (a sound reduction; the query finds them and
  caps their number, see ``QueryOptions.canonical``): all of them are run, which decides it;
* else at most ``budget`` candidate words: all of them are run, which decides the length;
* more: the first ``budget / 4`` candidates in enumeration order (a small batch first),
  then random ones (seeded, so runs repeat), ``budget`` in all; a hit is a witness, a miss
  says nothing and the solver is called.

This pays off when witnesses are common (a few hundred interpreter runs cost less than
building and solving a formula) and on short lengths; when witnesses are rare it costs
one batch. ``budget = 0`` switches it off (the differential tests do, to test the encoding).

Words are arrays of *codes* (indices into the query's word alphabet), so that one word can
be run through encoders whose vocabularies are ordered differently (``equiv``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# A batch of B words of n positions builds (B, n, n) score arrays; this caps B * n * n so that
# the pre-pass stays cheap on long words.
MAX_CELLS = 1 << 22
# The first, small batch: finds common witnesses at almost no cost.
FIRST_BATCH = 64

Hit = Callable[[np.ndarray], np.ndarray]  # codes (B, n) -> (B,) bool: has the wanted outcome


@dataclass(frozen=True, slots=True, eq=False)
class PresearchResult:
    """What the pre-pass learned about one length."""

    found: tuple[int, ...] | None  # the codes of the first hit, if any
    exhaustive: bool  # every candidate word was run: no hit means no witness at this length
    seconds: float


def _effective_budget(budget: int, n: int) -> int:
    """``budget``, cut so that a batch stays within :data:`MAX_CELLS` (0 on very long words: no pre-pass)."""
    return min(budget, MAX_CELLS // (n * n))


def _first_hit(batches: Sequence[np.ndarray], hit: Hit) -> tuple[int, ...] | None:
    for codes in batches:
        if len(codes):
            mask = hit(codes)
            if mask.any():
                return tuple(int(c) for c in codes[int(np.argmax(mask))])
    return None


def run_all(codes: np.ndarray, hit: Hit) -> PresearchResult:
    """Run every word of ``codes`` (W, n): words that stand for all words of a length (a sound
    reduction, :func:`verify.queries.words.canonical_words` or :func:`verify.queries.signatures.signature_words`),
    so a miss decides the length."""
    start = time.perf_counter()
    n = codes.shape[1]
    size = max(FIRST_BATCH, MAX_CELLS // (n * n))
    batches = [codes[:FIRST_BATCH]] + [codes[i : i + size] for i in range(FIRST_BATCH, len(codes), size)]
    return PresearchResult(_first_hit(batches, hit), True, time.perf_counter() - start)


def search_product(domains: Sequence[Sequence[int]], hit: Hit, *, budget: int, seed: int) -> PresearchResult:
    """Words with position ``i`` drawn from ``domains[i]`` (codes): all of them, or a sample."""
    start = time.perf_counter()
    n = len(domains)
    budget = _effective_budget(budget, n)
    if budget == 0:
        return PresearchResult(None, False, 0.0)
    total = math.prod(len(d) for d in domains)
    doms = [np.asarray(d, dtype=np.int64) for d in domains]
    if total <= budget:
        codes = np.array(list(itertools.product(*doms)), dtype=np.int64).reshape(total, n)  # (total, n)
        return PresearchResult(
            _first_hit([codes[:FIRST_BATCH], codes[FIRST_BATCH:]], hit), True, time.perf_counter() - start
        )
    # The first words in enumeration order (mostly one repeated symbol: extreme counts, often
    # where witnesses of averaging models lie), then random words.
    ordered = np.array(list(itertools.islice(itertools.product(*doms), budget // 4)), dtype=np.int64)  # (budget/4, n)
    rng = np.random.default_rng([seed, n])
    sampled = np.stack([d[rng.integers(0, len(d), size=budget - len(ordered))] for d in doms], axis=1)  # (rest, n)
    found = _first_hit([ordered[:FIRST_BATCH], ordered[FIRST_BATCH:], sampled], hit)
    return PresearchResult(found, False, time.perf_counter() - start)


def _ball_size(changes: Sequence[int], distance: int) -> int:
    """How many words differ from the centre in at most ``distance`` positions (``changes[i]`` options each)."""
    counts = [1] + [0] * distance  # counts[k]: words differing in exactly k positions so far
    for c in changes:
        counts = [counts[k] + (c * counts[k - 1] if k else 0) for k in range(distance + 1)]
    return sum(counts)


def search_ball(
    centre: Sequence[int], domains: Sequence[Sequence[int]], distance: int, hit: Hit, *, budget: int, seed: int
) -> PresearchResult:
    """Words within Hamming distance ``distance`` of ``centre`` (codes; position ``i`` from ``domains[i]``)."""
    start = time.perf_counter()
    n = len(centre)
    budget = _effective_budget(budget, n)
    if budget == 0:
        return PresearchResult(None, False, 0.0)
    others = [[c for c in dom if c != centre[i]] for i, dom in enumerate(domains)]
    if _ball_size([len(o) for o in others], distance) <= budget:
        words = []
        for k in range(min(distance, n) + 1):
            for positions in itertools.combinations(range(n), k):
                for subs in itertools.product(*(others[i] for i in positions)):
                    word = list(centre)
                    for i, s in zip(positions, subs, strict=True):
                        word[i] = s
                    words.append(word)
        codes = np.array(words, dtype=np.int64).reshape(len(words), n)
        return PresearchResult(
            _first_hit([codes[:FIRST_BATCH], codes[FIRST_BATCH:]], hit), True, time.perf_counter() - start
        )
    rng = np.random.default_rng([seed, n, distance])
    changeable = [i for i in range(n) if others[i]]
    codes = np.tile(np.asarray(centre, dtype=np.int64), (budget, 1))  # (budget, n)
    for row in codes:
        k = int(rng.integers(1, min(distance, len(changeable)) + 1))
        for i in rng.choice(changeable, size=k, replace=False):
            row[i] = others[i][int(rng.integers(0, len(others[i])))]
    found = _first_hit([codes[:FIRST_BATCH], codes[FIRST_BATCH:]], hit)
    return PresearchResult(found, False, time.perf_counter() - start)
