"""A searchable index of a corpus's premise embeddings, restricted per query to the premises
the theorem may use, and the recall metrics of LeanDojo/ReProver measured through it.

Embeddings are unit vectors, so inner products rank by cosine similarity. The restriction
is applied inside the search (a faiss ID selector over the corpus, a mask over a product,
or candidates filtered by the query's own mask), so the k results are the best k
*accessible* premises as far as the index can tell, not the best k filtered afterwards.

How it scores (:mod:`retrieval.scorers`), chosen when it is built:

* on a torch **device** (``device="cuda"``: where the encoder runs on a GPU): every vector
  there, one masked matrix product per batch, exact;
* on the CPU, up to :attr:`IndexOptions.exact_work` premises x dimensions, **exact**: a flat
  inner-product scan over float32 vectors (a few milliseconds at that size);
* above, **approximate**: IVF lists of 4-bit product-quantized codes scanned by faiss's SIMD
  fast-scan kernels, the best candidates re-scored with float16 vectors, and **calibrated**
  on the data it holds (:mod:`retrieval.calibration`): it scans more until the recall@10
  it measures against exact search meets :attr:`IndexOptions.recall_target` (0.99), and is
  exact where it cannot; then **checked on the queries it serves** (:mod:`retrieval.served`):
  a sampled share of them is also answered exactly, and when their recall falls short it
  scans more again, or turns exact. :attr:`PremiseIndex.quality` says which, and the recall
  measured on what.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from lean_env.records import Position, Theorem
from retrieval.calibration import (
    RECALL_AT,
    GoalQueries,
    IndexKind,
    IndexQuality,
    at_ceiling,
    calibrate,
    calibration_set,
)
from retrieval.corpus import PremiseCorpus, RetrievalExample, premise_text
from retrieval.encoder import Encoder, IdentifiedEncoder, Progress
from retrieval.formats import PremiseCode, PremisesFor
from retrieval.goal_queries import goal_queries
from retrieval.index_options import IndexOptions
from retrieval.scorers import ApproximateScorer, DeviceScorer, ExactScorer, Scorer, distinct_masks
from retrieval.served import ServedRecall

__all__ = ["Hit", "IndexKind", "IndexOptions", "IndexQuality", "PremiseIndex", "PremiseRetriever", "evaluate"]

log = logging.getLogger(__name__)


class EmbeddingSource(Protocol):
    """Embeddings computed before, kept per encoder (:class:`retrieval.embeddings.EmbeddingStore`,
    which builds its indexes through :meth:`PremiseIndex.build`: a seam, not an import, so
    that the store sits above the index)."""

    def embeddings(
        self,
        encoder: IdentifiedEncoder,
        texts: Sequence[str],
        *,
        identity: str | None = None,
        progress: Progress | None = None,
    ) -> np.ndarray:
        """(len(texts), d) embeddings of ``texts`` by ``encoder`` (``identity``: its
        identity, when the caller has computed it), encoding only those not kept."""
        ...


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved premise."""

    index: int  # corpus index
    score: float  # cosine similarity to the query (approximate index: through float16 vectors)


class PremiseIndex:
    """The corpus's premises, embedded, behind an exact, calibrated approximate, or device index."""

    def __init__(
        self,
        corpus: PremiseCorpus,
        embeddings: np.ndarray,
        *,
        exact: bool | None = None,
        options: IndexOptions = IndexOptions(),
        device: str | None = None,
        goals: Callable[[], GoalQueries] | None = None,
    ) -> None:
        """``embeddings``: (N, d) unit vectors, float32 or float16 (a memory map is read in
        chunks). ``device``: a torch device to search on (every vector there, exact); None
        searches on the CPU. ``exact`` (CPU): None chooses by size and by the recall the
        approximate index measures; False keeps the approximate index even where it falls
        short of the target (its quality says by how much); True is exact. ``goals``: goal
        states to calibrate on beside held-out premises, called only when the index calibrates."""
        if embeddings.ndim != 2 or embeddings.shape[0] != len(corpus):
            raise ValueError(f"{embeddings.shape[0]} embeddings for a corpus of {len(corpus)} premises")
        self.corpus = corpus
        self.dimension = int(embeddings.shape[1])
        self._options = options
        self._forced = exact is False  # kept approximate whatever it measures
        self._served: ServedRecall | None = None  # the checks of served queries (approximate only)
        n, target = len(corpus), options.recall_target
        self._scorer: Scorer
        if device is not None:
            self._scorer = DeviceScorer(embeddings, device)
            self._quality = IndexQuality(IndexKind.DEVICE, device, 1.0, target, 0, "every vector on the device")
        elif exact or (exact is None and n * self.dimension <= options.exact_work):
            self._scorer = ExactScorer(embeddings)
            why = "asked for" if exact else f"{n} premises x {self.dimension} dimensions: a scan is cheap"
            self._quality = IndexQuality(IndexKind.EXACT, "cpu", 1.0, target, 0, why)
        else:
            self._scorer = scorer = ApproximateScorer(embeddings, options)
            calibration = calibration_set(embeddings, options, None if goals is None else goals())
            met, self._quality = calibrate(scorer, self._search_one, calibration, options)
            if not met and exact is None:
                log.info("%s; searching exactly", self._quality.text())
                why = (
                    f"the approximate index measured recall@10 {self._quality.recall:.3f} at most on "
                    f"{calibration.source}, short of the target {target:g}"
                )
                self._scorer = ExactScorer(embeddings)  # the approximate one is freed
                self._quality = IndexQuality(IndexKind.EXACT, "cpu", 1.0, target, self._quality.queries, why)
            else:
                self._served = ServedRecall(options)
        log.debug("%s over %d premises (%d bytes)", self._quality.text(), n, self.nbytes)

    @classmethod
    def build(
        cls,
        corpus: PremiseCorpus,
        encoder: IdentifiedEncoder,
        *,
        store: EmbeddingSource | None = None,
        identity: str | None = None,
        exact: bool | None = None,
        options: IndexOptions = IndexOptions(),
        device: str | None = None,
        progress: Progress | None = None,
    ) -> PremiseIndex:
        """Embed every premise of ``corpus`` with ``encoder``; with ``store``, only those it
        does not hold for this encoder (see :mod:`retrieval.embeddings`), whose identity the
        caller may pass when it has computed it (it hashes the weights)."""
        texts = [premise_text(p) for p in corpus.premises]
        if store is None:
            embeddings = encoder.encode(texts, progress=progress)
        else:
            embeddings = store.embeddings(encoder, texts, identity=identity, progress=progress)
        return cls(
            corpus,
            embeddings,
            exact=exact,
            options=options,
            device=device,
            goals=lambda: goal_queries(corpus, encoder, options),
        )

    @property
    def quality(self) -> IndexQuality:
        """Its kind and the recall measured: on its calibration queries, and on the served
        queries it also answered exactly (approximate only: the others are exact by construction)."""
        if self._served is None:
            return self._quality
        return dataclasses.replace(
            self._quality, served_recall=self._served.recall, served_queries=self._served.queries
        )

    @property
    def exact(self) -> bool:
        """Whether every search is exact (over the vectors as given)."""
        return self.quality.kind is not IndexKind.APPROXIMATE

    @property
    def nbytes(self) -> int:
        """Memory of the index's structures (the approximate one's lists as faiss serializes them)."""
        return self._scorer.nbytes

    def search(self, queries: np.ndarray, k: int, *, allowed: Sequence[np.ndarray] | None = None) -> list[list[Hit]]:
        """The ``k`` best premises for each query embedding (Q, d), best first; with
        ``allowed`` (one boolean mask over the corpus per query) only among those. A batch
        is searched faster than its queries one by one, with the same results but where
        scores tie. The approximate index answers a sampled share of the queries exactly
        too (:mod:`retrieval.served`), and scans more when they say it falls short."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = min(k, len(self.corpus))
        if k == 0 or len(queries) == 0:
            return [[] for _ in queries]
        masks = None if allowed is None else [np.asarray(mask, dtype=bool) for mask in allowed]
        if masks is not None and len(masks) != len(queries):
            raise ValueError(f"{len(masks)} masks for {len(queries)} queries")
        if masks is not None and any(mask.shape != (len(self.corpus),) for mask in masks):
            # faiss would read a shorter bitmap past its end
            raise ValueError(f"a mask is not one flag per premise of the corpus ({len(self.corpus)})")
        served = self._served
        start = 0.0 if served is None else served.clock()
        ids, scores = self._ranked(queries, k, masks)
        if served is not None and isinstance(self._scorer, ApproximateScorer):
            served.check(self._scorer, queries, masks, ids, k, served.clock() - start)
            if served.short():
                self._scan_more(served, self._scorer)
        return [
            [Hit(i, s) for i, s in zip(row, row_scores, strict=True) if i >= 0]
            for row, row_scores in zip(ids.tolist(), scores.tolist(), strict=True)
        ]

    def _ranked(self, queries: np.ndarray, k: int, masks: list[np.ndarray] | None) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores), each (Q, k), best first (-1 and -inf past the premises found)."""
        count = min(k * self._scorer.rerank, len(self.corpus))
        ids, scores = self._scorer.search(queries, count, None if masks is None else distinct_masks(masks, count))
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)

    def _search_one(self, query: np.ndarray, mask: np.ndarray) -> list[int]:
        """The calibration's search: one query, as proof search asks (not a served query)."""
        ids, _ = self._ranked(query[None], min(RECALL_AT, len(self.corpus)), [mask])
        return [i for i in ids[0].tolist() if i >= 0]

    def _scan_more(self, served: ServedRecall, scorer: ApproximateScorer) -> None:
        """The served queries fell short of the target: run the ladder on those kept, and
        search exactly if it cannot reach the target there (unless kept approximate by
        ``exact=False``). Each change is said once, in the log and in :attr:`quality`."""
        target = self._options.recall_target
        if self._forced and at_ceiling(scorer, self._options):
            return  # it scans all it may already: its quality says how short it falls
        short = self.quality
        said = (
            f"{short.served_queries} served queries answered exactly too had recall@10 "
            f"{short.served_recall:.3f}, short of the target {target:g}"
        )
        setting = (scorer.probes, scorer.rerank)
        kept = served.kept(scorer.vectors)
        options = self._options
        aim = 1.0 - (1.0 - target) * options.served_margin
        met, measured = calibrate(scorer, self._search_one, kept, options, aim=aim)
        served.restart()
        if met or self._forced:
            if (scorer.probes, scorer.rerank) == setting:  # the kept queries, more of them, say it is short no more
                self._quality = dataclasses.replace(measured, why=self._quality.why)
                return
            self._quality = dataclasses.replace(measured, why=f"{said}; scans more since")
            log.warning(
                "premise index: %s; now %d of %d lists scanned, %d candidates re-scored per result "
                "(recall@10 %.3f on the %d kept)",
                said,
                scorer.probes,
                scorer.lists,
                scorer.rerank,
                measured.recall,
                len(kept.queries),
            )
            return
        why = f"{said}, and {measured.recall:.3f} at most when scanning all it may"
        self._scorer = ExactScorer(scorer.vectors)  # the approximate one is freed
        self._served = None
        self._quality = IndexQuality(
            IndexKind.EXACT,
            "cpu",
            1.0,
            target,
            len(kept.queries),
            why,
            calibrated_on=kept.source,
            served_recall=short.served_recall,
            served_queries=short.served_queries,
        )
        log.warning("premise index: %s; searching exactly from now on", why)


@dataclass(frozen=True, slots=True)
class RecallScores:
    """Retrieval quality over a set of examples (ReProver's definitions)."""

    examples: int
    recall: dict[int, float]  # k -> mean over examples of |used premises in top k| / |used premises|
    mrr: float  # mean over examples of 1 / rank of the first used premise (0 when not retrieved)


def evaluate(
    index: PremiseIndex,
    encoder: Encoder,
    examples: Sequence[RetrievalExample],
    *,
    ks: Sequence[int] = (1, 10),
    depth: int = 100,
    batch_size: int = 64,
) -> RecallScores:
    """Recall@k and MRR of ``encoder`` + ``index`` on ``examples``, each query restricted to
    the premises accessible from its theorem. A used premise ranked below ``depth`` counts
    as not retrieved."""
    if not examples:
        return RecallScores(0, {k: 0.0 for k in ks}, 0.0)
    depth = max(depth, *ks)
    totals = dict.fromkeys(ks, 0.0)
    reciprocal = 0.0
    corpus = index.corpus
    for start in range(0, len(examples), batch_size):
        chunk = examples[start : start + batch_size]
        queries = encoder.encode([e.context for e in chunk], batch_size=batch_size)
        masks = [corpus.accessible(e.repo, e.path, e.start) for e in chunk]
        for example, hits in zip(chunk, index.search(queries, depth, allowed=masks), strict=True):
            ranked = [h.index for h in hits]
            used = set(example.positives)
            for k in ks:
                totals[k] += len(used.intersection(ranked[:k])) / len(used)
            reciprocal += next((1.0 / (rank + 1) for rank, i in enumerate(ranked) if i in used), 0.0)
    n = len(examples)
    return RecallScores(n, {k: totals[k] / n for k in ks}, reciprocal / n)


class PremiseRetriever:
    """The premises to give a tactic generator for a goal: the ``k`` accessible premises
    nearest to it, as ``(full_name, code)`` (the generator marks and joins them itself,
    :func:`retrieval.formats.augmented_state`)."""

    def __init__(self, index: PremiseIndex, encoder: Encoder, *, k: int) -> None:
        self.index, self.encoder, self.k = index, encoder, k

    @property
    def quality(self) -> IndexQuality:
        """The index's kind and recall, measured on its calibration and served queries so far."""
        return self.index.quality

    def premises_for(self, location: str, theorem: Theorem) -> PremisesFor:
        """A goal -> premises function for ``theorem`` of the repository ``location`` (the
        prover's :class:`~agent.proving.theorem.PremiseSource` seam)."""
        return self.for_theorem(location, theorem.path, theorem.start)

    def for_theorem(self, repo: str, path: str, before: Position) -> PremisesFor:
        """A goal -> premises function for a declaration of ``repo`` at ``path``:``before``."""
        allowed = self.index.corpus.accessible(repo, path, before)

        def premises(goal: str) -> list[PremiseCode]:
            (hits,) = self.index.search(self.encoder.encode([goal]), self.k, allowed=[allowed])
            return [(p.full_name, p.code) for p in (self.index.corpus.premises[h.index] for h in hits)]

        return premises
