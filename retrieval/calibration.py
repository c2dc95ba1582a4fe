"""The approximate index measured against exact search on the data it holds, and scanned
more until it meets its recall target, or given up for exact search.

An index tuned on one kind of embeddings can lose most of its recall on another (defaults
tuned on MiniLM's kept 0.56 of the exact top 10 on near-uniform vectors), so the index
does not trust its defaults: after it is built it searches **calibration queries** whose
exact answers it computes, and reports the recall@10 it measured (:class:`IndexQuality`).

A calibration query is a premise held out (its own mask leaves it out): a point drawn from
the data the index holds, whose neighbours are as near as the corpus's points are to each
other. (A premise moved off itself in a random direction was tried and is too easy: in high
dimensions it stays nearest its own list, and a one-list scan looked perfect while fresh
queries lost 5% of their neighbours.) Each query has its own mask: runs of 50 premises
(files), a share of them drawn between 5% and 95%.

Premises are not what the index serves, though: it serves goals, another text, which may lie
in another region of the embedding space, where the same setting misses more. Where the
index is built for proving or evaluation, **goal states** of the stored theorems, embedded by
the same encoder, are calibration queries too (:class:`GoalQueries`, from
:mod:`retrieval.goal_queries`), each with its theorem's mask, and the target must hold on
them and on the held-out premises alike. And whatever it was calibrated on, the index goes on
measuring the queries it really serves (:mod:`retrieval.served`), and runs the same ladder on
them when they fall short.

The ladder: while recall is short of the target, the misses say what to raise. A missed
neighbour whose IVF list was not scanned asks for more lists (probes doubled); one in a
scanned list was ranked out by the 4-bit codes, and asks for more candidates re-scored
(rerank doubled). When both are at their ceiling the index is exact instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from retrieval.index_options import IndexOptions
from retrieval.scorers import CHUNK, ApproximateScorer

log = logging.getLogger(__name__)

RECALL_AT = 10  # the target is on recall@10, ReProver's measure
_FILE = 50  # premises per file in the calibration masks
# The share of files a calibration mask allows, drawn uniformly: from a file near the root of
# the import graph to one that imports nearly everything (the index scans more lists for
# sparser masks, by a rule this checks as well).
_DENSITIES = (0.05, 0.95)


class IndexKind(StrEnum):
    """How an index scores premises."""

    EXACT = "exact"  # float32 vectors, flat scan on the CPU (faiss)
    APPROXIMATE = "approximate"  # IVF fast scan on the CPU, re-scored with float16 vectors
    DEVICE = "device"  # every vector on a torch device (a GPU), one masked product: exact


@dataclass(frozen=True, slots=True)
class IndexQuality:
    """What kind of search an index does, how near exact search it was measured to be, and
    on what: its calibration queries, and the served queries it also answered exactly."""

    kind: IndexKind
    device: str  # where it searches: "cpu", "cuda:0", ...
    recall: float  # recall@10 against exact search: measured (approximate), else 1 by construction
    target: float  # the recall target it was held to
    queries: int  # calibration queries it was measured on (0: exact, not measured)
    why: str  # why this kind, for people
    lists: int | None = None  # the approximate index's IVF lists
    probes: int | None = None  # lists scanned per query at REFERENCE_DENSITY
    rerank: int | None = None  # candidates re-scored per result
    # What the calibration queries were: held-out premises, goal states, served queries.
    calibrated_on: str = ""
    # Recall@10 against exact search of the queries it served that were also answered exactly
    # (retrieval/served.py), at its present setting; None: none checked (an exact index
    # checks none: it is exact by construction; one that these checks turned exact keeps
    # the recall that turned it, its why says so).
    served_recall: float | None = None
    served_queries: int = 0  # the served queries that recall stands on

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "device": self.device,
            "recall_at_10": round(self.recall, 4),
            "recall_target": self.target,
            "calibration_queries": self.queries,
            "calibrated_on": self.calibrated_on,
            "served_recall_at_10": None if self.served_recall is None else round(self.served_recall, 4),
            "served_queries": self.served_queries,
            "why": self.why,
            "lists": self.lists,
            "probes": self.probes,
            "rerank": self.rerank,
        }

    def text(self) -> str:
        if self.kind is IndexKind.APPROXIMATE:
            shape = f"IVF, {self.probes} of {self.lists} lists scanned, {self.rerank} candidates re-scored per result"
            served = (
                "not measured yet on the queries it serves"
                if self.served_recall is None
                else f"{self.served_recall:.3f} on {self.served_queries} served queries answered exactly too"
            )
            return (
                f"premise index: approximate ({shape}); recall@10 against exact search: {self.recall:.3f} on "
                f"{self.calibrated_on} when calibrated, {served} (target {self.target:g})"
            )
        return f"premise index: {self.kind.value} on {self.device} ({self.why})"


@dataclass(frozen=True, slots=True)
class GoalQueries:
    """Goal states of stored theorems, embedded by the index's encoder, each with the mask of
    its theorem: calibration queries of the kind proof search serves."""

    vectors: np.ndarray  # (G, d) float32
    masks: list[np.ndarray]  # G masks over the corpus


@dataclass(frozen=True, slots=True)
class CalibrationSet:
    """Queries, their masks and their exact top RECALL_AT among the index's own vectors."""

    vectors: np.ndarray  # (N, d) the index's vectors, to score what it returns exactly
    queries: np.ndarray  # (S, d) float32 unit vectors
    masks: list[np.ndarray]  # S masks over the corpus
    truth: list[np.ndarray]  # S arrays of premise ids: the exact top RECALL_AT under each mask, best first
    last: np.ndarray  # (S,) the exact score of each query's RECALL_AT-th premise (-inf: fewer allowed)
    source: str  # what the queries are, for people
    # The first ``goals`` queries are goal states, the rest held-out premises: the target must
    # hold on each kind (an index right on premises may be wrong on goals).
    goals: int = 0


def calibration_set(vectors: np.ndarray, options: IndexOptions, goals: GoalQueries | None = None) -> CalibrationSet:
    """``options.calibration_queries`` premises of ``vectors`` (N, d) held out as queries,
    with their masks and exact answers (see the module's docstring); after ``goals``, when given."""
    n, _ = vectors.shape
    rng = np.random.default_rng(options.seed)
    sources = np.sort(rng.choice(n, size=min(options.calibration_queries, n), replace=False))
    queries = np.asarray(vectors[sources], dtype=np.float32)  # (S, d)
    queries /= np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)  # float16 rows are unit to 1e-3
    files = n // _FILE + 1
    masks = []
    for source in sources.tolist():
        mask = np.repeat(rng.random(files) < rng.uniform(*_DENSITIES), _FILE)[:n]
        mask[source] = False  # held out: the query is not its own answer
        masks.append(mask)
    source = f"{len(sources)} held-out premises"
    if goals is not None and len(goals.masks):
        queries = np.concatenate([np.asarray(goals.vectors, dtype=np.float32), queries])
        masks = list(goals.masks) + masks
        source = f"{len(goals.masks)} goal states of stored theorems and {source}"
    scores, top = _exact_top(vectors, queries, np.stack(masks), min(RECALL_AT, n))
    truth = [row[row >= 0] for row in top]
    return CalibrationSet(
        vectors, queries, masks, truth, scores[:, -1], source, 0 if goals is None else len(goals.masks)
    )


def _exact_top(
    vectors: np.ndarray, queries: np.ndarray, masks: np.ndarray | None, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, ids), each (S, k) in descending order: the exact top ``k`` of each query
    among ``vectors`` (allowed by its row of ``masks``), read in float32 chunks (-inf and
    -1 where a mask allows fewer)."""
    s = len(queries)
    best = np.full((s, k), -np.inf, dtype=np.float32)
    ids = np.full((s, k), -1, dtype=np.int64)
    for start in range(0, len(vectors), CHUNK):
        chunk = np.asarray(vectors[start : start + CHUNK], dtype=np.float32)
        scores = queries @ chunk.T  # (S, chunk)
        if masks is not None:
            scores[~masks[:, start : start + len(chunk)]] = -np.inf
        merged = np.concatenate([best, scores], axis=1)
        merged_ids = np.concatenate([ids, np.broadcast_to(np.arange(start, start + len(chunk)), scores.shape)], axis=1)
        top = np.argpartition(-merged, k - 1, axis=1)[:, :k]
        best, ids = np.take_along_axis(merged, top, axis=1), np.take_along_axis(merged_ids, top, axis=1)
    order = np.argsort(-best, axis=1, kind="stable")
    best, ids = np.take_along_axis(best, order, axis=1), np.take_along_axis(ids, order, axis=1)
    return best, np.where(np.isfinite(best), ids, -1)


# One query's search through the index as users search it: (query (d,), mask) -> premise ids.
SearchOne = Callable[[np.ndarray, np.ndarray], list[int]]


def calibrate(
    scorer: ApproximateScorer,
    search: SearchOne,
    calibration: CalibrationSet,
    options: IndexOptions,
    *,
    aim: float | None = None,
) -> tuple[bool, IndexQuality]:
    """Raise ``scorer``'s probes and rerank until ``search`` (through it) reaches ``aim``
    (default: ``options.recall_target``) on ``calibration``, on each kind of query it holds.
    Returns whether it met the target (at the ceiling the target alone will do), and the
    quality of the last setting tried."""
    target = options.recall_target
    aim = target if aim is None else aim
    while True:
        recalls, unscanned, outranked = _measure(scorer, search, calibration)
        recall = _worst_kind(recalls, calibration.goals)
        quality = IndexQuality(
            IndexKind.APPROXIMATE,
            "cpu",
            recall,
            target,
            len(calibration.queries),
            "recall target met" if recall >= target else "recall target not met",
            scorer.lists,
            scorer.probes,
            scorer.rerank,
            calibration.source,
        )
        log.debug("calibration: %d probes, rerank %d: recall@10 %.4f", scorer.probes, scorer.rerank, recall)
        if recall >= aim:
            return True, quality
        if at_ceiling(scorer, options):
            return recall >= target, quality
        if scorer.probes < scorer.lists and (unscanned >= outranked or scorer.rerank >= options.max_rerank):
            scorer.probes = min(scorer.lists, 2 * scorer.probes)
        else:
            scorer.rerank = min(options.max_rerank, 2 * scorer.rerank)


def at_ceiling(scorer: ApproximateScorer, options: IndexOptions) -> bool:
    """Whether the ladder can raise nothing more: every list scanned, every candidate it may re-score."""
    return scorer.probes >= scorer.lists and scorer.rerank >= options.max_rerank


def _worst_kind(recalls: np.ndarray, goals: int) -> float:
    """The lower of the mean recalls of the goal states (the first ``goals``) and of the other
    queries, leaving out those whose masks allow nothing (1 when none is left)."""
    means = [float(np.nanmean(kind)) for kind in (recalls[:goals], recalls[goals:]) if np.isfinite(kind).any()]
    return min(means, default=1.0)


# Scores this close to the exact last one count as reaching it: the same vector twice (a
# premise stated twice) scores the same, but float32 sums in another order may differ by this.
_TIE = 1e-5


def reached(vectors: np.ndarray, query: np.ndarray, found: Sequence[int] | np.ndarray, last: float) -> int:
    """How many of the premises ``found`` for ``query`` score at least ``last`` (the exact
    answer's last score) by ``vectors``: corpora hold premises twice, and which of two equal
    vectors an exact top keeps is arbitrary, so a premise counts by its score, not its id."""
    scores = np.asarray(vectors[np.asarray(found, dtype=np.int64)], dtype=np.float32) @ query
    return int(np.count_nonzero(scores >= last - _TIE))


def _measure(scorer: ApproximateScorer, search: SearchOne, calibration: CalibrationSet) -> tuple[np.ndarray, int, int]:
    """(each query's recall@RECALL_AT, NaN where its mask allows nothing; neighbours missed
    in lists not scanned; neighbours missed in lists scanned). The neighbours missed are the
    best of the exact top that were not returned, one per premise returned that does not
    reach the exact RECALL_AT-th score (:func:`reached`)."""
    recalls = np.full(len(calibration.queries), np.nan)
    unscanned, outranked = 0, 0
    rows = zip(calibration.queries, calibration.masks, calibration.truth, calibration.last, strict=True)
    for q, (query, mask, truth, last) in enumerate(rows):
        if not len(truth):
            continue
        found = np.asarray(search(query, mask), dtype=np.int64)
        count = reached(calibration.vectors, query, found, last)
        recalls[q] = min(1.0, count / len(truth))
        missed = np.setdiff1d(truth, found, assume_unique=True)
        missed = truth[np.isin(truth, missed)][: max(0, len(truth) - count)]  # best first
        if len(missed):
            scanned = scorer.scanned(query, int(np.count_nonzero(mask)), missed)
            outranked += int(np.count_nonzero(scanned))
            unscanned += int(np.count_nonzero(~scanned))
    return recalls, unscanned, outranked
