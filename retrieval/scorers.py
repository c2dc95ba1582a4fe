"""The ways a premise index scores a batch of queries against every premise it may return:
exact on the CPU (faiss flat), approximate on the CPU (IVF fast scan, re-scored in float16),
exact on a torch device (a masked matrix product where the encoder runs). They share one
protocol, :class:`Scorer`; :class:`retrieval.index.PremiseIndex` chooses among them and
:mod:`retrieval.calibration` tunes the approximate one to a recall target.

A batch's masks come grouped (:func:`distinct_masks`): the queries that share one (every goal
of a theorem does) are searched in one call through its selector, and so get exactly what
each would get alone. The approximate scorer searches queries whose masks no other query of
the batch has together without a selector, asking for enough candidates that the k
accessible ones are among them, and filters each query's candidates by its own mask; a query
for which too few survive is searched again with its selector.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import faiss
import numpy as np

from retrieval.index_options import IndexOptions

if TYPE_CHECKING:
    import torch

# Rows converted to float32 at a time while an index is filled: the embeddings may be a
# float16 memory map, and a float32 copy of all of them is what the approximate index avoids.
CHUNK = 16_384

# The mask density the probe count is tuned at (a theorem sees ~30% of a Mathlib project's
# premises): a sparser mask leaves fewer accessible premises per list, so more are scanned.
REFERENCE_DENSITY = 0.3
# A batched query asks an unrestricted search for (candidates / density) times this many,
# so that enough of them are accessible; at most _MAX_OVERFETCH (beyond, a selector is cheaper).
_OVERFETCH_MARGIN = 1.5
_MAX_OVERFETCH = 1024


class Scorer(Protocol):
    """One way to find the best premises of a batch of queries."""

    nbytes: int  # memory of its structures
    rerank: int  # candidates it wants per result

    def search(self, queries: np.ndarray, count: int, allowed: list[Allowed] | None) -> tuple[np.ndarray, np.ndarray]:
        """(Q, count) corpus ids and their final scores, in no particular order (-1 and
        -inf where fewer were found); only premises of each query's mask, when given."""
        ...


@dataclass(frozen=True, slots=True, eq=False)
class Allowed:
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


def distinct_masks(masks: Sequence[np.ndarray], count: int) -> list[Allowed]:
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
    return [Allowed(mask, size, np.asarray(rows, dtype=np.int64)) for mask, size, rows in found]


_Params = TypeVar("_Params", bound=faiss.SearchParameters)


def _selecting(params: _Params, mask: np.ndarray | None) -> tuple[_Params, np.ndarray | None]:
    """``params`` selecting the premises of ``mask`` (all when None), and the bitmap the
    selector reads (keep it alive while the parameters are used)."""
    if mask is None:
        return params, None
    bitmap = np.packbits(mask, bitorder="little")
    params.sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
    return params, bitmap


def _per_query(allowed: list[Allowed], queries: int) -> list[np.ndarray]:
    """Each query's mask, in batch order."""
    masks: list[np.ndarray] = [np.empty(0, dtype=bool)] * queries
    for group in allowed:
        for q in group.rows.tolist():
            masks[q] = group.mask
    return masks


class ExactScorer:
    """Every premise's float32 vector: a flat inner-product scan, exact, no training."""

    rerank = 1

    def __init__(self, embeddings: np.ndarray) -> None:
        n, d = embeddings.shape
        self._flat = faiss.IndexFlatIP(d)
        for start in range(0, n, CHUNK):
            self._flat.add(np.ascontiguousarray(embeddings[start : start + CHUNK], dtype=np.float32))
        # The index's own storage, for batches: numpy's BLAS multiplies many queries at once
        # (faiss's flat search uses BLAS only from 128k queries in this version).
        self._vectors = faiss.rev_swig_ptr(self._flat.get_xb(), n * d).reshape(n, d)  # (N, d), no copy
        self.nbytes = n * d * 4

    def search(self, queries: np.ndarray, count: int, allowed: list[Allowed] | None) -> tuple[np.ndarray, np.ndarray]:
        if allowed is None:
            scores, ids = self._flat.search(queries, count)
            return ids, np.where(ids >= 0, scores, -np.inf)
        if len(queries) == 1:  # the selector skips the other premises' products
            params, _bitmap = _selecting(faiss.SearchParameters(), allowed[0].mask)
            scores, ids = self._flat.search(queries, count, params=params)
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


class ApproximateScorer:
    """IVF lists of 4-bit PQ codes scanned by faiss's fast-scan kernels to find candidates,
    and every premise's float16 vector to score them.

    4-bit PQ orders the near neighbours only roughly, and 8-bit codes (this scorer's earlier
    re-scoring) cannot tell apart neighbours closer than ~1e-3 in score: on tight clusters
    they capped recall@10 at 0.92 however many candidates were re-scored. float16 vectors,
    which the embedding store keeps anyway, order them as the exact index does."""

    def __init__(self, embeddings: np.ndarray, options: IndexOptions) -> None:
        n, d = embeddings.shape
        self.lists = _lists(n, options.lists_per_sqrt)
        # Both are set by the calibration (retrieval/calibration.py) after the build.
        self.probes = min(options.probes, self.lists)
        self.rerank = options.rerank
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
        # The float16 vectors live in a flat float16 index: re-scoring reads them as an array
        # (a view of its codes, no second copy), and the exact answers that check served
        # queries (retrieval/served.py) come from its scan through a selector, which decodes
        # float16 in faiss's SIMD kernels rather than widening rows in numpy.
        self._flat = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
        for start in range(0, n, CHUNK):
            chunk = np.ascontiguousarray(embeddings[start : start + CHUNK], dtype=np.float32)
            self._ivf.add(chunk)
            self._flat.add(chunk)
        codes = faiss.rev_swig_ptr(self._flat.codes.data(), n * d * 2)  # (N * d * 2,) uint8, no copy
        self.vectors = codes.view(np.float16).reshape(n, d)  # (N, d)
        self._centroids = self._ivf.quantizer.reconstruct_n(0, self.lists)  # (lists, d)
        self.list_of = _list_of_each(self._ivf, n)  # (N,): the list each premise is in
        self.nbytes = len(faiss.serialize_index(self._ivf)) + self.vectors.nbytes

    def search(self, queries: np.ndarray, count: int, allowed: list[Allowed] | None) -> tuple[np.ndarray, np.ndarray]:
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

    def exact(self, query: np.ndarray, mask: np.ndarray | None, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (count,), best first: the exact top ``count`` of ``query`` (d,)
        among the float16 vectors of ``mask`` (all when None); -inf and -1 where it allows fewer."""
        params, _bitmap = _selecting(faiss.SearchParameters(), mask)
        scores, ids = self._flat.search(query[None], count, params=params)
        return np.where(ids[0] >= 0, scores[0], -np.inf), ids[0]

    def scanned(self, query: np.ndarray, allowed: int, premises: np.ndarray) -> np.ndarray:
        """For each of ``premises``: whether its list is among those a search for ``query``
        with a mask of ``allowed`` premises scans (the calibration's diagnosis of a miss)."""
        coarse = self._centroids @ query  # (lists,)
        probes = self._probes_for(allowed)
        if probes >= self.lists:
            return np.ones(len(premises), dtype=bool)
        threshold = np.partition(coarse, self.lists - probes)[self.lists - probes]
        return coarse[self.list_of[premises]] >= threshold

    def _probes_for(self, size: int) -> int:
        """Lists to scan for a mask of ``size`` premises: twice as many for each halving of
        the density below REFERENCE_DENSITY, so that about as many accessible premises are
        scanned (powers of two, so that a batch falls into few groups)."""
        n = len(self.vectors)
        if 2 * size > REFERENCE_DENSITY * n:
            return self.probes
        return min(self.lists, self.probes * 2 ** math.floor(math.log2(REFERENCE_DENSITY * n / size)))

    def _filtered(
        self, queries: np.ndarray, coarse: np.ndarray, alone: list[Allowed], count: int, ids: np.ndarray
    ) -> list[Allowed]:
        """Fill ``ids`` for the queries of ``alone`` (one each) that one unrestricted search
        per probe count serves: ``count`` of their mask's premises (or all there are) among
        its results. Returns the others."""
        n = len(self.vectors)
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

    def _selected(self, queries: np.ndarray, coarse: np.ndarray, group: Allowed, count: int, ids: np.ndarray) -> None:
        """Fill ``ids`` for the queries of ``group``: the best ``count`` candidates of its
        mask, through a faiss selector, in one call; every list is scanned for the queries
        whose lists hold too few of its premises."""
        probes = self._probes_for(group.size)
        rows = group.rows
        found = self._candidates(queries[rows], coarse[rows], count, group.mask, probes)
        short = np.count_nonzero(found >= 0, axis=1) < min(count, group.size)
        if short.any() and probes < self.lists:
            rows = rows[short]
            found[short] = self._candidates(queries[rows], coarse[rows], count, group.mask, self.lists)
        ids[group.rows] = found

    def _candidates(
        self, queries: np.ndarray, coarse: np.ndarray, count: int, mask: np.ndarray | None, probes: int
    ) -> np.ndarray:
        """(Q, count) ids of the best fast-scan scores in the ``probes`` nearest lists
        (``coarse``: (Q, lists) the queries' inner products with the lists' centroids),
        among the premises of ``mask`` (all when None)."""
        if probes < self.lists:
            assign = np.argpartition(-coarse, probes - 1, axis=1)[:, :probes]
        else:
            assign = np.broadcast_to(np.arange(self.lists), coarse.shape)
        assign = np.ascontiguousarray(assign, dtype=np.int64)  # (Q, probes)
        distances = np.ascontiguousarray(np.take_along_axis(coarse, assign, axis=1))
        ids = np.empty((len(queries), count), dtype=np.int64)
        scores = np.empty((len(queries), count), dtype=np.float32)
        params, _bitmap = _selecting(faiss.SearchParametersIVF(), mask)
        params.nprobe = probes
        # The raw SWIG method: faiss's numpy wrapper of it refuses search parameters.
        self._ivf.search_preassigned_c(  # type: ignore[attr-defined]
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
        """The float16 vectors' inner products with the queries, for candidates ``ids``
        (Q, C), in float32. Query by query, so that a query's scores are the same bits in
        any batch."""
        scores = np.full(ids.shape, -np.inf, dtype=np.float32)
        for q, row in enumerate(ids):
            found = row >= 0
            scores[q, found] = self.vectors[row[found]].astype(np.float32) @ queries[q]  # (C, d) @ (d,)
        return scores


class DeviceScorer:
    """Every premise's vector on a torch device (the GPU the encoder runs on): one masked
    matrix product per batch, exact, as ReProver retrieves. The vectors keep the precision
    they come in (the embedding store's float16: half of float32's memory, and no second
    rounding); products are taken in float32, so the ranking is float32's."""

    rerank = 1

    def __init__(self, embeddings: np.ndarray, device: str) -> None:
        import torch

        n, d = embeddings.shape
        dtype = torch.float16 if embeddings.dtype == np.float16 else torch.float32
        self._matrix = torch.empty((n, d), dtype=dtype, device=device)  # (N, d)
        for start in range(0, n, CHUNK):
            rows = torch.from_numpy(np.ascontiguousarray(embeddings[start : start + CHUNK]))
            self._matrix[start : start + len(rows)] = rows.to(device=device, dtype=dtype)
        # Premises widened to float32 at a time: about 256 MB of them.
        self._block = max(1, (1 << 26) // d)
        self._mask: tuple[np.ndarray, torch.Tensor] | None = None  # the last mask, on the device
        self.nbytes = self._matrix.element_size() * self._matrix.nelement()

    def search(self, queries: np.ndarray, count: int, allowed: list[Allowed] | None) -> tuple[np.ndarray, np.ndarray]:
        import torch

        matrix = self._matrix
        with torch.inference_mode():
            q = torch.from_numpy(queries).to(matrix.device)  # (Q, d) float32
            scores = torch.empty((len(queries), len(matrix)), dtype=torch.float32, device=matrix.device)  # (Q, N)
            for start in range(0, len(matrix), self._block):
                block = matrix[start : start + self._block]
                scores[:, start : start + len(block)] = q @ block.float().T
            for group in allowed or []:
                rows = torch.from_numpy(group.rows).to(matrix.device)
                scores[rows] = scores[rows].masked_fill(~self._on_device(group.mask), -torch.inf)
            values, ids = torch.topk(scores, count, dim=1)
            ids = torch.where(torch.isfinite(values), ids, -1)
            return ids.cpu().numpy(), values.cpu().numpy()

    def _on_device(self, mask: np.ndarray) -> torch.Tensor:
        """``mask`` on the device; proof search passes one array for all goals of a theorem,
        so the last one is kept there."""
        import torch

        if self._mask is None or self._mask[0] is not mask:
            self._mask = (mask, torch.from_numpy(mask).to(self._matrix.device))
        return self._mask[1]


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


def _list_of_each(ivf: faiss.IndexIVF, n: int) -> np.ndarray:
    """(N,) int32: the list each of the ``n`` premises was added to."""
    out = np.empty(n, dtype=np.int32)
    lists = ivf.invlists
    assert lists is not None, "a trained, filled IVF index has its lists"
    for number in range(ivf.nlist):
        size = lists.list_size(number)
        if size:
            out[faiss.rev_swig_ptr(lists.get_ids(number), size)] = number
    return out
