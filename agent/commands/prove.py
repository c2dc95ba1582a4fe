"""``leanagent prove``: search every stored ``sorry`` theorem, check what is found, record it.

For each theorem (of the newest stored version of its repository): best-first search in the
chosen proof environment with tactics from ``--generator`` (conditioned on premises from
``--retriever``), then Lean's final check of the whole file; every attempt is recorded in
the database under a run, a PROVED one only after the final check accepted it (the theorem
then becomes ``proved_by_us``). A run that was interrupted resumes with the theorems it
had not attempted yet.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.commands.data import json_option, open_store, tracked_run
from agent.commands.retrieval import model_key
from agent.output import emit, table
from agent.settings import Settings
from lean_env.errors import UserInputError

if TYPE_CHECKING:
    from agent.prove import ProofAttempt, ProveConfig
    from agent.scale import ProofDone, ProofJob
    from curriculum.results import StoredTheorem
    from curriculum.store import Store
    from lean_env.interactive.interface import ProofBackend


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    prove = subparsers.add_parser(
        "prove",
        help="search proofs for the stored sorry theorems, check them with Lean, record them",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    add_prove_options(prove, backend_flag="--backend", generator_required=True)
    prove.add_argument("--retriever", default=None, metavar="NAME|DIR",
                       help="premise encoder to condition the generator on (default: no premises)")
    prove.add_argument("--theorem", action="append", default=None, metavar="NAME", help="only this theorem (repeatable)")
    prove.add_argument("--repo", default=None, metavar="LOCATION", help="only the theorems of this stored repository (its URL or path)")
    json_option(prove)
    prove.set_defaults(handler=_prove)


def add_prove_options(parser: argparse.ArgumentParser, *, backend_flag: str, generator_required: bool) -> None:
    """The generator, proof environment and search budgets (``prove`` and ``run`` share them)."""
    parser.add_argument("--generator", required=generator_required, default=None, metavar="NAME|DIR",
                        help="tactic generator: a local directory or a Hugging Face name "
                        "(e.g. kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small; needs the network once)")
    parser.add_argument("--premises", type=int, default=10, metavar="K", help="premises per goal from the retriever (default: 10)")
    parser.add_argument(backend_flag, dest="proof_backend", choices=("auto", "file", "repl", "dojo"), default="auto",
                        help="proof environment: repl (Lean REPL), dojo (LeanDojo), file (any lean), auto (repl when found, else file)")
    parser.add_argument("--candidates", type=int, default=8, help="tactics asked per expanded goal (default: 8)")
    parser.add_argument("--max-expansions", type=int, default=100, help="goals expanded per theorem (default: 100)")
    parser.add_argument("--time-limit", type=float, default=600.0, metavar="S", help="wall seconds of search per theorem (default: 600)")
    parser.add_argument("--tactic-timeout", type=float, default=60.0, metavar="S", help="seconds per tactic (default: 60)")
    parser.add_argument("--check-timeout", type=float, default=600.0, metavar="S", help="seconds for the final check's Lean run (default: 600)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="prove on N Ray workers (pip install 'leanagent[ray]'; same results as in-process; default: 1, in this process)")


@dataclass(frozen=True, slots=True)
class ProveOptions:
    """How to prove, read from the command line by :func:`prove_options`."""

    config: ProveConfig
    backend: str  # auto | file | repl | dojo
    tactic_timeout: float
    premises: int
    workers: int  # 1: in this process; more: Ray workers

    def as_dict(self) -> dict[str, Any]:
        """For a run's config, so that a run is resumed only with the same options (not the
        number of workers: it does not change the results)."""
        search = self.config.search
        return {"backend": self.backend, "premises": self.premises, "candidates": search.num_candidates,
                "max_expansions": search.max_expansions, "time_limit": search.time_limit,
                "tactic_timeout": self.tactic_timeout, "check_timeout": self.config.check_timeout}


def prove_options(args: argparse.Namespace) -> ProveOptions:
    """The options of :func:`add_prove_options`, checked."""
    from agent.prove import ProveConfig
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
    search = SearchConfig(num_candidates=args.candidates, max_expansions=args.max_expansions, time_limit=args.time_limit)
    return ProveOptions(ProveConfig(search, check_timeout=args.check_timeout), args.proof_backend, args.tactic_timeout, args.premises,
                        args.workers)


def _prove(args: argparse.Namespace, settings: Settings) -> int:
    from agent.scale import ProverRecipe, prove_here, prove_on_ray

    options = prove_options(args)
    run_config = {"command": "prove", "generator": model_key(args.generator), "retriever": model_key(args.retriever) if args.retriever else None,
                  **options.as_dict(), "theorems": args.theorem, "repo": args.repo}
    with open_store(settings) as store:
        targets = _targets(store, args.theorem, args.repo)
        checkouts = checkout_all(targets, settings)
        recipe = ProverRecipe(
            args.generator, backend_opener(options, settings), options.config, retriever=args.retriever,
            premises=options.premises, corpus=tuple(store.latest_traces()) if args.retriever else (),
        )
        # Models load before the run starts: a bad name is the user's error, not a failed run
        # (nor a dead Ray worker).
        prover = recipe.build() if options.workers == 1 else None
        if prover is None:
            recipe.check()
        try:
            with tracked_run(store, run_config) as (run, _):
                rows = prove_targets(
                    store, run.id, targets, checkouts=checkouts,
                    prove=(lambda jobs: prove_here(jobs, prover)) if prover else (lambda jobs: prove_on_ray(jobs, recipe, workers=options.workers)),
                )
        finally:
            if prover:
                prover.close()
    proved = sum(r["outcome"] == "proved" for r in rows)
    skipped = len(targets) - len(rows)
    human = "\n".join([
        attempts_table(rows) if rows else "nothing to prove",
        f"run {run.id}: {proved} of {len(rows)} proved and checked by Lean"
        + (f"; {skipped} attempted before this run resumed" if skipped else ""),
    ])
    emit({"run": run.id, "attempts": rows, "resumed_skipped": skipped}, human, as_json=args.json)
    return 0


def prove_targets(
    store: Store,
    run_id: int,
    targets: Sequence[StoredTheorem],
    *,
    checkouts: Mapping[str, Path],
    prove: Callable[[list[ProofJob]], Iterator[ProofDone]],
) -> list[dict[str, Any]]:
    """Prove every target that run ``run_id`` has not attempted yet with ``prove`` (in this
    process or on Ray workers, see :mod:`agent.scale`), record each attempt as it finishes,
    and return one row per attempt made now, in target order. ``checkouts`` maps
    repositories to their directories."""
    from tqdm import tqdm

    from agent.scale import ProofJob
    from curriculum.db import AttemptOutcome

    done = {a.theorem_id for a in store.attempts(run_id=run_id)}
    jobs = [ProofJob(t.id, t.location, checkouts[t.location], t.theorem) for t in targets if t.id not in done]
    rows: dict[int, dict[str, Any]] = {}
    stored = {t.id: t for t in targets}
    for finished in tqdm(prove(jobs), total=len(jobs), desc="proving", unit="theorem", disable=None):
        attempt = finished.attempt
        store.record_attempt(run_id=run_id, theorem_id=finished.job.key, outcome=attempt.outcome, seconds=attempt.seconds,
                             nodes=attempt.search.expansions if attempt.search else 0, backend=finished.backend,
                             proof=attempt.proof if attempt.outcome is AttemptOutcome.PROVED else None)
        rows[finished.job.key] = _row(stored[finished.job.key], attempt)
    return [rows[job.key] for job in jobs if job.key in rows]


def backend_opener(options: ProveOptions, settings: Settings) -> Callable[[Path], ProofBackend]:
    """Opens the proof environment ``options`` choose for a repository directory; picklable,
    so that Ray workers can open their own."""
    from agent.commands.lean import interactive_backend

    return functools.partial(interactive_backend, options.backend, timeout=options.tactic_timeout, data_dir=settings.data_dir)


def attempts_table(rows: Sequence[dict[str, Any]]) -> str:
    return table(["theorem", "outcome", "tactics", "seconds", "detail"],
                 [[r["theorem"], r["outcome"], "-" if r["tactics"] is None else r["tactics"], round(r["seconds"], 1), r["detail"]] for r in rows])


def _targets(store: Store, names: list[str] | None, repo: str | None) -> list[StoredTheorem]:
    from lean_env.records import TheoremStatus
    from lean_env.repos import parse_spec

    location = parse_spec(repo).location if repo else None
    sorries = store.theorems(status=TheoremStatus.SORRY, location=location)
    if repo and not store.theorems(location=location):
        raise UserInputError(f"no stored repository is {location}")
    if names is None:
        return sorries
    chosen = []
    for name in dict.fromkeys(names):
        found = [t for t in sorries if t.theorem.full_name == name]
        if not found:
            raise UserInputError(f"no stored sorry theorem is called {name!r}")
        if len(found) > 1:
            raise UserInputError(f"{name!r} is a sorry theorem of several repositories "
                                 f"({', '.join(t.location for t in found)}); choose one with --repo")
        chosen += found
    return chosen


def checkout_all(targets: Sequence[StoredTheorem], settings: Settings) -> dict[str, Path]:
    """The directory of every repository of ``targets``, at its stored commit."""
    return {loc: _checkout(loc, commit, settings) for loc, commit in {(t.location, t.commit) for t in targets}}


def _checkout(location: str, commit: str, settings: Settings) -> Path:
    """The directory holding ``location`` at the stored ``commit``."""
    from lean_env.records import RepoSpec
    from lean_env.repos import resolve

    local = not RepoSpec(location).is_remote
    # A local directory is proved where it is (its stored commit may be a content hash).
    checkout = resolve(RepoSpec(location, None if local else commit), cache_dir=settings.data_dir / "cache")
    if checkout.commit != commit:
        raise UserInputError(f"{location} changed since it was ingested (now {checkout.commit[:16]}, stored {commit[:16]}); "
                             "run 'leanagent ingest' on it again first")
    return checkout.path


def attempted_rows(store: Store, run_id: int, targets: Sequence[StoredTheorem]) -> list[dict[str, Any]]:
    """Rows, as :func:`prove_targets` gives them, for the attempts run ``run_id`` recorded at
    ``targets`` before now (a resumed run); what only the search knew is not stored."""
    by_id = {t.id: t for t in targets}
    return [
        {"theorem": by_id[a.theorem_id].theorem.full_name, "repository": by_id[a.theorem_id].location,
         "outcome": a.outcome.value, "proof": a.proof, "tactics": None, "expansions": a.nodes, "seconds": a.seconds,
         "detail": "attempted before the run resumed"}
        for a in store.attempts(run_id=run_id) if a.theorem_id in by_id
    ]


def _row(stored: StoredTheorem, attempt: ProofAttempt) -> dict[str, Any]:
    return {
        "theorem": stored.theorem.full_name,
        "repository": stored.location,
        "outcome": attempt.outcome.value,
        "proof": attempt.proof,
        "tactics": len(attempt.search.proof or ()) if attempt.search else 0,
        "expansions": attempt.search.expansions if attempt.search else 0,
        "seconds": attempt.seconds,
        "detail": attempt.detail,
    }
