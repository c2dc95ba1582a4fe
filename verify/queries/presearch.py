"""Exact answers from the interpreter: candidate words run through it before any solver call.

The interpreter *is* the semantics, so a word it finds with the wanted outcome is a witness
(the query still replays it like any other), and a length all of whose words it ran has no
witness at all. Per question and length (:func:`verify.queries.questions._answer_length`
strings the steps together):

* at most ``budget`` candidate words: all of them are run, which decides the length;
* more: the first ``budget / 4`` candidates in enumeration order (a small batch first),
  then random ones (seeded, so runs repeat), ``budget`` in all; a hit is a witness, a miss
  says nothing. This sample also measures what one word costs (:attr:`PresearchResult.word_seconds`);
* words that stand for all words of the length (a sound reduction; the query finds them and
  caps their number, see ``QueryOptions.canonical``): all of them are run, which decides it;
* *decide by cost*: when the words not yet run, times the measured cost of one word, fit the
  query's enumeration budget (``QueryOptions.enumeration``), all of them are run
  (:func:`enumerate_words`, resuming after the sample's ordered words), which decides it.

Words are numbered in the order of ``itertools.product(*domains)`` (the last position varies
fastest) and decoded from their numbers with array arithmetic (:func:`decode`), a batch at a
time, so enumeration costs what the interpreter costs. Batches are capped in score cells
(:data:`MAX_CELLS`), never the number of words: ``budget`` words are run, however long they are.

This pays off when witnesses are common (a few hundred interpreter runs cost less than
building and solving a formula), on short lengths, and wherever running every word costs less
than the solver would. ``budget = 0`` switches it all off (the differential tests do, to test
the encoding).

Words are arrays of *codes* (indices into the query's word alphabet), so that one word can
be run through encoders whose vocabularies are ordered differently (``equiv``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

# A batch of B words of n positions builds (B, n, n) score arrays; B * n * n stays below this.
# Larger batches cost more per word, not less (cache misses): at n = 16 a one-layer table-softmax
# encoder ran 18 us per word in batches of 256 and 34-37 us in batches of 4096-32768.
MAX_CELLS = 1 << 18
# The first, small batch: finds common witnesses at almost no cost.
FIRST_BATCH = 64

Hit = Callable[[np.ndarray], np.ndarray]  # codes (B, n) -> (B,) bool: has the wanted outcome


@dataclass(frozen=True, slots=True, eq=False)
class PresearchResult:
    """What the interpreter learned about one length."""

    found: tuple[int, ...] | None  # the codes of the first hit, if any
    # The run went over every candidate word, up to the first hit: no hit means no witness at
    # this length, a hit was found by enumeration (not by a sample).
    exhaustive: bool
    seconds: float
    words: int = 0  # how many words were run
    # Of them, the first ``ordered`` words in enumeration order: :func:`enumerate_words` resumes there.
    ordered: int = 0

    @property
    def word_seconds(self) -> float | None:
        """The measured cost of one word (None when none was run)."""
        return self.seconds / self.words if self.words else None


def word_count(domains: Sequence[Sequence[int]]) -> int:
    """How many words have position ``i`` drawn from ``domains[i]`` (exact: a Python integer)."""
    return math.prod(len(d) for d in domains)


def decode(domains: Sequence[np.ndarray], indices: np.ndarray) -> np.ndarray:
    """The words numbered ``indices`` (B,) in the order of ``itertools.product(*domains)``, as codes (B, n).

    Mixed-radix digits, the last position fastest; no radix power is formed, so any length
    works as long as the numbers fit int64."""
    codes = np.empty((len(indices), len(domains)), dtype=np.int64)  # (B, n)
    rest = np.asarray(indices, dtype=np.int64).copy()  # (B,)
    for i in range(len(domains) - 1, -1, -1):
        size = len(domains[i])
        codes[:, i] = domains[i][rest % size]
        rest //= size
    return codes


def batch_size(n: int) -> int:
    """Words per batch at length ``n`` (whole sequences, CLS included): :data:`MAX_CELLS` score cells."""
    return max(FIRST_BATCH, MAX_CELLS // (n * n))


def _first_hit(
    batches: Iterable[np.ndarray], hit: Hit, deadline: float | None
) -> tuple[tuple[int, ...] | None, int, bool]:
    """Run ``batches`` until a hit: (its codes or None, words run, whether every batch ran).

    Past ``deadline`` (:func:`time.perf_counter`) it stops between two batches."""
    words = 0
    for codes in batches:
        if deadline is not None and time.perf_counter() > deadline:
            return None, words, False
        if len(codes):
            words += len(codes)
            mask = hit(codes)
            if mask.any():
                return tuple(int(c) for c in codes[int(np.argmax(mask))]), words, True
    return None, words, True


def _arrays(domains: Sequence[Sequence[int]]) -> list[np.ndarray]:
    return [np.asarray(d, dtype=np.int64) for d in domains]


def _numbered(domains: Sequence[np.ndarray], start: int, stop: int) -> Iterator[np.ndarray]:
    """The words numbered ``start`` to ``stop`` (exclusive) in batches, a small one first."""
    size = batch_size(len(domains))
    first = start + FIRST_BATCH if start == 0 else start
    bounds = [start, *range(min(first, stop), stop, size), stop]
    for lo, hi in itertools.pairwise(bounds):
        if hi > lo:
            yield decode(domains, np.arange(lo, hi, dtype=np.int64))


def enumerate_words(
    domains: Sequence[Sequence[int]],
    hit: Hit,
    *,
    start: int = 0,
    stop: int | None = None,
    deadline: float | None = None,
) -> PresearchResult:
    """Run the words numbered ``start`` to ``stop`` (default: the last word; position ``i`` from
    ``domains[i]``) in enumeration order, until a hit, ``stop``, or ``deadline``.

    ``exhaustive`` says the run reached the last word of the length or a hit before it: with
    the ``start`` words before run too (a sample's ordered words), no hit means no witness."""
    begin = time.perf_counter()
    total = word_count(domains)
    stop = total if stop is None else min(stop, total)
    found, words, finished = _first_hit(_numbered(_arrays(domains), start, stop), hit, deadline)
    return PresearchResult(found, finished and stop == total, time.perf_counter() - begin, words, start + words)


def run_all(codes: np.ndarray, hit: Hit, *, deadline: float | None = None) -> PresearchResult:
    """Run every word of ``codes`` (W, n): words that stand for all words of a length (a sound
    reduction, :func:`verify.queries.words.canonical_words` or :func:`verify.queries.signatures.signature_words`),
    so a miss decides the length (unless ``deadline`` stopped the run: then not ``exhaustive``)."""
    start = time.perf_counter()
    size = batch_size(codes.shape[1])
    bounds = [0, *range(min(FIRST_BATCH, len(codes)), len(codes), size), len(codes)]
    batches = (codes[lo:hi] for lo, hi in itertools.pairwise(bounds))
    found, words, finished = _first_hit(batches, hit, deadline)
    return PresearchResult(found, finished, time.perf_counter() - start, words)


def search_product(
    domains: Sequence[Sequence[int]], hit: Hit, *, budget: int, seed: int, deadline: float | None = None
) -> PresearchResult:
    """Words with position ``i`` drawn from ``domains[i]`` (codes): all of them when there are at
    most ``budget``, else ``budget`` of them: the first quarter in enumeration order (mostly one
    repeated symbol: extreme counts, often where witnesses of averaging models lie), the rest
    random. Stops between batches past ``deadline``."""
    if budget == 0:
        return PresearchResult(None, False, 0.0)
    if word_count(domains) <= budget:
        return enumerate_words(domains, hit, deadline=deadline)
    start = time.perf_counter()
    ordered = enumerate_words(domains, hit, stop=budget // 4, deadline=deadline)
    if ordered.found is not None:
        return ordered
    rng = np.random.default_rng([seed, len(domains)])
    arrays = _arrays(domains)
    rest = budget - ordered.words
    size = batch_size(len(domains))
    batches = (
        np.stack([d[rng.integers(0, len(d), size=min(size, rest - lo))] for d in arrays], axis=1)  # (B, n)
        for lo in range(0, rest, size)
    )
    found, words, _ = _first_hit(batches, hit, deadline)
    return PresearchResult(found, False, time.perf_counter() - start, ordered.words + words, ordered.ordered)


def _ball_size(changes: Sequence[int], distance: int) -> int:
    """How many words differ from the centre in at most ``distance`` positions (``changes[i]`` options each)."""
    counts = [1] + [0] * distance  # counts[k]: words differing in exactly k positions so far
    for c in changes:
        counts = [counts[k] + (c * counts[k - 1] if k else 0) for k in range(distance + 1)]
    return sum(counts)


def search_ball(
    centre: Sequence[int],
    domains: Sequence[Sequence[int]],
    distance: int,
    hit: Hit,
    *,
    budget: int,
    seed: int,
    deadline: float | None = None,
) -> PresearchResult:
    """Words within Hamming distance ``distance`` of ``centre`` (codes; position ``i`` from
    ``domains[i]``): all of them when there are at most ``budget``, else ``budget`` random ones."""
    n = len(centre)
    if budget == 0:
        return PresearchResult(None, False, 0.0)
    start = time.perf_counter()
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
        every = run_all(np.array(words, dtype=np.int64).reshape(len(words), n), hit, deadline=deadline)
        return PresearchResult(every.found, every.exhaustive, time.perf_counter() - start, every.words)
    rng = np.random.default_rng([seed, n, distance])
    changeable = [i for i in range(n) if others[i]]
    codes = np.tile(np.asarray(centre, dtype=np.int64), (budget, 1))  # (budget, n)
    for row in codes:
        k = int(rng.integers(1, min(distance, len(changeable)) + 1))
        for i in rng.choice(changeable, size=k, replace=False):
            row[i] = others[i][int(rng.integers(0, len(others[i])))]
    sample = run_all(codes, hit, deadline=deadline)
    return PresearchResult(sample.found, False, time.perf_counter() - start, sample.words)
