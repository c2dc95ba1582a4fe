"""One Lean REPL process: start it, send requests, read answers, kill it cleanly.

A :class:`ReplProcess` owns one child (``lake env repl`` in a Lake project, or a given
binary) in its own session, so that a timeout or a protocol desync kills the whole process
tree (``lake`` and the ``repl`` it started) with one ``killpg``. A lock guards the pipe, so
threads may share a process; requests are answered strictly in order.

Every request has a finite timeout. On a timeout, malformed output or an unexpected exit
the process is killed and an exception says why (stderr tail attached); the caller
(:mod:`lean_env.interactive.repl.pool`) decides whether to start a new one. A process found dead
*before* a request raises :class:`ReplCrashError` without writing anything.

Memory: the child runs under ``RLIMIT_AS`` (address space, set in the child before exec).
Importing Mathlib maps its ``.olean`` files, several GB of address space, so the cap must
sit well above that; a REPL that hits it fails to allocate and dies, which surfaces here
as a crash.
"""

from __future__ import annotations

import enum
import logging
import math
import os
import resource
import select
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lean_env.closing import ClosesOnExit
from lean_env.interactive.repl.errors import (
    TAIL_CHARS,
    ReplCrashError,
    ReplProtocolError,
    ReplStartError,
    ReplTimeoutError,
)
from lean_env.interactive.repl.protocol import Request, Response, encode, parse_response
from lean_env.process import Child, tail

logger = logging.getLogger(__name__)

# Default address-space cap of one REPL: room for Mathlib's mapped .olean files and a
# few GB of heap; searches that need more should say so explicitly.
DEFAULT_MEMORY_LIMIT_MB = 32 * 1024
_READ_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class ReplCommand:
    """How to start a REPL: the argument vector, the directory it runs in, extra env vars."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict, hash=False)

    def describe(self) -> str:
        return f"{' '.join(self.argv)} (in {self.cwd})"


class ProcessState(enum.Enum):
    """Where a :class:`ReplProcess` is in its life; misuse becomes a clear error."""

    UNSTARTED = "unstarted"  # constructed, no child yet
    RUNNING = "running"  # child started and, as far as we know, answering
    DEAD = "dead"  # child exited or was killed; requests raise ReplCrashError
    CLOSED = "closed"  # close() was called


def _limit_memory(limit_mb: int | None) -> Callable[[], None] | None:
    """A preexec function that caps the child's address space, or None for no cap."""
    if limit_mb is None:
        return None
    limit = limit_mb * 1024 * 1024

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


class ReplProcess(ClosesOnExit):
    """One running REPL. Create with :meth:`start`; use as a context manager."""

    def __init__(self, command: ReplCommand, *, memory_limit_mb: int | None) -> None:
        self.command = command
        self.memory_limit_mb = memory_limit_mb
        self.state = ProcessState.UNSTARTED
        self._child: Child | None = None
        self._buffer = b""
        self._lock = threading.Lock()

    @classmethod
    def start(cls, command: ReplCommand, *, memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB) -> ReplProcess:
        """Start the REPL described by ``command``; raises :class:`ReplStartError` if it cannot run."""
        process = cls(command, memory_limit_mb=memory_limit_mb)
        process._spawn()
        return process

    def _spawn(self) -> None:
        try:
            # In a session of its own: killing its group reaches lake's children.
            self._child = Child.spawn(
                self.command.argv,
                cwd=self.command.cwd,
                env={**os.environ, **self.command.env},
                preexec_fn=_limit_memory(self.memory_limit_mb),
            )
        except OSError as e:
            self.state = ProcessState.CLOSED
            raise ReplStartError(f"cannot start the Lean REPL {self.command.describe()}: {e}") from e
        os.set_blocking(self._child.stdin.fileno(), False)
        os.set_blocking(self._child.stdout.fileno(), False)
        self.state = ProcessState.RUNNING
        logger.debug("started REPL pid %d: %s", self._child.pid, self.command.describe())

    @property
    def pid(self) -> int | None:
        return None if self._child is None else self._child.pid

    @property
    def alive(self) -> bool:
        """True while the child runs and has not been killed by us."""
        if self.state is not ProcessState.RUNNING or self._child is None:
            return False
        if not self._child.alive:
            self.state = ProcessState.DEAD
            return False
        return True

    def stderr_tail(self, limit: int = TAIL_CHARS) -> str:
        """The last part of what the child wrote to stderr (empty when nothing)."""
        return "" if self._child is None else self._child.stderr_tail(limit)

    def request(self, request: Request, *, timeout: float) -> Response:
        """Send ``request`` and return the parsed answer, within ``timeout`` seconds.

        Raises :class:`ReplTimeoutError` (process tree killed), :class:`ReplCrashError`
        (process dead before or during the request) or :class:`ReplProtocolError`
        (malformed answer; process killed because the pipe can no longer be trusted).
        """
        return parse_response_or_kill(self, self.exchange(encode(request), timeout=timeout))

    def exchange(self, text: str, *, timeout: float) -> str:
        """Write ``text`` (one encoded request) and return the raw answer block.

        The transport under :meth:`request`; benchmarks use it to separate our parsing
        cost from the pipe's.
        """
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"a REPL request needs a finite positive timeout, got {timeout}")
        with self._lock:
            if self.state in (ProcessState.UNSTARTED, ProcessState.CLOSED):
                raise ReplCrashError(
                    f"the Lean REPL is {self.state.value}; start a new one",
                    returncode=None,
                    stderr_tail="",
                )
            if not self.alive:
                raise self._crash("the Lean REPL had exited before the request")
            deadline = time.monotonic() + timeout
            self._write(text.encode("utf-8"), deadline, timeout)
            return self._read_block(deadline, timeout)

    def _write(self, data: bytes, deadline: float, timeout: float) -> None:
        assert self._child is not None
        fd = self._child.stdin.fileno()
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout(timeout)
            _, writable, _ = select.select([], [fd], [], remaining)
            if not writable:
                continue
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                continue
            except BrokenPipeError as e:
                raise self._crash("the Lean REPL closed its input") from e
            view = view[written:]

    def _read_block(self, deadline: float, timeout: float) -> str:
        """Read up to the blank line that ends one answer; keep any rest for the next one."""
        assert self._child is not None
        fd = self._child.stdout.fileno()
        while True:
            self._buffer = self._buffer.lstrip(b"\r\n")
            end = self._buffer.find(b"\n\n")
            if end >= 0:
                block, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
                return block.decode("utf-8", errors="replace")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout(timeout)
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                continue
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                partial = self._buffer.decode("utf-8", errors="replace")
                raise self._crash(
                    "the Lean REPL exited before answering"
                    + (f" (partial answer {tail(partial, 200)!r})" if partial.strip() else "")
                )
            self._buffer += chunk

    def _timeout(self, timeout: float) -> ReplTimeoutError:
        self._kill()
        return ReplTimeoutError(
            f"the Lean REPL did not answer within {timeout:g} s; its process tree was killed",
            seconds=timeout,
        )

    def _crash(self, message: str) -> ReplCrashError:
        self._kill()
        assert self._child is not None
        return ReplCrashError(message, returncode=self._child.returncode, stderr_tail=self.stderr_tail())

    def _kill(self) -> None:
        """Kill the child's whole process group and reap the child."""
        if self._child is None:
            return
        self._child.kill()
        if self.state is ProcessState.RUNNING:
            self.state = ProcessState.DEAD

    def kill(self) -> None:
        """Kill the process tree now (e.g. after a desync the caller detected)."""
        with self._lock:
            self._kill()

    def close(self) -> None:
        """Stop the REPL (its process tree) and release the pipes; safe to call twice."""
        if self._child is not None:
            self._child.close()
        self.state = ProcessState.CLOSED


def parse_response_or_kill(process: ReplProcess, raw: str) -> Response:
    """Parse ``raw``; on a protocol error kill ``process`` (the pipe is out of sync) and re-raise
    with its stderr tail."""
    try:
        return parse_response(raw)
    except ReplProtocolError as e:
        process.kill()
        stderr = process.stderr_tail()
        note = f" (REPL stderr: {stderr})" if stderr else ""
        raise ReplProtocolError(f"{e.reason}{note}", raw=raw) from e
