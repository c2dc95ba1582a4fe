"""A run's proofs written back: one patch per repository (``git apply`` format); for a URL
repository, made on the newest commit of its branch, with a branch of one commit in its clone
and the proofs whose sorry is gone or changed there left out (stale)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.proving.attempts import AttemptReport
from curriculum.results import StoredTheorem, TheoremKey
from lean_env.errors import LeanAgentError
from lean_env.records import RepoSpec, RepoTrace

if TYPE_CHECKING:
    from lean_env.proofs.github import PullRequest
    from lean_env.proofs.writeback import FreshBranch, StaleProof

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WrittenBack:
    """What became of a run's proofs: a patch per repository; for a URL repository, made on the
    newest commit of its branch, with a branch of one commit in its clone, ready to push, and
    the proofs whose sorry is gone or changed there left out (stale)."""

    # repository -> its patch file (git apply format)
    patches: dict[str, str] = dataclasses.field(default_factory=dict)
    # URL repository -> the branch in its clone
    branches: dict[str, FreshBranch] = dataclasses.field(default_factory=dict)
    # URL repository -> the proofs left out
    stale: dict[str, tuple[StaleProof, ...]] = dataclasses.field(default_factory=dict)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)  # repository -> why its write-back failed
    # URL repository -> the pull request of its branch (run --pull-request)
    pull_requests: dict[str, PullRequest] = dataclasses.field(default_factory=dict)
    # repository -> why each earlier try of its write-back (or pull request) failed, oldest
    # first: a resumed run retried it
    retried: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # One line per pull request of an earlier run that this one closed (or could not close):
    # a proof on it broke, or this run's pull request holds all of its proofs
    closed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "patches": self.patches,
            "write_back_failed": self.failed,
            "write_back_retried": {location: list(why) for location, why in self.retried.items()},
            "pull_requests_closed": list(self.closed),
            "branches": {location: branch.to_json() for location, branch in self.branches.items()},
            "pull_requests": {location: dataclasses.asdict(pr) for location, pr in self.pull_requests.items()},
            "stale": [
                {"repository": location, **dataclasses.asdict(proof)}
                for location, proofs in self.stale.items()
                for proof in proofs
            ],
        }


def write_patches(
    attempts: Sequence[AttemptReport],
    locations: Sequence[str],
    known: Mapping[TheoremKey, StoredTheorem],
    traces: Mapping[str, RepoTrace],
    checkouts: Mapping[str, Path],
    directory: Path,
    name: str,
    *,
    keep_restatements: bool,
    cache_dir: Path,
) -> WrittenBack:
    """One patch per repository of ``locations`` with proofs among ``attempts``, written to
    ``directory`` as NAME-K-REPO.patch. A URL repository's remote is fetched first: its
    patch, and a branch in its clone (``cache_dir``), are made on the newest commit of its
    branch, without the proofs whose sorry is not there any more
    (:func:`lean_env.proofs.writeback.write_back_fresh`). A proof that restates a lemma of
    its repository (flagged on its attempt) is left out, unless ``keep_restatements``."""
    from lean_env.files import write_text_atomically
    from lean_env.proofs.writeback import ProofEdit, render_diff, write_back_fresh

    patches, branches, stale, failed = {}, {}, {}, {}
    for number, location in enumerate(locations, start=1):
        proved = [(known[a.key], a) for a in attempts if a.repository == location]
        edits = [
            ProofEdit(stored.theorem, a.proof or "")
            for stored, a in proved
            if a.proved and (keep_restatements or a.restates is None)
        ]
        if not edits:
            continue
        # One repository's write-back failing (its clone, its files, a position that does
        # not fit) loses that patch, never the report of the run that found the proofs.
        try:
            if RepoSpec(location).is_remote:
                # Every theorem of a repository here is of its newest stored commit.
                checked = proved[0][0].commit
                fresh = write_back_fresh(traces[location].spec, edits, checked=checked, cache_dir=cache_dir)
                diff, stale[location] = fresh.diff, fresh.stale
                if fresh.branch is not None:
                    branches[location] = fresh.branch
            else:
                diff = render_diff(checkouts[location], edits)
            if diff:
                path = directory / f"{name}-{number}-{Path(location).name or 'repo'}.patch"
                write_text_atomically(path, diff)
                patches[location] = str(path)
        except LeanAgentError as error:
            log.error("the proofs of %s could not be written back: %s", location, error)
            failed[location] = str(error)
    return WrittenBack(patches, branches, {loc: found for loc, found in stale.items() if found}, failed)
