"""The values :class:`curriculum.store.Store` returns: plain frozen records, so callers
never hold a session or a row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lean_env.records import AttemptOutcome, IngestBackend, RunStatus, Theorem, TheoremStatus


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One stored repository version and what it holds."""

    location: str
    commit: str
    requested_ref: str | None
    lean_version: str | None
    backend: IngestBackend
    ingested_at: datetime
    # True when this is the newest version of its repository (part of the merged view).
    latest: bool
    files: int
    premises: int
    theorems: int
    sorries: int


@dataclass(frozen=True, slots=True)
class AddedTrace:
    """What storing a trace did (:meth:`curriculum.store.Store.add_trace`)."""

    # False: its version was stored already, and nothing changed.
    added: bool
    # Full names (in trace order) of the theorems, still `sorry` in the new version, that got
    # the proof found for the repository's previous version: same name, same statement.
    carried_proofs: tuple[str, ...] = ()


# What names one theorem across runs and reports: (repository location, file, full name).
# A full name alone does not: exercise/solution twins and standalone test files repeat them.
TheoremKey = tuple[str, str, str]


def theorem_key(location: str, theorem: Theorem) -> TheoremKey:
    """The key of ``theorem`` of the repository at ``location``."""
    return (location, theorem.path, theorem.full_name)


@dataclass(frozen=True, slots=True)
class StoredTheorem:
    """A theorem of the merged view with the id that proof attempts refer to."""

    id: int
    location: str
    commit: str
    theorem: Theorem

    @property
    def key(self) -> TheoremKey:
        return theorem_key(self.location, self.theorem)


@dataclass(frozen=True, slots=True)
class FoundProof:
    """A proof our search found for a theorem of a repository's newest version
    (:func:`curriculum.found_proofs.found_proofs`): checked by Lean there, or carried over
    from an earlier version and not checked there yet."""

    stored: StoredTheorem  # the theorem of the newest version, `proved_by_us`
    proof: str  # the proof text Lean accepted at ``checked_at``
    checked_at: str  # the commit Lean last accepted it at

    @property
    def carried(self) -> bool:
        """Not checked at the theorem's own commit yet."""
        return self.checked_at != self.stored.commit


@dataclass(frozen=True, slots=True)
class TheoremSummary:
    """What the curriculum needs of a theorem, without its proof text or tactics."""

    location: str
    commit: str
    full_name: str
    status: TheoremStatus
    num_steps: int


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: int
    started_at: datetime
    ended_at: datetime | None
    status: RunStatus
    config: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    id: int
    run_id: int
    theorem_id: int
    outcome: AttemptOutcome
    proof: str | None
    seconds: float
    nodes: int
    backend: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class WriteBackRecord:
    """One run's write-back of one repository (curriculum.db.WriteBackRow)."""

    id: int
    run_id: int
    location: str
    written: Mapping[str, Any]
    pull_request: Mapping[str, Any] | None
    failed: str | None
    failures: tuple[str, ...]
    closed: str | None


@dataclass(frozen=True, slots=True)
class DbStats:
    """Row counts over everything stored, and the merged view per repository."""

    url: str
    repositories: int
    versions: int
    files: int
    premises: int
    theorems: int
    tactic_steps: int
    runs: int
    attempts: int
    # Theorems of the merged view by status (every status present, zeros included).
    latest_by_status: Mapping[str, int]
    latest: tuple[VersionInfo, ...]
