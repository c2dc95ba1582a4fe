"""Progressive retriever training against forgetting: none vs EWC vs replay.

    python bench/retrieval_progressive.py [--quick] [--json OUT] [--model NAME|DIR] [--loss mse] [--schedule cosine]

Synthetic repositories, seeded: repository r has premises ``r_p<i> : <fact about word a_i>``
and theorems that mention only a *different* word ``b_i`` (``b_i holds``, ``b_i is true``,
...) and use ``r_p<i>``; the pairing a_i <-> b_i is the repository's own, so nothing in the
text gives it away and it must be learned. Held-out theorems are other phrasings of trained
pairings. The repositories are trained in order, one step each (``retrieval.progressive``),
and the table shows recall@1 on every repository after the last step, the mean forgetting
(best earlier recall@1 minus the final one) and the time, for plain fine-tuning, replay and
EWC at three penalty weights (``--method`` runs a subset). Also the untrained encoder, as
the floor. Default encoder: the bundled MiniLM; ``--quick`` uses two smaller repositories.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.reports.output import table  # noqa: E402
from lean_env.records import (  # noqa: E402
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
from retrieval.encoder import TextEncoder  # noqa: E402
from retrieval.progressive import Learner, run_progressive  # noqa: E402
from retrieval.train_config import Consolidation, Loss, Schedule, TrainConfig  # noqa: E402

NOUNS = (
    "apple river stone cloud tiger maple ocean piano lemon eagle frost amber candle desert falcon garden harbor "
    "island jungle kettle ladder meadow needle orchid pepper quartz rocket saddle temple violin walnut yogurt "
    "zebra anchor bridge castle dragon engine forest glacier hammer"
).split()
PHRASES = ("{} holds", "{} is true", "we know {}", "assume {} then done")


def synthetic_repo(index: int, premises: int, seed: int) -> RepoTrace:
    rng = random.Random(seed * 1000 + index)
    facts = rng.sample(NOUNS, premises)
    cues = rng.sample(NOUNS, premises)
    name = f"Repo{index}"
    premise_records = tuple(
        Premise(
            f"{name}.p{i}",
            f"{name}/Facts.lean",
            Position(i + 1, 1),
            Position(i + 2, 1),
            DeclKind.THEOREM,
            f"theorem {name}.p{i} : {fact} = {fact}",
        )
        for i, fact in enumerate(facts)
    )
    theorems = tuple(
        Theorem(
            f"{name}.use_{i}_{k}",
            f"{name}/Main.lean",
            Position(10 * i + k + 1, 1),
            Position(10 * i + k + 2, 1),
            phrase.format(cue),
            "by simp",
            TheoremStatus.PROVEN,
            premises=(f"{name}.p{i}",),
        )
        for i, cue in enumerate(cues)
        for k, phrase in enumerate(PHRASES)
    )
    files = (LeanFile(f"{name}/Facts.lean"), LeanFile(f"{name}/Main.lean", (f"{name}.Facts",)))
    return RepoTrace(RepoSpec(f"synthetic/{name}"), "c0", IngestBackend.SOURCE, None, files, premise_records, theorems)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 repositories of 12 premises")
    parser.add_argument("--json", metavar="OUT", type=Path)
    parser.add_argument("--model", default=None, help="encoder (default: the bundled MiniLM)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--method",
        action="append",
        default=None,
        help="run only this row (repeatable), e.g. --method replay --method 'ewc λ=1e+10'",
    )
    parser.add_argument("--loss", choices=[loss.value for loss in Loss], default=Loss.INFONCE.value)
    parser.add_argument("--schedule", choices=[s.value for s in Schedule], default=Schedule.CONSTANT.value)
    # 10% of a step's ~50 batches (10 epochs of ~5); the CLI's 1000 is for real repositories.
    parser.add_argument("--warmup-steps", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    repos, premises, epochs = (2, 12, 10) if args.quick else (3, 24, 10)
    traces = [synthetic_repo(i, premises, args.seed) for i in range(repos)]
    names = [t.spec.location.split("/")[-1] for t in traces]
    rows, payload = [], []
    runs = [
        ("untrained", Consolidation.NONE, 0.0),
        ("none", Consolidation.NONE, 0.0),
        ("replay", Consolidation.REPLAY, 0.0),
    ]
    runs += [(f"ewc λ={lam:g}", Consolidation.EWC, lam) for lam in (1e6, 1e8, 1e10)]
    if args.method:
        runs = [r for r in runs if r[0] in args.method]
    for method, consolidation, lam in runs:
        encoder = TextEncoder.load(args.model)
        config = TrainConfig(
            consolidation=consolidation,
            epochs=0 if method == "untrained" else epochs,
            batch_size=16,
            learning_rate=2e-4,
            ewc_lambda=lam,
            loss=Loss(args.loss),
            schedule=Schedule(args.schedule),
            warmup_steps=args.warmup_steps,
            seed=args.seed,
        )
        start = time.perf_counter()
        report = run_progressive(traces, encoder, Learner(config, test_fraction=0.25))
        seconds = time.perf_counter() - start
        final = report.matrix(lambda s: s.recall[1])[-1]
        # Chaudhry et al.'s forgetting measure (docs/lifelong.md); defined: every repository has held-out theorems
        forgetting = report.metrics(lambda s: s.recall[1]).fm
        assert isinstance(forgetting, float), forgetting
        rows.append([method, *final, round(forgetting, 3), round(seconds, 1)])
        payload.append(
            {
                "method": method,
                "loss": args.loss,
                "schedule": args.schedule,
                "warmup_steps": args.warmup_steps,
                "final_recall_at_1": dict(zip(names, final, strict=True)),
                "forgetting_recall_at_1": forgetting,
                "seconds": seconds,
                "matrix_recall_at_1": report.matrix(lambda s: s.recall[1]),
            }
        )
        print(rows[-1], file=sys.stderr)
    print(
        f"{repos} synthetic repositories x {premises} premises x {len(PHRASES)} phrasings, {epochs} epochs per step, "
        f"{args.loss} loss, {args.schedule} schedule; recall@1 on held-out theorems after the last step"
    )
    print(table(["method", *names, "forgetting", "seconds"], rows))
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
