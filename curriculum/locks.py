"""Job locks: one leanagent job at a time on a database (and, for the command line, on a
data directory), held by the operating system or the database server, so never stale.

Two kinds, each a context manager factory (:meth:`held`) that takes the lock for the block:

* :class:`FileJobLock`: an OS file lock (:mod:`filelock`) on a path, with the holder's name
  written beside it (``PATH.holder``) while it is held: for a SQLite database (beside its
  file) and for a data directory;
* :class:`AdvisoryJobLock`: a PostgreSQL session-level advisory lock
  (``pg_advisory_lock``) on a connection of the database's own engine, kept open for the
  block and named after its holder (``application_name``), so that a refused job can say
  who holds it (``pg_locks`` joined with ``pg_stat_activity``).

:meth:`curriculum.store.Store.job_lock` picks the database's. A lock held by another job
raises :class:`JobLockedError` at once or, asked to ``wait``, is waited for (``notify`` is
told who holds it, then every :data:`WAIT_HEARTBEAT` seconds). A lock that cannot be taken
at all (a lock file that cannot be written, a server that cannot be reached) raises what the
caller's ``unavailable`` makes of the reason: a job never goes on without its lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from lean_env.errors import UserInputError, first_line

# Seconds between the lines saying that a job given ``wait`` is still waiting.
WAIT_HEARTBEAT = 60.0
# Seconds between a waiting job's tries of PostgreSQL's advisory lock.
_ADVISORY_POLL = 1.0
# The advisory lock's key: one bigint per database, the same for every leanagent job.
_ADVISORY_KEY = int.from_bytes(hashlib.blake2b(b"leanagent job", digest_size=8).digest(), "big", signed=True)
# What a refused job is told when the holder cannot be named.
_SOMEONE = "another leanagent job"

# One line for the user while a job waits (the CLI prints it on stderr).
Notify = Callable[[str], None]
# The exception a lock that cannot be taken raises, from the reason (one line).
Unavailable = Callable[[str], Exception]


class JobLockedError(UserInputError):
    """Another job holds the data directory or the database."""


class FileJobLock:
    """An OS file lock on ``path``; ``what`` names the locked thing in messages."""

    def __init__(self, path: Path, *, what: str, unavailable: Unavailable) -> None:
        self.path = path
        self.what = what
        self._unavailable = unavailable
        # A stale holder file (its process died) is overwritten by the next holder; it is only
        # read while the lock is held by someone, so it names that someone.
        self._holder = path.with_name(path.name + ".holder")

    @contextlib.contextmanager
    def held(self, holder: str, *, wait: bool, notify: Notify) -> Iterator[None]:
        """Hold the lock for the block, as ``holder`` (see the module docs)."""
        from filelock import FileLock

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise self._unavailable(f"cannot create {self.path.parent}: {error.strerror or error}") from error
        lock = FileLock(self.path, thread_local=False)
        try:
            taken = _try(lock.acquire, blocking=False)
            if not taken and not wait:
                raise JobLockedError(
                    f"{self.what} is in use by {_read(self._holder) or _SOMEONE}; wait for it to end, or give --wait"
                )
            waiting = Waiting(self.what, notify)
            while not taken:
                waiting.say(_read(self._holder) or _SOMEONE)
                taken = _try(lock.acquire, timeout=WAIT_HEARTBEAT)
        except OSError as error:
            raise self._unavailable(f"cannot lock {self.path}: {error.strerror or error}") from error
        try:
            self._holder.write_text(holder, encoding="utf-8")
        except OSError as error:
            lock.release()
            raise self._unavailable(f"cannot write {self._holder}: {error.strerror or error}") from error
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                self._holder.unlink()
            lock.release()


class AdvisoryJobLock:
    """A PostgreSQL session-level advisory lock, on a connection of ``engine`` held for the
    block; ``what`` names the database in messages."""

    def __init__(self, engine: Engine, *, what: str, unavailable: Unavailable) -> None:
        self.what = what
        self._engine = engine
        self._unavailable = unavailable

    @contextlib.contextmanager
    def held(self, holder: str, *, wait: bool, notify: Notify) -> Iterator[None]:
        """Hold the lock for the block, as ``holder`` (see the module docs)."""
        try:
            connection = self._engine.connect()
        except SQLAlchemyError as error:
            raise self._unavailable(_reason(error)) from error
        try:
            try:
                self._take(connection, holder, wait=wait, notify=notify)
            except SQLAlchemyError as error:
                raise self._unavailable(_reason(error)) from error
            try:
                yield
            finally:
                with contextlib.suppress(SQLAlchemyError):
                    connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _ADVISORY_KEY})
        finally:
            # The connection is named after this holder: it is dropped, not pooled for others.
            with contextlib.suppress(SQLAlchemyError):
                connection.invalidate()
            connection.close()

    def _take(self, connection: Connection, holder: str, *, wait: bool, notify: Notify) -> None:
        # application_name is at most 63 bytes (longer names are cut by the server anyway).
        connection.execute(text("SELECT set_config('application_name', :me, false)"), {"me": holder[:63]})
        waiting = Waiting(self.what, notify)
        while True:
            taken = connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": _ADVISORY_KEY}).scalar()
            # Each try in its own transaction: pg_stat_activity is read afresh, and a
            # connection held for hours is not left idle in a transaction.
            who = "" if taken else _advisory_holder(connection)
            connection.commit()
            if taken:
                return
            if not wait:
                raise JobLockedError(f"{self.what} is in use by {who or _SOMEONE}; wait for it to end, or give --wait")
            if waiting.due():
                waiting.say(who or _SOMEONE)
            time.sleep(_ADVISORY_POLL)


class Waiting:
    """What a job given ``wait`` says while it waits for ``what``: who holds it, once, then
    every :data:`WAIT_HEARTBEAT` seconds that it is still waiting."""

    def __init__(self, what: str, notify: Notify) -> None:
        self.what = what
        self.since = time.monotonic()
        self._notify = notify
        self._said_at: float | None = None

    def due(self) -> bool:
        return self._said_at is None or time.monotonic() - self._said_at >= WAIT_HEARTBEAT

    def say(self, holder: str) -> None:
        waited = time.monotonic() - self.since
        still = f"still waiting ({waited:.0f} s)" if self._said_at is not None else "waiting"
        self._notify(f"{still} for {self.what}, in use by {holder}")
        self._said_at = time.monotonic()


def _try(acquire: Callable[..., object], **how: Any) -> bool:
    """Whether ``acquire(**how)`` took the file lock (False: it timed out)."""
    from filelock import Timeout

    try:
        acquire(**how)
    except Timeout:
        return False
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _advisory_holder(connection: Connection) -> str:
    """The ``application_name`` of the session that holds the advisory lock ("" if none)."""
    key = _ADVISORY_KEY & 0xFFFFFFFFFFFFFFFF
    row = connection.execute(
        text(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :hi AND l.objid = :lo"
        ),
        {"hi": key >> 32, "lo": key & 0xFFFFFFFF},
    ).first()
    return row[0] if row and row[0] else ""


def _reason(error: SQLAlchemyError) -> str:
    """The first line of the driver's message (DBAPI errors carry it in ``orig``)."""
    return first_line(getattr(error, "orig", None) or error)
