"""``leanagent generator train``: fine-tune a tactic generator on the stored traced tactics.

Every traced tactic with a goal state in the database (the newest version of each
repository) is an example: goal -> tactic, with ``--retriever`` the premises it retrieves
for the goal shown before it, as proving does. Theorems are split into train and held-out
as the retriever's are; after training, the held-out mean token loss and how often the
first generated tactic is exactly the traced one are reported, and the generator is saved
for ``prove --generator`` / ``run --generator``.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from agent.cli.options import (
    device_option,
    generator_length_options,
    index_options,
    json_option,
    positive_int,
    positive_number,
    premises_option,
    recall_target_option,
    retriever_length_option,
    short_number,
    split_options,
    wait_option,
)
from agent.generators.train_config import GeneratorTrainConfig
from agent.reports.output import emit, table
from agent.workspace.data import ordered_traces
from agent.workspace.joblock import holding_job_lock
from agent.workspace.settings import Settings
from lean_env.errors import UserInputError

_TRAIN = GeneratorTrainConfig()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    generator = subparsers.add_parser("generator", help="train the tactic generator")
    commands = generator.add_subparsers(dest="generator_command", metavar="COMMAND", required=True)
    train = commands.add_parser(
        "train",
        help="fine-tune a tactic generator on the stored traced tactics",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    train.add_argument(
        "--model",
        required=True,
        metavar="NAME|DIR",
        help="the generator to start from: a local directory or a Hugging Face name (e.g. google/byt5-small, "
        "kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small; needs the network once)",
    )
    train.add_argument(
        "--out", type=Path, default=None, help="where to save the generator (default: DATA_DIR/generator)"
    )
    train.add_argument(
        "--retriever",
        default=None,
        metavar="NAME|DIR",
        help="premise encoder whose retrieved premises are shown (default: none)",
    )
    premises_option(train)
    retriever_length_option(train)
    recall_target_option(train)
    generator_length_options(train)
    train.add_argument(
        "--epochs",
        type=positive_int,
        default=_TRAIN.epochs,
        help=f"passes over the examples (default: {_TRAIN.epochs})",
    )
    train.add_argument(
        "--batch-size",
        type=positive_int,
        default=_TRAIN.batch_size,
        help=f"examples per batch (default: {_TRAIN.batch_size})",
    )
    train.add_argument(
        "--lr",
        type=positive_number,
        default=_TRAIN.learning_rate,
        help=f"AdamW learning rate (default: {short_number(_TRAIN.learning_rate)})",
    )
    split_options(train, test_fraction=0.1)
    train.add_argument(
        "--max-eval",
        type=positive_int,
        default=200,
        metavar="N",
        help="held-out examples generated for exact match (default: 200; the loss uses them all)",
    )
    wait_option(train)
    device_option(train)
    json_option(train)
    train.set_defaults(handler=_train)


@holding_job_lock("generator train")
def _train(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from agent.generators.model import HFTacticGenerator
    from agent.generators.premises import premise_source
    from agent.generators.training import (
        GeneratorTrainConfig,
        can_write,
        evaluate_generator,
        tactic_examples,
        train_generator,
    )
    from retrieval.encoder import TextEncoder
    from retrieval.model_files import save_model
    from retrieval.split import split

    out = args.out or settings.layout.generator
    traces = ordered_traces(settings)
    premises = None
    if args.retriever:
        encoder = TextEncoder.load(args.retriever, max_length=args.retriever_len, device=args.device)
        premises = premise_source(traces, encoder, k=args.premises, options=index_options(args))
    examples = tactic_examples(traces, premises=premises)
    if not examples:
        raise UserInputError(
            "the database holds no traced tactics with goal states (source extraction sees no goals): "
            "ingest with --tracer dojo, or a LeanDojo Benchmark 4 directory with --benchmark"
        )
    train, held_out = split(examples, test_fraction=args.test_fraction, seed=args.seed)
    generator = HFTacticGenerator.load(
        args.model, device=args.device, max_input_tokens=args.input_len, max_tactic_tokens=args.tactic_len
    )
    config = GeneratorTrainConfig(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr, seed=args.seed)
    with tqdm(
        total=sum(can_write(generator, e) for e in train) * args.epochs, desc="training", unit="example", disable=None
    ) as bar:
        report = train_generator(generator, train, config, progress=bar.update)
    scores = evaluate_generator(generator, held_out, batch_size=args.batch_size, max_generated=args.max_eval)
    save_model(generator, out)
    payload: dict[str, Any] = {
        "model": str(out),
        "config": dataclasses.asdict(config),
        "train": dataclasses.asdict(report),
        "held_out": dataclasses.asdict(scores),
    }
    rows = [
        ["train", report.examples, round(report.mean_loss, 4), "-"],
        [
            "held out",
            scores.examples,
            "-" if scores.mean_loss is None else round(scores.mean_loss, 4),
            "-" if scores.exact_top1 is None else f"{scores.exact_top1:.3f} of {scores.generated}",
        ],
    ]
    human = "\n".join(
        [
            table(["examples", "count", "mean loss", "exact top-1"], rows),
            *(
                [
                    f"{report.left_out} example(s) left out: the generator cannot write their tactic whole (too long, "
                    "or several lines for a decoder-only model)"
                ]
                if report.left_out
                else []
            ),
            f"generator saved to {out}",
        ]
    )
    emit(payload, human, as_json=args.json)
    return 0
