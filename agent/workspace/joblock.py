"""One job at a time per data directory and database.

``run``, ``prove``, ``evaluate`` and the training commands write the same state: the
learner and the reports in the data directory, runs and attempts in the database. Two of
them at once would train twice, take each other's temporary files and report under one run
id; and a run the database marks ``running`` could not be told from one that was killed. So
each job holds two locks while it works, always taken in this order:

* the data directory's: an OS file lock on ``DATA_DIR/leanagent.lock`` (here);
* the database's: :meth:`curriculum.store.Store.job_lock` (a file lock beside a SQLite file,
  a PostgreSQL advisory lock), on the store the job then uses.

The operating system (or the PostgreSQL server) releases a lock the moment its holder dies,
so a lock is never stale: a job that gets the locks and finds a run marked ``running``
knows that run's process is gone, and resumes it. A second job either fails at once (exit
2, one line naming the holder: pid, host, start time) or, asked to ``wait``, blocks until
the first is done. A lock that cannot be taken at all (a server that went away) is an
error too (exit 2, one line): no job runs unlocked.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import socket
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from agent.workspace.settings import Settings
from lean_env.errors import UserInputError

if TYPE_CHECKING:
    from curriculum.locks import FileJobLock
    from curriculum.store import Store

# A command handler: parsed arguments and settings in, exit code out.
Handler = Callable[[argparse.Namespace, Settings], int]


def holder_text(command: str) -> str:
    """Who holds a lock, as the other jobs are told: the command, pid, host, start time."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    return f"leanagent {command} (pid {os.getpid()} on {socket.gethostname()}, since {started})"


@contextlib.contextmanager
def job_lock(settings: Settings, command: str, *, wait: bool = False) -> Iterator[Store]:
    """Hold the data directory's and the database's locks for the block (see the module
    docs) and yield the database, opened; another holder raises
    :class:`~curriculum.locks.JobLockedError`, or with ``wait`` is waited for; a database
    lock that cannot be taken raises :class:`~curriculum.store.JobLockUnavailableError`."""
    from agent.workspace.data import open_store

    me = holder_text(command)
    with (
        _directory_lock(settings).held(me, wait=wait, notify=_say),
        open_store(settings) as store,
        store.job_lock(me, wait=wait, notify=_say),
    ):
        yield store


def refuse_if_in_use(settings: Settings, command: str) -> None:
    """Raise :class:`~curriculum.locks.JobLockedError` at once, as :func:`job_lock` would,
    when another job holds the data directory: for a job that spends seconds importing and
    loading before it takes its locks (``run``: torch), so that a second one is refused
    before that, not after. The lock is taken and let go: the job takes it again for its
    work (a job that starts in between is then refused by :func:`job_lock` itself)."""
    with _directory_lock(settings).held(holder_text(command), wait=False, notify=_say):
        pass


def _directory_lock(settings: Settings) -> FileJobLock:
    from curriculum.locks import FileJobLock

    what = f"the data directory {settings.data_dir}"
    return FileJobLock(settings.layout.lock, what=what, unavailable=UserInputError)


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


def _say(line: str) -> None:
    """A waiting job's line, on stderr (so that ``--json`` output stays clean)."""
    print(f"leanagent: {line}", file=sys.stderr, flush=True)
