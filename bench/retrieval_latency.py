"""Premise retrieval latency and recall at Mathlib scale, on several kinds of data: the
reference way against PremiseIndex as it chooses itself, on goals from the premises'
distribution and from elsewhere.

    nice python bench/retrieval_latency.py [--quick] [--json OUT]
        [--data clustered gaussian real random-goals shifted-goals mixture-goals]
        [--sizes 200000] [--dims 384 1472] [--device cpu|cuda] [--recall-target 0.99]
        [--warmup 300] [--goal-calibration 128]

Data, seeded (premises come in files of 50, or real files; each goal may use the premises
of its own random 30% of the files, ``--density``):

* ``clustered``: 100 topics of 20 sub-topics each; a premise or a goal is a sub-topic's
  centre plus Gaussian noise (``--noise``), scaled to unit length;
* ``gaussian``: unit vectors with no structure at all (every neighbour nearly as far as any
  premise: the hardest case for an IVF index and its 4-bit codes);
* ``real``: the bundled MiniLM's embeddings (d = 384 only) of the ``def name(args):`` lines
  of this Python's site-packages, a source file standing for a Lean file, through an
  embedding store in ``--store`` (the first run embeds: ~10 min for 200k on one core);
  the same selection as ``bench/retrieval_real.py``;
* goals off the premises' distribution (issue 41), the premises ``clustered``'s:
  ``random-goals`` in random directions; ``shifted-goals`` the premises' sub-topics all
  moved one way (a random direction of length ``--shift`` per dimension) plus noise;
  ``mixture-goals`` drawn from another mixture of 100 x 20 clusters.

Rows, for each kind, width d and corpus size N (top 10, one thread for faiss and BLAS):

* ``reference``: what ReProver/LeanAgent do: a matrix product with every premise, a full
  argsort, then a Python walk down the ranking keeping accessible premises until k;
* ``exact``: ``PremiseIndex(..., exact=True)``: faiss flat inner product, a bitmap selector;
* ``index``: ``PremiseIndex(...)`` as a user gets it through the contract API: exact up to
  ``exact_work``, else the approximate index calibrated on held-out premises to
  ``--recall-target``, or exact where it cannot meet it; it first serves ``--warmup`` goals
  (answering a share of them exactly too, and scanning more or turning exact when they fall
  short: retrieval/served.py), then the goals timed; the row says what it became, the recall
  it measured on the served goals, and the recall of the warm-up goals;
* ``index+goals`` (``--goal-calibration`` > 0): the same, given ``--goal-calibration`` other
  goals of the kind it serves to calibrate on beside the held-out premises, as an index built
  for proving or evaluation is given goal states of the stored theorems;
* ``device`` (with ``--device``): every vector on that torch device, one masked product.

The indexes are given float16 embeddings, as the embedding store keeps them. Recall@10 is
against the exact masked top 10 over the float32 embeddings (the reference's answer), by
score (a premise found counts when its exact score reaches the exact 10th: the real corpus
states some signatures twice), on goals the calibration never saw; ``speedup`` is the
reference's latency over the row's, on the goals timed (after the warm-up). Memory: the
index's structures (float32 = N x d x 4 bytes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread: numpy's BLAS reads it at import
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faiss  # noqa: E402
import numpy as np  # noqa: E402

from agent.reports.output import table  # noqa: E402
from retrieval.calibration import GoalQueries  # noqa: E402
from retrieval.index import IndexKind, IndexOptions, PremiseIndex  # noqa: E402

K = 10
FILE_SIZE = 50


class _Corpus:
    """What PremiseIndex needs of a corpus here: its size."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


@dataclass(frozen=True, slots=True)
class Data:
    """Premises (float32, unit), goals, and each goal's mask."""

    premises: np.ndarray  # (N, d)
    goals: np.ndarray  # (G, d)
    masks: list[np.ndarray]  # G masks over the premises


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _file_masks(files: np.ndarray, goals: int, density: float, rng: np.random.Generator) -> list[np.ndarray]:
    numbers = np.unique(files)
    return [np.isin(files, numbers[rng.random(len(numbers)) < density]) for _ in range(goals)]


def _goal_count(args: argparse.Namespace) -> int:
    """Goals drawn per kind: the warm-up, the goals timed, and those to calibrate on."""
    return args.warmup + args.queries + args.goal_calibration


def _centres(d: int, rng: np.random.Generator) -> np.ndarray:
    """(2000, d): 100 topics of 20 sub-topics each."""
    topics = rng.standard_normal((100, d), dtype=np.float32)
    return (topics[:, None, :] + 0.8 * rng.standard_normal((100, 20, d), dtype=np.float32)).reshape(-1, d)


def _near(centres: np.ndarray, m: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    """(m, d) unit vectors: random ``centres`` plus Gaussian ``noise``, in chunks."""
    d = centres.shape[1]
    out = np.empty((m, d), dtype=np.float32)
    for start in range(0, m, 20_000):
        size = min(20_000, m - start)
        x = centres[rng.integers(0, len(centres), size)]
        out[start : start + size] = _unit(x + noise * rng.standard_normal((size, d), dtype=np.float32))
    return out


def clustered(n: int, d: int, args: argparse.Namespace, goals_from: str = "same") -> Data:
    """Clustered premises; goals from the same clusters (``same``), or from elsewhere:
    random directions, the clusters shifted one way, another mixture of clusters."""
    rng = np.random.default_rng(args.seed)
    centres = _centres(d, rng)
    premises, m = _near(centres, n, args.noise, rng), _goal_count(args)
    if goals_from == "random":
        goals = _unit(rng.standard_normal((m, d), dtype=np.float32))
    elif goals_from == "shifted":
        goals = _near(centres + args.shift * rng.standard_normal(d, dtype=np.float32), m, args.noise, rng)
    elif goals_from == "mixture":
        goals = _near(_centres(d, np.random.default_rng(args.seed + 1)), m, args.noise, rng)
    else:
        goals = _near(centres, m, args.noise, rng)
    return Data(premises, goals, _file_masks(np.arange(n) // FILE_SIZE, len(goals), args.density, rng))


def gaussian(n: int, d: int, args: argparse.Namespace) -> Data:
    rng = np.random.default_rng(args.seed)
    premises = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, 20_000):
        premises[start : start + 20_000] = _unit(rng.standard_normal((min(20_000, n - start), d), dtype=np.float32))
    goals = _unit(rng.standard_normal((_goal_count(args), d), dtype=np.float32))
    return Data(premises, goals, _file_masks(np.arange(n) // FILE_SIZE, len(goals), args.density, rng))


def real(n: int, d: int, args: argparse.Namespace) -> Data | None:
    """MiniLM embeddings of Python signatures (None at another width: no such model offline)."""
    if d != 384:
        return None
    import torch
    from retrieval_real import signatures

    from retrieval.embeddings import EmbeddingStore
    from retrieval.encoder import TextEncoder

    torch.set_num_threads(1)
    texts, files = signatures(Path(sysconfig.get_paths()["purelib"]))
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(texts))
    keep, goals = np.sort(order[:n]), order[n : n + _goal_count(args)]
    stored = EmbeddingStore(args.store).embeddings(
        TextEncoder.load(), [texts[i] for i in keep.tolist() + goals.tolist()]
    )
    widened = stored.astype(np.float32)
    masks = _file_masks(np.asarray(files)[keep], len(goals), args.density, rng)
    return Data(widened[:n], widened[n:], masks)


KINDS: dict[str, Callable[[int, int, argparse.Namespace], Data | None]] = {
    "clustered": clustered,
    "gaussian": gaussian,
    "real": real,
    "random-goals": lambda n, d, args: clustered(n, d, args, "random"),
    "shifted-goals": lambda n, d, args: clustered(n, d, args, "shifted"),
    "mixture-goals": lambda n, d, args: clustered(n, d, args, "mixture"),
}


def reference_search(embeddings: np.ndarray, query: np.ndarray, mask: np.ndarray) -> list[int]:
    """ReProver's retrieve: scores for every premise, a full argsort, a walk down it."""
    kept: list[int] = []
    for i in np.argsort(-(embeddings @ query)).tolist():
        if mask[i]:
            kept.append(i)
            if len(kept) == K:
                break
    return kept


def part(data: Data, start: int, stop: int) -> Data:
    """Goals ``start`` to ``stop`` of ``data``, with their masks."""
    return Data(data.premises, data.goals[start:stop], data.masks[start:stop])


def timed(search: Callable[[np.ndarray, np.ndarray], list[int]], data: Data, goals: int) -> tuple[float, list]:
    """(seconds per goal, results) for the first ``goals`` goals, one by one."""
    start = time.perf_counter()
    found = [search(q, m) for q, m in zip(data.goals[:goals], data.masks[:goals], strict=True)]
    return (time.perf_counter() - start) / goals, found


def tenths(data: Data) -> list[float]:
    """Each goal's exact 10th score (every mask here allows more than 10)."""
    last = []
    for query, mask in zip(data.goals, data.masks, strict=True):
        scores = np.where(mask, data.premises @ query, -np.inf)
        last.append(float(np.partition(scores, len(scores) - K)[len(scores) - K]))
    return last


def recall(data: Data, found: list[list[int]]) -> float:
    """The share of each goal's top 10 that the search found, by score: a premise found counts
    when its exact score reaches the exact 10th (the real corpus states some signatures twice,
    and which of two equal vectors the exact top keeps is arbitrary)."""
    shares = []
    for goal, ids, tenth in zip(data.goals, found, tenths(data), strict=True):
        scores = data.premises[ids] @ goal if ids else np.empty(0)
        shares.append(np.count_nonzero(scores >= tenth - 1e-5) / K)
    return float(np.mean(shares))


def _detail(index: PremiseIndex) -> str:
    quality = index.quality
    if quality.kind is not IndexKind.APPROXIMATE:
        return quality.why
    served = "none" if quality.served_recall is None else f"{quality.served_recall:.3f} on {quality.served_queries}"
    return (
        f"{quality.probes}/{quality.lists} lists, rerank {quality.rerank}; calibrated {quality.recall:.3f} on "
        f"{quality.calibrated_on}; served queries checked: {served}"
    )


def measure(kind: str, n: int, d: int, args: argparse.Namespace) -> list[dict]:
    data = KINDS[kind](n, d, args)
    if data is None:
        return []
    stored = data.premises.astype(np.float16)  # what the embedding store gives
    warmup = part(data, 0, args.warmup)
    goals = part(data, args.warmup, args.warmup + args.queries)
    calibration = part(data, args.warmup + args.queries, len(data.goals))
    rows = []
    reference, _ = timed(lambda q, m: reference_search(data.premises, q, m), goals, args.reference_queries)
    rows.append(dict(method="reference", build=0.0, memory=n * d * 4, one=reference, recall=1.0, detail=""))
    options = IndexOptions(recall_target=args.recall_target)
    built: list[tuple[str, dict]] = [("exact", dict(exact=True)), ("index", {})]
    if args.goal_calibration:
        on_goals = GoalQueries(calibration.goals, calibration.masks)
        built.append(("index+goals", dict(goals=lambda: on_goals)))
    if args.device:
        built.append(("device", dict(device=args.device)))
    for method, chosen in built:
        start = time.perf_counter()
        index = PremiseIndex(_Corpus(n), stored, options=options, **chosen)
        build = time.perf_counter() - start
        built_as = _detail(index)

        def search(q: np.ndarray, m: np.ndarray, index: PremiseIndex = index) -> list[int]:
            return [h.index for h in index.search(q, K, allowed=[m])[0]]

        search(goals.goals[0], goals.masks[0])  # a device's first call sets it up
        row = dict(method=method, build=build, built_as=built_as)
        if method.startswith("index") and args.warmup:
            first, served = timed(search, warmup, args.warmup)
            row |= dict(warmup_one=first, warmup_recall=recall(warmup, served))
        one, found = timed(search, goals, len(goals.goals))
        quality = index.quality
        rows.append(
            row
            | dict(kind=quality.kind.value, memory=index.nbytes, one=one, recall=recall(goals, found))
            | dict(detail=_detail(index), quality=quality.to_json())
        )
        del index
    for row in rows:
        row.update(
            data=kind, premises=n, d=d, speedup=reference / row["one"], memory_vs_float32=row["memory"] / (n * d * 4)
        )
    return rows


def _served(row: dict) -> str:
    """The recall the index measured on the goals it served and checked, and on how many."""
    quality = row.get("quality") or {}
    if quality.get("served_recall_at_10") is None:
        return ""
    measured = f"{quality['served_recall_at_10']:.3f} ({quality['served_queries']})"
    return measured if quality["kind"] == IndexKind.APPROXIMATE.value else f"{measured}: turned exact"


def _rounded(value: float | None, digits: int, scale: float = 1.0) -> str:
    return "" if value is None else f"{value * scale:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k premises at d = 384, clustered and gaussian")
    parser.add_argument("--json", metavar="OUT", type=Path)
    parser.add_argument("--data", nargs="+", choices=list(KINDS), default=list(KINDS))
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 1472])
    parser.add_argument("--device", default=None, help="also search with every vector on this torch device (cuda)")
    parser.add_argument("--recall-target", type=float, default=IndexOptions().recall_target)
    parser.add_argument("--queries", type=int, default=256, help="goals searched per row")
    parser.add_argument("--reference-queries", type=int, default=32, help="goals the slow reference searches")
    parser.add_argument("--density", type=float, default=0.3, help="share of the files a goal may use")
    parser.add_argument("--noise", type=float, default=1.0, help="spread around the clustered data's sub-topics")
    parser.add_argument("--shift", type=float, default=1.0, help="shifted-goals: the shift per dimension")
    parser.add_argument("--warmup", type=int, default=300, help="goals an index serves before those timed")
    parser.add_argument(
        "--goal-calibration", type=int, default=128, help="goals of the kind served that index+goals calibrates on"
    )
    parser.add_argument("--store", type=Path, default=Path("/tmp/leanagent-retrieval-real"), help="embedding store")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.dims, args.queries, args.data = [20_000], [384], 128, ["clustered", "gaussian"]
    faiss.omp_set_num_threads(1)
    results = []
    for kind in args.data:
        for d in args.dims:
            for n in args.sizes:
                results += measure(kind, n, d, args)
                print(f"{kind} d={d} N={n} done", file=sys.stderr)
    headers = ["data", "d", "premises", "method", "kind", "build s", "memory", "ms/goal", "speedup", "recall@10"]
    headers += ["served recall (checked)", "warm-up recall", "warm-up ms"]
    body = [
        [r["data"], r["d"], r["premises"], r["method"], r.get("kind", "")]
        + [round(r["build"], 1), f"{r['memory_vs_float32']:.0%}", round(r["one"] * 1e3, 2), f"{r['speedup']:.1f}x"]
        + [
            round(r["recall"], 3),
            _served(r),
            _rounded(r.get("warmup_recall"), 3),
            _rounded(r.get("warmup_one"), 2, 1e3),
        ]
        for r in results
    ]
    load = os.getloadavg()[0]
    print(
        f"top {K}, {args.density:.0%} of files accessible, one goal at a time, one thread; recall target "
        f"{args.recall_target}; memory against float32; load average {load:.2f} on {os.cpu_count()} cores"
    )
    print(table(headers, body))
    for r in results:
        if r["detail"]:
            print(f"{r['data']} d={r['d']} N={r['premises']} {r['method']}: built {r['built_as']}; now {r['detail']}")
    if args.json:
        payload = {"load_average": load, "recall_target": args.recall_target, "rows": results}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
