"""Retrieval commands: ``retrieval train``, ``retrieval eval`` and ``retrieval search``.

They read the merged view of the database (every repository at its newest commit), in
curriculum order for training, and call :mod:`retrieval`; torch and transformers are
imported inside the handlers.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from agent.cli.options import (
    add_train_options,
    device_option,
    index_options,
    json_option,
    model_option,
    positive_int,
    recall_target_option,
    retriever_length_option,
    split_options,
    train_config,
    wait_option,
)
from agent.reports.output import emit, table
from agent.reports.tables import METRICS, cell, scores_dict, training_payload, training_text
from agent.workspace.data import ordered_traces
from agent.workspace.joblock import holding_job_lock
from agent.workspace.settings import Settings
from lean_env.errors import UserInputError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    retrieval = subparsers.add_parser("retrieval", help="train, evaluate and query the premise retriever")
    commands = retrieval.add_subparsers(dest="retrieval_command", metavar="COMMAND", required=True)

    train = commands.add_parser(
        "train",
        help="progressive training over the stored repositories, in curriculum order",
        description="One training step per repository in curriculum order (replay or EWC against "
        "forgetting); after each step, recall@1, recall@10 and MRR on the held-out theorems of "
        "every repository seen so far (the metrics matrix), each repository also before its step, and "
        "the lifelong-learning metrics read from them (plasticity, stability, BWT, FWT, WF5, WP5, FM, "
        "CFR, EBWT, IP). Saves the trained encoder. The state "
        "after each step is kept in DATA_DIR/checkpoints: an interrupted run resumes there when "
        "started again with the same options.",
    )
    add_train_options(train)
    retriever_length_option(train)
    recall_target_option(train)
    device_option(train)
    train.add_argument("--out", type=Path, default=None, help="where to save the encoder (default: DATA_DIR/retriever)")
    wait_option(train)
    json_option(train)
    train.set_defaults(handler=_train)

    evaluate = commands.add_parser(
        "eval", help="recall@k and MRR of an encoder on every stored repository's held-out theorems"
    )
    model_option(evaluate)
    retriever_length_option(evaluate)
    recall_target_option(evaluate)
    device_option(evaluate)
    split_options(evaluate)
    json_option(evaluate)
    evaluate.set_defaults(handler=_eval)

    search = commands.add_parser("search", help="the premises an encoder retrieves for a goal")
    search.add_argument("query", help="a goal or statement, e.g. '⊢ a + b = b + a'")
    search.add_argument(
        "--theorem", default=None, metavar="NAME", help="only premises accessible from this stored theorem"
    )
    search.add_argument(
        "--repo",
        default=None,
        metavar="LOCATION",
        help="the repository of --theorem, when several have one of that name",
    )
    search.add_argument("-k", type=positive_int, default=10, help="how many premises (default: 10)")
    model_option(search)
    retriever_length_option(search)
    recall_target_option(search)
    device_option(search)
    json_option(search)
    search.set_defaults(handler=_search)


# ---- handlers ------------------------------------------------------------------------


@holding_job_lock("retrieval train")
def _train(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from retrieval.embeddings import EmbeddingStore, PremiseIndexes
    from retrieval.encoder import TextEncoder
    from retrieval.model_files import model_key, save_model
    from retrieval.progressive import Learner, run_progressive

    config = train_config(args)
    out = args.out or settings.layout.retriever
    if out.exists() and not out.is_dir():
        raise UserInputError(f"--out {out} is a file; the encoder is saved as a directory")
    traces = ordered_traces(settings)
    encoder = TextEncoder.load(args.model, max_length=args.retriever_len, device=args.device)
    # After every step the state goes here; an interrupted run of the same question resumes.
    checkpoint = settings.layout.checkpoints / "retrieval-train.pt"
    indexes = PremiseIndexes(
        EmbeddingStore.of_data_dir(settings.data_dir),
        options=index_options(args),
        device=encoder.placement.index_device,
    )
    # No total: a learner picked up may hold steps of older commits besides these repositories.
    with tqdm(desc="training", unit="repo", disable=None) as bar:
        report = run_progressive(
            traces,
            encoder,
            Learner(config, args.test_fraction, model_id=model_key(args.model)),
            on_step=lambda _: bar.update(),
            checkpoint=checkpoint,
            indexes=indexes,
        )
    save_model(encoder, out, kept_in=checkpoint)
    checkpoint.unlink(missing_ok=True)  # kept until the encoder is safely saved
    payload = {
        "model": str(out),
        "config": dataclasses.asdict(config),
        **training_payload(report),
        "embeddings": indexes.counts.to_json(),
        "premise_index": None if indexes.quality is None else indexes.quality.to_json(),
    }
    lines = [training_text(report), f"encoder saved to {out}", indexes.counts.text()]
    human = "\n".join(lines + ([] if indexes.quality is None else [indexes.quality.text()]))
    emit(payload, human, as_json=args.json)
    return 0


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from retrieval.corpus import PremiseCorpus
    from retrieval.embeddings import EmbeddingStore
    from retrieval.encoder import TextEncoder
    from retrieval.index import PremiseIndex, evaluate
    from retrieval.split import split

    traces = ordered_traces(settings)
    encoder = TextEncoder.load(args.model, max_length=args.retriever_len, device=args.device)
    corpus = PremiseCorpus(traces)
    store = EmbeddingStore.of_data_dir(settings.data_dir)
    index = PremiseIndex.build(
        corpus, encoder, store=store, options=index_options(args), device=encoder.placement.index_device
    )
    results = {}
    for trace in traces:
        _, test = split(corpus.examples(trace), test_fraction=args.test_fraction, seed=args.seed)
        results[trace.spec.location] = evaluate(index, encoder, test)
    payload = {
        "repositories": {location: scores_dict(s) for location, s in results.items()},
        "premise_index": index.quality.to_json(),
    }
    rows = [
        [location, s.examples, *(cell(metric(s)) for metric in METRICS.values())] for location, s in results.items()
    ]
    human = [table(["repository", "examples", *METRICS], rows), index.quality.text(), store.counts.text()]
    emit(payload, "\n".join(human), as_json=args.json)
    return 0


def _search(args: argparse.Namespace, settings: Settings) -> int:
    from retrieval.corpus import PremiseCorpus
    from retrieval.embeddings import EmbeddingStore
    from retrieval.encoder import TextEncoder
    from retrieval.index import PremiseIndex

    traces = ordered_traces(settings)
    corpus = PremiseCorpus(traces)
    allowed = None
    if args.theorem is not None:
        from lean_env.repos import parse_spec

        repo = parse_spec(args.repo).location if args.repo else None
        found = [
            (t.spec.location, th)
            for t in traces
            for th in t.theorems
            if th.full_name == args.theorem and repo in (None, t.spec.location)
        ]
        if not found:
            raise UserInputError(
                f"no stored theorem is called {args.theorem!r}" + (f" in {args.repo}" if args.repo else "")
            )
        if len({location for location, _ in found}) > 1:
            raise UserInputError(
                f"{args.theorem!r} is a theorem of several repositories "
                f"({', '.join(sorted({loc for loc, _ in found}))}); choose one with --repo"
            )
        location, theorem = found[0]
        allowed = [corpus.accessible(location, theorem.path, theorem.start)]
    encoder = TextEncoder.load(args.model, max_length=args.retriever_len, device=args.device)
    index = PremiseIndex.build(
        corpus,
        encoder,
        store=EmbeddingStore.of_data_dir(settings.data_dir),
        options=index_options(args),
        device=encoder.placement.index_device,
    )
    (hits,) = index.search(encoder.encode([args.query]), args.k, allowed=allowed)
    ranked = [(rank, corpus.premises[h.index], h.score) for rank, h in enumerate(hits, start=1)]
    payload = [{"rank": rank, "premise": p.full_name, "path": p.path, "score": score} for rank, p, score in ranked]
    rows = [[rank, p.full_name, p.path, round(score, 3)] for rank, p, score in ranked]
    # The index's line after the search: an approximate index answers its first served
    # queries exactly too, so it says the recall it measured on this one.
    listed = table(["#", "premise", "file", "score"], rows) if rows else "no premise is accessible"
    emit(payload, f"{listed}\n{index.quality.text()}", as_json=args.json)
    return 0
