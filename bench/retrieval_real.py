"""Recall of the approximate index on real MiniLM embeddings, not synthetic clusters.

    nice python bench/retrieval_real.py [--premises 20000] [--probes 32 64] [--rerank 4 8] [--json OUT]

Premises are the ``def name(args):`` lines of this Python's site-packages (longer than 12
characters, cut at 200), a source file standing for a Lean file; a seeded random
``--premises`` of them are the corpus and 256 others the goals, each goal allowed the
premises of its own random 30% of the files. They are embedded with the bundled MiniLM
through an :class:`~retrieval.embeddings.EmbeddingStore` in ``--store``, so only the first
run embeds (228 s for 50k, 611 s for 200k, on one core).

For every combination of the options given, the approximate index (``exact=False``, which
the default would not choose below 52k premises; with a recall target of 0, so that its
calibration keeps the setting given) is built over the stored float16 vectors and compared
with the exact masked top 10 over the same vectors: *id recall* is the share
of the exact top 10's ids found; *score recall* the share of the found premises whose exact
score reaches the exact 10th (the corpus has duplicate signatures, whose ids tie where
their scores do not). Milliseconds per goal are one by one, one thread.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import sysconfig
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread: numpy's BLAS reads it at import
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faiss  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from agent.reports.output import table  # noqa: E402
from retrieval.embeddings import EmbeddingStore  # noqa: E402
from retrieval.encoder import TextEncoder  # noqa: E402
from retrieval.index import IndexOptions, PremiseIndex  # noqa: E402

K = 10
GOALS = 256
_DEF = re.compile(r"^\s*def\s+(\w+\(.*)$")


class _Corpus:
    """What PremiseIndex needs of a corpus here: its size."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


def signatures(root: Path) -> tuple[list[str], list[int]]:
    """Every function signature under ``root`` and the number of the file it is in."""
    texts, files = [], []
    for number, path in enumerate(sorted(root.rglob("*.py"))):
        try:
            lines = path.read_text(errors="ignore").splitlines()
        except OSError:
            continue
        for line in lines:
            found = _DEF.match(line)
            if found and len(found.group(1)) > 12:
                texts.append(found.group(1)[:200])
                files.append(number)
    return texts, files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--premises", type=int, default=20_000)
    parser.add_argument("--store", type=Path, default=Path("/tmp/leanagent-retrieval-real"), help="embedding store")
    parser.add_argument("--json", metavar="OUT", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    defaults = IndexOptions()
    parser.add_argument("--lists-per-sqrt", type=float, nargs="+", default=[defaults.lists_per_sqrt])
    parser.add_argument("--probes", type=int, nargs="+", default=[defaults.probes])
    parser.add_argument("--rerank", type=int, nargs="+", default=[defaults.rerank])
    parser.add_argument("--code-width", type=int, nargs="+", default=[defaults.code_width])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    faiss.omp_set_num_threads(1)

    texts, files = signatures(Path(sysconfig.get_paths()["purelib"]))
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(texts))
    keep, goals = np.sort(order[: args.premises]), order[args.premises : args.premises + GOALS]
    store = EmbeddingStore(args.store)
    encoder = TextEncoder.load()
    start = time.perf_counter()
    stored = store.embeddings(encoder, [texts[i] for i in keep] + [texts[i] for i in goals])
    embedded = time.perf_counter() - start
    premises, queries = stored[: len(keep)], stored[len(keep) :].astype(np.float32)
    file_of = np.asarray(files)[keep]
    numbers = np.unique(file_of)
    masks = [np.isin(file_of, numbers[rng.random(len(numbers)) < 0.3]) for _ in goals]

    widened = premises.astype(np.float32)
    exact = []  # (ids, 10th score) per goal
    for query, mask in zip(queries, masks, strict=True):
        scores = np.where(mask, widened @ query, -np.inf)
        top = np.argsort(-scores, kind="stable")[:K]
        exact.append((set(top.tolist()), scores[top[-1]]))
    rows = []
    grid = itertools.product(args.lists_per_sqrt, args.probes, args.rerank, args.code_width)
    for per_sqrt, probes, rerank, width in grid:
        options = IndexOptions(
            lists_per_sqrt=per_sqrt, probes=probes, rerank=rerank, code_width=width, recall_target=0.0
        )
        index = PremiseIndex(_Corpus(len(keep)), premises, exact=False, options=options)
        start = time.perf_counter()
        found = [index.search(q, K, allowed=[m])[0] for q, m in zip(queries, masks, strict=True)]
        one = (time.perf_counter() - start) / len(queries)
        ids = np.mean([len({h.index for h in hits} & truth) / K for hits, (truth, _) in zip(found, exact, strict=True)])
        reached = np.mean(
            [
                np.mean([widened[h.index] @ q >= tenth - 1e-6 for h in hits])
                for hits, q, (_, tenth) in zip(found, queries, exact, strict=True)
            ]
        )
        rows.append(
            dict(lists_per_sqrt=per_sqrt, probes=probes, rerank=rerank, code_width=width, lists=index._scorer.lists)
            | dict(one=one, id_recall=ids, score_recall=reached, memory_vs_float32=index.nbytes / widened.nbytes)
        )
        print(f"{rows[-1]}", file=sys.stderr)
    load = os.getloadavg()[0]
    print(
        f"{len(keep)} of {len(texts)} signatures, {len(goals)} goals, 30% of files accessible, top {K}, one thread; "
        f"embedding took {embedded:.0f} s; load average {load:.2f} on {os.cpu_count()} cores"
    )
    headers = ["lists", "probes", "rerank", "code width", "vs float32", "1 query ms", "id recall@10"]
    headers.append("score recall@10")
    body = [
        [
            r["lists"],
            r["probes"],
            r["rerank"],
            r["code_width"],
            f"{r['memory_vs_float32']:.0%}",
            round(r["one"] * 1e3, 3),
        ]
        + [round(r["id_recall"], 3), round(r["score_recall"], 3)]
        for r in rows
    ]
    print(table(headers, body))
    if args.json:
        args.json.write_text(json.dumps({"load_average": load, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
