"""The premise index: exact below its size threshold, approximate (IVF fast scan + float16
re-scoring) above, calibrated to its recall target or exact where it cannot meet it, exact
on a torch device; never a premise outside the query's mask, the same results batched as
one by one (up to ties), and on small corpora the exact top k of a brute-force reference."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.index import IndexKind, IndexOptions, PremiseIndex
from retrieval.scorers import distinct_masks


class _Sized:
    """A corpus as the index sees it: a length."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


def _clustered(sizes: Sequence[int], d: int, seed: int) -> list[np.ndarray]:
    """Arrays of unit vectors (premises, goals) around 40 shared random centres (an
    embedding space has topics, and goals are near the premises they use)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, d))
    out = []
    for n in sizes:
        x = centres[rng.integers(0, 40, n)] + 0.8 * rng.standard_normal((n, d))
        out.append((x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32))
    return out


def _brute_force(embeddings: np.ndarray, query: np.ndarray, mask: np.ndarray, k: int) -> list[int]:
    scores = np.where(mask, embeddings @ query, -np.inf)
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k] if mask[i]]


N, D = 3000, 384
EMBEDDINGS, QUERIES = _clustered([N, 24], D, seed=1)
# Small lists so that a few of them are probed: the approximate path is really exercised
# (a target of 0 keeps the calibration from scanning more).
FEW_PROBES = IndexOptions(probes=4, recall_target=0.0)
APPROXIMATE = PremiseIndex(_Sized(N), EMBEDDINGS.astype(np.float16), exact=False, options=FEW_PROBES)
EXACT = PremiseIndex(_Sized(N), EMBEDDINGS, exact=True)


def _mask(rng: np.random.Generator, kind: str) -> np.ndarray:
    """Masks as theorems have them: a share of files (runs of 50 premises), a few
    premises, every one, none."""
    if kind == "files":
        return np.repeat(rng.random(N // 50 + 1) < rng.uniform(0.02, 0.9), 50)[:N]
    if kind == "few":
        mask = np.zeros(N, dtype=bool)
        mask[rng.choice(N, size=int(rng.integers(1, 12)), replace=False)] = True
        return mask
    return np.full(N, kind == "all")


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    kinds=st.lists(st.sampled_from(["files", "files", "few", "all", "none"]), min_size=1, max_size=6),
    k=st.sampled_from([1, 5, 10, 40]),
)
def test_the_approximate_index_returns_only_allowed_premises_and_as_many_as_it_can(seed, kinds, k) -> None:
    rng = np.random.default_rng(seed)
    masks = [_mask(rng, kind) for kind in kinds]
    queries = QUERIES[rng.choice(len(QUERIES), size=len(masks))]
    batched = APPROXIMATE.search(queries, k, allowed=masks)
    shared, found = 0, 0
    for query, mask, hits in zip(queries, masks, batched, strict=True):
        ids = [h.index for h in hits]
        assert all(mask[i] for i in ids), "an inaccessible premise was returned"
        assert len(ids) == len(set(ids)) == min(k, int(mask.sum()))
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        (alone,) = APPROXIMATE.search(query, k, allowed=[mask])
        shared, found = shared + len({h.index for h in alone} & set(ids)), found + len(ids)
    # The same candidates but where 4-bit scores tie at the last place a query keeps: a tie
    # swaps one candidate, which can change one result (with k = 1, a whole query's).
    assert shared >= 0.95 * found or found - shared <= 1, "a batch must find what its queries find one by one"


@pytest.mark.parametrize(
    "options, at_least",
    [
        pytest.param(FEW_PROBES, 0.95, id="few-lists"),
        # Every list scanned and every candidate re-scored: exact but for float16's rounding.
        pytest.param(IndexOptions(probes=1 << 20, rerank=N, max_rerank=N), 0.999, id="everything-re-scored"),
    ],
)
def test_the_approximate_index_finds_nearly_the_exact_top_k(options: IndexOptions, at_least: float) -> None:
    index = PremiseIndex(_Sized(N), EMBEDDINGS.astype(np.float16), exact=False, options=options)
    rng = np.random.default_rng(0)
    masks = [_mask(rng, "files") for _ in QUERIES]
    found = index.search(QUERIES, 10, allowed=masks)
    recall = [
        len({h.index for h in hits} & set(_brute_force(EMBEDDINGS, q, m, 10))) / min(10, m.sum())
        for q, m, hits in zip(QUERIES, masks, found, strict=True)
        if m.any()
    ]
    assert np.mean(recall) >= at_least


@pytest.mark.parametrize(
    "kind, k, batch",
    [
        pytest.param("files", 10, 1, id="files-one-query"),
        pytest.param("files", 10, 8, id="files-batch"),
        pytest.param("few", 10, 8, id="fewer-allowed-than-k"),
        pytest.param("all", 3, 8, id="everything-allowed"),
        pytest.param("none", 5, 4, id="nothing-allowed"),
    ],
)
def test_a_small_corpus_is_searched_exactly(kind: str, k: int, batch: int) -> None:
    index = PremiseIndex(_Sized(N), EMBEDDINGS)  # below the threshold: exact
    assert index.exact
    rng = np.random.default_rng(3)
    masks = [_mask(rng, kind) for _ in range(batch)]
    queries = QUERIES[:batch]
    for query, mask, hits in zip(queries, masks, index.search(queries, k, allowed=masks), strict=True):
        assert [h.index for h in hits] == _brute_force(EMBEDDINGS, query, mask, k)
        assert [h.score for h in hits] == pytest.approx([float(EMBEDDINGS[h.index] @ query) for h in hits], abs=1e-5)


@pytest.mark.parametrize(
    "exact, work, expected",
    [
        pytest.param(None, N * D, True, id="small-by-size"),
        pytest.param(None, N * D - 1, False, id="large-by-size"),
        pytest.param(True, 0, True, id="forced-exact"),
        pytest.param(False, N * D, False, id="forced-approximate"),
    ],
)
def test_the_index_chooses_by_size_unless_told(exact: bool | None, work: int, expected: bool) -> None:
    index = PremiseIndex(_Sized(N), EMBEDDINGS, exact=exact, options=IndexOptions(exact_work=work))
    assert index.exact is expected
    assert index.quality.kind is (IndexKind.EXACT if expected else IndexKind.APPROXIMATE)
    (hits,) = index.search(QUERIES[0], 5)
    assert len(hits) == 5


@pytest.mark.parametrize(
    "queries, masks",
    [
        pytest.param(2, [np.ones(N, dtype=bool)], id="fewer-masks-than-queries"),
        pytest.param(1, [np.ones(N - 1, dtype=bool)], id="a-mask-too-short"),
    ],
)
def test_masks_that_do_not_fit_are_refused(queries: int, masks: list[np.ndarray]) -> None:
    with pytest.raises(ValueError, match="mask"):
        APPROXIMATE.search(QUERIES[:queries], 5, allowed=masks)


def test_the_approximate_index_takes_little_more_than_half_of_float32() -> None:
    """float16 vectors for re-scoring (half of float32) and the 4-bit lists (d/8 bytes each)."""
    assert APPROXIMATE.nbytes <= 0.6 * EXACT.nbytes


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    theorems=st.lists(st.sampled_from(["files", "files", "few", "all", "none"]), min_size=1, max_size=4),
    goals=st.integers(2, 12),
    k=st.sampled_from([1, 10, 40]),
)
def test_goals_sharing_a_mask_get_exactly_what_each_gets_alone(seed, theorems, goals, k) -> None:
    """Proof search passes one mask array for every goal of a theorem; a batch of such goals
    (interleaved, some passing an equal copy instead) is searched per mask through its
    selector, so scores and ids equal the one-by-one search's, ties included. (The exact
    index multiplies a batch in one BLAS product, whose scores round differently.)"""
    rng = np.random.default_rng(seed)
    masks = [_mask(rng, kind) for kind in theorems]
    chosen = rng.integers(0, len(masks), size=goals)
    allowed = [masks[t] if rng.random() < 0.7 else masks[t].copy() for t in chosen]
    queries = QUERIES[rng.choice(len(QUERIES), size=goals)]
    batched = APPROXIMATE.search(queries, k, allowed=allowed)
    for query, mask, hits in zip(queries, allowed, batched, strict=True):
        (alone,) = APPROXIMATE.search(query, k, allowed=[mask])
        assert [(h.index, h.score) for h in hits] == [(h.index, h.score) for h in alone]
        assert all(mask[h.index] for h in hits), "an inaccessible premise was returned"


def _moved(mask: np.ndarray) -> np.ndarray:
    """``mask`` with one allowed premise near its start swapped for a disallowed one: the
    same size and the same flags where a batch samples them (every 4099th from 0)."""
    other = mask.copy()
    on, off = np.flatnonzero(mask)[1], np.flatnonzero(~mask)[1]
    other[on], other[off] = False, True
    return other


_BASE = np.random.default_rng(5).random(200_000) < 0.3


@pytest.mark.parametrize(
    "masks, groups",
    [
        pytest.param([_BASE, _BASE, _BASE], [[0, 1, 2]], id="one-array"),
        pytest.param([_BASE, _BASE.copy(), _BASE], [[0, 1, 2]], id="an-equal-copy"),
        pytest.param([_BASE, _moved(_BASE), _BASE], [[0, 2], [1]], id="same-size-and-sample"),
        pytest.param([_BASE, ~_BASE], [[0], [1]], id="different"),
    ],
)
def test_a_batch_is_grouped_by_mask_content(masks: list[np.ndarray], groups: list[list[int]]) -> None:
    assert [group.rows.tolist() for group in distinct_masks(masks, 40)] == groups


def _uniform(n: int, d: int, seed: int) -> np.ndarray:
    """Unit vectors with no structure: every neighbour nearly as far as any premise, the
    hardest data for an IVF index and for 4-bit codes."""
    x = np.random.default_rng(seed).standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _recall(index: PremiseIndex, embeddings: np.ndarray, queries: np.ndarray, seed: int) -> float:
    """recall@10 of ``index`` against brute force, on ``queries`` with file masks."""
    rng = np.random.default_rng(seed)
    masks = [_mask(rng, "files") for _ in queries]
    found = [index.search(q, 10, allowed=[m])[0] for q, m in zip(queries, masks, strict=True)]
    return float(
        np.mean(
            [
                len({h.index for h in hits} & set(_brute_force(embeddings, q, m, 10))) / min(10, m.sum())
                for q, m, hits in zip(queries, masks, found, strict=True)
                if m.any()
            ]
        )
    )


def test_the_calibration_scans_more_until_the_target_is_met() -> None:
    """From one list and one candidate per result (far too few), the index raises both until
    its calibration queries' recall reaches the target; queries it never saw agree."""
    options = IndexOptions(exact_work=0, probes=1, rerank=1)
    index = PremiseIndex(_Sized(N), EMBEDDINGS.astype(np.float16), options=options)
    quality = index.quality
    assert quality.kind is IndexKind.APPROXIMATE
    assert quality.recall >= 0.99 and quality.queries == options.calibration_queries
    assert (quality.probes or 0) > 1 or (quality.rerank or 0) > 1, "one list and one candidate cannot be enough"
    assert _recall(index, EMBEDDINGS, QUERIES, seed=11) >= 0.97


UNIFORM = _uniform(N, 64, seed=2)
# A ceiling of 8 candidates per result: 4-bit codes cannot order structureless vectors that far.
LOW_CEILING = IndexOptions(exact_work=0, max_rerank=8)


def test_an_index_that_cannot_meet_its_target_is_exact() -> None:
    index = PremiseIndex(_Sized(N), UNIFORM, options=LOW_CEILING)
    assert index.exact and index.quality.kind is IndexKind.EXACT
    assert "short of the target 0.99" in index.quality.why
    queries = _uniform(16, 64, seed=3)
    assert _recall(index, UNIFORM, queries, seed=4) == 1.0


def test_a_forced_approximate_index_says_how_short_it_falls() -> None:
    index = PremiseIndex(_Sized(N), UNIFORM, exact=False, options=LOW_CEILING)
    quality = index.quality
    assert quality.kind is IndexKind.APPROXIMATE and quality.recall < 0.99
    assert quality.probes == quality.lists and quality.rerank == 8, "it scans as much as it may first"
    assert quality.to_json()["recall_at_10"] == round(quality.recall, 4)
    assert "recall@10" in quality.text() and "target 0.99" in quality.text()


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.parametrize(
    "device",
    [
        pytest.param("cpu", id="cpu"),
        pytest.param("cuda", id="cuda", marks=pytest.mark.skipif(not _cuda(), reason="no GPU (torch sees no CUDA)")),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
@pytest.mark.parametrize("kind, k, batch", [("files", 10, 1), ("files", 10, 6), ("few", 10, 3), ("none", 4, 2)])
def test_the_device_index_is_exact(device: str, dtype: type, kind: str, k: int, batch: int) -> None:
    """The GPU path (every vector on the device, one masked product), on the CPU and, where
    one is lent, on a GPU: the brute-force top k of the vectors as given, scores in float32.
    Exact by construction, it checks none of its served queries."""
    stored = EMBEDDINGS.astype(dtype)
    index = PremiseIndex(_Sized(N), stored, device=device)
    assert index.quality.kind is IndexKind.DEVICE and index.exact
    widened = stored.astype(np.float32)
    rng = np.random.default_rng(8)
    masks = [_mask(rng, kind) for _ in range(batch)]
    for query, mask, hits in zip(QUERIES[:batch], masks, index.search(QUERIES[:batch], k, allowed=masks), strict=True):
        assert [h.index for h in hits] == _brute_force(widened, query, mask, k)
        assert [h.score for h in hits] == pytest.approx([float(widened[h.index] @ query) for h in hits], abs=1e-5)
    (unmasked,) = index.search(QUERIES[0], k)
    assert [h.index for h in unmasked] == _brute_force(widened, QUERIES[0], np.ones(N, dtype=bool), k)
    assert index.quality.served_recall is None and index.quality.served_queries == 0


@pytest.mark.parametrize(
    "options, message",
    [
        pytest.param(dict(recall_target=1.5), "between 0 and 1", id="target-above-1"),
        pytest.param(dict(calibration_queries=0), "a query at least", id="no-calibration-query"),
        pytest.param(dict(served_check_share=1.5), "share of search time", id="checks-over-all-search-time"),
        pytest.param(dict(served_margin=-0.1), "share of the misses", id="negative-margin"),
        pytest.param(dict(served_min_checks=0), "1 to served_pool", id="no-check-before-the-ladder"),
        pytest.param(dict(served_min_checks=300), "1 to served_pool", id="more-checks-than-kept"),
    ],
)
def test_options_out_of_range_are_refused(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IndexOptions(**options)
