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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.commands.data import json_option, open_store
from agent.output import emit, table
from agent.settings import Settings
from lean_env.errors import UserInputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from agent.prove import ProofAttempt
    from curriculum.results import StoredTheorem
    from curriculum.store import Store
    from lean_env.proof_env import ProofBackend
    from lean_env.records import Theorem


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    prove = subparsers.add_parser(
        "prove",
        help="search proofs for the stored sorry theorems, check them with Lean, record them",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    prove.add_argument("--generator", required=True, metavar="NAME|DIR",
                       help="tactic generator: a local directory or a Hugging Face name "
                       "(e.g. kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small; needs the network once)")
    prove.add_argument("--retriever", default=None, metavar="NAME|DIR",
                       help="premise encoder to condition the generator on (default: no premises)")
    prove.add_argument("--premises", type=int, default=10, metavar="K", help="premises per goal with --retriever (default: 10)")
    prove.add_argument("--backend", choices=("auto", "file", "repl", "dojo"), default="auto",
                       help="proof environment: repl (Lean REPL), dojo (LeanDojo), file (any lean), auto (repl when found, else file)")
    prove.add_argument("--theorem", action="append", default=None, metavar="NAME", help="only this theorem (repeatable)")
    prove.add_argument("--repo", default=None, metavar="LOCATION", help="only the theorems of this stored repository (its URL or path)")
    prove.add_argument("--candidates", type=int, default=8, help="tactics asked per expanded goal (default: 8)")
    prove.add_argument("--max-expansions", type=int, default=100, help="goals expanded per theorem (default: 100)")
    prove.add_argument("--time-limit", type=float, default=600.0, metavar="S", help="wall seconds of search per theorem (default: 600)")
    prove.add_argument("--tactic-timeout", type=float, default=60.0, metavar="S", help="seconds per tactic (default: 60)")
    prove.add_argument("--check-timeout", type=float, default=600.0, metavar="S", help="seconds for the final check's Lean run (default: 600)")
    json_option(prove)
    prove.set_defaults(handler=_prove)


def _prove(args: argparse.Namespace, settings: Settings) -> int:
    from tqdm import tqdm

    from agent.commands.lean import interactive_backend
    from agent.commands.retrieval import model_key
    from agent.generator import HFTacticGenerator
    from agent.prove import ProveConfig, prove_theorem
    from agent.search import SearchConfig
    from curriculum.db import AttemptOutcome, RunStatus
    from lean_env.lean_runner import LeanRunner

    _check_options(args)
    config = ProveConfig(
        SearchConfig(num_candidates=args.candidates, max_expansions=args.max_expansions, time_limit=args.time_limit),
        check_timeout=args.check_timeout,
    )
    run_config = {"command": "prove", "generator": model_key(args.generator), "retriever": model_key(args.retriever) if args.retriever else None,
                  "premises": args.premises, "backend": args.backend, "theorems": args.theorem, "repo": args.repo,
                  "search": [args.candidates, args.max_expansions, args.time_limit, args.tactic_timeout, args.check_timeout]}
    with open_store(settings) as store:
        targets = _targets(store, args.theorem, args.repo)
        checkouts = {loc: _checkout(loc, commit, settings) for loc, commit in {(t.location, t.commit) for t in targets}}
        generator = HFTacticGenerator.load(args.generator)
        premises = _premise_source(store, args) if args.retriever else None
        run = store.resume_run(run_config) or store.start_run(run_config)
        done = {a.theorem_id for a in store.attempts(run_id=run.id)}
        rows: list[dict[str, Any]] = []
        # One proof environment per repository, kept for all its theorems (the REPL's
        # processes, with their imports loaded, are reused), closed at the end.
        backends: dict[str, ProofBackend] = {}
        try:
            for stored in tqdm([t for t in targets if t.id not in done], desc="proving", unit="theorem", disable=None):
                repo_dir = checkouts[stored.location]
                if stored.location not in backends:
                    backends[stored.location] = interactive_backend(
                        args.backend, repo_dir, timeout=args.tactic_timeout, data_dir=settings.data_dir
                    )
                backend = backends[stored.location]
                attempt = prove_theorem(
                    stored.theorem, repo_dir=repo_dir, backend=backend, generator=generator,
                    runner=LeanRunner.for_project(repo_dir), config=config,
                    premises=(lambda theorem, loc=stored.location: premises(loc, theorem)) if premises else None,
                )
                store.record_attempt(run_id=run.id, theorem_id=stored.id, outcome=attempt.outcome, seconds=attempt.seconds,
                                     nodes=attempt.search.expansions if attempt.search else 0, backend=backend.name,
                                     proof=attempt.proof if attempt.outcome is AttemptOutcome.PROVED else None)
                rows.append(_row(stored, attempt))
        except BaseException as error:
            store.finish_run(run.id, status=RunStatus.INTERRUPTED if isinstance(error, KeyboardInterrupt) else RunStatus.FAILED)
            raise
        finally:
            for backend in backends.values():
                backend.close()
        store.finish_run(run.id)
    proved = sum(r["outcome"] == "proved" for r in rows)
    skipped = len(targets) - len(rows)
    human = "\n".join([
        table(["theorem", "outcome", "tactics", "seconds", "detail"],
              [[r["theorem"], r["outcome"], r["tactics"], round(r["seconds"], 1), r["detail"]] for r in rows]) if rows else "nothing to prove",
        f"run {run.id}: {proved} of {len(rows)} proved and checked by Lean"
        + (f"; {skipped} attempted before this run resumed" if skipped else ""),
    ])
    emit({"run": run.id, "attempts": rows, "resumed_skipped": skipped}, human, as_json=args.json)
    return 0


def _check_options(args: argparse.Namespace) -> None:
    for option, value in (("--candidates", args.candidates), ("--max-expansions", args.max_expansions), ("--premises", args.premises)):
        if value < 1:
            raise UserInputError(f"{option} must be at least 1, got {value}")
    for option, value in (("--time-limit", args.time_limit), ("--tactic-timeout", args.tactic_timeout), ("--check-timeout", args.check_timeout)):
        if not value > 0:
            raise UserInputError(f"{option} must be a positive number of seconds, got {value:g}")


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


def _premise_source(store: Store, args: argparse.Namespace) -> Callable[[str, Theorem], Callable[[str], list[str]]]:
    """(repository, theorem) -> (goal -> the premises the retriever picks among those accessible)."""
    from retrieval.corpus import PremiseCorpus
    from retrieval.encoder import TextEncoder
    from retrieval.index import PremiseIndex, PremiseRetriever

    encoder = TextEncoder.load(args.retriever)
    retriever = PremiseRetriever(PremiseIndex.build(PremiseCorpus(store.latest_traces()), encoder), encoder, k=args.premises)
    return lambda location, theorem: retriever.for_theorem(location, theorem.path, theorem.start)


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
