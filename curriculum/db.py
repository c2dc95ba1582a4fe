"""The schema of the dynamic database: typed SQLAlchemy 2.0 models, one class per table.

The models hold data only; every session and commit lives in :mod:`curriculum.store`.

::

    repositories ─┬─ repo_versions ─┬─ files ── file_imports
    (one per URL   │  (one per commit)├─ premises
     or path)      │                  ├─ theorems ── tactic_steps ── tactic_premises ─► premises
                   │                  └─ parse_problems
    runs ─┬─ proof_attempts ─► theorems
          │    └─ attempt_goals ── tried_tactics (every tactic a search ran, and what it did)
          └─ write_backs (per repository: the patch, branch and pull request of its proofs)
    leanagent_schema (one row: the schema version and the database's identity)

A repository is keyed by its location (URL, or absolute path of a local project); a version
by (repository, commit). Everything a trace holds hangs off its version, so equal file paths
or theorem names in two repositories, or in two commits of one repository, never collide.
Rows of one version keep their trace order in an ``idx`` column, so reading a version back
gives the records that were stored, in the same order.

Timestamps are timezone-aware UTC on every backend (SQLite stores them naive; the
:class:`UTCDateTime` type restores the zone on the way out).

The database records the version of this schema it was made with (:class:`SchemaRow`);
:meth:`curriculum.store.Store.open` opens only a database of :data:`SCHEMA_VERSION`, or an
empty one, which it makes, or an older one, which it upgrades in place: version 1 gets its
identity, versions 1 and 2 the tables of tried tactics, versions 1 to 3 the table of
write-backs.
"""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    Dialect,
    Enum,
    ForeignKey,
    Index,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from lean_env.records import AttemptOutcome, DeclKind, IngestBackend, RunStatus, TacticOutcome, TheoremStatus


def utcnow() -> datetime:
    """Now, timezone-aware, in UTC: the default of every timestamp column."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always stored and returned as aware UTC.

    Naive datetimes are refused on the way in (they are a bug: local or UTC?); SQLite, which
    drops the zone, gets it back on the way out.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: store timezone-aware UTC times")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _str_enum(cls: type[enum.StrEnum]) -> Enum:
    # Store the enum's values ("proven"), not its member names ("PROVEN"), as plain strings:
    # readable in SQL and portable (no native PostgreSQL enum types to migrate).
    return Enum(cls, native_enum=False, length=32, values_callable=lambda e: [m.value for m in e])


class Base(DeclarativeBase):
    type_annotation_map = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[str]: JSON(),
        list[list[int]]: JSON(),
        IngestBackend: _str_enum(IngestBackend),
        TheoremStatus: _str_enum(TheoremStatus),
        DeclKind: _str_enum(DeclKind),
        AttemptOutcome: _str_enum(AttemptOutcome),
        TacticOutcome: _str_enum(TacticOutcome),
        RunStatus: _str_enum(RunStatus),
    }


# The version of the tables below: bump it with any change to them. A database made at
# another version (or by an older leanagent, before versions were recorded) is refused,
# not read with columns it lacks or written with rows it cannot hold.
SCHEMA_VERSION = 4
# Version 1 had no identity; curriculum.store upgrades such a database in place.
IDENTITY_SINCE = 2
# Versions before 3 kept no tried tactics; curriculum.store adds their tables in place.
TRIED_SINCE = 3
# The tables a version before TRIED_SINCE lacks.
TRIED_TABLES = ("attempt_goals", "tried_tactics")
# Versions before 4 kept no write-backs; curriculum.store adds the table in place.
WRITE_BACKS_SINCE = 4
WRITE_BACKS_TABLE = "write_backs"


def new_identity() -> str:
    """A database's identity: random, made once, when its schema is (32 hex digits)."""
    return uuid.uuid4().hex


class SchemaRow(Base):
    """The version of the schema the database was made with, and its identity: one row, id 1.

    The identity names this database wherever it is reached from (a path spelled two ways,
    a copy moved elsewhere): what is kept beside it (the learner) is keyed by it, never by
    the URL."""

    __tablename__ = "leanagent_schema"
    # One row only: two processes making one database both insert id 1, and one of them loses.
    __table_args__ = (CheckConstraint("id = 1", name="leanagent_schema_one_row"),)

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    version: Mapped[int]
    identity: Mapped[str] = mapped_column(String(32))


class RepositoryRow(Base):
    """A repository, whatever its commit: the unit the curriculum orders."""

    __tablename__ = "repositories"

    id: Mapped[int] = mapped_column(primary_key=True)
    # A git URL as given, or the absolute path of a local Lake project.
    location: Mapped[str] = mapped_column(String, unique=True)
    first_seen: Mapped[datetime] = mapped_column(default=utcnow)


class VersionRow(Base):
    """One ingested commit of a repository; the latest one per repository is the merged view."""

    __tablename__ = "repo_versions"
    __table_args__ = (UniqueConstraint("repository_id", "commit"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id", ondelete="CASCADE"))
    # A full git SHA, or ``content-<hash>`` for a local directory that is not a clean git tree.
    commit: Mapped[str] = mapped_column(String)
    # The commit or ref the spec asked for (None: the default head / the working tree).
    requested_ref: Mapped[str | None] = mapped_column(String)
    lean_version: Mapped[str | None] = mapped_column(String)
    backend: Mapped[IngestBackend]
    ingested_at: Mapped[datetime] = mapped_column(default=utcnow)


class FileRow(Base):
    __tablename__ = "files"
    __table_args__ = (
        UniqueConstraint("version_id", "idx"),
        Index("ix_files_path", "version_id", "path"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("repo_versions.id", ondelete="CASCADE"))
    idx: Mapped[int]
    path: Mapped[str] = mapped_column(String)


class ImportRow(Base):
    __tablename__ = "file_imports"
    __table_args__ = (UniqueConstraint("file_id", "idx"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    file_id: Mapped[int] = mapped_column(ForeignKey("files.id", ondelete="CASCADE"))
    idx: Mapped[int]
    # The imported module (``Mathlib.Logic.Basic``), whether or not this repository has it.
    module: Mapped[str] = mapped_column(String)


class DeclarationColumns:
    """The columns a premise and a theorem share: which version and trace position, the
    full name, and the file span ``start``..``end`` (1-based, half-open, as the records)."""

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("repo_versions.id", ondelete="CASCADE"))
    idx: Mapped[int]
    full_name: Mapped[str] = mapped_column(String)
    path: Mapped[str] = mapped_column(String)
    start_line: Mapped[int]
    start_column: Mapped[int]
    end_line: Mapped[int]
    end_column: Mapped[int]


class PremiseRow(DeclarationColumns, Base):
    __tablename__ = "premises"
    __table_args__ = (
        UniqueConstraint("version_id", "idx"),
        Index("ix_premises_name", "version_id", "full_name"),
    )

    kind: Mapped[DeclKind]
    code: Mapped[str] = mapped_column(Text)


class TheoremRow(DeclarationColumns, Base):
    __tablename__ = "theorems"
    __table_args__ = (
        UniqueConstraint("version_id", "idx"),
        Index("ix_theorems_name", "version_id", "full_name"),
        Index("ix_theorems_status", "status"),
    )

    statement: Mapped[str] = mapped_column(Text)
    # None when the source gave no proof text that could be read.
    proof: Mapped[str | None] = mapped_column(Text)
    status: Mapped[TheoremStatus]
    # ``Theorem.num_steps`` (S of the difficulty e^S), kept so the curriculum needs no join.
    num_steps: Mapped[int]
    # Full names the whole proof uses, and the positions of its `sorry`s as [line, column].
    premises: Mapped[list[str]]
    sorries: Mapped[list[list[int]]]
    proof_start_line: Mapped[int | None]
    proof_start_column: Mapped[int | None]


class TacticRow(Base):
    __tablename__ = "tactic_steps"
    __table_args__ = (
        UniqueConstraint("theorem_id", "idx"),
        Index("ix_tactics_version", "version_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    theorem_id: Mapped[int] = mapped_column(ForeignKey("theorems.id", ondelete="CASCADE"))
    # Denormalised from the theorem so one version's steps load without a join.
    version_id: Mapped[int] = mapped_column(ForeignKey("repo_versions.id", ondelete="CASCADE"))
    idx: Mapped[int]
    tactic: Mapped[str] = mapped_column(Text)
    # None for source extraction, which sees text but not goals.
    state_before: Mapped[str | None] = mapped_column(Text)
    state_after: Mapped[str | None] = mapped_column(Text)


class TacticPremiseRow(Base):
    """A premise one tactic step uses: by name always, by row when this version defines it."""

    __tablename__ = "tactic_premises"
    __table_args__ = (
        UniqueConstraint("tactic_id", "idx"),
        Index("ix_tactic_premises_version", "version_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    tactic_id: Mapped[int] = mapped_column(ForeignKey("tactic_steps.id", ondelete="CASCADE"))
    version_id: Mapped[int] = mapped_column(ForeignKey("repo_versions.id", ondelete="CASCADE"))
    idx: Mapped[int]
    name: Mapped[str] = mapped_column(String)
    # None when the premise comes from elsewhere (a dependency, Lean core).
    premise_id: Mapped[int | None] = mapped_column(ForeignKey("premises.id", ondelete="SET NULL"))


class ProblemRow(Base):
    """Something ingestion could not read (kept so the trace reads back as it was stored)."""

    __tablename__ = "parse_problems"
    __table_args__ = (UniqueConstraint("version_id", "idx"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("repo_versions.id", ondelete="CASCADE"))
    idx: Mapped[int]
    path: Mapped[str] = mapped_column(String)
    line: Mapped[int]
    reason: Mapped[str] = mapped_column(Text)


class RunRow(Base):
    """One invocation of the lifelong loop (``leanagent run``), with the config it ran with."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None]
    status: Mapped[RunStatus] = mapped_column(default=RunStatus.RUNNING)
    config: Mapped[dict[str, Any]]


class AttemptRow(Base):
    """One proof search for one theorem in one run; at most one per (run, theorem)."""

    __tablename__ = "proof_attempts"
    __table_args__ = (UniqueConstraint("run_id", "theorem_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    theorem_id: Mapped[int] = mapped_column(ForeignKey("theorems.id", ondelete="CASCADE"))
    outcome: Mapped[AttemptOutcome]
    # The proof text (tactic block) when the outcome is PROVED, or VACUOUS (Lean compiled it,
    # but the theorem depends on sorryAx).
    proof: Mapped[str | None] = mapped_column(Text)
    seconds: Mapped[float]
    # Search-tree nodes expanded: the unit of the search budget.
    nodes: Mapped[int]
    # The proof environment used (``dojo``, ``repl``, ...).
    backend: Mapped[str] = mapped_column(String)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AttemptGoalRow(Base):
    """A goal an attempt's search ran tactics on: each goal once per attempt (an expansion
    runs many tactics on one goal)."""

    __tablename__ = "attempt_goals"
    __table_args__ = (UniqueConstraint("attempt_id", "idx"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("proof_attempts.id", ondelete="CASCADE"))
    idx: Mapped[int]
    text: Mapped[str] = mapped_column(Text)


class TriedTacticRow(Base):
    """One tactic an attempt's search ran, and what it did (lean_env.records.TriedTactic)."""

    __tablename__ = "tried_tactics"
    __table_args__ = (UniqueConstraint("attempt_id", "idx"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("proof_attempts.id", ondelete="CASCADE"))
    idx: Mapped[int]  # the order the search ran them in
    goal_id: Mapped[int] = mapped_column(ForeignKey("attempt_goals.id", ondelete="CASCADE"))
    tactic: Mapped[str] = mapped_column(Text)
    outcome: Mapped[TacticOutcome]
    goals_after: Mapped[int | None]
    on_proof: Mapped[bool]


class WriteBackRow(Base):
    """One write-back of a run's proofs of one repository: the patch, the branch in its clone
    and the pull request of them, or why that failed. A resumed run finishes those that
    failed (a write-back made again is a new row: the newest of a run and repository is its
    state); a later run closes a pull request whose proofs no longer hold
    (agent/lifelong/write_backs.py)."""

    __tablename__ = WRITE_BACKS_TABLE
    __table_args__ = (Index("ix_write_backs_location", "location"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    location: Mapped[str] = mapped_column(String)
    # What write-back made, as agent/lifelong/write_backs.py writes it: the patch, the branch
    # (with the proofs on it), the stale proofs, the pull request's title and body.
    written: Mapped[dict[str, Any]]
    # Its pull request ({"url", "number", "existed"}); None: none opened (yet).
    pull_request: Mapped[dict[str, Any] | None]
    # Why the latest try failed (write-back or pull request); None: done.
    failed: Mapped[str | None] = mapped_column(Text)
    # Why each earlier try of its pull request failed, oldest first (the report keeps them).
    failures: Mapped[list[str]]
    # Why a later run closed its pull request; None: open, or none.
    closed: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
