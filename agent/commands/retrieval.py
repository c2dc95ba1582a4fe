"""Retrieval commands: ``retrieval train``, ``retrieval eval`` and ``retrieval search``.

They read the merged view of the database (every repository at its newest commit), in
curriculum order for training, and call :mod:`retrieval`; torch and transformers are
imported inside the handlers.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.commands.data import json_option, open_store, short_commit
from agent.output import emit, table
from agent.settings import Settings
from lean_env.errors import UserInputError

if TYPE_CHECKING:
    from agent.generator import HFTacticGenerator
    from curriculum.ordering import Curriculum
    from curriculum.store import Store
    from lean_env.records import RepoTrace
    from retrieval.encoder import TextEncoder
    from retrieval.index import RecallScores
    from retrieval.progressive import ProgressiveReport
    from retrieval.train import TrainConfig

MODEL_HELP = "encoder: a local directory or a Hugging Face name (default: the bundled MiniLM, offline)"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    retrieval = subparsers.add_parser("retrieval", help="train, evaluate and query the premise retriever")
    commands = retrieval.add_subparsers(dest="retrieval_command", metavar="COMMAND", required=True)

    train = commands.add_parser(
        "train",
        help="progressive training over the stored repositories, in curriculum order",
        description="One training step per repository in curriculum order (replay or EWC against "
        "forgetting); after each step, recall@1, recall@10 and MRR on the held-out theorems of "
        "every repository seen so far (the metrics matrix). Saves the trained encoder. The state "
        "after each step is kept in DATA_DIR/checkpoints: an interrupted run resumes there when "
        "started again with the same options.",
    )
    add_train_options(train)
    train.add_argument("--out", type=Path, default=None, help="where to save the encoder (default: DATA_DIR/retriever)")
    json_option(train)
    train.set_defaults(handler=_train)

    evaluate = commands.add_parser("eval", help="recall@k and MRR of an encoder on every stored repository's held-out theorems")
    _model_option(evaluate)
    _split_options(evaluate)
    json_option(evaluate)
    evaluate.set_defaults(handler=_eval)

    search = commands.add_parser("search", help="the premises an encoder retrieves for a goal")
    search.add_argument("query", help="a goal or statement, e.g. '⊢ a + b = b + a'")
    search.add_argument("--theorem", default=None, metavar="NAME", help="only premises accessible from this stored theorem")
    search.add_argument("--repo", default=None, metavar="LOCATION", help="the repository of --theorem, when several have one of that name")
    search.add_argument("-k", type=int, default=10, help="how many premises (default: 10)")
    _model_option(search)
    json_option(search)
    search.set_defaults(handler=_search)


def add_train_options(parser: argparse.ArgumentParser) -> None:
    """The starting model and the training options (``retrieval train`` and ``run`` share them)."""
    _model_option(parser)
    parser.add_argument("--consolidation", choices=("ewc", "replay", "none"), default="replay", help="against forgetting (default: replay)")
    parser.add_argument("--epochs", type=int, default=1, help="passes over each repository's examples (default: 1)")
    parser.add_argument("--batch-size", type=int, default=16, help="examples per contrastive batch (default: 16)")
    parser.add_argument("--lr", type=float, default=2e-5, help="AdamW learning rate (default: 2e-5)")
    parser.add_argument("--ewc-lambda", type=float, default=1e10, help="weight of the EWC penalty (default: 1e10)")
    _split_options(parser)


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


def _model_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None, metavar="NAME|DIR", help=MODEL_HELP)


def _split_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--test-fraction", type=float, default=0.2, help="share of each repository's theorems held out (default: 0.2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and the training (default: 0)")


# ---- handlers ------------------------------------------------------------------------


def _train(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from retrieval.encoder import TextEncoder
    from retrieval.progressive import run_progressive

    config = train_config(args)
    out = args.out or settings.data_dir / "retriever"
    if out.exists() and not out.is_dir():
        raise UserInputError(f"--out {out} is a file; the encoder is saved as a directory")
    traces = ordered_traces(settings)
    encoder = TextEncoder.load(args.model)
    # After every step the state goes here; an interrupted run of the same question resumes.
    checkpoint = settings.data_dir / "checkpoints" / "retrieval-train.pt"
    # No total: a learner picked up may hold steps of older commits besides these repositories.
    with tqdm(desc="training", unit="repo", disable=None) as bar:
        report = run_progressive(
            traces, encoder, config, test_fraction=args.test_fraction, on_step=lambda _: bar.update(),
            checkpoint=checkpoint, model_id=model_key(args.model),
        )
    save_model(encoder, out, kept_in=checkpoint)
    checkpoint.unlink(missing_ok=True)  # kept until the encoder is safely saved
    payload = {"model": str(out), "config": dataclasses.asdict(config), **training_payload(report)}
    human = "\n".join([training_text(report), f"encoder saved to {out}"])
    emit(payload, human, as_json=args.json)
    return 0


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from retrieval.corpus import PremiseCorpus
    from retrieval.encoder import TextEncoder
    from retrieval.index import PremiseIndex, evaluate
    from retrieval.progressive import split

    check_split(args)
    traces = ordered_traces(settings)
    encoder = TextEncoder.load(args.model)
    corpus = PremiseCorpus(traces)
    index = PremiseIndex.build(corpus, encoder)
    results = {}
    for trace in traces:
        _, test = split(corpus.examples(trace), test_fraction=args.test_fraction, seed=args.seed)
        results[trace.spec.location] = evaluate(index, encoder, test)
    payload = {location: _scores_dict(s) for location, s in results.items()}
    rows = [[location, s.examples, *(_cell(metric(s)) for metric in _METRICS.values())] for location, s in results.items()]
    emit(payload, table(["repository", "examples", *_METRICS], rows), as_json=args.json)
    return 0


def _search(args: argparse.Namespace, settings: Settings) -> int:
    from retrieval.corpus import PremiseCorpus
    from retrieval.encoder import TextEncoder
    from retrieval.index import PremiseIndex

    if args.k < 1:
        raise UserInputError(f"-k must be at least 1, got {args.k}")
    traces = ordered_traces(settings)
    corpus = PremiseCorpus(traces)
    allowed = None
    if args.theorem is not None:
        from lean_env.repos import parse_spec

        repo = parse_spec(args.repo).location if args.repo else None
        found = [(t.spec.location, th) for t in traces for th in t.theorems
                 if th.full_name == args.theorem and repo in (None, t.spec.location)]
        if not found:
            raise UserInputError(f"no stored theorem is called {args.theorem!r}" + (f" in {args.repo}" if args.repo else ""))
        if len({location for location, _ in found}) > 1:
            raise UserInputError(f"{args.theorem!r} is a theorem of several repositories "
                                 f"({', '.join(sorted({loc for loc, _ in found}))}); choose one with --repo")
        location, theorem = found[0]
        allowed = [corpus.accessible(location, theorem.path, theorem.start)]
    encoder = TextEncoder.load(args.model)
    index = PremiseIndex.build(corpus, encoder)
    (hits,) = index.search(encoder.encode([args.query]), args.k, allowed=allowed)
    payload = [{"rank": rank, "premise": corpus.premises[h.index].full_name, "path": corpus.premises[h.index].path,
                "score": h.score} for rank, h in enumerate(hits, start=1)]
    rows = [[p["rank"], p["premise"], p["path"], round(p["score"], 3)] for p in payload]
    emit(payload, table(["#", "premise", "file", "score"], rows) if rows else "no premise is accessible", as_json=args.json)
    return 0


# ---- helpers -------------------------------------------------------------------------

_METRICS = {
    "recall@1": lambda s: s.recall[1],
    "recall@10": lambda s: s.recall[10],
    "MRR": lambda s: s.mrr,
}


def model_key(model: str | None) -> str:
    """The starting model, as a checkpoint records it: a directory by its absolute path."""
    if model is None:
        return "bundled MiniLM"
    path = Path(model).expanduser()
    return str(path.resolve()) if path.exists() else model


def check_split(args: argparse.Namespace) -> None:
    if not 0 < args.test_fraction < 1:
        raise UserInputError(f"--test-fraction must be between 0 and 1, got {args.test_fraction}")


def ordered_traces(settings: Settings) -> list[RepoTrace]:
    """The newest version of every stored repository, in curriculum order."""
    from curriculum.ordering import curriculum_of

    with open_store(settings) as store:
        traces = traces_in_curriculum_order(store, curriculum_of(store))
    if not traces:
        raise UserInputError("the database holds no repositories: run 'leanagent ingest' or 'leanagent run' first")
    return traces


def traces_in_curriculum_order(store: Store, curriculum: Curriculum) -> list[RepoTrace]:
    """The newest version of every repository in ``store``, in the order of ``curriculum``
    (the store's, computed by the caller, who often shows it too)."""
    by_location = {t.spec.location: t for t in store.latest_traces()}
    order = [r.location for r in curriculum.repos if r.location in by_location]
    ordered = set(order)
    return [by_location[loc] for loc in order] + [t for loc, t in by_location.items() if loc not in ordered]


def save_model(model: TextEncoder | HFTacticGenerator, out: Path, *, kept_in: Path | None = None) -> None:
    """Save a trained model to the directory ``out``; a failure is the user's to fix (and
    says where the training is kept, when it is)."""
    if out.exists() and not out.is_dir():
        raise UserInputError(f"cannot save to {out}: it is a file, and a model is saved as a directory")
    try:
        model.save(out)
    except OSError as error:
        kept = f"; the training is kept in {kept_in}" if kept_in else ""
        raise UserInputError(f"cannot save to {out}: {error.strerror or error}{kept}") from error


def training_payload(report: ProgressiveReport) -> dict[str, Any]:
    """The steps, metrics matrices and forgetting of a progressive run, for JSON."""
    return {
        "repositories": list(report.repos),
        "steps_before_this_run": report.picked_up,
        "steps": [{"repo": r.repo, "commit": r.commit, "train_examples": r.train_examples, "mean_loss": r.step.mean_loss,
                   "mean_penalty": r.step.mean_penalty} for r in report.rows],
        "matrices": {name: report.matrix(metric) for name, metric in _METRICS.items()},
        "forgetting": {name: report.forgetting(metric) for name, metric in _METRICS.items()},
    }


def training_text(report: ProgressiveReport) -> str:
    """The recall@10 matrix and forgetting of a progressive run, for people."""
    rows = [[f"after {r.repo} @ {short_commit(r.commit)}", r.train_examples, *(_cell(v) for v in values)]
            for r, values in zip(report.rows, report.matrix(_METRICS["recall@10"]), strict=True)]
    return "\n".join([
        "recall@10 on each repository's held-out theorems after each step:",
        table(["step", "trained on", *report.repos], rows),
        f"forgetting (recall@10): {report.forgetting(_METRICS['recall@10']):.3f}; "
        f"{len(report.rows) - report.picked_up} step(s) taken now, {report.picked_up} before",
    ])


def _scores_dict(scores: RecallScores) -> dict[str, Any]:
    return {"examples": scores.examples, **{name: metric(scores) for name, metric in _METRICS.items()}}


def _cell(value: float | None) -> object:
    return "-" if value is None else round(value, 3)
