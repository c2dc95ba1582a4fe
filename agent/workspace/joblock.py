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
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.workspace.settings import Settings
from lean_env.errors import UserInputError

LOCK_NAME = "leanagent.lock"
# Seconds between the lines saying that a job given --wait is still waiting.
WAIT_HEARTBEAT = 60.0
# Seconds between a waiting job's tries of PostgreSQL's advisory lock.
_ADVISORY_POLL = 1.0
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
        from curriculum.store import sqlite_file

        sqlite = sqlite_file(settings.db_url)
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
    :func:`agent.cli.options.wait_option`)."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        def locked(args: argparse.Namespace, settings: Settings) -> int:
            with job_lock(settings, command, wait=args.wait):
                return handler(args, settings)

        return locked

    return wrap


@contextlib.contextmanager
def _file_lock(path: Path, me: str, *, what: str, wait: bool) -> Iterator[None]:
    from filelock import FileLock

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserInputError(f"cannot create {path.parent}: {error.strerror or error}") from error
    holder = path.with_name(path.name + ".holder")
    # A stale holder file (its process died) is overwritten by the next holder; it is only
    # read while the lock is held by someone, so it names that someone.
    lock = FileLock(path, thread_local=False)
    try:
        taken = _try(lock.acquire, blocking=False)
        if not taken and not wait:
            raise JobLockedError(
                f"{what} is in use by {_read(holder) or 'another leanagent job'}; wait for it to end, or give --wait"
            )
        waiting = Waiting(what)
        while not taken:
            waiting.say(_read(holder) or "another leanagent job")
            taken = _try(lock.acquire, timeout=WAIT_HEARTBEAT)
    except OSError as error:
        raise UserInputError(f"cannot lock {path}: {error.strerror or error}") from error
    try:
        holder.write_text(me, encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            holder.unlink()
        lock.release()


class Waiting:
    """What a job given ``--wait`` says while it waits for ``what``: who holds it, once,
    then every :data:`WAIT_HEARTBEAT` seconds that it is still waiting (on stderr, so that
    ``--json`` output stays clean)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.since = time.monotonic()
        self._said_at: float | None = None

    def due(self) -> bool:
        return self._said_at is None or time.monotonic() - self._said_at >= WAIT_HEARTBEAT

    def say(self, holder: str) -> None:
        waited = time.monotonic() - self.since
        still = f"still waiting ({waited:.0f} s)" if self._said_at is not None else "waiting"
        print(f"leanagent: {still} for {self.what}, in use by {holder}", file=sys.stderr, flush=True)
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
            shown = f"the database {engine.url.render_as_string(hide_password=True)}"
            waiting = Waiting(shown)
            while not connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": _ADVISORY_KEY}).scalar():
                holder = _advisory_holder(connection) or "another leanagent job"
                if not wait:
                    raise JobLockedError(f"{shown} is in use by {holder}; wait for it to end, or give --wait")
                if waiting.due():
                    waiting.say(holder)
                time.sleep(_ADVISORY_POLL)
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
