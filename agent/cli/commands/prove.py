"""``leanagent prove``: search every stored ``sorry`` theorem, check what is found, record it.

For each theorem (of the newest stored version of its repository): best-first search in the
chosen proof environment with tactics from the built-in suggester (the stored proofs'
tactics renamed to the goal, premise templates, closing tactics) or from ``--generator``
(conditioned on premises from ``--retriever``), then Lean's final check of the whole file;
every attempt is recorded in the database under a run, a PROVED one only after the final
check accepted it (the theorem then becomes ``proved_by_us`` and its steps are stored, for
the next theorems and runs). A run that was interrupted resumes with the theorems it
had not attempted yet.
"""

from __future__ import annotations

import argparse
import dataclasses

from agent.cli.options import (
    add_prove_options,
    device_option,
    include_exercises_option,
    json_option,
    proving_config,
    recall_target_option,
    repo_option,
    retriever_length_option,
    retriever_option,
    skip_option,
    wait_option,
)
from agent.reports.output import emit
from agent.workspace.joblock import holding_job_lock
from agent.workspace.settings import Settings


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    prove = subparsers.add_parser(
        "prove",
        help="search proofs for the stored sorry theorems, check them with Lean, record them",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    add_prove_options(prove, backend_alias=True)
    retriever_option(prove)
    prove.add_argument(
        "--theorem",
        action="append",
        default=None,
        metavar="NAME|PATH:NAME",
        help="only this theorem (repeatable): its full name, or PATH:NAME for the one in that file",
    )
    repo_option(prove)
    skip_option(prove)
    include_exercises_option(prove)
    retriever_length_option(prove)
    recall_target_option(prove)
    device_option(prove)
    wait_option(prove)
    json_option(prove)
    prove.set_defaults(handler=_prove)


@holding_job_lock("prove")
def _prove(args: argparse.Namespace, settings: Settings) -> int:
    from agent.proving.prove import ProveRequest, prove
    from agent.reports.tables import attempts_table, audit_summary
    from agent.workspace.data import open_store

    request = ProveRequest(
        theorems=None if args.theorem is None else tuple(args.theorem),
        repo=args.repo,
        skip=tuple(args.skip or ()),
        include_exercises=args.include_exercises,
        retriever=args.retriever,
        retriever_len=args.retriever_len,
    )
    with open_store(settings) as store:
        result = prove(store, request, proving_config(args), data_dir=settings.data_dir)
    outcome = result.proving
    attempts = outcome.made_now
    proved = sum(a.proved for a in attempts)
    skipped = sum(outcome.skipped.values())
    exercises = [(path, name, why) for found in outcome.exercises.values() for path, name, why in found]
    human = "\n".join(
        [
            attempts_table(attempts) if attempts else "nothing to prove",
            f"run {result.run_id}: {proved} of {len(attempts)} proved and checked by Lean"
            + (f"; {outcome.resumed} attempted before this run resumed" if outcome.resumed else "")
            + (f"; {skipped} sorry theorem(s) left alone (--skip)" if skipped else "")
            + (f"; {len(exercises)} left alone as exercises (--include-exercises proves them)" if exercises else ""),
            *(f"  {path}:{name}: exercise: {why}" for path, name, why in exercises),
            *(f"{location}: {build.text()}" for location, build in outcome.builds.items() if not build.usable),
            *audit_summary(attempts),
            *([] if result.index is None else [result.index.text()]),
        ]
    )
    emit(
        {
            "run": result.run_id,
            "attempts": [a.to_json() for a in attempts],
            "resumed_skipped": outcome.resumed,
            "skipped_sorries": skipped,
            "exercises": [{"path": path, "theorem": name, "why": why} for path, name, why in exercises],
            "builds": {location: dataclasses.asdict(build) for location, build in outcome.builds.items()},
            "premise_index": None if result.index is None else result.index.to_json(),
        },
        human,
        as_json=args.json,
    )
    return 0
