"""``leanagent recheck``: have Lean check again every proof found for the newest stored
version of each repository (or of ``--repo``), in its checkout, with the Lean it has now.

A toolchain bump between stored versions is handled by ``run`` itself (the proofs carried to
the new version are checked there before it is proved); this is for what the versions do not
show: a new Lean on PATH, a rebuilt dependency, doubt. A proof that holds is recorded as this
run's; one that broke is withdrawn, listed as "broke at COMMIT", and its theorem is a `sorry`
target again (for the next ``run`` or ``prove``); one whose check tells nothing (a timeout, an
error elsewhere in the file) is left as it was. Broken proofs are a result: exit 0.
"""

from __future__ import annotations

import argparse

from agent.cli.options import check_timeout_option, json_option, repo_option, wait_option
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
    wait_option(recheck)
    json_option(recheck)
    recheck.set_defaults(handler=_recheck)


@holding_job_lock("recheck")
def _recheck(args: argparse.Namespace, settings: Settings) -> int:
    from agent.proving.recheck import Recheck, recheck_proofs
    from agent.proving.targets import checkout_all
    from agent.reports.tables import plural, short_commit
    from agent.workspace.data import open_store
    from curriculum.runs import tracked_run
    from lean_env.errors import UserInputError
    from lean_env.lean.runner import LeanRunner

    with open_store(settings) as store:
        locations = sorted({v.location for v in store.versions()})
        if args.repo is not None:
            if args.repo not in locations:
                raise UserInputError(f"no stored repository {args.repo!r}; 'leanagent db stats' lists them")
            locations = [args.repo]
        found = {location: proofs for location in locations if (proofs := store.found_proofs(location))}
        checkouts = checkout_all(
            [p.stored for proofs in found.values() for p in proofs], cache_dir=settings.data_dir / "cache"
        )
        results = []
        with tracked_run(store, {"command": "recheck", "repo": args.repo}) as (run, _):
            for location, proofs in found.items():
                directory = checkouts[location]
                runner = LeanRunner.for_project(directory)
                results += recheck_proofs(store, run.id, proofs, directory, runner=runner, timeout=args.check_timeout)
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
    broke = sum(r.verdict is Recheck.BROKE for r in results)
    unknown = sum(r.verdict is Recheck.UNKNOWN for r in results)
    summary = (
        f"run {run.id}: {plural(len(results), 'found proof', 'found proofs')} checked again: "
        f"{len(results) - broke - unknown} hold, {broke} broke (withdrawn: their theorems are sorry targets again), "
        f"{unknown} unknown (left as they were)"
    )
    headers = ["theorem", "file", "commit", "verdict", "accepted at before", "seconds", "why"]
    human = "\n".join([table(headers, rows), summary] if rows else ["no found proofs to check"])
    emit({"run": run.id, "rechecked": [r.to_json() for r in results]}, human, as_json=args.json)
    return 0
