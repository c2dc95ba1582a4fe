"""One job at a time per data directory and database.

``run``, ``prove`` and the training commands write the same state: the learner and the
reports in the data directory, runs and attempts in the database. Two of them at once would
train twice, take each other's temporary files and report under one run id; and a run the
database marks ``running`` could not be told from one that was killed. So each job holds
two locks while it works, always taken in this order:

* the data directory's: an OS file lock on ``DATA_DIR/leanagent.lock`` (:mod:`filelock`);
* the database's: for SQLite a file lock beside the database file, for PostgreSQL a
  session-level advisory lock (``pg_advisory_lock``) on a connection kept open meanwhile.

The operating system (or the PostgreSQL server) releases a lock the moment its holder dies,
so a lock is never stale: a job that gets the locks and finds a run marked ``running``
knows that run's process is gone, and resumes it. A second job either fails at once (exit
2, one line naming the holder: pid, host, start time) or, asked to ``wait``, blocks until
the first is done.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import os
import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.settings import Settings
from lean_env.errors import UserInputError

LOCK_NAME = "leanagent.lock"
# A command handler: parsed arguments and settings in, exit code out.
Handler = Callable[[argparse.Namespace, Settings], int]


class JobLockedError(UserInputError):
    """Another job holds the data directory or the database."""


def holder_text(command: str) -> str:
    """Who holds a lock, as the other jobs are told: the command, pid, host, start time."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    return f"leanagent {command} (pid {os.getpid()} on {socket.gethostname()}, since {started})"


@contextlib.contextmanager
def job_lock(settings: Settings, command: str, *, wait: bool = False) -> Iterator[None]:
    """Hold the data directory's and the database's locks for the block (see the module
    docs); another holder raises :class:`JobLockedError`, or with ``wait`` is waited for."""
    me = holder_text(command)
    with contextlib.ExitStack() as locks:
        locks.enter_context(
            _file_lock(settings.data_dir / LOCK_NAME, me, what=f"the data directory {settings.data_dir}", wait=wait)
        )
        sqlite = _sqlite_path(settings.db_url)
        if sqlite is not None:
            # Taken even when the file is in this data directory: a job in another data
            # directory may name the same file with --db.
            locks.enter_context(
                _file_lock(sqlite.with_name(sqlite.name + ".lock"), me, what=f"the database {sqlite}", wait=wait)
            )
        elif settings.db_url.startswith("postgresql"):
            locks.enter_context(_advisory_lock(settings.db_url, me, wait=wait))
        yield


def holding_job_lock(command: str) -> Callable[[Handler], Handler]:
    """A CLI handler that holds the job lock while it runs (``args.wait``: see
    :func:`agent.options.wait_option`)."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def locked(args: argparse.Namespace, settings: Settings) -> int:
            with job_lock(settings, command, wait=args.wait):
                return handler(args, settings)

        return locked

    return wrap


@contextlib.contextmanager
def _file_lock(path: Path, me: str, *, what: str, wait: bool) -> Iterator[None]:
    from filelock import FileLock, Timeout

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserInputError(f"cannot create {path.parent}: {error.strerror or error}") from error
    holder = path.with_name(path.name + ".holder")
    # A stale holder file (its process died) is overwritten by the next holder; it is only
    # read while the lock is held by someone, so it names that someone.
    lock = FileLock(path, blocking=wait, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        raise JobLockedError(
            f"{what} is in use by {_read(holder) or 'another leanagent job'}; wait for it to end, or give --wait"
        ) from None
    except OSError as error:
        raise UserInputError(f"cannot lock {path}: {error.strerror or error}") from error
    try:
        holder.write_text(me, encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            holder.unlink()
        lock.release()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL (None for another backend, or an in-memory one)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None  # Store.open says what is wrong with it
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database).expanduser()


# The advisory lock's key: one bigint per database, the same for every leanagent job.
_ADVISORY_KEY = int.from_bytes(hashlib.blake2b(b"leanagent job", digest_size=8).digest(), "big", signed=True)


@contextlib.contextmanager
def _advisory_lock(url: str, me: str, *, wait: bool) -> Iterator[None]:
    """A PostgreSQL session-level advisory lock, on a connection of its own named after its
    holder (``application_name``), so that a refused job can say who holds it."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(url, connect_args={"application_name": me[:63]}, pool_size=1)
    try:
        try:
            connection = engine.connect()
        except SQLAlchemyError:
            yield  # unreachable: Store.open reports it, with the URL's reason
            return
        with connection:
            if wait:
                connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _ADVISORY_KEY})
            elif not connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": _ADVISORY_KEY}).scalar():
                raise JobLockedError(
                    f"the database {engine.url.render_as_string(hide_password=True)} is in use by "
                    f"{_advisory_holder(connection) or 'another leanagent job'}; wait for it to end, or give --wait"
                )
            connection.commit()
            try:
                yield
            finally:
                with contextlib.suppress(SQLAlchemyError):
                    connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _ADVISORY_KEY})
    finally:
        engine.dispose()


def _advisory_holder(connection: Any) -> str:
    from sqlalchemy import text

    key = _ADVISORY_KEY & 0xFFFFFFFFFFFFFFFF
    row = connection.execute(
        text(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :hi AND l.objid = :lo"
        ),
        {"hi": key >> 32, "lo": key & 0xFFFFFFFF},
    ).first()
    return row[0] if row and row[0] else ""
