"""``leanagent recheck``: have Lean check again every proof found for the newest stored
version of each repository (or of ``--repo``), in its checkout, with the Lean it has now.

A toolchain bump between stored versions is handled by ``run`` itself (the proofs carried to
the new version are checked there before it is proved); this is for what the versions do not
show: a new Lean on PATH, a rebuilt dependency, doubt. Each Lake checkout is built first, as
``run`` builds it (``--build-timeout``, ``--no-build``): a new Lean needs its imports built
again. A proof that holds is recorded as this run's; one that broke is withdrawn, listed as
"broke at COMMIT", and its theorem is a `sorry` target again (for the next ``run`` or
``prove``); one whose check tells nothing (a timeout, an error elsewhere in the file, an
import that failed) is left as it was, and so is every proof of a repository whose build
failed or timed out (not checked: the build's error is said). Broken proofs and failed builds
are a result: exit 0.
"""

from __future__ import annotations

import argparse
import dataclasses

from agent.cli.options import (
    build_options,
    build_timeout,
    check_timeout_option,
    json_option,
    repo_option,
    wait_option,
)
from agent.reports.output import emit, table
from agent.workspace.joblock import holding_job_lock
from agent.workspace.settings import Settings


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    recheck = subparsers.add_parser(
        "recheck",
        help="check every found proof again with Lean at its repository's newest version; withdraw broken ones",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    repo_option(recheck)
    check_timeout_option(recheck)
    build_options(recheck, before="checking its proofs")
    wait_option(recheck)
    json_option(recheck)
    recheck.set_defaults(handler=_recheck)


@holding_job_lock("recheck")
def _recheck(args: argparse.Namespace, settings: Settings) -> int:
    from agent.proving.recheck import Recheck, recheck_repository, stored_location
    from agent.proving.targets import checkout_all
    from agent.reports.tables import plural, short_commit
    from agent.workspace.data import open_store
    from curriculum.runs import tracked_run
    from lean_env.lean.runner import LeanRunner

    with open_store(settings) as store:
        locations = sorted({v.location for v in store.versions()})
        if args.repo is not None:
            locations = [stored_location(args.repo, locations)]
        found = {location: proofs for location in locations if (proofs := store.found_proofs(location))}
        checkouts = checkout_all(
            [p.stored for proofs in found.values() for p in proofs], cache_dir=settings.layout.cache
        )
        rechecked = []
        with tracked_run(store, {"command": "recheck", "repo": args.repo}) as (run, _):
            for location, proofs in found.items():
                directory = checkouts[location]
                rechecked.append(
                    recheck_repository(
                        store,
                        run.id,
                        proofs,
                        directory,
                        trace=next(iter(store.latest_traces(location=location)), None),
                        runner=LeanRunner.for_project(directory),
                        check_timeout=args.check_timeout,
                        build_timeout=build_timeout(args),
                        data_dir=settings.data_dir,
                    )
                )
    results = [r for repository in rechecked for r in repository.results]
    rows = [
        [
            r.found.stored.theorem.full_name,
            r.found.stored.theorem.path,
            short_commit(r.found.stored.commit),
            r.verdict.value,
            short_commit(r.found.checked_at),
            r.seconds,
            r.why,
        ]
        for r in results
    ]
    builds = [
        f"{repository.location}: {repository.build.text()}"
        + (
            ""
            if repository.build.usable
            else f"; its {plural(len(repository.results), 'found proof', 'found proofs')} not checked, "
            "left as they were (a build failure says nothing of a proof)"
        )
        for repository in rechecked
        if repository.build is not None
    ]
    broke = sum(r.verdict is Recheck.BROKE for r in results)
    unknown = sum(r.verdict is Recheck.UNKNOWN for r in results)
    summary = (
        f"run {run.id}: {plural(len(results), 'found proof', 'found proofs')} checked again: "
        f"{len(results) - broke - unknown} hold, {broke} broke (withdrawn: their theorems are sorry targets again), "
        f"{unknown} unknown (left as they were)"
    )
    headers = ["theorem", "file", "commit", "verdict", "accepted at before", "seconds", "why"]
    human = "\n".join([table(headers, rows), *builds, summary] if rows else ["no found proofs to check"])
    payload = {
        "run": run.id,
        "rechecked": [r.to_json() for r in results],
        "builds": {
            repository.location: None if repository.build is None else dataclasses.asdict(repository.build)
            for repository in rechecked
        },
    }
    emit(payload, human, as_json=args.json)
    return 0
