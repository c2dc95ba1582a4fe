"""Write-backs as the database keeps them: per run and repository, what writing its proofs
back made (a patch, a branch, a pull request) or why it failed, so that a resumed run
finishes what failed and a later run finds the pull requests it opened
(:class:`curriculum.db.WriteBackRow`). A write-back made again is a new row; the newest of a
run and repository is its state.

These functions run on a :class:`~sqlalchemy.orm.Session` inside a transaction the caller
owns (:mod:`curriculum.store`); they never commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from curriculum.db import AttemptRow, RepositoryRow, TheoremRow, VersionRow, WriteBackRow
from curriculum.results import WriteBackRecord
from lean_env.records import AttemptOutcome

# What `update` leaves as it is.
KEEP: Any = object()


def add(
    session: Session, run_id: int, location: str, written: Mapping[str, Any], *, failed: str | None
) -> WriteBackRecord:
    """A new write-back of run ``run_id``'s proofs of ``location``: what it made, and why
    it failed (None: done)."""
    row = WriteBackRow(run_id=run_id, location=location, written=dict(written), failed=failed, failures=[])
    session.add(row)
    session.flush()
    return to_record(row)


def update(
    session: Session, write_back_id: int, *, pull_request: Mapping[str, Any] | None = KEEP, failed: str | None
) -> WriteBackRecord:
    """Set the pull request a write-back opened (unless KEEP) and why it failed now (None:
    done); the failure it replaces joins the earlier ones."""
    row = _row(session, write_back_id)
    if row.failed is not None:
        row.failures = [*row.failures, row.failed]
    if pull_request is not KEEP:
        row.pull_request = None if pull_request is None else dict(pull_request)
    row.failed = failed
    session.flush()
    return to_record(row)


def close(session: Session, write_back_id: int, why: str) -> None:
    """Mark the pull request of the write-back ``write_back_id`` closed, for ``why``."""
    _row(session, write_back_id).closed = why
    session.flush()


def read(session: Session, *, run_id: int | None, location: str | None) -> list[WriteBackRecord]:
    """The write-backs of run ``run_id`` and/or of ``location`` (None: any), oldest first."""
    query = select(WriteBackRow).order_by(WriteBackRow.id)
    if run_id is not None:
        query = query.where(WriteBackRow.run_id == run_id)
    if location is not None:
        query = query.where(WriteBackRow.location == location)
    return [to_record(row) for row in session.scalars(query)]


def run_locations(session: Session, run_id: int, *, proved: bool) -> set[str]:
    """The repositories where run ``run_id`` recorded an attempt (``proved``: a proof), at
    any of their versions."""
    query = (
        select(RepositoryRow.location)
        .distinct()
        .join(VersionRow, VersionRow.repository_id == RepositoryRow.id)
        .join(TheoremRow, TheoremRow.version_id == VersionRow.id)
        .join(AttemptRow, AttemptRow.theorem_id == TheoremRow.id)
        .where(AttemptRow.run_id == run_id)
    )
    if proved:
        query = query.where(AttemptRow.outcome == AttemptOutcome.PROVED)
    return set(session.scalars(query))


def to_record(row: WriteBackRow) -> WriteBackRecord:
    return WriteBackRecord(
        row.id,
        row.run_id,
        row.location,
        dict(row.written),
        None if row.pull_request is None else dict(row.pull_request),
        row.failed,
        tuple(row.failures),
        row.closed,
    )


def _row(session: Session, write_back_id: int) -> WriteBackRow:
    row = session.get(WriteBackRow, write_back_id)
    if row is None:
        raise LookupError(f"no write-back {write_back_id} is stored")
    return row
