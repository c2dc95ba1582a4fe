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

A batch is grouped by mask: the queries that share one (every goal of a theorem does) are
searched in one faiss call through its selector, and so get exactly what each would get
alone. Queries whose masks no other query of the batch has are searched together without a
selector, asking for enough candidates that the k accessible ones are among them, and each
query's candidates are filtered by its own mask; a query for which too few survive is
searched again with its selector. If k accessible premises are among an unrestricted top
k', no accessible premise the index scores higher can be missing, so those give the same
results too, but where scores tie at the last place kept.
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


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """The shape of the index; the defaults are tuned on real MiniLM embeddings
    (``bench/retrieval_real.py``) and timed in ``bench/retrieval_latency.py``."""

    # Corpora smaller than this are searched exactly: one masked scan takes ~2 ms at 50k
    # premises of d = 384 (~8 ms at ByT5's 1472), and needs no training.
    exact_below: int = 50_000
    # IVF lists: about this many times sqrt(N), rounded to a power of two (1024 at 200k).
    lists_per_sqrt: float = 2.0
    # Lists scanned per query at REFERENCE_DENSITY or denser; sparser masks scan more. Real
    # embeddings fill the lists far less tidily than synthetic clusters: at 200k premises
    # 32 of 1024 lists gave 0.985 of the exact top 10 on clusters, 0.88 on MiniLM's; 256 give 0.96.
    probes: int = 256
    # Dimensions per 4-bit PQ sub-quantizer (d/(2 x this) bytes per premise in the lists):
    # fewer scan slower and order the candidates better.
    code_width: int = 4
    # Fast-scan candidates per result, re-scored with the 8-bit codes (4-bit PQ orders the
    # near neighbours only roughly; the 8-bit codes order them as float32 would, to ~1e-3).
    # Real embeddings want more than clusters (MiniLM at 200k: 4 -> 8 gained 0.02).
    rerank: int = 8
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

    def search(self, queries: np.ndarray, count: int, allowed: list[_Allowed] | None) -> tuple[np.ndarray, np.ndarray]:
        """(Q, count) corpus ids and their final scores, in no particular order (-1 and
        -inf where fewer were found); only premises of each query's mask, when given."""
        ...


@dataclass(frozen=True, slots=True, eq=False)
class _Allowed:
    """One distinct mask of a batch, and the queries it restricts."""

    mask: np.ndarray  # (N,) bool
    size: int  # premises it allows (estimated when many: see _size)
    rows: np.ndarray  # (members,) int64: positions in the batch of the queries it restricts


# Every this many flags of a mask are compared before the whole mask (prime, so that it
# does not fall in step with files of a round number of premises).
_SAMPLE_STRIDE = 4099
# A large mask's size is estimated from every this many flags: reading all 200k flags of a
# mask (22-30 us) was about a tenth of a batched query's time, and one cache line in 8 gives
# the size to about 5% at 30% density.
_SIZE_STRIDE = 512


def _size(mask: np.ndarray, count: int) -> int:
    """How many premises ``mask`` allows: exactly when that could be fewer than about
    ``count`` (the candidates a query wants), else estimated (it only sizes the search: a
    query that finds fewer than it is searched again through every list)."""
    if len(mask) > 1 << 16:
        estimate = _SIZE_STRIDE * int(np.count_nonzero(mask[::_SIZE_STRIDE]))
        if estimate > 4 * count + 1024:
            return estimate
    return int(np.count_nonzero(mask))


def _distinct(masks: Sequence[np.ndarray], count: int) -> list[_Allowed]:
    """The distinct masks of a batch, each with the queries it restricts. Proof search
    passes the same array for every goal of a theorem, so an array seen before is known
    without reading it; other arrays are told apart by their size and a sample of their
    flags, and compared whole only when those agree."""
    found: list[tuple[np.ndarray, int, list[int]]] = []  # (mask, size, queries)
    of_array: dict[int, int] = {}  # id() of a mask array -> its group (``masks`` keeps them alive)
    of_sample: dict[tuple[int, bytes], list[int]] = {}  # (size, sampled flags) -> groups
    for q, mask in enumerate(masks):
        group = of_array.get(id(mask))
        if group is None:
            size = _size(mask, count)
            alike = of_sample.setdefault((size, mask[::_SAMPLE_STRIDE].tobytes()), [])
            group = next((g for g in alike if np.array_equal(found[g][0], mask)), None)
            if group is None:
                group = len(found)
                found.append((mask, size, []))
                alike.append(group)
            of_array[id(mask)] = group
        found[group][2].append(q)
    return [_Allowed(mask, size, np.asarray(rows, dtype=np.int64)) for mask, size, rows in found]


def _selector(mask: np.ndarray) -> tuple[faiss.IDSelector, np.ndarray]:
    """A faiss selector of the premises of ``mask``, and the bitmap it reads (keep it alive
    while the selector is used)."""
    bitmap = np.packbits(mask, bitorder="little")
    return faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap)), bitmap


def _per_query(allowed: list[_Allowed], queries: int) -> list[np.ndarray]:
    """Each query's mask, in batch order."""
    masks: list[np.ndarray] = [np.empty(0, dtype=bool)] * queries
    for group in allowed:
        for q in group.rows.tolist():
            masks[q] = group.mask
    return masks


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

    def search(self, queries: np.ndarray, count: int, allowed: list[_Allowed] | None) -> tuple[np.ndarray, np.ndarray]:
        if allowed is None:
            scores, ids = self._flat.search(queries, count)
            return ids, np.where(ids >= 0, scores, -np.inf)
        if len(queries) == 1:  # the selector skips the other premises' products
            selector, _bitmap = _selector(allowed[0].mask)
            scores, ids = self._flat.search(queries, count, params=faiss.SearchParameters(sel=selector))
            return ids, np.where(ids >= 0, scores, -np.inf)
        masks = _per_query(allowed, len(queries))
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

    def search(self, queries: np.ndarray, count: int, allowed: list[_Allowed] | None) -> tuple[np.ndarray, np.ndarray]:
        # One BLAS product finds every query's nearest lists (faiss's flat quantizer would
        # multiply query by query below 128k queries, reading every centroid each time).
        coarse = queries @ self._centroids.T  # (Q, lists)
        if allowed is None:
            ids = self._candidates(queries, coarse, count, None, self.probes)
            return ids, self._rescore(queries, ids)
        ids = np.full((len(queries), count), -1, dtype=np.int64)
        shared = [group for group in allowed if group.size and len(group.rows) > 1]
        alone = [group for group in allowed if group.size and len(group.rows) == 1]
        if len(alone) > 1:  # one unrestricted search serves most of them
            alone = self._filtered(queries, coarse, alone, count, ids)
        for group in shared + alone:
            self._selected(queries, coarse, group, count, ids)
        return ids, self._rescore(queries, ids)

    def _probes_for(self, size: int) -> int:
        """Lists to scan for a mask of ``size`` premises: twice as many for each halving of
        the density below REFERENCE_DENSITY, so that about as many accessible premises are
        scanned (powers of two, so that a batch falls into few groups)."""
        n = len(self._codes)
        if 2 * size > REFERENCE_DENSITY * n:
            return self.probes
        return min(self.lists, self.probes * 2 ** math.floor(math.log2(REFERENCE_DENSITY * n / size)))

    def _filtered(
        self, queries: np.ndarray, coarse: np.ndarray, alone: list[_Allowed], count: int, ids: np.ndarray
    ) -> list[_Allowed]:
        """Fill ``ids`` for the queries of ``alone`` (one each) that one unrestricted search
        per probe count serves: ``count`` of their mask's premises (or all there are) among
        its results. Returns the others."""
        n = len(self._codes)
        fetch = [math.ceil(count * _OVERFETCH_MARGIN * n / group.size) for group in alone]
        by_probes: dict[int, list[int]] = {}
        unserved = []
        for g, group in enumerate(alone):
            if fetch[g] <= _MAX_OVERFETCH:
                by_probes.setdefault(self._probes_for(group.size), []).append(g)
            else:
                unserved.append(group)
        for nprobe, members in by_probes.items():
            rows = np.array([alone[g].rows[0] for g in members])
            fetched = min(n, max(fetch[g] for g in members))
            found = self._candidates(queries[rows], coarse[rows], fetched, None, nprobe)
            for g, q, row in zip(members, rows.tolist(), found, strict=True):
                group = alone[g]
                row = row[row >= 0]
                row = row[group.mask[row]][:count]
                if len(row) >= min(count, group.size):
                    ids[q, : len(row)] = row
                else:
                    unserved.append(group)
        return unserved

    def _selected(self, queries: np.ndarray, coarse: np.ndarray, group: _Allowed, count: int, ids: np.ndarray) -> None:
        """Fill ``ids`` for the queries of ``group``: the best ``count`` candidates of its
        mask, through a faiss selector, in one call; every list is scanned for the queries
        whose lists hold too few of its premises."""
        probes = self._probes_for(group.size)
        selector, _bitmap = _selector(group.mask)
        rows = group.rows
        found = self._candidates(queries[rows], coarse[rows], count, selector, probes)
        short = np.count_nonzero(found >= 0, axis=1) < min(count, group.size)
        if short.any() and probes < self.lists:
            rows = rows[short]
            found[short] = self._candidates(queries[rows], coarse[rows], count, selector, self.lists)
        ids[group.rows] = found

    def _candidates(
        self, queries: np.ndarray, coarse: np.ndarray, count: int, selector: faiss.IDSelector | None, probes: int
    ) -> np.ndarray:
        """(Q, count) ids of the best fast-scan scores in the ``probes`` nearest lists
        (``coarse``: (Q, lists) the queries' inner products with the lists' centroids)."""
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
        sum_j (low_j + code_j step_j) q_j = low . q + code . (step * q). One BLAS
        matrix-vector product per query: numpy's stacked matmul over (Q, C, d) does not
        reach BLAS and took twice as long at d = 1472. Query by query also makes a query's
        scores the same bits in any batch (a product of the whole batch with ``low`` would
        round differently for one query than for many)."""
        scores = np.full(ids.shape, -np.inf, dtype=np.float32)
        scaled = queries * self._step  # (Q, d)
        for q, row in enumerate(ids):
            found = row >= 0
            codes = self._codes[row[found]].astype(np.float32)  # (C, d)
            scores[q, found] = codes @ scaled[q] + queries[q] @ self._low
        return scores


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
        ids, scores = self._scorer.search(queries, count, None if masks is None else _distinct(masks, count))
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        ids, scores = np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)
        return [
            [Hit(i, s) for i, s in zip(row, row_scores, strict=True) if i >= 0]
            for row, row_scores in zip(ids.tolist(), scores.tolist(), strict=True)
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
