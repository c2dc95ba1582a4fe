"""``leanagent verify train-example TASK``: train a tiny encoder, quantize it, verify it.

Parses, calls :func:`verify.trained.train_example.run_train_example`, prints. The verify command
family (``agent/cli/commands/verify/__init__.py``) calls :func:`add_parser` on its subparsers.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.cli.commands.verify.options import interrupted, progress_lines, query_options, solver_options
from agent.reports.output import emit, table
from agent.workspace.settings import Settings

if TYPE_CHECKING:  # the report type only; importing it loads torch
    from verify.trained.train_example import ExampleReport

# Mirrors verify.trained.tasks.TASKS; kept literal so that `--help` imports neither torch nor numpy.
TASK_CHOICES = ("majority", "contains-ab", "parity", "dyck")
ATTENTION_CHOICES = ("softmax_table", "unique_hardmax", "average_hardmax")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add ``train-example`` to the ``leanagent verify`` subcommands."""
    p = subparsers.add_parser(
        "train-example",
        help="train a tiny encoder on a formal language, quantize it, report the gap, verify it",
        description=(
            "Train a small PyTorch encoder on a formal language (seconds on one CPU thread), "
            "quantize it post-training into a model spec, compare float and quantized accuracy "
            "(the quantized model runs through the reference interpreter) and, with "
            "--verify-len, check the quantized model with the SMT verifier."
        ),
    )
    p.add_argument("task", metavar="TASK", choices=TASK_CHOICES, help=f"one of: {', '.join(TASK_CHOICES)}")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write the model spec (default: DATA_DIR/verify/TASK-wBITS.json)",
    )
    p.add_argument("--width", type=int, default=8, help="activation bits (default: 8)")
    p.add_argument("--weight-width", type=int, default=None, help="weight bits (default: --width)")
    p.add_argument(
        "--attention",
        choices=ATTENTION_CHOICES,
        default=None,
        help="attention kind to train and quantize (default: the task's recipe, softmax_table)",
    )
    p.add_argument("--steps", type=int, default=None, help="training steps (default: the task's recipe)")
    p.add_argument("--seed", type=int, default=0, help="seed of data, initialisation and batches (default: 0)")
    p.add_argument(
        "--exhaustive-len",
        type=int,
        default=None,
        help="evaluate on every word up to this length (default: min(10, training length))",
    )
    p.add_argument(
        "--sample-size",
        type=int,
        default=1000,
        help="random longer words to evaluate, up to the training length (default: 1000)",
    )
    p.add_argument(
        "--verify-len",
        type=int,
        default=0,
        metavar="N",
        help="verify the quantized model on words of length <= N with SMT (default: 0, skip)",
    )
    solver_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run_train_example_command)


def run_train_example_command(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify train-example``."""
    import torch
    from tqdm import tqdm

    from verify.errors import Interrupted, VerifyInputError
    from verify.model.spec import Attention
    from verify.trained.quantize import QuantConfig
    from verify.trained.tasks import get_task
    from verify.trained.train_example import ExampleOptions, run_train_example

    for name in ("steps", "sample_size", "verify_len", "exhaustive_len"):
        value = getattr(args, name)
        if value is not None and value < (1 if name in ("steps", "exhaustive_len") else 0):
            raise VerifyInputError(f"--{name.replace('_', '-')} must be positive, got {value}")
    query = query_options(args)
    task = get_task(args.task)
    quant = QuantConfig(width=args.width, weight_width=args.weight_width or args.width)
    out = args.out or settings.layout.verify / f"{task.name}-w{args.width}.json"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise VerifyInputError(f"cannot create the directory of --out {out}: {e.strerror or e}") from e
    options = ExampleOptions(
        attention=None if args.attention is None else Attention(args.attention),
        steps=args.steps,
        seed=args.seed,
        quant=quant,
        exhaustive_len=args.exhaustive_len,
        sample_size=args.sample_size,
        verify_len=args.verify_len,
        query=query,
    )
    torch.set_num_threads(1)
    with tqdm(desc=f"training {task.name}", unit="step", leave=False, disable=None) as bar:

        def progress(step: int, loss: float) -> None:
            bar.update(1)
            if step % 50 == 0:
                bar.set_postfix(loss=f"{loss:.3f}")

        try:
            report = run_train_example(task, out, options, progress=progress, on_length=progress_lines())
        except OSError as e:
            raise VerifyInputError(f"cannot write the model spec to {out}: {e.strerror or e}") from e
        except Interrupted as e:  # during the verification: the spec is written, the query's partial result shown
            return interrupted(e, as_json=args.json)
    emit(_payload(report), _human(report), as_json=args.json)
    return 0


def _payload(report: ExampleReport) -> dict[str, Any]:
    r, m, t = report, report.recipe.model, report.trained
    v = r.verification
    return {
        "task": r.task.name,
        "language": r.task.description,
        "model": {
            "attention": m.attention.value,
            "layers": m.layers,
            "d_model": m.d_model,
            "heads": m.heads,
            "head_dim": m.head_dim,
            "ffn_dim": m.ffn_dim,
            "mask": m.mask.value,
            "positional": m.positional.value,
            "positions": m.positions,
            "readout": m.readout.value,
            "parameters": sum(p.numel() for p in t.model.parameters()),
        },
        "training": {
            "steps": t.train.steps,
            "seed": t.train.seed,
            "max_len": t.train.max_len,
            "seconds": round(t.seconds, 3),
            "final_loss": round(t.final_loss, 5),
            "train_accuracy": t.train_accuracy,
        },
        "quantization": {
            "width": r.quant.width,
            "weight_width": r.quant.weight_width,
            "rounding": r.spec.rounding.value,
            "overflow": r.spec.overflow.value,
            "exp_table_sizes": [len(layer.exp_table) for layer in r.spec.layers],
        },
        "spec_path": str(r.spec_path),
        "evaluation": [
            {
                "set": row.name,
                "words": row.words,
                "float_accuracy": row.float_accuracy,
                "quantized_accuracy": row.quantized_accuracy,
                "agreement": row.agreement,
                "gap": row.gap,
            }
            for row in r.rows
        ],
        "quantization_gap": r.gap,
        "verification": None
        if v is None
        else {
            "query": v.query.value,
            "max_len": v.max_len,
            "verdict": v.verdict,
            "summary": v.summary,
            "claim": v.claim,
            "witness": v.witness,
            "model_accepts": v.model_accepts,
            "in_language": v.in_language,
            "seconds": round(v.seconds, 3),
            "solver": v.solver,
        },
    }


def _human(report: ExampleReport) -> str:
    r, m, t = report, report.recipe.model, report.trained
    lines = [
        f"task {r.task.name}: {r.task.description}",
        f"model: {m.layers} layer(s), d_model {m.d_model}, {m.heads} head(s), ffn {m.ffn_dim}, "
        f"{m.attention.value}, mask {m.mask.value}, positions {m.positional.value}, readout {m.readout.value}",
        f"trained {t.train.steps} steps in {t.seconds:.1f}s (loss {t.final_loss:.4f}, "
        f"train accuracy {t.train_accuracy:.3f})",
        f"quantized to {r.quant.width}-bit activations, {r.quant.weight_width}-bit weights; "
        f"spec written to {r.spec_path}",
        "",
        table(
            ["evaluation set", "words", "float acc", "quantized acc", "agreement", "gap"],
            [
                [row.name, row.words, row.float_accuracy, row.quantized_accuracy, row.agreement, row.gap]
                for row in r.rows
            ],
        ),
        "",
        f"quantization gap: {r.gap:+.4f} (largest accuracy loss over the sets)",
    ]
    v = r.verification
    if v is not None:
        query = (
            "equivalence with an exact encoder of the language"
            if v.query.value == "equiv-exact"
            else "trSAT (some accepted word)"
        )
        lines += [
            "",
            f"verification ({query}, words of length <= {v.max_len}, {v.solver}, {v.seconds:.1f}s): "
            f"{v.verdict.upper()}",
            f"  {v.summary}",
        ]
    return "\n".join(lines)
