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

The ladder: while recall is short of the target, the misses say what to raise. A missed
neighbour whose IVF list was not scanned asks for more lists (probes doubled); one in a
scanned list was ranked out by the 4-bit codes, and asks for more candidates re-scored
(rerank doubled). When both are at their ceiling the index is exact instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
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
    """What kind of search an index does, and how near exact search it was measured to be."""

    kind: IndexKind
    device: str  # where it searches: "cpu", "cuda:0", ...
    recall: float  # recall@10 against exact search: measured (approximate), else 1 by construction
    target: float  # the recall target it was held to
    queries: int  # calibration queries it was measured on (0: exact, not measured)
    why: str  # why this kind, for people
    lists: int | None = None  # the approximate index's IVF lists
    probes: int | None = None  # lists scanned per query at REFERENCE_DENSITY
    rerank: int | None = None  # candidates re-scored per result

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "device": self.device,
            "recall_at_10": round(self.recall, 4),
            "recall_target": self.target,
            "calibration_queries": self.queries,
            "why": self.why,
            "lists": self.lists,
            "probes": self.probes,
            "rerank": self.rerank,
        }

    def text(self) -> str:
        if self.kind is IndexKind.APPROXIMATE:
            shape = f"IVF, {self.probes} of {self.lists} lists scanned, {self.rerank} candidates re-scored per result"
            return (
                f"premise index: approximate ({shape}); recall@10 {self.recall:.3f} against exact search "
                f"on {self.queries} calibration queries (target {self.target:g})"
            )
        return f"premise index: {self.kind.value} on {self.device} ({self.why})"


@dataclass(frozen=True, slots=True)
class CalibrationSet:
    """Queries, their masks and their exact top RECALL_AT among the index's own vectors."""

    vectors: np.ndarray  # (N, d) the index's vectors, to score what it returns exactly
    queries: np.ndarray  # (S, d) float32 unit vectors
    masks: list[np.ndarray]  # S masks over the corpus
    truth: list[np.ndarray]  # S arrays of premise ids: the exact top RECALL_AT under each mask, best first
    last: np.ndarray  # (S,) the exact score of each query's RECALL_AT-th premise (-inf: fewer allowed)


def calibration_set(vectors: np.ndarray, options: IndexOptions) -> CalibrationSet:
    """``options.calibration_queries`` premises of ``vectors`` (N, d) held out as queries,
    with their masks and exact answers (see the module's docstring)."""
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
    scores, top = _exact_top(vectors, queries, np.stack(masks), min(RECALL_AT, n))
    return CalibrationSet(vectors, queries, masks, [row[row >= 0] for row in top], scores[:, -1])


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
    scorer: ApproximateScorer, search: SearchOne, calibration: CalibrationSet, options: IndexOptions
) -> tuple[bool, IndexQuality]:
    """Raise ``scorer``'s probes and rerank until ``search`` (through it) meets
    ``options.recall_target`` on ``calibration``. Returns whether it did, and the quality
    of the last setting tried."""
    target = options.recall_target
    while True:
        recall, unscanned, outranked = _measure(scorer, search, calibration)
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
        )
        log.debug("calibration: %d probes, rerank %d: recall@10 %.4f", scorer.probes, scorer.rerank, recall)
        if recall >= target:
            return True, quality
        more_lists = scorer.probes < scorer.lists
        more_candidates = scorer.rerank < options.max_rerank
        if more_lists and (unscanned >= outranked or not more_candidates):
            scorer.probes = min(scorer.lists, 2 * scorer.probes)
        elif more_candidates:
            scorer.rerank = min(options.max_rerank, 2 * scorer.rerank)
        else:
            return False, quality


# Scores this close to the exact last one count as reaching it: the same vector twice (a
# premise stated twice) scores the same, but float32 sums in another order may differ by this.
_TIE = 1e-5


def _measure(scorer: ApproximateScorer, search: SearchOne, calibration: CalibrationSet) -> tuple[float, int, int]:
    """(recall@RECALL_AT, neighbours missed in lists not scanned, neighbours missed in lists
    scanned). A returned premise counts when its exact score reaches the exact RECALL_AT-th
    (corpora hold premises twice, and which of two equal vectors the exact top keeps is
    arbitrary); the neighbours missed are the best of the exact top that were not returned,
    one per premise returned that does not count."""
    recalls, unscanned, outranked = [], 0, 0
    rows = zip(calibration.queries, calibration.masks, calibration.truth, calibration.last, strict=True)
    for query, mask, truth, last in rows:
        if not len(truth):
            continue
        found = np.asarray(search(query, mask), dtype=np.int64)
        scores = np.asarray(calibration.vectors[found], dtype=np.float32) @ query
        reached = int(np.count_nonzero(scores >= last - _TIE))
        recalls.append(min(1.0, reached / len(truth)))
        missed = np.setdiff1d(truth, found, assume_unique=True)
        missed = truth[np.isin(truth, missed)][: max(0, len(truth) - reached)]  # best first
        if len(missed):
            scanned = scorer.scanned(query, int(np.count_nonzero(mask)), missed)
            outranked += int(np.count_nonzero(scanned))
            unscanned += int(np.count_nonzero(~scanned))
    return (float(np.mean(recalls)) if recalls else 1.0), unscanned, outranked
