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
    from agent.generators.suggester import StepMemory
    from agent.proving.attempts import flag_restatements, prove_targets
    from agent.proving.exercises import exercises
    from agent.proving.scale import ProofRunner, ProverRecipe, learned_ranking
    from agent.proving.targets import build_checkout, checkout_all, select_targets
    from agent.reports.tables import attempts_table, audit_summary
    from agent.workspace.data import open_store
    from curriculum.runs import tracked_run
    from retrieval.model_files import model_key

    config = proving_config(args)
    identity = {
        "command": "prove",
        **config.identity(),
        "retriever": model_key(args.retriever) if args.retriever else None,
        "retriever_len": args.retriever_len if args.retriever else None,
        "theorems": args.theorem,
        "repo": args.repo,
        "skip": args.skip,
        **({"include_exercises": True} if args.include_exercises else {}),
    }
    with open_store(settings) as store:
        chosen = select_targets(store, args.theorem, args.repo, skip=args.skip or ())
        targets = chosen.theorems
        checkouts = checkout_all(targets, cache_dir=settings.data_dir / "cache")
        traces = tuple(store.latest_traces())
        by_location = {t.spec.location: t for t in traces}
        left = {} if args.include_exercises else exercises(targets, by_location, checkouts)
        targets = [t for t in targets if t.key not in left]
        builds = {}
        for location, directory in checkouts.items():
            paths = [t.theorem.path for t in targets if t.location == location]
            trace = by_location.get(location)
            if paths and (build := build_checkout(trace, directory, paths, config, data_dir=settings.data_dir)):
                builds[location] = build
        # A checkout that did not build is a repository-level outcome: no attempts there.
        targets = [t for t in targets if t.location not in builds or builds[t.location].usable]
        recipe = ProverRecipe(
            config,
            settings.data_dir,
            retriever=args.retriever,
            retriever_len=args.retriever_len,
            corpus=traces,
            memory=StepMemory.from_traces(traces),
            ranking=learned_ranking(store, config),
        )
        # Models load before the run starts: a bad name is the user's error, not a failed run
        # (nor a dead Ray worker).
        runner = ProofRunner.start(recipe)
        try:
            with tracked_run(store, identity) as (run, _):
                attempts = prove_targets(store, run.id, targets, checkouts=checkouts, prove=runner.run)
        finally:
            runner.close()
    attempts = flag_restatements(attempts, traces)
    proved = sum(a.proved for a in attempts)
    skipped = len(targets) - len(attempts)
    human = "\n".join(
        [
            attempts_table(attempts) if attempts else "nothing to prove",
            f"run {run.id}: {proved} of {len(attempts)} proved and checked by Lean"
            + (f"; {skipped} attempted before this run resumed" if skipped else "")
            + (f"; {chosen.skipped} sorry theorem(s) left alone (--skip)" if chosen.skipped else "")
            + (f"; {len(left)} left alone as exercises (--include-exercises proves them)" if left else ""),
            *(f"  {path}:{name}: exercise: {why}" for (_, path, name), why in left.items()),
            *(f"{location}: {build.text()}" for location, build in builds.items() if not build.usable),
            *audit_summary(attempts),
        ]
    )
    emit(
        {
            "run": run.id,
            "attempts": [a.to_json() for a in attempts],
            "resumed_skipped": skipped,
            "skipped_sorries": chosen.skipped,
            "exercises": [{"path": path, "theorem": name, "why": why} for (_, path, name), why in left.items()],
            "builds": {location: dataclasses.asdict(build) for location, build in builds.items()},
        },
        human,
        as_json=args.json,
    )
    return 0
