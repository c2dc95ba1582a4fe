"""A searchable index of a corpus's premise embeddings, restricted per query to the premises
the theorem may use, and the recall metrics of LeanDojo/ReProver measured through it.

Embeddings are unit vectors, so inner products rank by cosine similarity. The restriction
is applied inside the search (a faiss ID selector over the corpus, or candidates filtered
by the query's own mask), so the k results are the best k *accessible* premises as far as
the index can tell, not the best k filtered afterwards.

Two ways to score, chosen by corpus size (``PremiseIndex(..., exact=)`` forces one):

* below :attr:`IndexOptions.exact_below` premises, **exact**: a flat inner-product index
  over float32 vectors;
* above, **approximate**: an inverted file (IVF) whose lists hold 4-bit product-quantized
  codes scanned by faiss's SIMD "fast scan" kernels, and 8-bit scalar-quantized codes of
  every premise to re-score the best candidates. About 29% of the float32 bytes; measured
  in ``bench/retrieval_latency.py`` (docs/retrieval.md has the table).

A batch of queries with different masks is searched in one faiss call without a selector,
asking for enough candidates that the k accessible ones are among them, and each query's
candidates are filtered by its own mask; a query for which too few survive is searched
again with its selector. Both give the same results: if k accessible premises are among
an unrestricted top k', no accessible premise the index scores higher can be missing
(premises whose scores tie at the last place kept may differ).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import faiss
import numpy as np

from lean_env.records import Position, Theorem
from retrieval.corpus import PremiseCorpus, RetrievalExample, premise_text
from retrieval.encoder import Encoder
from retrieval.formats import PremiseCode, PremisesFor

if TYPE_CHECKING:
    from retrieval.embeddings import EmbeddingStore

log = logging.getLogger(__name__)

# Rows converted to float32 at a time while the index is filled: the embeddings may be a
# float16 memory map, and a float32 copy of all of them is what the approximate index avoids.
_CHUNK = 16_384
# Candidates re-scored at a time (their codes are widened to float32 for it).
_RESCORE_CHUNK = 4096


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """The shape of the index; the defaults are tuned in ``bench/retrieval_latency.py``."""

    # Corpora smaller than this are searched exactly: one masked scan takes ~2 ms at 50k
    # premises of d = 384 (~8 ms at ByT5's 1472), and needs no training.
    exact_below: int = 50_000
    # IVF lists: about this many times sqrt(N), rounded to a power of two (1024 at 200k).
    lists_per_sqrt: float = 2.0
    # Lists scanned per query at REFERENCE_DENSITY or denser; sparser masks scan more.
    probes: int = 32
    # Dimensions per 4-bit PQ sub-quantizer (d/(2 x this) bytes per premise in the lists):
    # fewer scan slower and order the candidates better.
    code_width: int = 4
    # Fast-scan candidates per result, re-scored with the 8-bit codes (4-bit PQ orders the
    # near neighbours only roughly; the 8-bit codes order them as float32 would, to ~1e-3).
    rerank: int = 4
    # Training points per IVF list (faiss wants at least 39) and the sampling seed.
    train_per_list: int = 40
    seed: int = 0


# The mask density the probe count is tuned at (a theorem sees ~30% of a Mathlib project's
# premises): a sparser mask leaves fewer accessible premises per list, so more are scanned.
REFERENCE_DENSITY = 0.3
# A batched query asks an unrestricted search for (candidates / density) times this many,
# so that enough of them are accessible; at most _MAX_OVERFETCH (beyond, a selector is cheaper).
_OVERFETCH_MARGIN = 1.5
_MAX_OVERFETCH = 1024


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved premise."""

    index: int  # corpus index
    score: float  # cosine similarity to the query (approximate index: through the 8-bit codes)


class _Scorer(Protocol):
    """One way to find the best premises of a batch of queries (exact or approximate)."""

    nbytes: int  # memory of its structures
    rerank: int  # candidates it wants per result

    def search(
        self, queries: np.ndarray, count: int, masks: list[np.ndarray] | None, sizes: list[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(Q, count) corpus ids and their final scores, in no particular order (-1 and
        -inf where fewer were found); only premises of each query's mask, when given
        (``sizes``: how many premises each mask allows)."""
        ...


def _selector(mask: np.ndarray) -> tuple[faiss.IDSelector, np.ndarray]:
    """A faiss selector of the premises of ``mask``, and the bitmap it reads (keep it alive
    while the selector is used)."""
    bitmap = np.packbits(mask, bitorder="little")
    return faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap)), bitmap


class _ExactScorer:
    """Every premise's float32 vector: a flat inner-product scan, exact, no training."""

    rerank = 1

    def __init__(self, embeddings: np.ndarray) -> None:
        n, d = embeddings.shape
        self._flat = faiss.IndexFlatIP(d)
        for start in range(0, n, _CHUNK):
            self._flat.add(np.ascontiguousarray(embeddings[start : start + _CHUNK], dtype=np.float32))
        # The index's own storage, for batches: numpy's BLAS multiplies many queries at once
        # (faiss's flat search uses BLAS only from 128k queries in this version).
        self._vectors = faiss.rev_swig_ptr(self._flat.get_xb(), n * d).reshape(n, d)  # (N, d), no copy
        self.nbytes = n * d * 4

    def search(
        self, queries: np.ndarray, count: int, masks: list[np.ndarray] | None, sizes: list[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        if masks is None:
            scores, ids = self._flat.search(queries, count)
            return ids, np.where(ids >= 0, scores, -np.inf)
        if len(queries) == 1:  # the selector skips the other premises' products
            selector, _bitmap = _selector(masks[0])
            scores, ids = self._flat.search(queries, count, params=faiss.SearchParameters(sel=selector))
            return ids, np.where(ids >= 0, scores, -np.inf)
        ids = np.empty((len(queries), count), dtype=np.int64)
        scores = np.empty((len(queries), count), dtype=np.float32)
        rows = max(1, (1 << 22) // len(self._vectors))  # queries per product: (rows, N) float32 scores
        for start in range(0, len(queries), rows):
            chunk = slice(start, start + rows)
            every = queries[chunk] @ self._vectors.T  # (rows, N)
            every[~np.stack(masks[chunk])] = -np.inf
            top = np.argpartition(-every, count - 1, axis=1)[:, :count]
            scores[chunk] = np.take_along_axis(every, top, axis=1)
            ids[chunk] = np.where(np.isfinite(scores[chunk]), top, -1)
        return ids, scores


class _ApproximateScorer:
    """IVF lists of 4-bit PQ codes scanned by faiss's fast-scan kernels to find candidates,
    and an 8-bit code of every premise to score them."""

    def __init__(self, embeddings: np.ndarray, options: IndexOptions) -> None:
        n, d = embeddings.shape
        self.lists = _lists(n, options.lists_per_sqrt)
        self.rerank = options.rerank
        self.probes = min(options.probes, self.lists)
        # Without residuals, one look-up table per query serves every list it scans.
        self._ivf = faiss.IndexIVFPQFastScan(
            faiss.IndexFlatIP(d), d, self.lists, _subquantizers(d, options.code_width), 4, faiss.METRIC_INNER_PRODUCT
        )
        rng = np.random.default_rng(options.seed)
        # A sample, repeated up to faiss's minimum when the corpus is small (its k-means
        # warns under 39 points per centroid; the PQ has 16 per sub-quantizer).
        wanted = max(self.lists * options.train_per_list, 1024)
        picked = np.sort(rng.choice(n, size=min(n, wanted), replace=False))
        sample = np.resize(np.asarray(embeddings[picked], dtype=np.float32), (wanted, d))
        self._ivf.cp.niter = 10  # k-means passes: more move the lists little and cost build time
        self._ivf.train(sample)
        # The 8-bit codes span each dimension's range over every premise (a sample's would
        # clip the others): code = round((x - low) / step).
        low, high = np.full(d, np.inf, dtype=np.float32), np.full(d, -np.inf, dtype=np.float32)
        for start in range(0, n, _CHUNK):
            chunk = np.asarray(embeddings[start : start + _CHUNK], dtype=np.float32)
            low, high = np.minimum(low, chunk.min(axis=0)), np.maximum(high, chunk.max(axis=0))
        self._low, self._step = low, np.maximum(high - low, 1e-12) / 255
        self._codes = np.empty((n, d), dtype=np.uint8)  # (N, d)
        for start in range(0, n, _CHUNK):
            chunk = np.ascontiguousarray(embeddings[start : start + _CHUNK], dtype=np.float32)
            self._ivf.add(chunk)
            self._codes[start : start + len(chunk)] = np.rint((chunk - low) / self._step).clip(0, 255)
        self._centroids = self._ivf.quantizer.reconstruct_n(0, self.lists)  # (lists, d)
        self.nbytes = len(faiss.serialize_index(self._ivf)) + self._codes.nbytes

    def search(
        self, queries: np.ndarray, count: int, masks: list[np.ndarray] | None, sizes: list[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        if masks is None:
            ids = self._candidates(queries, count, None, self.probes)
            return ids, self._rescore(queries, ids)
        found: list[np.ndarray | None] = [None] * len(queries)
        probes = [self._probes_for(size, len(self._codes)) for size in sizes]
        if len(queries) > 1:
            self._filtered(queries, masks, sizes, probes, count, found)
        ids = np.full((len(queries), count), -1, dtype=np.int64)
        for q, row in enumerate(found):
            if row is None:
                row = self._selected(queries[q], masks[q], sizes[q], probes[q], count)
            ids[q, : len(row)] = row
        return ids, self._rescore(queries, ids)

    def _probes_for(self, size: int, n: int) -> int:
        """Lists to scan for a mask of ``size`` premises: twice as many for each halving of
        the density below REFERENCE_DENSITY, so that about as many accessible premises are
        scanned (powers of two, so that a batch falls into few groups)."""
        if size == 0 or 2 * size > REFERENCE_DENSITY * n:
            return self.probes
        return min(self.lists, self.probes * 2 ** math.floor(math.log2(REFERENCE_DENSITY * n / size)))

    def _filtered(
        self,
        queries: np.ndarray,
        masks: list[np.ndarray],
        sizes: list[int],
        probes: list[int],
        count: int,
        found: list[np.ndarray | None],
    ) -> None:
        """Fill ``found`` for the queries one unrestricted search per probe count serves:
        ``count`` of their mask's premises (or all there are) among its results."""
        n = len(self._codes)
        fetch = [math.ceil(count * _OVERFETCH_MARGIN * n / max(size, 1)) for size in sizes]
        groups: dict[int, list[int]] = {}
        for q, (size, wanted) in enumerate(zip(sizes, fetch, strict=True)):
            if size and wanted <= _MAX_OVERFETCH:
                groups.setdefault(probes[q], []).append(q)
        for nprobe, members in groups.items():
            ids = self._candidates(queries[members], min(n, max(fetch[q] for q in members)), None, nprobe)
            for q, row in zip(members, ids, strict=True):
                row = row[row >= 0]
                row = row[masks[q][row]][:count]
                if len(row) >= min(count, sizes[q]):
                    found[q] = row

    def _selected(self, query: np.ndarray, mask: np.ndarray, size: int, probes: int, count: int) -> np.ndarray:
        """The best ``count`` candidates of ``mask`` for one query, through a faiss selector;
        every list is scanned when those scanned first hold too few of its premises."""
        if size == 0:
            return np.zeros(0, dtype=np.int64)
        selector, _bitmap = _selector(mask)
        row = self._candidates(query[None], count, selector, probes)[0]
        if np.count_nonzero(row >= 0) < min(count, size) and probes < self.lists:
            row = self._candidates(query[None], count, selector, self.lists)[0]
        return row[row >= 0]

    def _candidates(
        self, queries: np.ndarray, count: int, selector: faiss.IDSelector | None, probes: int
    ) -> np.ndarray:
        """(Q, count) ids of the best fast-scan scores in the ``probes`` nearest lists. The
        lists are chosen here by one BLAS product for the batch (faiss's flat quantizer
        multiplies query by query below 128k queries)."""
        coarse = queries @ self._centroids.T  # (Q, lists)
        if probes < self.lists:
            assign = np.argpartition(-coarse, probes - 1, axis=1)[:, :probes]
        else:
            assign = np.broadcast_to(np.arange(self.lists), coarse.shape)
        assign = np.ascontiguousarray(assign, dtype=np.int64)  # (Q, probes)
        distances = np.ascontiguousarray(np.take_along_axis(coarse, assign, axis=1))
        ids = np.empty((len(queries), count), dtype=np.int64)
        scores = np.empty((len(queries), count), dtype=np.float32)
        params = faiss.SearchParametersIVF(sel=selector, nprobe=probes)
        self._ivf.search_preassigned_c(
            len(queries),
            faiss.swig_ptr(queries),
            count,
            faiss.swig_ptr(assign),
            faiss.swig_ptr(distances),
            faiss.swig_ptr(scores),
            faiss.swig_ptr(ids),
            False,
            params,
        )
        return ids

    def _rescore(self, queries: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The 8-bit codes' inner products with the queries, for candidates ``ids`` (Q, C):
        sum_j (low_j + code_j step_j) q_j = low . q + code . (step * q)."""
        scores = np.full(ids.shape, -np.inf, dtype=np.float32)
        scaled = queries * self._step  # (Q, d)
        offset = queries @ self._low  # (Q,)
        rows = max(1, _RESCORE_CHUNK // max(ids.shape[1], 1))
        for start in range(0, len(ids), rows):
            chunk = ids[start : start + rows]
            codes = self._codes[np.maximum(chunk, 0)].astype(np.float32)  # (rows, C, d)
            dots = np.matmul(codes, scaled[start : start + rows, :, None])[..., 0] + offset[start : start + rows, None]
            scores[start : start + rows] = np.where(chunk >= 0, dots, -np.inf)
        return scores


def _size(mask: np.ndarray, count: int) -> int:
    """How many premises ``mask`` allows: exactly when that could be fewer than about
    ``count`` (the candidates a query wants), else estimated from every 16th flag (it only
    sizes the search then; counting 200k flags per query costs more than searching)."""
    if len(mask) > 1 << 16:
        estimate = 16 * int(np.count_nonzero(mask[::16]))
        if estimate > 4 * count + 1024:
            return estimate
    return int(np.count_nonzero(mask))


def _lists(n: int, per_sqrt: float) -> int:
    """A power of two near ``per_sqrt`` * sqrt(n), with at least 39 premises per list."""
    target = max(1.0, per_sqrt * math.sqrt(n))
    return max(1, min(2 ** round(math.log2(target)), n // 39))


def _subquantizers(d: int, width: int) -> int:
    """PQ sub-quantizers: ``width`` dimensions each where ``d`` allows, else the nearest width
    that divides it into an even count (fast scan wants one)."""
    for near in sorted(range(1, 2 * width + 1), key=lambda w: (abs(w - width), w)):
        if d % near == 0 and (d // near) % 2 == 0:
            return d // near
    return d


class PremiseIndex:
    """The corpus's premises, embedded, behind an exact or approximate faiss index."""

    def __init__(
        self,
        corpus: PremiseCorpus,
        embeddings: np.ndarray,
        *,
        exact: bool | None = None,
        options: IndexOptions = IndexOptions(),
    ) -> None:
        """``embeddings``: (N, d) unit vectors, float32 or float16 (a memory map is read in
        chunks); ``exact``: None chooses by size (:attr:`IndexOptions.exact_below`)."""
        if embeddings.ndim != 2 or embeddings.shape[0] != len(corpus):
            raise ValueError(f"{embeddings.shape[0]} embeddings for a corpus of {len(corpus)} premises")
        self.corpus = corpus
        self.dimension = int(embeddings.shape[1])
        self.exact = len(corpus) < options.exact_below if exact is None else exact
        self._scorer: _Scorer = _ExactScorer(embeddings) if self.exact else _ApproximateScorer(embeddings, options)
        log.debug("%s index over %d premises (%d bytes)", "exact" if self.exact else "IVF", len(corpus), self.nbytes)

    @classmethod
    def build(
        cls,
        corpus: PremiseCorpus,
        encoder: Encoder,
        *,
        store: EmbeddingStore | None = None,
        exact: bool | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> PremiseIndex:
        """Embed every premise of ``corpus`` with ``encoder``; with ``store``, only those it
        does not hold for this encoder (see :mod:`retrieval.embeddings`)."""
        texts = [premise_text(p) for p in corpus.premises]
        if store is None:
            return cls(corpus, encoder.encode(texts, progress=progress), exact=exact)
        return cls(corpus, store.embeddings(encoder, texts, progress=progress), exact=exact)

    @property
    def nbytes(self) -> int:
        """Memory of the index's structures (the approximate one's lists as faiss serializes them)."""
        return self._scorer.nbytes

    def search(self, queries: np.ndarray, k: int, *, allowed: Sequence[np.ndarray] | None = None) -> list[list[Hit]]:
        """The ``k`` best premises for each query embedding (Q, d), best first; with
        ``allowed`` (one boolean mask over the corpus per query) only among those. A batch
        is searched faster than its queries one by one, with the same results but where
        scores tie (the approximate index's 4-bit scores often do)."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = min(k, len(self.corpus))
        if k == 0 or len(queries) == 0:
            return [[] for _ in queries]
        count = min(k * self._scorer.rerank, len(self.corpus))
        masks = None if allowed is None else [np.asarray(mask, dtype=bool) for mask in allowed]
        if masks is not None and len(masks) != len(queries):
            raise ValueError(f"{len(masks)} masks for {len(queries)} queries")
        if masks is not None and any(mask.shape != (len(self.corpus),) for mask in masks):
            # faiss would read a shorter bitmap past its end
            raise ValueError(f"a mask is not one flag per premise of the corpus ({len(self.corpus)})")
        sizes = [] if masks is None else [_size(mask, count) for mask in masks]
        ids, scores = self._scorer.search(queries, count, masks, sizes)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        ids, scores = np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)
        return [
            [Hit(int(i), float(s)) for i, s in zip(row, row_scores, strict=True) if i >= 0]
            for row, row_scores in zip(ids, scores, strict=True)
        ]


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

    def premises_for(self, location: str, theorem: Theorem) -> PremisesFor:
        """A goal -> premises function for ``theorem`` of the repository ``location`` (the
        prover's :class:`~agent.prove.PremiseSource` seam)."""
        return self.for_theorem(location, theorem.path, theorem.start)

    def for_theorem(self, repo: str, path: str, before: Position) -> PremisesFor:
        """A goal -> premises function for a declaration of ``repo`` at ``path``:``before``."""
        allowed = self.index.corpus.accessible(repo, path, before)

        def premises(goal: str) -> list[PremiseCode]:
            (hits,) = self.index.search(self.encoder.encode([goal]), self.k, allowed=[allowed])
            return [(p.full_name, p.code) for p in (self.index.corpus.premises[h.index] for h in hits)]

        return premises
