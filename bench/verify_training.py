"""Train tiny encoders on the formal-language tasks, quantize them, report the quantization gap.

For each task (and attention kind) one seeded training run with the task's recipe, then a
post-training quantization at each bit width (activations and weights alike). Accuracy is
measured on every word up to length 10 (or the training length, if shorter): the float
model with its own (spec-shaped) forward pass, the quantized spec through the reference
interpreter. Prints a table and optionally writes JSON::

    python bench/verify_training.py [--quick] [--json OUT] [--tasks majority,dyck] [--widths 4,8]

``--quick`` runs majority and contains-ab with softmax_table attention at 6 and 8 bits
(well under a minute on one thread); the full run adds dyck and parity, both hardmax kinds
and 4 and 12 bits (several minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from agent.reports.output import table  # noqa: E402
from verify.model.spec import Attention  # noqa: E402
from verify.trained.quantize import QuantConfig, measure_gap, quantize  # noqa: E402
from verify.trained.tasks import all_words, get_task, sample_dataset, task_names  # noqa: E402
from verify.trained.training import recipe, train  # noqa: E402


def run(tasks: list[str], kinds: list[Attention], widths: list[int], seed: int) -> list[dict]:
    rows = []
    for name in tasks:
        task = get_task(name)
        for kind in kinds:
            chosen = recipe(task, attention=kind)
            trained = train(task, chosen.model, replace(chosen.train, seed=seed))
            max_len = chosen.train.max_len
            words = all_words(task, max_len=min(10, max_len))
            calibration = sample_dataset(task, size=500, max_len=max_len, seed=seed + 1).words
            for bits in widths:
                started = time.perf_counter()
                spec = quantize(trained.model, calibration, QuantConfig(width=bits, weight_width=bits))
                gap = measure_gap(trained.model, spec, f"len<={min(10, max_len)}", words)
                rows.append(
                    {
                        "task": name,
                        "attention": kind.value,
                        "bits": bits,
                        "train_steps": chosen.train.steps,
                        "train_seconds": round(trained.seconds, 2),
                        "eval_set": gap.name,
                        "words": gap.words,
                        "float_accuracy": round(gap.float_accuracy, 4),
                        "quantized_accuracy": round(gap.quantized_accuracy, 4),
                        "gap": round(gap.gap, 4),
                        "agreement": round(gap.agreement, 4),
                        "quantize_eval_seconds": round(time.perf_counter() - started, 2),
                    }
                )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two tasks, one attention kind, 6 and 8 bits")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--tasks", default=None, help="comma-separated task names (default: all, or two with --quick)")
    parser.add_argument(
        "--widths", default=None, help="comma-separated bit widths (default: 4,6,8,12, or 6,8 with --quick)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tasks = args.tasks.split(",") if args.tasks else (["majority", "contains-ab"] if args.quick else list(task_names()))
    widths = [int(w) for w in args.widths.split(",")] if args.widths else ([6, 8] if args.quick else [4, 6, 8, 12])
    kinds = [Attention.SOFTMAX_TABLE] if args.quick else list(Attention)
    started = time.perf_counter()
    rows = run(tasks, kinds, widths, args.seed)
    headers = ["task", "attention", "bits", "train_s", "float_acc", "quant_acc", "gap", "agreement"]
    print(
        table(
            headers,
            [
                [
                    r["task"],
                    r["attention"],
                    r["bits"],
                    r["train_seconds"],
                    r["float_accuracy"],
                    r["quantized_accuracy"],
                    r["gap"],
                    r["agreement"],
                ]
                for r in rows
            ],
        )
    )
    print(
        f"\ntotal {time.perf_counter() - started:.1f}s; accuracy on every word up to length 10 (or the training length)"
    )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "seed": args.seed}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
