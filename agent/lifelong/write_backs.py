"""A run's write-backs as state that outlives its process: what writing each repository's
proofs back made (the patch, the branch in its clone with the proofs on it) and, with
``--pull-request``, its pull request, or why either failed, recorded in the database as it
happens (:mod:`curriculum.write_backs`).

A run whose write-back failed is left unfinished (:class:`agent.lifelong.job.WriteBackFailed`);
started again, it is resumed under its id, and:

* a repository whose proofs it found but whose write-back failed before a branch was made
  (a fetch that failed, a file that changed), or was never made (the run was killed first),
  is fetched and written back again, even when its remote did not move (:func:`unfinished`,
  read before ingestion: else its unchanged remote would leave it alone);
* a recorded branch whose pull request GitHub refused is pushed again and its pull request
  asked for again (:func:`settle`); GitHub answers an open one of the same branch with it;
* its report lists every write-back of the run, those done before it was resumed too, with
  the failures of the earlier tries: it never knows less than the report it replaces.

Whenever a run opens a pull request, or proves a repository, the pull requests of earlier
runs there whose proofs no longer hold, or that the new one supersedes, are closed
(:func:`agent.lifelong.pull_requests.close_outdated`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from agent.lifelong.pull_requests import (
    HeldProof,
    PullRequestOptions,
    close_outdated,
    open_pull_request,
    pull_request_body,
    pull_request_title,
)
from agent.proving.attempts import AttemptReport, earlier_attempts
from agent.proving.config import ProvingConfig
from agent.proving.patches import WrittenBack
from agent.proving.recheck import Recheck, RecheckResult
from curriculum.results import WriteBackRecord
from curriculum.store import Store
from lean_env.errors import LeanAgentError
from lean_env.proofs.github import GitHub, PullRequest
from lean_env.proofs.writeback import FreshBranch, StaleProof

log = logging.getLogger(__name__)

# The failure recorded while a branch waits for its pull request: what a run killed between
# the two leaves, and the next one finishes.
NOT_OPENED = "pull request: not opened yet"


def current(store: Store, run_id: int) -> dict[str, WriteBackRecord]:
    """Each repository's newest write-back of run ``run_id``: its state."""
    return {r.location: r for r in store.write_backs(run_id=run_id)}


def unfinished(store: Store, run_id: int) -> set[str]:
    """The repositories whose proofs run ``run_id`` found but has not written back: no
    write-back recorded, or one that failed before its branch was made (or whose branch is
    gone from the clone). A resumed run proves them again, to write them back."""
    records = current(store, run_id)
    redo = set()
    for location in store.run_locations(run_id, proved=True):
        record = records.get(location)
        if record is None or (record.failed is not None and _branch(record) is None):
            redo.add(location)
    return redo


def attempts_elsewhere(store: Store, run_id: int, proved_now: Sequence[str]) -> list[AttemptReport]:
    """The attempts run ``run_id`` made before it was resumed in the repositories it does not
    prove now (``proved_now``: their attempts are the prover's): its report lists them too."""
    others = sorted(store.run_locations(run_id) - set(proved_now))
    return earlier_attempts(store, run_id, [t for location in others for t in store.theorems(location=location)])


def settle(
    store: Store,
    run_id: int,
    written: WrittenBack,
    attempts: Sequence[AttemptReport],
    config: ProvingConfig,
    options: PullRequestOptions | None,
    *,
    rechecked: Mapping[str, Sequence[RecheckResult]] | None = None,
    github: GitHub | None = None,
) -> WrittenBack:
    """Record this invocation's write-backs (``written``, of the proofs among ``attempts``,
    the prover's), open the pull requests of the run's branches that have none yet
    (``options``; those refused before too), close the outdated pull requests of earlier
    write-backs in the repositories touched (``rechecked``: Lean's verdicts of this run,
    whose reasons the closing comments quote), and return everything the run has written
    back, before it was resumed too. ``github`` is the API client (tests); by default one
    made from ``options``."""
    _record(store, run_id, written, attempts, config, options)
    if options is None:
        # No pull request asked now: a branch that waited for one is what is written back.
        for record in current(store, run_id).values():
            if _waiting(record):
                store.update_write_back(record.id, failed=None)
        return _run_written(store, run_id, ())
    broke = {
        (r.found.stored.theorem.path, r.found.stored.theorem.full_name): f"its proof broke at "
        f"{r.found.stored.commit[:12]} ({r.why})"
        for results in (rechecked or {}).values()
        for r in results
        if r.verdict is Recheck.BROKE
    }
    touched = {a.repository for a in attempts} | set(written.branches)
    closed: list[str] = []
    with github or GitHub(options.token, api=options.api) as client:
        for record in current(store, run_id).values():
            if not _waiting(record) or (branch := _branch(record)) is None:
                continue
            touched.add(record.location)
            try:
                opened = open_pull_request(
                    client,
                    record.location,
                    branch,
                    options,
                    title=str(record.written.get("title") or "leanagent: proofs"),
                    body=str(record.written.get("body") or ""),
                )
            except LeanAgentError as error:
                log.error("the pull request of %s could not be opened: %s", record.location, error)
                store.update_write_back(record.id, failed=f"pull request: {error}")
                continue
            store.update_write_back(record.id, pull_request=dataclasses.asdict(opened), failed=None)
        records = current(store, run_id)
        for location in sorted(touched):
            now = records.get(location)
            closed += close_outdated(
                client,
                store,
                location,
                keep=None if now is None else now.id,
                opened=None if now is None or now.pull_request is None else PullRequest(**now.pull_request),
                held=[] if now is None else _held(now),
                broke=broke,
            )
    return _run_written(store, run_id, tuple(closed))


def _record(
    store: Store,
    run_id: int,
    written: WrittenBack,
    attempts: Sequence[AttemptReport],
    config: ProvingConfig,
    options: PullRequestOptions | None,
) -> None:
    """Record each repository this invocation wrote back (or tried to): every one with a
    proof among ``attempts`` (one with nothing to write back, its proofs restatements, say,
    is done too), and every one ``written`` names."""
    locations = {a.repository for a in attempts if a.proved}
    locations |= set(written.patches) | set(written.branches) | set(written.stale) | set(written.failed)
    for location in sorted(locations):
        branch = written.branches.get(location)
        stale = written.stale.get(location, ())
        proofs = {(a.path, a.theorem): a for a in attempts if a.repository == location and a.proved}
        on_branch = [proofs[key] for key in branch.theorems if key in proofs] if branch is not None else []
        made: dict[str, Any] = {
            "patch": written.patches.get(location),
            "branch": None if branch is None else branch.to_json(),
            "stale": [dataclasses.asdict(p) for p in stale],
            "proofs": [[a.path, a.theorem, a.proof or ""] for a in on_branch],
        }
        if branch is not None and options is not None:
            made |= {
                "title": pull_request_title(on_branch),
                "body": pull_request_body(branch, on_branch, stale, config),
            }
        if location in written.failed:
            failed: str | None = written.failed[location]
        elif branch is not None and options is not None:
            failed = NOT_OPENED
        else:
            failed = None
        store.add_write_back(run_id, location, made, failed=failed)


def _run_written(store: Store, run_id: int, closed: tuple[str, ...]) -> WrittenBack:
    """Everything run ``run_id`` has written back, as its records say: each repository's
    newest write-back, the pull request of an earlier one still open when the newest has
    none, and why every earlier try failed."""
    patches: dict[str, str] = {}
    branches: dict[str, FreshBranch] = {}
    stale: dict[str, tuple[StaleProof, ...]] = {}
    failed: dict[str, str] = {}
    pulls: dict[str, PullRequest] = {}
    retried: dict[str, list[str]] = {}
    newest = {record.id for record in current(store, run_id).values()}
    for record in store.write_backs(run_id=run_id):
        location, made = record.location, record.written
        earlier = [*record.failures, *([record.failed] if record.failed and record.id not in newest else [])]
        retried.setdefault(location, []).extend(why for why in earlier if why != NOT_OPENED)
        if record.pull_request is not None and record.closed is None:
            pulls[location] = PullRequest(**record.pull_request)
        if record.id not in newest:
            continue
        if made.get("patch"):
            patches[location] = str(made["patch"])
        if (branch := _branch(record, check=False)) is not None:
            branches[location] = branch
        if made.get("stale"):
            stale[location] = tuple(StaleProof(**p) for p in made["stale"])
        if record.failed is not None:
            failed[location] = record.failed
    return WrittenBack(
        patches, branches, stale, failed, pulls, {loc: tuple(why) for loc, why in retried.items() if why}, closed
    )


def _branch(record: WriteBackRecord, *, check: bool = True) -> FreshBranch | None:
    """The branch the write-back made; None when it made none, or (``check``) the clone no
    longer has it."""
    made = record.written.get("branch")
    if not made:
        return None
    branch = FreshBranch.from_json(made)
    return branch if not check or branch.exists() else None


def _waiting(record: WriteBackRecord) -> bool:
    """Whether the write-back's branch waits for its pull request (made, not opened)."""
    return record.pull_request is None and (record.failed or "").startswith("pull request:")


def _held(record: WriteBackRecord) -> list[HeldProof]:
    return [(str(path), str(name), str(proof)) for path, name, proof in record.written.get("proofs", [])]
