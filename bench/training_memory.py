"""Peak memory and time of one retriever training batch, with and without recomputing
activations (gradient checkpointing, :class:`~retrieval.train.ProgressiveTrainer`'s default).

    python bench/training_memory.py [--batch 16] [--json OUT]

One training step of the bundled MiniLM on ``--batch`` examples whose goals and premises are
long enough to fill its 512 positions (the worst batch of a real repository, and what replay's
doubled batches meet more often), InfoNCE, one thread. Each configuration runs in a process of
its own, so that its peak resident memory (``ru_maxrss``) is its own. The weights after the
step are compared across the two (their digest must agree: recomputation changes no weight).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.reports.output import table  # noqa: E402

WORDS = "lemma about sums of natural numbers under a commutative monoid with a bounded order".split()


def child(batch: int, recompute: bool) -> dict[str, object]:
    """Train one step in this process; what it took."""
    import torch

    from lean_env.records import (
        DeclKind,
        IngestBackend,
        LeanFile,
        Position,
        Premise,
        RepoSpec,
        RepoTrace,
        Theorem,
        TheoremStatus,
    )
    from retrieval.corpus import PremiseCorpus
    from retrieval.encoder import TextEncoder
    from retrieval.train import ProgressiveTrainer
    from retrieval.train_config import Consolidation, TrainConfig

    torch.set_num_threads(1)

    def long_text(i: int) -> str:  # ~700 word pieces: more than MiniLM's 512 positions
        return " ".join(f"{WORDS[(i + j) % len(WORDS)]}_{j % 7}" for j in range(350))

    premises = tuple(
        Premise(f"P.p{i}", "P/Facts.lean", Position(i + 1, 1), Position(i + 2, 1), DeclKind.THEOREM, long_text(i))
        for i in range(batch)
    )
    theorems = tuple(
        Theorem(
            f"P.t{i}",
            "P/Main.lean",
            Position(i + 1, 1),
            Position(i + 2, 1),
            long_text(i + 1),
            "by simp",
            TheoremStatus.PROVEN,
            premises=(f"P.p{i}",),
        )
        for i in range(batch)
    )
    files = (LeanFile("P/Facts.lean"), LeanFile("P/Main.lean", ("P.Facts",)))
    trace = RepoTrace(RepoSpec("synthetic/P"), "c0", IngestBackend.SOURCE, None, files, premises, theorems)
    corpus = PremiseCorpus([trace])
    examples = corpus.examples(trace)
    encoder = TextEncoder.load()
    config = TrainConfig(consolidation=Consolidation.NONE, batch_size=batch)
    trainer = ProgressiveTrainer(encoder, config, recompute_activations=recompute)
    start = time.perf_counter()
    trainer.step(corpus, examples)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kilobytes
    return {
        "batch": batch,
        "recompute": recompute,
        "seconds": seconds,
        "peak_bytes": peak,
        "weights": encoder.identity(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[16], help="examples per batch (replay doubles it)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", nargs=2, metavar=("BATCH", "RECOMPUTE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1] == "1")))
        return 0
    rows = []
    for batch in args.batch:
        for recompute in (False, True):
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(batch), str(int(recompute))],
                check=True,
                capture_output=True,
                text=True,
            )
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    by_batch: dict[int, set[str]] = {}
    for row in rows:
        by_batch.setdefault(int(row["batch"]), set()).add(str(row["weights"]))
    same = all(len(digests) == 1 for digests in by_batch.values())
    print(
        table(
            ["batch", "recompute", "peak GB", "seconds"],
            [
                [
                    r["batch"],
                    "yes" if r["recompute"] else "no",
                    round(r["peak_bytes"] / 2**30, 2),
                    round(r["seconds"], 1),
                ]
                for r in rows
            ],
        )
    )
    print(f"weights after the step {'identical' if same else 'DIFFER'} with and without recomputation")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "same_weights": same}, indent=2) + "\n", encoding="utf-8")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
