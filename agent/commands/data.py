"""Data commands: ``ingest``, ``db stats``, ``curriculum`` and ``export``.

They parse, call :mod:`curriculum` and :mod:`lean_env`, and print through
:mod:`agent.output`; heavy imports (SQLAlchemy, tqdm, the tracers) happen inside handlers.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.output import emit, table
from agent.settings import Settings
from lean_env.errors import LeanAgentError, UserInputError

if TYPE_CHECKING:
    from curriculum.ingest import IngestOutcome
    from curriculum.ordering import Curriculum
    from curriculum.results import RunRecord
    from curriculum.store import Store
    from lean_env.records import RepoSpec

BACKENDS = ("auto", "dojo", "source")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ingest = subparsers.add_parser(
        "ingest",
        help="trace repositories (or read a LeanDojo benchmark) into the database",
        description="Trace Lean repositories and store them; "
        "re-ingesting a stored commit changes nothing.",
    )
    ingest.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help="a git URL or local path, optionally LOCATION@COMMIT",
    )
    ingest.add_argument(
        "--repos", type=Path, metavar="FILE", help="a repos file: one 'LOCATION [COMMIT]' per line"
    )
    ingest.add_argument(
        "--benchmark",
        type=Path,
        metavar="DIR",
        help="read a LeanDojo Benchmark 4 directory instead of tracing",
    )
    backend_option(ingest)
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
    export.add_argument(
        "--seed", type=int, default=3407, help="seed of the train/val/test splits (default: 3407)"
    )
    json_option(export)
    export.set_defaults(handler=_export)


def backend_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="how to trace: dojo (LeanDojo, needs Lean), source (no Lean needed) or auto (dojo "
        "when Lean and lean_dojo are available, else source; default)",
    )


def json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


# ---- handlers ------------------------------------------------------------------------


def _ingest(args: argparse.Namespace, settings: Settings) -> int:
    sources = [bool(args.specs), args.repos is not None, args.benchmark is not None]
    if sum(sources) != 1:
        raise UserInputError(
            "give repository specs, --repos FILE or --benchmark DIR (exactly one of them)"
        )
    with open_store(settings) as store:
        if args.benchmark is not None:
            from curriculum.ingest import ingest_traces
            from lean_env.benchmark.read import read_benchmark

            outcomes = ingest_traces(store, read_benchmark(args.benchmark), progress=True)
        else:
            outcomes = ingest_with_progress(store, args, settings, _specs_of(args))
    emit([jsonable(o) for o in outcomes], outcomes_text(outcomes), as_json=args.json)
    return 0


def _stats(args: argparse.Namespace, settings: Settings) -> int:
    with open_store(settings) as store:
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
    emit(jsonable(stats), human, as_json=args.json)
    return 0


def _curriculum(args: argparse.Namespace, settings: Settings) -> int:
    from curriculum.ordering import curriculum_of

    with open_store(settings) as store:
        order = curriculum_of(store)
    emit(order.as_dict(), curriculum_text(order), as_json=args.json)
    return 0


def _export(args: argparse.Namespace, settings: Settings) -> int:
    from lean_env.benchmark.write import write_benchmark

    with open_store(settings) as store:
        traces = store.latest_traces()
        if not traces:
            raise UserInputError(
                f"nothing to export: the database {store.url} holds no repositories"
            )
    write_benchmark(traces, args.out_dir, seed=args.seed)
    payload = {
        "out_dir": str(args.out_dir),
        "seed": args.seed,
        "repositories": [{"location": t.spec.location, "commit": t.commit} for t in traces],
        "theorems": sum(len(t.theorems) for t in traces),
        "premises": sum(len(t.premises) for t in traces),
    }
    human = (
        f"wrote {_plural(len(traces), 'repository', 'repositories')} "
        f"({payload['theorems']} theorems, {payload['premises']} premises) "
        f"to {args.out_dir}"
    )
    emit(payload, human, as_json=args.json)
    return 0


# ---- helpers -------------------------------------------------------------------------


@contextlib.contextmanager
def tracked_run(store: Store, config: Mapping[str, Any]) -> Iterator[tuple[RunRecord, bool]]:
    """A run recorded in ``store`` for the block: an unfinished one of the same ``config`` is
    resumed under its own id (so its finished work is not repeated), else a new one starts.
    Yields the run and whether it was resumed; marks it finished, failed or interrupted."""
    from curriculum.db import RunStatus

    resumed = store.resume_run(config)
    run = resumed or store.start_run(config)
    try:
        yield run, resumed is not None
    except BaseException as e:
        status = RunStatus.INTERRUPTED if isinstance(e, KeyboardInterrupt) else RunStatus.FAILED
        # If the database itself failed, marking the run fails too: report the first error.
        with contextlib.suppress(LeanAgentError):
            store.finish_run(run.id, status=status)
        raise
    store.finish_run(run.id)


def open_store(settings: Settings) -> Store:
    from curriculum.store import Store

    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserInputError(
            f"cannot create the data directory {settings.data_dir}: {e.strerror or e}"
        ) from e
    return Store.open(settings.db_url)


def _specs_of(args: argparse.Namespace) -> list[RepoSpec]:
    from lean_env.repos import parse_repos_file, parse_spec

    if args.repos is not None:
        return parse_repos_file(args.repos)
    return [parse_spec(text) for text in args.specs]


def ingest_with_progress(
    store: Store, args: argparse.Namespace, settings: Settings, specs: Sequence[RepoSpec]
) -> list[IngestOutcome]:
    from curriculum.ingest import BackendChoice, ingest_specs, make_tracer

    cache_dir = settings.data_dir / "cache"
    tracer = make_tracer(BackendChoice(args.backend), dojo_cache=settings.data_dir / "lean_dojo")
    return ingest_specs(store, specs, cache_dir=cache_dir, tracer=tracer, progress=True)


def outcomes_text(outcomes: Sequence[IngestOutcome]) -> str:
    rows = [
        [
            o.location,
            short_commit(o.commit),
            o.status,
            o.backend,
            o.files,
            o.premises,
            o.theorems,
            o.sorries,
        ]
        for o in outcomes
    ]
    added = sum(o.status == "added" for o in outcomes)
    return "\n".join(
        [
            table(
                [
                    "repository",
                    "commit",
                    "status",
                    "backend",
                    "files",
                    "premises",
                    "theorems",
                    "sorries",
                ],
                rows,
            ),
            f"{_plural(len(outcomes), 'repository', 'repositories')}: {added} added, "
            f"{len(outcomes) - added} unchanged",
        ]
    )


def curriculum_text(order: Curriculum) -> str:
    if not order.repos:
        return "no repositories ingested yet"
    if order.thresholds is None:
        bounds = "no proved theorems, so no difficulty thresholds"
    else:
        bounds = (
            f"easy: S <= {order.thresholds.easy_max:g}, "
            f"medium: S <= {order.thresholds.medium_max:g}, "
            "hard: above (difficulty e^S, S = proof steps)"
        )
    rows = [
        [
            rank,
            r.location,
            short_commit(r.commit),
            r.easy,
            r.medium,
            r.hard,
            r.hard_no_proof,
            r.unknown,
            r.total,
        ]
        for rank, r in enumerate(order.repos, start=1)
    ]
    headers = [
        "#",
        "repository",
        "commit",
        "easy",
        "medium",
        "hard",
        "no proof",
        "unknown",
        "total",
    ]
    return "\n".join([f"curriculum order ({bounds})", table(headers, rows)])


def short_commit(commit: str) -> str:
    """A commit for tables: 12 hex digits of a SHA, the tag and 8 digits of a content hash."""
    if commit.startswith("content-"):
        return commit[:16]
    sha, dirty, _ = commit.partition("-dirty-")
    return sha[:12] + ("-dirty" if dirty else "")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def jsonable(record: Any) -> Any:
    return dataclasses.asdict(record)
