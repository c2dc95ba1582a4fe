"""Command-line options that several commands share, each read into the typed options the
library takes (checked here, at the edge, so that bad input fails before any work)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from lean_env.errors import UserInputError
from lean_env.interactive.choice import ProofBackendChoice
from lean_env.trace.choice import TracerChoice

if TYPE_CHECKING:
    from agent.prove import ProvingConfig
    from retrieval.train import TrainConfig

MODEL_HELP = "encoder: a local directory or a Hugging Face name (default: the bundled MiniLM, offline)"


def json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def tracer_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=[c.value for c in TracerChoice],
        default=TracerChoice.AUTO.value,
        help="how to trace: dojo (LeanDojo, needs Lean), source (no Lean needed) or auto (dojo "
        "when Lean and lean_dojo are available, else source; default)",
    )


# ---- retriever training ----------------------------------------------------------------


def model_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None, metavar="NAME|DIR", help=MODEL_HELP)


def split_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--test-fraction", type=float, default=0.2, help="share of each repository's theorems held out (default: 0.2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and the training (default: 0)")


def check_split(args: argparse.Namespace) -> None:
    if not 0 < args.test_fraction < 1:
        raise UserInputError(f"--test-fraction must be between 0 and 1, got {args.test_fraction}")


def add_train_options(parser: argparse.ArgumentParser) -> None:
    """The starting model and the training options (``retrieval train`` and ``run`` share them)."""
    model_option(parser)
    parser.add_argument("--consolidation", choices=("ewc", "replay", "none"), default="replay", help="against forgetting (default: replay)")
    parser.add_argument("--epochs", type=int, default=1, help="passes over each repository's examples (default: 1)")
    parser.add_argument("--batch-size", type=int, default=16, help="examples per contrastive batch (default: 16)")
    parser.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate (default: 2e-5)")
    parser.add_argument("--ewc-lambda", type=float, default=1e10, help="weight of the EWC penalty (default: 1e10)")
    split_options(parser)


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The options of :func:`add_train_options`, checked."""
    from retrieval.train import Consolidation, TrainConfig

    check_split(args)
    if args.epochs < 1:
        raise UserInputError(f"--epochs must be at least 1, got {args.epochs}")
    if args.batch_size < 2:
        raise UserInputError(f"--batch-size must be at least 2 (a contrastive batch needs negatives), got {args.batch_size}")
    if not (math.isfinite(args.lr) and args.lr > 0 and math.isfinite(args.ewc_lambda) and args.ewc_lambda >= 0):
        raise UserInputError(f"--lr must be a positive number and --ewc-lambda a non-negative one, got {args.lr:g} and {args.ewc_lambda:g}")
    return TrainConfig(
        consolidation=Consolidation(args.consolidation),
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        ewc_lambda=args.ewc_lambda,
        seed=args.seed,
    )


# ---- proving ---------------------------------------------------------------------------


def add_prove_options(parser: argparse.ArgumentParser, *, backend_flag: str, generator_required: bool) -> None:
    """The generator, proof environment and search budgets (``prove`` and ``run`` share them)."""
    parser.add_argument("--generator", required=generator_required, default=None, metavar="NAME|DIR",
                        help="tactic generator: a local directory or a Hugging Face name "
                        "(e.g. kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small; needs the network once)")
    parser.add_argument("--premises", type=int, default=10, metavar="K", help="premises per goal from the retriever (default: 10)")
    parser.add_argument(backend_flag, dest="proof_backend", choices=[c.value for c in ProofBackendChoice], default=ProofBackendChoice.AUTO.value,
                        help="proof environment: repl (Lean REPL), dojo (LeanDojo), file (any lean), auto (repl when found, else file)")
    parser.add_argument("--candidates", type=int, default=8, help="tactics asked per expanded goal (default: 8)")
    parser.add_argument("--max-expansions", type=int, default=100, help="goals expanded per theorem (default: 100)")
    parser.add_argument("--time-limit", type=float, default=600.0, metavar="S", help="wall seconds of search per theorem (default: 600)")
    parser.add_argument("--tactic-timeout", type=float, default=60.0, metavar="S", help="seconds per tactic (default: 60)")
    parser.add_argument("--check-timeout", type=float, default=600.0, metavar="S", help="seconds for the final check's Lean run (default: 600)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="prove on N Ray workers (pip install 'leanagent[ray]'; same results as in-process; default: 1, in this process)")


def proving_config(args: argparse.Namespace) -> ProvingConfig:
    """The options of :func:`add_prove_options`, checked (``--generator`` given)."""
    from agent.prove import ProvingConfig
    from agent.search import SearchConfig

    for option, value in (("--candidates", args.candidates), ("--max-expansions", args.max_expansions), ("--premises", args.premises)):
        if value < 1:
            raise UserInputError(f"{option} must be at least 1, got {value}")
    for option, value in (("--time-limit", args.time_limit), ("--tactic-timeout", args.tactic_timeout), ("--check-timeout", args.check_timeout)):
        if not value > 0:
            raise UserInputError(f"{option} must be a positive number of seconds, got {value:g}")
    if args.workers < 1:
        raise UserInputError(f"--workers must be at least 1, got {args.workers}")
    if args.workers > 1:
        from agent.scale import require_ray

        require_ray()
    return ProvingConfig(
        generator=args.generator,
        backend=ProofBackendChoice(args.proof_backend),
        search=SearchConfig(num_candidates=args.candidates, max_expansions=args.max_expansions, time_limit=args.time_limit),
        premises=args.premises,
        tactic_timeout=args.tactic_timeout,
        check_timeout=args.check_timeout,
        workers=args.workers,
    )
