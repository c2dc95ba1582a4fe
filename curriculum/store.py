"""The repository layer of the dynamic database: every session and every commit lives here.

Callers speak records (:mod:`lean_env.records`) and the small result records of
:mod:`curriculum.results`; they never see a session, a row or a SQLAlchemy exception. Guarantees:

* **Idempotent ingest.** A repository version is keyed by (location, commit); storing a
  trace whose version is already present changes nothing.
* **One transaction per repository version.** A trace is stored completely or not at all:
  an ingest killed half-way leaves the database as it was and can simply be re-run.
* **Merged view.** A new commit of a known repository is a new version; the merged view
  (:meth:`Store.latest_traces`, :meth:`Store.theorems`, the curriculum) takes the most
  recently ingested version of each repository.
* **Found proofs carry over.** A new version gets, in its own transaction, the proofs our
  search found for the previous version's theorems that are still `sorry` in it with the
  same statement (:mod:`curriculum.found_proofs`).
* **Only its own schema.** :meth:`Store.open` makes an empty database (tables and schema
  version in one transaction) and refuses, before writing anything, one that has tables
  but not this schema version (:data:`curriculum.db.SCHEMA_VERSION`).
* **Write-backs are state.** What writing a run's proofs of a repository back made (patch,
  branch, pull request) or why it failed is kept per run and repository
  (:mod:`curriculum.write_backs`), so that a resumed run finishes it.
* **One job at a time.** :meth:`Store.job_lock` holds the database's job lock
  (:mod:`curriculum.locks`: a file lock beside a SQLite file, an advisory lock on
  PostgreSQL) on this store's own engine; a lock that cannot be taken is an error
  (:class:`JobLockUnavailableError`), never a job that goes on unlocked.
* **Errors at the boundary.** A database that cannot be opened or written (bad URL,
  unwritable path, server down) raises :class:`DatabaseUnavailableError` naming the URL
  (password hidden) and, for a SQLite file, what the operating system says of it; a full
  disk raises :class:`~lean_env.errors.DiskFullError`; any other database failure raises
  :class:`DatabaseError`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import tempfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, cast

from sqlalchemy import (
    Connection,
    Engine,
    Inspector,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    ArgumentError,
    IntegrityError,
    NoSuchModuleError,
    OperationalError,
    ProgrammingError,
    SQLAlchemyError,
)
from sqlalchemy.orm import Session

from curriculum import bulk, found_proofs, write_backs
from curriculum.db import (
    IDENTITY_SINCE,
    SCHEMA_VERSION,
    TRIED_SINCE,
    TRIED_TABLES,
    WRITE_BACKS_SINCE,
    WRITE_BACKS_TABLE,
    AttemptGoalRow,
    AttemptOutcome,
    AttemptRow,
    Base,
    FileRow,
    PremiseRow,
    RepositoryRow,
    RunRow,
    RunStatus,
    SchemaRow,
    TacticRow,
    TheoremRow,
    TriedTacticRow,
    VersionRow,
    new_identity,
    utcnow,
)
from curriculum.locks import AdvisoryJobLock, FileJobLock, Notify
from curriculum.results import (
    AddedTrace,
    AttemptRecord,
    DbStats,
    FoundProof,
    RunRecord,
    StoredTheorem,
    TheoremSummary,
    VersionInfo,
    WriteBackRecord,
)
from lean_env.closing import ClosesOnExit
from lean_env.errors import BackendError, DiskFullError, LeanAgentError, UserInputError, first_line
from lean_env.paths import check_path, shown
from lean_env.records import RepoTrace, TheoremStatus, TracedTactic, TriedTactic

log = logging.getLogger(__name__)

# Seconds a SQLite connection waits for another's lock before "database is locked".
_SQLITE_WAIT = 60.0

# The password part of a URL's authority, for messages about URLs that did not parse.
_PASSWORD_RE = re.compile(r"(://[^:/@]*:)[^@/]*@")

# PostgreSQL's SQLSTATE for a full disk (class 53, insufficient resources).
_DISK_FULL_STATE = "53100"

# Ids per `IN (...)` list: under SQLite's limit of bound parameters in one statement.
_IN_CHUNK = 10_000


class DatabaseUnavailableError(UserInputError):
    """The database URL cannot be opened or written: a bad URL, an unwritable path, no server."""


class JobLockUnavailableError(DatabaseUnavailableError):
    """The database's job lock cannot be taken (no server, a lost connection, a lock file that
    cannot be written): the job must not go on without it."""


class DatabaseError(BackendError):
    """A database operation failed for a reason other than reaching the database."""


class RecordNotFoundError(LeanAgentError, LookupError):
    """A run or theorem id that the database does not hold."""


class Store(ClosesOnExit):
    """The dynamic database. Build with :meth:`open`; close (or use as a context manager)."""

    def __init__(self, engine: Engine, identity: str, *, url: str | None = None) -> None:
        self._engine = engine
        # Shown in error messages; never with the password.
        self.url = url or engine.url.render_as_string(hide_password=True)
        # This database's own name (curriculum.db.SchemaRow), whatever URL reached it.
        self.identity = identity

    @classmethod
    def open(cls, url: str) -> Store:
        """Connect to ``url`` (any SQLAlchemy URL). An empty database gets the tables, the
        schema version (:data:`~curriculum.db.SCHEMA_VERSION`) and its identity, in one
        transaction; one of this schema version opens as it is; an older one is upgraded in
        one transaction (:func:`_upgrade`: version 1 gets its identity, versions 1 and 2 the
        tables of tried tactics, versions 1 to 3 the table of write-backs); any other (tables
        but no version: an older leanagent's or another program's; a newer version) is
        refused with a :class:`DatabaseUnavailableError` before anything is written to it."""
        database = sqlite_file(url)
        try:
            engine = create_engine(url, connect_args={"timeout": _SQLITE_WAIT} if url.startswith("sqlite") else {})
        except (ArgumentError, NoSuchModuleError, ImportError, ValueError) as e:
            raise DatabaseUnavailableError(
                f"{_hide_password(url)!r} is not a usable database URL: {first_line(e)}"
            ) from e
        shown = engine.url.render_as_string(hide_password=True)
        try:
            # Looked at before the SQLite pragmas are set (WAL mode is written into the
            # file: a database that is refused is left as it was), on a connection closed
            # afterwards, so that every later one has them.
            with engine.connect() as conn:
                version = _schema_version(conn, shown)
            engine.dispose()
            if engine.dialect.name == "sqlite":
                event.listen(engine, "connect", _sqlite_pragmas)
            if version is None:
                _make_schema(engine, shown)
            elif version < SCHEMA_VERSION:
                _upgrade(engine, shown)
            with engine.connect() as conn:
                # The schema row exists by now (found, made or upgraded above) and has its identity.
                identity = cast(str, conn.scalar(select(SchemaRow.identity)))
        except SQLAlchemyError as e:
            engine.dispose()
            # Whatever fails before the tables exist (no server, a path that cannot be
            # written, a file that is not a database) is the URL's fault: the user's to fix,
            # but for a full disk.
            if _is_full(e, database):
                raise DiskFullError(f"cannot use the database {shown} (opening it): {_full_reason(e)}") from e
            reason = _reason(e) + _why_not_writable(database)
            raise DatabaseUnavailableError(f"cannot use the database {shown} (opening it): {reason}") from e
        except DatabaseUnavailableError:
            engine.dispose()
            raise
        return cls(engine, identity)

    @classmethod
    def open_to_read(cls, url: str) -> Store:
        """Like :meth:`open`, for a command that only reads: an existing SQLite file is
        opened read-only, so that a database in a directory this user cannot write (which
        WAL mode would need for its ``-shm`` file) is still read; where SQLite cannot
        open it read-only in place, it reads it as immutable (a snapshot: nobody can be
        writing where nobody may write). Anything else (a server, a file yet to be made)
        opens as :meth:`open` does. Nothing is upgraded: a database of schema version 1
        opened so has no identity yet (``""``), and one before version 3 no tried tactics
        (:meth:`tried_tactics` reads none there)."""
        database = sqlite_file(url)
        if database is None or not database.is_file():
            return cls.open(url)
        located = make_url(url).set(database=f"file:{urllib.parse.quote(str(database))}")
        shown = f"sqlite:///{database}"
        failure: SQLAlchemyError | None = None
        for query in ({"mode": "ro", "uri": "true"}, {"immutable": "1", "uri": "true"}):
            engine = create_engine(located.set(query=query), connect_args={"timeout": _SQLITE_WAIT})
            try:
                with engine.connect() as conn:
                    version = _schema_version(conn, shown)
                    if version is None:
                        raise DatabaseUnavailableError(f"the database {shown} is empty: there is nothing to read")
                    # A database of this schema version has its one schema row, with its identity.
                    identity = cast(str, conn.scalar(select(SchemaRow.identity))) if version >= IDENTITY_SINCE else ""
                return cls(engine, identity, url=shown)
            except OperationalError as e:  # cannot be opened read-only so: try the next way
                engine.dispose()
                failure = e
            except SQLAlchemyError as e:  # not a database, say
                engine.dispose()
                raise DatabaseUnavailableError(f"cannot use the database {shown} (opening it): {_reason(e)}") from e
            except BaseException:
                engine.dispose()
                raise
        # Every way ended in OperationalError (anything else returned or raised above).
        assert failure is not None
        raise DatabaseUnavailableError(f"cannot read the database {database}: {_reason(failure)}") from failure

    def close(self) -> None:
        """Release pooled connections; idempotent."""
        self._engine.dispose()

    @contextmanager
    def job_lock(self, holder: str, *, wait: bool = False, notify: Notify = log.warning) -> Iterator[None]:
        """Hold this database's job lock for the block, so that one job at a time writes its
        runs and attempts: for SQLite an OS file lock beside the database file (``DB.lock``),
        for PostgreSQL a session-level advisory lock on a connection of this store's engine;
        other databases (and SQLite in memory) have none. ``holder`` (command, pid, host,
        start time) is what another job is told.

        Another holder raises :class:`~curriculum.locks.JobLockedError` at once, or with
        ``wait`` is waited for (``notify`` gets a line saying for what and whom, then one a
        minute); a lock that cannot be taken raises :class:`JobLockUnavailableError`."""

        def unavailable(reason: str) -> JobLockUnavailableError:
            return JobLockUnavailableError(f"cannot take the job lock of the database {self.url}: {reason}")

        database = sqlite_file(self.url)
        lock: FileJobLock | AdvisoryJobLock | None = None
        if database is not None:
            # Taken even when the file is in the job's data directory: a job in another
            # data directory may name the same file with --db.
            path = database.with_name(database.name + ".lock")
            lock = FileJobLock(path, what=f"the database {database}", unavailable=unavailable)
        elif self._engine.dialect.name == "postgresql":
            lock = AdvisoryJobLock(self._engine, what=f"the database {self.url}", unavailable=unavailable)
        with nullcontext() if lock is None else lock.held(holder, wait=wait, notify=notify):
            yield

    # ---- repository versions ---------------------------------------------------------

    def has_version(self, location: str, commit: str) -> bool:
        """True when (location, commit) is stored: ingesting it again would change nothing."""
        with self._guard(f"looking up {location}@{commit}"), Session(self._engine) as session:
            return self._version_id(session, location, commit) is not None

    def add_trace(self, trace: RepoTrace) -> AddedTrace:
        """Store ``trace`` in one transaction; not added (and no change) if its version is stored.

        The version is keyed by ``trace.spec.location`` and ``trace.commit``. In the same
        transaction, the proofs found for the repository's previous version carry over to
        its theorems that are still `sorry` with the same statement
        (:func:`curriculum.found_proofs.carry_found_proofs`).
        """
        location, commit = trace.spec.location, trace.commit
        for attempt in (1, 2):
            try:
                return self._insert_trace(trace)
            except DatabaseError as e:
                # A unique key says another process stored the same version (nothing to do)
                # or created the same repository row first (try again once).
                if not isinstance(e.__cause__, IntegrityError):
                    raise
                if self.has_version(location, commit):
                    return AddedTrace(added=False)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _insert_trace(self, trace: RepoTrace) -> AddedTrace:
        location, commit = trace.spec.location, trace.commit
        with (
            self._guard(f"storing {location}@{commit}"),
            Session(self._engine) as session,
            session.begin(),
        ):
            repo = session.scalar(select(RepositoryRow).where(RepositoryRow.location == location))
            previous = None
            if repo is None:
                repo = RepositoryRow(location=location)
                session.add(repo)
                session.flush()
            elif self._version_id(session, location, commit) is not None:
                return AddedTrace(added=False)
            else:
                # The newest stored version (ingest order, as the merged view has it).
                previous = session.scalar(select(func.max(VersionRow.id)).where(VersionRow.repository_id == repo.id))
            version = VersionRow(
                repository_id=repo.id,
                commit=commit,
                requested_ref=trace.spec.commit,
                lean_version=trace.lean_version,
                backend=trace.backend,
            )
            session.add(version)
            session.flush()
            conn = session.connection()
            counts = bulk.write_trace(conn, trace, version_id=version.id)
            carried = (
                found_proofs.carry_found_proofs(conn, earlier_version_id=previous, version_id=version.id)
                if previous is not None
                else []
            )
        log.info("stored %s@%s: %s", location, commit, ", ".join(f"{v} {k}" for k, v in counts.items()))
        if carried:
            log.info("%s@%s: %d found proof(s) carried over: %s", location, commit, len(carried), ", ".join(carried))
        return AddedTrace(added=True, carried_proofs=tuple(carried))

    def version(self, location: str, commit: str) -> VersionInfo | None:
        """The stored version (location, commit), or None."""
        found = self._version_infos(lambda loc, v: (loc, v.commit) == (location, commit))
        return found[0] if found else None

    def newest_commit(self, location: str) -> str | None:
        """The commit of the newest stored version of ``location`` (None: none stored)."""
        with self._guard("listing versions"), Session(self._engine) as session:
            newest = [v.commit for v, loc in _latest(self._all_versions(session)) if loc == location]
        return newest[0] if newest else None

    def versions(self) -> list[VersionInfo]:
        """Every stored version, by location and then ingest order."""
        return self._version_infos(lambda loc, v: True)

    def _version_infos(self, keep: Callable[[str, VersionRow], bool]) -> list[VersionInfo]:
        with self._guard("listing versions"), Session(self._engine) as session:
            rows = self._all_versions(session)
            latest = {v.id for v, _ in _latest(rows)}
            rows = [(v, loc) for v, loc in rows if keep(loc, v)]
            ids = [v.id for v, _ in rows]
            counts = {
                name: _count_by_version(session, model, ids, where)
                for name, model, where in (
                    ("files", FileRow, None),
                    ("premises", PremiseRow, None),
                    ("theorems", TheoremRow, None),
                    ("sorries", TheoremRow, TheoremRow.status == TheoremStatus.SORRY),
                )
            }
            return [
                VersionInfo(
                    location=location,
                    commit=v.commit,
                    requested_ref=v.requested_ref,
                    lean_version=v.lean_version,
                    backend=v.backend,
                    ingested_at=v.ingested_at,
                    latest=v.id in latest,
                    **{name: by_version[v.id] for name, by_version in counts.items()},
                )
                for v, location in rows
            ]

    # ---- the merged view -------------------------------------------------------------

    def latest_traces(self, *, location: str | None = None) -> list[RepoTrace]:
        """The newest version of every repository (or of ``location``), as records, ordered
        by location."""
        with self._guard("reading the merged view"), Session(self._engine) as session:
            conn = session.connection()
            newest = _latest(self._all_versions(session))
            return [bulk.read_trace(conn, v, loc) for v, loc in newest if location in (None, loc)]

    def theorems(self, *, status: TheoremStatus | None = None, location: str | None = None) -> list[StoredTheorem]:
        """Theorems of the merged view (optionally one status, one repository), with ids."""
        with self._guard("reading theorems"), Session(self._engine) as session:
            latest = [(v, loc) for v, loc in _latest(self._all_versions(session)) if location in (None, loc)]
            by_id = {v.id: (loc, v.commit) for v, loc in latest}
            theorem_version = dict(
                session.execute(
                    select(TheoremRow.id, TheoremRow.version_id).where(TheoremRow.version_id.in_(by_id))
                ).all()
            )
            return [
                StoredTheorem(id_, *by_id[theorem_version[id_]], theorem)
                for id_, theorem in bulk.read_theorems(session.connection(), list(by_id), status=status)
            ]

    def theorem_summaries(self) -> list[TheoremSummary]:
        """Status and step count of every theorem of the merged view (for the curriculum)."""
        with self._guard("reading theorem summaries"), Session(self._engine) as session:
            by_id = {v.id: (loc, v.commit) for v, loc in _latest(self._all_versions(session))}
            rows = session.execute(
                select(
                    TheoremRow.version_id,
                    TheoremRow.full_name,
                    TheoremRow.status,
                    TheoremRow.num_steps,
                )
                .where(TheoremRow.version_id.in_(by_id))
                .order_by(TheoremRow.version_id, TheoremRow.idx)
            ).all()
            return [TheoremSummary(*by_id[vid], name, status, steps) for vid, name, status, steps in rows]

    def stats(self) -> DbStats:
        """Counts of every table and the per-repository merged view."""
        versions = self.versions()
        with self._guard("counting rows"), Session(self._engine) as session:
            by_version = {(v.location, v.commit) for v in versions if v.latest}
            ids = [vid for vid, key in self._version_keys(session).items() if key in by_version]
            by_status = Counter(
                dict(
                    session.execute(
                        select(TheoremRow.status, func.count())
                        .where(TheoremRow.version_id.in_(ids))
                        .group_by(TheoremRow.status)
                    ).all()
                )
            )

            def count(model: type[Base]) -> int:
                return session.scalar(select(func.count()).select_from(model)) or 0

            return DbStats(
                url=self.url,
                repositories=count(RepositoryRow),
                versions=len(versions),
                files=count(FileRow),
                premises=count(PremiseRow),
                theorems=count(TheoremRow),
                tactic_steps=count(TacticRow),
                runs=count(RunRow),
                attempts=count(AttemptRow),
                latest_by_status={s.value: by_status[s] for s in TheoremStatus},
                latest=tuple(v for v in versions if v.latest),
            )

    # ---- runs and proof attempts -----------------------------------------------------

    def start_run(self, config: Mapping[str, Any]) -> RunRecord:
        """Record the start of a run with its (JSON-serialisable) configuration."""
        with self._guard("starting a run"), Session(self._engine) as session, session.begin():
            row = RunRow(config=dict(config))
            session.add(row)
            session.flush()
            return _run_record(row)

    def resume_run(self, config: Mapping[str, Any]) -> RunRecord | None:
        """The newest unfinished run (killed while running, interrupted or failed) with
        exactly this configuration, marked running again; None when there is none.

        Resuming keeps the run's id, so the work recorded under it (proof attempts are
        idempotent per run and theorem) is not repeated after a crash or a Ctrl-C.
        """
        wanted = json.loads(json.dumps(dict(config)))  # as the JSON column gives it back
        with self._guard("resuming a run"), Session(self._engine) as session, session.begin():
            unfinished = session.scalars(
                select(RunRow).where(RunRow.status != RunStatus.FINISHED).order_by(RunRow.id.desc())
            )
            for row in unfinished:
                if row.config == wanted:
                    row.status, row.ended_at = RunStatus.RUNNING, None
                    session.flush()
                    return _run_record(row)
        return None

    def finish_run(self, run_id: int, *, status: RunStatus = RunStatus.FINISHED) -> RunRecord:
        """Mark a run ended (finished, failed or interrupted) now."""
        with self._guard(f"ending run {run_id}"), Session(self._engine) as session, session.begin():
            row = _get(session, RunRow, run_id)
            row.status, row.ended_at = status, utcnow()
            return _run_record(row)

    def runs(self, *, status: RunStatus | None = None) -> list[RunRecord]:
        """Runs in start order, optionally only those with ``status`` (RUNNING: to resume)."""
        with self._guard("listing runs"), Session(self._engine) as session:
            query = select(RunRow).order_by(RunRow.id)
            if status is not None:
                query = query.where(RunRow.status == status)
            return [_run_record(r) for r in session.scalars(query)]

    def record_attempt(
        self,
        *,
        run_id: int,
        theorem_id: int,
        outcome: AttemptOutcome,
        seconds: float,
        nodes: int,
        backend: str,
        proof: str | None = None,
        steps: Sequence[TracedTactic] = (),
        tried: Sequence[TriedTactic] = (),
    ) -> AttemptRecord:
        """Record one proof search; idempotent per (run, theorem): a repeat returns the first.
        ``tried``: every tactic the search ran, with what it did (:meth:`tried_tactics`).

        A PROVED outcome also marks a `sorry` theorem PROVED_BY_US, in the same
        transaction, and ``steps`` (the proof's tactics, with their goals and premises)
        become its tactic steps, in place of the source's (its proof text stays the
        source's: what writing the proof back replaces), so the merged view gives them to
        the suggester and the retriever (:func:`curriculum.found_proofs.store_found_proof`);
        the repository's next version gets them too, while the theorem is `sorry` there
        with the same statement. Record PROVED only after Lean's final check accepted the
        proof.
        """
        if outcome is AttemptOutcome.PROVED and not proof:
            raise ValueError("a PROVED attempt needs the proof text")
        with (
            self._guard(f"recording an attempt on theorem {theorem_id}"),
            Session(self._engine) as session,
            session.begin(),
        ):
            _get(session, RunRow, run_id)
            theorem = _get(session, TheoremRow, theorem_id)
            existing = session.scalar(
                select(AttemptRow).where(AttemptRow.run_id == run_id, AttemptRow.theorem_id == theorem_id)
            )
            if existing is not None:
                return _attempt_record(existing)
            row = AttemptRow(
                run_id=run_id,
                theorem_id=theorem_id,
                outcome=outcome,
                proof=proof,
                seconds=seconds,
                nodes=nodes,
                backend=backend,
            )
            session.add(row)
            if outcome is AttemptOutcome.PROVED and theorem.status is TheoremStatus.SORRY:
                found_proofs.store_found_proof(session.connection(), theorem_id, theorem.version_id, steps)
            session.flush()
            _add_tried(session, row.id, tried)
            return _attempt_record(row)

    def found_proofs(self, location: str, *, unconfirmed: bool = False) -> list[FoundProof]:
        """The proofs found for the `proved_by_us` theorems of the newest version of
        ``location``, in trace order; with ``unconfirmed`` only those carried over to it that
        no attempt has checked there (:func:`curriculum.found_proofs.found_proofs`)."""
        with self._guard(f"reading the proofs found for {location}"), Session(self._engine) as session:
            newest = [v for v, loc in _latest(self._all_versions(session)) if loc == location]
            if not newest:
                return []
            version = newest[0]
            found = found_proofs.found_proofs(session.connection(), version.id, unconfirmed=unconfirmed)
            return [
                FoundProof(StoredTheorem(id_, location, version.commit, theorem), proof, checked_at)
                for id_, theorem, proof, checked_at in found
            ]

    def withdraw_found_proof(self, theorem_id: int) -> None:
        """Make the `proved_by_us` theorem ``theorem_id`` `sorry` again, its found steps gone:
        Lean rejected its found proof (:func:`curriculum.found_proofs.withdraw_found_proof`)."""
        with (
            self._guard(f"withdrawing the proof of theorem {theorem_id}"),
            Session(self._engine) as session,
            session.begin(),
        ):
            theorem = _get(session, TheoremRow, theorem_id)
            if theorem.status is not TheoremStatus.PROVED_BY_US:
                raise ValueError(f"theorem {theorem_id} is {theorem.status}, not proved_by_us")
            found_proofs.withdraw_found_proof(session.connection(), theorem_id, theorem.version_id)

    def attempted(self, theorem_ids: Collection[int]) -> set[int]:
        """Which of ``theorem_ids`` some run has attempted."""
        ids = sorted(set(theorem_ids))
        found: set[int] = set()
        with self._guard("reading attempts"), Session(self._engine) as session:
            for start in range(0, len(ids), _IN_CHUNK):
                chunk = ids[start : start + _IN_CHUNK]
                query = select(AttemptRow.theorem_id).distinct().where(AttemptRow.theorem_id.in_(chunk))
                found.update(session.scalars(query))
        return found

    def attempts(self, *, run_id: int | None = None) -> list[AttemptRecord]:
        """Proof attempts in the order they were recorded, optionally of one run."""
        with self._guard("listing attempts"), Session(self._engine) as session:
            query = select(AttemptRow).order_by(AttemptRow.id)
            if run_id is not None:
                query = query.where(AttemptRow.run_id == run_id)
            return [_attempt_record(r) for r in session.scalars(query)]

    def tried_tactics(self, *, leave_out: Collection[int] = ()) -> list[tuple[int, TriedTactic]]:
        """Every recorded tactic of every attempt, with the id of the theorem the attempt was
        at, in the order recorded; none of the theorems ``leave_out`` (ids). A database of a
        schema before tried tactics were kept, opened to read only, has none."""
        with self._guard("reading the tried tactics"), Session(self._engine) as session:
            if TriedTacticRow.__tablename__ not in inspect(session.connection()).get_table_names():
                return []
            query = (
                select(AttemptRow.theorem_id, AttemptGoalRow.text, TriedTacticRow)
                .join(AttemptRow, AttemptRow.id == TriedTacticRow.attempt_id)
                .join(AttemptGoalRow, AttemptGoalRow.id == TriedTacticRow.goal_id)
                .order_by(TriedTacticRow.attempt_id, TriedTacticRow.idx)
            )
            if leave_out:
                query = query.where(AttemptRow.theorem_id.not_in(list(leave_out)))
            return [
                (theorem_id, TriedTactic(goal, row.tactic, row.outcome, row.goals_after, row.on_proof))
                for theorem_id, goal, row in session.execute(query)
            ]

    # ---- write-backs -----------------------------------------------------------------

    def add_write_back(
        self, run_id: int, location: str, written: Mapping[str, Any], *, failed: str | None
    ) -> WriteBackRecord:
        """Record a write-back of run ``run_id``'s proofs of ``location``: what it made
        (a JSON object), and why it failed (None: done)."""
        with (
            self._guard(f"recording the write-back of {location}"),
            Session(self._engine) as session,
            session.begin(),
        ):
            _get(session, RunRow, run_id)
            return write_backs.add(session, run_id, location, written, failed=failed)

    def update_write_back(
        self, write_back_id: int, *, pull_request: Mapping[str, Any] | None = write_backs.KEEP, failed: str | None
    ) -> WriteBackRecord:
        """Record the pull request a write-back opened (unless not given) and why it failed
        now (None: done); the failure before is kept (:func:`curriculum.write_backs.update`)."""
        with self._guard("recording a pull request"), Session(self._engine) as session, session.begin():
            return write_backs.update(session, write_back_id, pull_request=pull_request, failed=failed)

    def close_pull_request(self, write_back_id: int, why: str) -> None:
        """Mark the pull request of a write-back closed (a later run closed it, for ``why``)."""
        with self._guard("recording a closed pull request"), Session(self._engine) as session, session.begin():
            write_backs.close(session, write_back_id, why)

    def write_backs(self, *, run_id: int | None = None, location: str | None = None) -> list[WriteBackRecord]:
        """The write-backs recorded for run ``run_id`` and/or ``location``, oldest first; none
        in a database of a schema before they were kept, opened to read only."""
        with self._guard("reading the write-backs"), Session(self._engine) as session:
            if WRITE_BACKS_TABLE not in inspect(session.connection()).get_table_names():
                return []
            return write_backs.read(session, run_id=run_id, location=location)

    def run_locations(self, run_id: int, *, proved: bool = False) -> set[str]:
        """The repositories where run ``run_id`` recorded an attempt (``proved``: a proof)."""
        with self._guard(f"reading the repositories of run {run_id}"), Session(self._engine) as session:
            return write_backs.run_locations(session, run_id, proved=proved)

    # ---- helpers ---------------------------------------------------------------------

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Turn SQLAlchemy's exceptions into the project's, naming the URL and the action."""
        try:
            yield
        except OperationalError as e:
            if _is_full(e, sqlite_file(self.url)):
                raise DiskFullError(f"cannot use the database {self.url} ({action}): {_full_reason(e)}") from e
            raise DatabaseUnavailableError(f"cannot use the database {self.url} ({action}): {_reason(e)}") from e
        except SQLAlchemyError as e:
            raise DatabaseError(f"database {self.url} failed ({action}): {_reason(e)}") from e

    @staticmethod
    def _all_versions(session: Session) -> list[tuple[VersionRow, str]]:
        rows = session.execute(
            select(VersionRow, RepositoryRow.location)
            .join(RepositoryRow, RepositoryRow.id == VersionRow.repository_id)
            .order_by(RepositoryRow.location, VersionRow.id)
        ).all()
        return list(rows)

    @staticmethod
    def _version_keys(session: Session) -> dict[int, tuple[str, str]]:
        return {v.id: (loc, v.commit) for v, loc in Store._all_versions(session)}

    @staticmethod
    def _version_id(session: Session, location: str, commit: str) -> int | None:
        return session.scalar(
            select(VersionRow.id)
            .join(RepositoryRow, RepositoryRow.id == VersionRow.repository_id)
            .where(RepositoryRow.location == location, VersionRow.commit == commit)
        )


def _add_tried(session: Session, attempt_id: int, tried: Sequence[TriedTactic]) -> None:
    """Store an attempt's tried tactics, each goal once."""
    if not tried:
        return
    goals = list(dict.fromkeys(t.goal for t in tried))
    rows = [AttemptGoalRow(attempt_id=attempt_id, idx=i, text=goal) for i, goal in enumerate(goals)]
    session.add_all(rows)
    session.flush()
    goal_ids = {row.text: row.id for row in rows}
    session.execute(
        insert(TriedTacticRow),
        [
            {
                "attempt_id": attempt_id,
                "idx": i,
                "goal_id": goal_ids[t.goal],
                "tactic": t.tactic,
                "outcome": t.outcome,
                "goals_after": t.goals_after,
                "on_proof": t.on_proof,
            }
            for i, t in enumerate(tried)
        ],
    )


def _schema_version(conn: Connection, url: str) -> int | None:
    """None for an empty database (no tables), else its schema version: this one, or an
    older one (upgraded by :func:`_upgrade`); any other is refused (DatabaseUnavailableError).
    Reads only."""
    tables = set(inspect(conn).get_table_names())
    if not tables:
        return None
    if SchemaRow.__tablename__ not in tables:
        raise DatabaseUnavailableError(
            f"the database {url} was not made by this leanagent (it has tables but no schema "
            "version: an older leanagent's or another program's); use another database or data directory"
        )
    versions = list(conn.scalars(select(SchemaRow.version)))
    if versions not in ([SCHEMA_VERSION], *([v] for v in range(1, SCHEMA_VERSION))):
        by = "a newer" if versions and max(versions) > SCHEMA_VERSION else "another"
        found = ", ".join(map(str, versions)) or "none"
        raise DatabaseUnavailableError(
            f"the database {url} was made by {by} leanagent (schema version {found}; this one "
            f"uses version {SCHEMA_VERSION}); use another database or data directory, or that leanagent"
        )
    (version,) = versions
    _check_columns(inspect(conn), tables, url, version)
    return version


def _check_columns(inspector: Inspector, tables: set[str], url: str, version: int) -> None:
    """Every table and column of ``version`` is there: a database whose schema was
    changed by hand (a table dropped, a column renamed) is refused before it is used, not
    half-way through a run."""
    for table in Base.metadata.sorted_tables:
        if (version < TRIED_SINCE and table.name in TRIED_TABLES) or (
            version < WRITE_BACKS_SINCE and table.name == WRITE_BACKS_TABLE
        ):
            continue  # what the upgrade adds
        if table.name not in tables:
            raise DatabaseUnavailableError(
                f"the database {url} has schema version {version} but no table {table.name!r}; "
                "it was changed by hand: use another database or data directory"
            )
        present = {c["name"] for c in inspector.get_columns(table.name)}
        if version < IDENTITY_SINCE:
            present.add(SchemaRow.identity.key)  # what the upgrade adds
        missing = [c.name for c in table.columns if c.name not in present]
        if missing:
            raise DatabaseUnavailableError(
                f"the database {url} has schema version {version} but its table {table.name!r} lacks "
                f"the column(s) {', '.join(missing)}; it was changed by hand: use another database or data directory"
            )


def _make_schema(engine: Engine, url: str) -> None:
    """Create the tables and the version row of an empty database in one transaction.

    Another process may be making the same database at once. On SQLite the transaction
    takes the write lock first, so the second one waits and then finds the schema made; on
    a server the loser's CREATE TABLE fails on a name the winner took, and it looks again.
    """
    for attempt in (1, 2):
        try:
            with engine.connect() as conn:
                if engine.dialect.name == "sqlite":
                    # pysqlite begins no transaction before DDL (each CREATE TABLE would commit
                    # on its own); IMMEDIATE takes the write lock at once.
                    conn.exec_driver_sql("BEGIN IMMEDIATE")
                if _schema_version(conn, url) is None:
                    Base.metadata.create_all(conn)
                    conn.execute(insert(SchemaRow).values(id=1, version=SCHEMA_VERSION, identity=new_identity()))
                conn.commit()
            return
        except (IntegrityError, ProgrammingError):
            if attempt == 2:
                raise


def _upgrade(engine: Engine, url: str) -> None:
    """Upgrade a database of an older schema version to this one, in one transaction: one of
    version 1 gets the schema row's identity column and a new identity, one before
    :data:`~curriculum.db.TRIED_SINCE` the tables of tried tactics, one before
    :data:`~curriculum.db.WRITE_BACKS_SINCE` the table of write-backs, and the version is
    this one's. Another process may be upgrading it at once: the transaction first takes the
    write lock (SQLite) or the schema table's exclusive lock (PostgreSQL: else each reader's
    share lock would deadlock the others' ALTER TABLE), so the second one waits and then
    finds it upgraded; elsewhere it fails on what the first added and looks again."""
    for attempt in (1, 2):
        try:
            with engine.connect() as conn:
                if engine.dialect.name == "sqlite":
                    conn.exec_driver_sql("BEGIN IMMEDIATE")
                elif engine.dialect.name == "postgresql":
                    conn.exec_driver_sql(f"LOCK TABLE {SchemaRow.__tablename__} IN ACCESS EXCLUSIVE MODE")
                version = _schema_version(conn, url)
                if version is not None and version < SCHEMA_VERSION:
                    values: dict[str, object] = {"version": SCHEMA_VERSION}
                    if version < IDENTITY_SINCE:
                        conn.exec_driver_sql(
                            f"ALTER TABLE {SchemaRow.__tablename__} ADD COLUMN {SchemaRow.identity.key} VARCHAR(32)"
                        )
                        values["identity"] = new_identity()
                    if version < TRIED_SINCE:
                        Base.metadata.create_all(conn, tables=[Base.metadata.tables[name] for name in TRIED_TABLES])
                    if version < WRITE_BACKS_SINCE:
                        Base.metadata.create_all(conn, tables=[Base.metadata.tables[WRITE_BACKS_TABLE]])
                    conn.execute(update(SchemaRow).values(**values))
                    log.info("upgraded the database %s from schema version %d to %d", url, version, SCHEMA_VERSION)
                conn.commit()
            return
        except ProgrammingError:
            if attempt == 2:
                raise


def _latest(rows: Sequence[tuple[VersionRow, str]]) -> list[tuple[VersionRow, str]]:
    """The most recently ingested version per location (``rows`` sorted by location, id).

    Ingest order is the id order (a sequence), not the wall clock, which can differ
    between machines writing to one server.
    """
    newest: dict[str, tuple[VersionRow, str]] = {}
    for version, location in rows:
        newest[location] = (version, location)  # later rows are newer
    return [newest[loc] for loc in sorted(newest)]


def _count_by_version(session: Session, model: type[Any], version_ids: Sequence[int], where: Any) -> Counter[int]:
    query = select(model.version_id, func.count()).where(model.version_id.in_(version_ids)).group_by(model.version_id)
    if where is not None:
        query = query.where(where)
    return Counter(dict(session.execute(query).all()))


def _get(session: Session, model: type[Any], id_: int) -> Any:
    row = session.get(model, id_)
    if row is None:
        raise RecordNotFoundError(f"no {model.__tablename__} row with id {id_}")
    return row


def _run_record(r: RunRow) -> RunRecord:
    return RunRecord(r.id, r.started_at, r.ended_at, r.status, r.config)


def _attempt_record(r: AttemptRow) -> AttemptRecord:
    return AttemptRecord(
        r.id,
        r.run_id,
        r.theorem_id,
        r.outcome,
        r.proof,
        r.seconds,
        r.nodes,
        r.backend,
        r.created_at,
    )


def _hide_password(url: str) -> str:
    """``url`` with the password of ``scheme://user:password@host`` replaced by ``***``."""
    return _PASSWORD_RE.sub(r"\1***@", url)


def _reason(error: SQLAlchemyError) -> str:
    """The first line of the driver's message (DBAPI errors carry it in ``orig``)."""
    return first_line(getattr(error, "orig", None) or error)


def _is_full(error: SQLAlchemyError, database: Path | None) -> bool:
    """Whether the database failed for want of disk space: SQLite's ``SQLITE_FULL``, or its
    ``SQLITE_IOERR`` (what growing the WAL index says) on a disk with no free block left;
    PostgreSQL's ``disk_full`` (SQLSTATE 53100, as psycopg and psycopg2 name it)."""
    orig = getattr(error, "orig", None)
    code = getattr(orig, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL:
        return True
    if code is not None and code & 0xFF == sqlite3.SQLITE_IOERR and database is not None:
        try:
            return os.statvfs(database.parent).f_bavail == 0
        except OSError:
            return False
    return _DISK_FULL_STATE in (getattr(orig, "sqlstate", None), getattr(orig, "pgcode", None))


def _full_reason(error: SQLAlchemyError) -> str:
    """The driver's reason for a failure :func:`_is_full` found, saying that the disk is full
    where the driver does not ("disk I/O error")."""
    reason = _reason(error)
    return reason if "full" in reason else f"{reason} (no space left on the disk)"


def _why_not_writable(database: Path | None) -> str:
    """What the operating system says of a SQLite file that SQLite could not open ("unable
    to open database file" says neither where nor why): ``"; DIR cannot be written
    (Read-only file system)"``, or "" when the file and its directory can be written (or
    the database is no SQLite file). SQLite needs both: its journal goes beside the file."""
    if database is None:
        return ""
    directory = database.parent
    try:
        if not directory.is_dir():
            return f"; the directory {directory} does not exist"
        if database.exists():
            database.open("r+b").close()  # opened to write, nothing written
        tempfile.TemporaryFile(dir=directory).close()  # (gone once closed)
    except OSError as e:
        where = database if e.filename == str(database) else directory
        return f"; {where} cannot be written ({e.strerror or e})"
    return ""


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL (None for another backend, an in-memory database,
    or a URL that does not parse: :meth:`Store.open` says what is wrong with it); a path no
    file can have (a NUL byte, a name too long) raises :class:`DatabaseUnavailableError`."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    database = Path(parsed.database).expanduser()
    check_path(database, where=f"the database {shown(_hide_password(url))}", error=DatabaseUnavailableError)
    return database


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        # Enforce the foreign keys (SQLite does not by default); WAL lets readers (a
        # `leanagent db stats`) run while an ingest writes; NORMAL is durable in WAL mode
        # across process crashes, which is the failure a killed ingest is.
        cursor.execute("PRAGMA foreign_keys=ON")
        _use_wal(cursor)
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def _use_wal(cursor: Any) -> None:
    """Put the database in WAL mode (written into the file: once done, it stays). Switching
    needs every other connection out of the way, and SQLite then answers "database is
    locked" at once rather than through its busy timeout (openers of a fresh database at
    the same moment met it), so the switch is retried for as long as that timeout. (A
    database that cannot be in WAL mode, in memory, keeps its mode, as SQLite answers.)"""
    deadline = time.monotonic() + _SQLITE_WAIT
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
