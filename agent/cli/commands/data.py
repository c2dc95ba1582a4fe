"""Data commands: ``ingest``, ``db stats``, ``curriculum`` and ``export``.

They parse, call :mod:`curriculum` and :mod:`lean_env`, and print through
:mod:`agent.reports.output`; heavy imports (SQLAlchemy, tqdm, the tracers) happen inside handlers.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cli.options import json_option, tracer_option
from agent.reports.output import emit, table
from agent.reports.tables import curriculum_text, outcomes_text, plural, short_commit
from agent.workspace.data import ingest_repositories, open_store
from agent.workspace.settings import Settings
from lean_env.errors import UserInputError

if TYPE_CHECKING:
    from lean_env.records import RepoSpec


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ingest = subparsers.add_parser(
        "ingest",
        help="trace repositories (or read a LeanDojo benchmark) into the database",
        description="Trace Lean repositories and store them; re-ingesting a stored commit changes nothing.",
    )
    ingest.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help="a git URL or local path, optionally LOCATION@COMMIT",
    )
    ingest.add_argument(
        "--repos", type=Path, metavar="FILE", help="a repos file: one 'LOCATION [COMMIT] [skip=GLOB ...]' per line"
    )
    ingest.add_argument(
        "--benchmark",
        type=Path,
        metavar="DIR",
        help="read a LeanDojo Benchmark 4 directory instead of tracing",
    )
    tracer_option(ingest)
    json_option(ingest)
    ingest.set_defaults(handler=_ingest)

    db = subparsers.add_parser("db", help="inspect the database")
    db_commands = db.add_subparsers(dest="db_command", metavar="DB_COMMAND", required=True)
    stats = db_commands.add_parser(
        "stats",
        help="row counts and the newest version of every repository",
        description="Row counts of every table, theorem counts by status, and the newest "
        "stored version of every repository (the merged view the other commands use). The "
        "database is --db, else $LEANAGENT_DB, else leanagent.db in the data directory.",
    )
    json_option(stats)
    stats.set_defaults(handler=_stats)

    curriculum = subparsers.add_parser(
        "curriculum",
        help="difficulty buckets and the learning order of the stored repositories",
        description="Bucket every theorem of the merged view by difficulty e^S (S = tactic "
        "steps; a term-mode proof counts as 1) at the 33rd and 67th percentiles of the proved "
        "theorems; `sorry` theorems are 'hard (no proof)' and stay out of the percentiles. "
        "Repositories are ordered by easy theorems, most first; ties by location, then commit.",
    )
    json_option(curriculum)
    curriculum.set_defaults(handler=_curriculum)

    export = subparsers.add_parser(
        "export",
        help="write the newest version of every repository as a LeanDojo Benchmark 4 directory",
        description="Write the merged view as a LeanDojo Benchmark 4 directory: random/ and "
        "novel_premises/ train/val/test splits (seeded), corpus.jsonl, traced_files.jsonl "
        "and metadata.json. `leanagent ingest --benchmark DIR` reads it back.",
    )
    export.add_argument(
        "out_dir",
        type=Path,
        metavar="DIR",
        help="output directory, created if missing; the benchmark files in it are replaced",
    )
    export.add_argument("--seed", type=int, default=3407, help="seed of the train/val/test splits (default: 3407)")
    json_option(export)
    export.set_defaults(handler=_export)


# ---- handlers ------------------------------------------------------------------------


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    sources = [bool(args.specs), args.repos is not None, args.benchmark is not None]
    if sum(sources) != 1:
        raise UserInputError("give repository specs, --repos FILE or --benchmark DIR (exactly one of them)")
    with open_store(settings) as store:
        if args.benchmark is not None:
            from curriculum.ingest import ingest_traces
            from lean_env.benchmark.read import read_benchmark

            outcomes = ingest_traces(store, read_benchmark(args.benchmark), progress=True)
        else:
            from lean_env.trace.choice import TracerChoice

            # A URL repository whose remote head is stored already costs one git ls-remote.
            specs = _specs_of(args)
            outcomes = ingest_repositories(store, specs, settings, TracerChoice(args.tracer), idle=lambda _: True)
    emit([dataclasses.asdict(o) for o in outcomes], outcomes_text(outcomes), as_json=args.json)
    return 0


def _stats(args: argparse.Namespace, settings: Settings) -> int:
    with open_store(settings, read_only=True) as store:
        stats = store.stats()
    counts = [
        ["repositories", stats.repositories],
        ["versions", stats.versions],
        ["files", stats.files],
        ["premises", stats.premises],
        ["theorems", stats.theorems],
        ["tactic steps", stats.tactic_steps],
        ["runs", stats.runs],
        ["proof attempts", stats.attempts],
        *([f"latest theorems: {k}", v] for k, v in stats.latest_by_status.items()),
    ]
    latest = [
        [v.location, short_commit(v.commit), v.backend, v.files, v.premises, v.theorems, v.sorries]
        for v in stats.latest
    ]
    human = "\n".join(
        [
            f"database: {stats.url}",
            "",
            table(["table", "rows"], counts),
            "",
            table(
                [
                    "repository (newest version)",
                    "commit",
                    "backend",
                    "files",
                    "premises",
                    "theorems",
                    "sorries",
                ],
                latest,
            )
            if latest
            else "no repositories ingested yet",
        ]
    )
    emit(dataclasses.asdict(stats), human, as_json=args.json)
    return 0


def _curriculum(args: argparse.Namespace, settings: Settings) -> int:
    from curriculum.ordering import curriculum_of

    with open_store(settings, read_only=True) as store:
        order = curriculum_of(store)
    emit(order.as_dict(), curriculum_text(order), as_json=args.json)
    return 0


def _export(args: argparse.Namespace, settings: Settings) -> int:
    from lean_env.benchmark.write import write_benchmark

    with open_store(settings, read_only=True) as store:
        traces = store.latest_traces()
        if not traces:
            raise UserInputError(f"nothing to export: the database {store.url} holds no repositories")
    write_benchmark(traces, args.out_dir, seed=args.seed)
    payload = {
        "out_dir": str(args.out_dir),
        "seed": args.seed,
        "repositories": [{"location": t.spec.location, "commit": t.commit} for t in traces],
        "theorems": sum(len(t.theorems) for t in traces),
        "premises": sum(len(t.premises) for t in traces),
    }
    human = (
        f"wrote {plural(len(traces), 'repository', 'repositories')} "
        f"({payload['theorems']} theorems, {payload['premises']} premises) "
        f"to {args.out_dir}"
    )
    emit(payload, human, as_json=args.json)
    return 0


def _specs_of(args: argparse.Namespace) -> list[RepoSpec]:
    from lean_env.repos import parse_repos_file, parse_spec

    if args.repos is not None:
        return parse_repos_file(args.repos)
    return [parse_spec(text) for text in args.specs]
