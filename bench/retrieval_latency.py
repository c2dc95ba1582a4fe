"""Premise retrieval latency at Mathlib scale: the reference way against PremiseIndex.

    nice python bench/retrieval_latency.py [--quick] [--json OUT] [--sizes 20000 200000] [--dims 384 1472]
        [--batch 64] [--probes 256] [--lists-per-sqrt 2.0] [--rerank 8] [--code-width 4]

Synthetic clustered unit embeddings, seeded: 100 topics of 20 sub-topics each; a premise
or a goal is a sub-topic's centre plus Gaussian noise (``--noise``), scaled to unit length.
Premises come in files of 50; each goal may use the premises of a random 30% of the files
(``--density``). Batches come in two shapes: every goal with its own mask (goals of as many
theorems, one each), and goals of few theorems (``--goals-per-theorem``, default 16: four
theorems per batch of 64), each theorem's goals sharing one mask array, as one proof search
passes it for all its goals. Top 10, one thread (faiss and BLAS).

Rows, for each width d and corpus size N:

* ``reference``: what ReProver/LeanAgent do: a matrix product with every premise, a full
  argsort, then a Python walk down the ranking keeping accessible premises until k (a
  batch shares the matrix product, each query its argsort and walk);
* ``exact``: ``PremiseIndex(..., exact=True)``: faiss flat inner product, a bitmap selector
  for one query, one BLAS product for a batch, each row's disallowed premises dropped;
* ``approximate``: ``PremiseIndex(..., exact=False)``: IVF over 4-bit PQ fast-scan codes,
  re-scored with 8-bit codes; a batch's goals that share a mask are searched in one call
  through its selector, the others in one unrestricted call filtered per goal.

Both indexes are given float16 embeddings, as the embedding store keeps them. Recall@10 is
against the exact masked top 10 over the float32 embeddings (the reference's answer), so
the exact row's recall is what float16 storage costs. ``speedup`` is the reference's
one-query latency over the row's; ``gain`` is the row's batched throughput over its own
one-by-one throughput for the same goals and masks (``own masks`` and ``per theorem``);
``differ`` counts the goals whose batched top 10 is not the set one by one gave (ties).
Memory: the index's structures (float32 = N x d x 4 bytes).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread: numpy's BLAS reads it at import
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faiss  # noqa: E402
import numpy as np  # noqa: E402

from agent.output import table  # noqa: E402
from retrieval.index import IndexOptions, PremiseIndex  # noqa: E402

K = 10
FILE_SIZE = 50


class _Corpus:
    """What PremiseIndex needs of a corpus here: its size."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


def clustered(n: int, d: int, *, noise: float, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    """``n`` unit vectors near random sub-topic centres (float32, (n, d))."""
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, 20_000):
        m = min(20_000, n - start)
        x = centres[rng.integers(0, len(centres), m)] + noise * rng.standard_normal((m, d), dtype=np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def centres_of(d: int, rng: np.random.Generator) -> np.ndarray:
    topics = rng.standard_normal((100, d), dtype=np.float32)
    return (topics[:, None, :] + 0.8 * rng.standard_normal((100, 20, d), dtype=np.float32)).reshape(-1, d)


def reference_search(embeddings: np.ndarray, queries: np.ndarray, masks: list[np.ndarray]) -> list[list[int]]:
    """ReProver's retrieve: scores for every premise, a full argsort, a walk down it."""
    scores = queries @ embeddings.T  # (Q, N)
    out = []
    for row, mask in zip(np.argsort(-scores, axis=1), masks, strict=True):
        kept: list[int] = []
        for i in row.tolist():
            if mask[i]:
                kept.append(i)
                if len(kept) == K:
                    break
        out.append(kept)
    return out


def timed(search: Callable[[np.ndarray, list[np.ndarray]], list[list[int]]], queries, masks, batch: int):
    """(seconds per query one by one, seconds per query in batches, the one-by-one results,
    how many batched results are another set)."""
    start = time.perf_counter()
    single = [search(q[None], [m])[0] for q, m in zip(queries, masks, strict=True)]
    one = (time.perf_counter() - start) / len(queries)
    start = time.perf_counter()
    batched = []
    for b in range(0, len(queries), batch):
        batched += search(queries[b : b + batch], masks[b : b + batch])
    many = (time.perf_counter() - start) / len(queries)
    differ = sum(set(b) != set(s) for b, s in zip(batched, single, strict=True))
    return one, many, single, differ


def recall(found: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))


def measure(n: int, d: int, args: argparse.Namespace) -> list[dict]:
    rng = np.random.default_rng(args.seed)
    centres = centres_of(d, rng)
    embeddings = clustered(n, d, noise=args.noise, rng=rng, centres=centres)
    queries = clustered(args.queries, d, noise=args.noise, rng=rng, centres=centres)
    files = np.arange(n) // FILE_SIZE
    masks = [rng.random(files[-1] + 1)[files] < args.density for _ in queries]
    theorems = [rng.random(files[-1] + 1)[files] < args.density for _ in range(0, len(queries), args.goals_per_theorem)]
    shared = [theorems[q // args.goals_per_theorem] for q in range(len(queries))]  # one array per theorem
    stored = embeddings.astype(np.float16)  # what the embedding store gives
    rows = []

    few = args.reference_queries
    batch = min(args.batch, few)
    one, many, _, _ = timed(lambda q, m: reference_search(embeddings, q, m), queries[:few], masks[:few], batch)
    one_shared, many_shared, _, _ = timed(
        lambda q, m: reference_search(embeddings, q, m), queries[:few], shared[:few], batch
    )
    exact_truth = reference_search(embeddings, queries, masks)
    rows.append(
        dict(method="reference", build=0.0, memory=n * d * 4, recall=1.0, differ=0, differ_shared=0)
        | dict(one=one, many=many, one_shared=one_shared, many_shared=many_shared)
    )
    reference_one = one
    for method, exact in (("exact", True), ("approximate", False)):
        start = time.perf_counter()
        index = PremiseIndex(_Corpus(n), stored, exact=exact, options=args.options)
        build = time.perf_counter() - start

        def search(q: np.ndarray, m: list[np.ndarray], index: PremiseIndex = index) -> list[list[int]]:
            return [[h.index for h in hits] for hits in index.search(q, K, allowed=m)]

        one, many, found, differ = timed(search, queries, masks, args.batch)
        one_shared, many_shared, _, differ_shared = timed(search, queries, shared, args.batch)
        rows.append(
            dict(method=method, build=build, memory=index.nbytes, recall=recall(found, exact_truth))
            | dict(one=one, many=many, differ=differ)
            | dict(one_shared=one_shared, many_shared=many_shared, differ_shared=differ_shared)
        )
        del index
    for row in rows:
        row.update(premises=n, d=d, speedup=reference_one / row["one"], batch_gain=row["one"] / row["many"])
        row["batch_gain_shared"] = row["one_shared"] / row["many_shared"]
        row["memory_vs_float32"] = row["memory"] / (n * d * 4)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k premises at d = 384 only")
    parser.add_argument("--json", metavar="OUT", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 1472])
    parser.add_argument("--queries", type=int, default=256, help="goals searched per row")
    parser.add_argument("--reference-queries", type=int, default=32, help="goals the slow reference searches")
    parser.add_argument("--batch", type=int, default=64, help="goals per batched search")
    parser.add_argument("--goals-per-theorem", type=int, default=16, help="goals sharing a mask, second shape")
    parser.add_argument("--density", type=float, default=0.3, help="share of the files a goal may use")
    parser.add_argument("--noise", type=float, default=1.0, help="spread around the sub-topic centres")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probes", type=int, default=IndexOptions().probes, help="IVF lists scanned per goal")
    parser.add_argument(
        "--lists-per-sqrt", type=float, default=IndexOptions().lists_per_sqrt, help="IVF lists per sqrt(premises)"
    )
    parser.add_argument("--rerank", type=int, default=IndexOptions().rerank, help="candidates re-scored per result")
    parser.add_argument("--code-width", type=int, default=IndexOptions().code_width, help="dimensions per 4-bit code")
    args = parser.parse_args(argv)
    args.options = IndexOptions(
        probes=args.probes, lists_per_sqrt=args.lists_per_sqrt, rerank=args.rerank, code_width=args.code_width
    )
    if args.quick:
        args.sizes, args.dims, args.queries = [20_000], [384], 128
    faiss.omp_set_num_threads(1)
    results = []
    for d in args.dims:
        for n in args.sizes:
            results += measure(n, d, args)
            print(f"d={d} N={n} done", file=sys.stderr)
    headers = [
        "method",
        "premises",
        "d",
        "build s",
        "memory MB",
        "vs float32",
        "1 query ms",
        "speedup",
        "batch ms/query",
        "gain, own masks",
        "differ",
        "batch ms/query, per theorem",
        "gain, per theorem",
        "differ, per theorem",
        "recall@10",
    ]
    body = [
        [
            r["method"],
            r["premises"],
            r["d"],
            round(r["build"], 1),
            round(r["memory"] / 2**20, 1),
            f"{r['memory_vs_float32']:.0%}",
            round(r["one"] * 1e3, 3),
            f"{r['speedup']:.1f}x",
            round(r["many"] * 1e3, 3),
            f"{r['batch_gain']:.1f}x",
            r["differ"],
            round(r["many_shared"] * 1e3, 3),
            f"{r['batch_gain_shared']:.1f}x",
            r["differ_shared"],
            round(r["recall"], 3),
        ]
        for r in results
    ]
    load = os.getloadavg()[0]
    print(
        f"top {K}, {args.density:.0%} of files accessible, one thread, batches of {args.batch} "
        f"(per theorem: {args.goals_per_theorem} goals a mask); "
        f"probes {args.probes} of {args.lists_per_sqrt} x sqrt(N) lists, rerank {args.rerank}; "
        f"load average {load:.2f} on {os.cpu_count()} cores"
    )
    print(table(headers, body))
    if args.json:
        args.json.write_text(
            json.dumps({"load_average": load, "options": dataclasses.asdict(args.options), "rows": results}, indent=2)
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
