"""The recall of an approximate premise index measured on the queries it really serves.

The calibration (:mod:`retrieval.calibration`) measures the index on held-out premises and,
where the index is built for proving or evaluation, on goal states of stored theorems. The
queries served may still lie elsewhere: on clustered premises with goals in other
directions, an index calibrated at 0.999 returned 0.59 of the exact top 10 (issue 41). So a
sampled share of the searches it serves is also answered exactly (a scan of the float16
vectors through the query's mask), and the recall@10 of what was served is kept per index.

**Which searches are checked.** The first ``served_checks_first`` served queries of an index,
every one: its recall on them is least known then. Afterwards each query with a probability
that keeps the checks' time at ``served_check_share`` of the searches' time (both measured as
they run), drawn from a generator seeded with the index's seed: the queries checked are a
function of the seed and of the timings alone.

**What it does with them.** The newest ``served_pool`` checked queries are kept with their
exact answers, and the served recall is the mean over the newest ``served_pool`` checked
since the present setting was chosen: what the searches really returned. When it is short of
the target (on ``served_min_checks`` at least), the index runs its ladder on the kept
queries (:func:`retrieval.calibration.calibrate`) and scans more, or turns exact when the
ladder cannot reach the target (:class:`retrieval.index.PremiseIndex`); the setting it
chose is then measured afresh on the queries served after.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from retrieval.calibration import RECALL_AT, CalibrationSet, reached
from retrieval.index_options import IndexOptions
from retrieval.scorers import ApproximateScorer


@dataclass(frozen=True, slots=True)
class ServedCheck:
    """One served query answered exactly too."""

    query: np.ndarray  # (d,) float32
    mask: np.ndarray | None  # packed bits of its mask (little bit order); None: every premise allowed
    truth: np.ndarray  # the exact top RECALL_AT premise ids, best first (fewer where the mask allows fewer)
    last: float  # the exact RECALL_AT-th score (-inf: fewer allowed)


class ServedRecall:
    """The exact checks of one index's served queries and the recall they measure."""

    def __init__(self, options: IndexOptions, *, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock  # seconds, for the budget of the checks
        self._options = options
        self._rng = np.random.default_rng(options.seed)
        self._served = 0  # queries served so far
        self._searching = 0.0  # seconds spent serving them
        self._checks = 0  # checks made so far (all settings)
        self._checking = 0.0  # seconds spent on them
        self._kept: deque[ServedCheck] = deque(maxlen=options.served_pool)
        self._recalls: deque[float] = deque(maxlen=options.served_pool)  # at the present setting

    @property
    def recall(self) -> float | None:
        """Mean recall@10 of the newest checks since the present setting was chosen (None: none yet)."""
        return float(np.mean(self._recalls)) if self._recalls else None

    @property
    def queries(self) -> int:
        """How many checks :attr:`recall` stands on."""
        return len(self._recalls)

    def short(self) -> bool:
        """Whether the recall measured is short of the target, on enough checks to say so."""
        recall = self.recall
        enough = len(self._recalls) >= self._options.served_min_checks
        return enough and recall is not None and recall < self._options.recall_target

    def check(
        self,
        scorer: ApproximateScorer,
        queries: np.ndarray,
        masks: Sequence[np.ndarray] | None,
        found: np.ndarray,
        k: int,
        seconds: float,
    ) -> None:
        """Record a batch of served ``queries`` (Q, d) with their ``masks``, the ids ``found``
        for them (Q, >= min(k, RECALL_AT)), best first, -1 past the end) and the ``seconds``
        the search took; answer the sampled ones exactly through ``scorer``."""
        for q in self._chosen(len(queries), seconds).tolist():
            start = self.clock()
            mask = None if masks is None else masks[q]
            scores, ids = scorer.exact(queries[q], mask, RECALL_AT)
            truth = ids[ids >= 0]
            if len(truth):
                packed = None if mask is None else np.packbits(mask, bitorder="little")
                self._kept.append(ServedCheck(queries[q].copy(), packed, truth, float(scores[-1])))
                # Served with k < RECALL_AT results, the query is held to the exact top k.
                wanted = min(k, len(truth))
                mine = found[q, :wanted]
                count = reached(scorer.vectors, queries[q], mine[mine >= 0], float(scores[wanted - 1]))
                self._recalls.append(min(1.0, count / wanted))
            self._checks += 1
            self._checking += self.clock() - start

    def restart(self) -> None:
        """The ladder chose a setting on the kept checks: the served recall is measured again
        from the next check. (The kept checks' recall at the setting they chose is no measure
        of it: the ladder stops at the first setting that meets the target on them.)"""
        self._recalls.clear()

    def kept(self, vectors: np.ndarray) -> CalibrationSet:
        """The kept checks as calibration queries over the index's ``vectors`` (N, d)."""
        n = len(vectors)
        masks = [
            np.ones(n, dtype=bool) if c.mask is None else np.unpackbits(c.mask, count=n, bitorder="little").view(bool)
            for c in self._kept
        ]
        return CalibrationSet(
            vectors,
            np.stack([c.query for c in self._kept]),
            masks,
            [c.truth for c in self._kept],
            np.array([c.last for c in self._kept], dtype=np.float32),
            f"{len(self._kept)} served queries kept from the exact checks",
        )

    def _chosen(self, count: int, seconds: float) -> np.ndarray:
        """Positions among ``count`` queries just served in ``seconds`` to check exactly."""
        draws = self._rng.random(count)  # one per query whatever is chosen: the stream stays in step
        first = max(0, min(count, self._options.served_checks_first - self._served))
        self._served += count
        self._searching += seconds
        if self._checks and self._checking:
            # Expected check time per query served = share x search time per query served.
            per_check = self._checking / self._checks
            rate = self._options.served_check_share * self._searching / self._served / per_check
        else:
            rate = 1.0
        return np.flatnonzero((np.arange(count) < first) | (draws < rate))
