"""Child processes that end whole: how the project starts a program it may have to stop
(``lean``, ``lake``, the Lean REPL and server, ``git``).

Every program started here runs in a session of its own (``start_new_session``), so that
stopping it is one ``SIGKILL`` to its process group, which reaches what it started too
(``lake`` and its ``lean``, a REPL's workers, ``git`` and its ``ssh``); a program killed
alone would leave them running, and holding its pipes. Two shapes:

* :func:`run` runs a program to its end, or kills its group at a timeout, and returns what
  it printed (:class:`Finished`): a ``lean FILE`` check, a build step, a git command,
  ``lean --version``;
* :class:`Child` keeps a program running while the caller talks to it over its stdin and
  stdout (the Lean REPL, Lean's language server). Its stderr goes to a temporary file,
  not a pipe: a pipe nobody reads fills up and blocks the program; error messages quote
  the file's tail (:meth:`Child.stderr_tail`).

A program that cannot start raises the :class:`OSError` of ``exec``; each caller turns it
into its own error. Nothing of the project is imported here but the close-on-exit mixin, so
any package may use this module, the verifier included (its solver children are killed
with :func:`kill_group`): tests/test_import_layers.py, ``SHARED``.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from lean_env.closing import ClosesOnExit

log = logging.getLogger(__name__)

# How long a killed process group may take to exit and close its pipes before we stop
# waiting for it (SIGKILL cannot be ignored: only a process stuck in the kernel takes long).
REAP_SECONDS = 5.0
# How much of a program's output an error message quotes.
TAIL_CHARS = 800


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    """The last ``limit`` characters of ``text`` (what error messages quote)."""
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def text(data: bytes) -> str:
    """``data`` as ``subprocess`` reads a pipe with ``text=True``: UTF-8 with bad bytes
    replaced, every line ending turned into ``\\n``."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def kill_group(pid: int) -> bool:
    """``SIGKILL`` the process group that ``pid`` leads; False when there is none (all of it
    has exited, or ``pid`` has not made its own group yet)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Finished:
    """What a program run by :func:`run` did."""

    argv: tuple[str, ...]
    returncode: int | None  # None: killed at the timeout
    stdout: bytes  # stderr too, when run merged them
    stderr: bytes
    seconds: float  # wall clock, from the start to the end (or to the kill)

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    merge_stderr: bool = False,
) -> Finished:
    """Run ``argv`` in ``cwd`` to its end and return what it printed; after ``timeout``
    seconds its process group is killed, and the result has what it printed until then.

    ``env`` is the program's whole environment (None: ours); ``input`` is written to its
    stdin (None: it reads an empty stdin); ``merge_stderr`` sends its stderr into stdout.
    An interrupt (Ctrl-C) while it runs kills the group before it propagates. Raises
    :class:`OSError` when the program cannot start."""
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"a program needs a finite positive timeout, got {timeout!r}")
    started = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        start_new_session=True,
    )
    returncode: int | None
    stdout: bytes | None
    stderr: bytes | None
    try:
        stdout, stderr = proc.communicate(input, timeout=timeout)
        returncode = proc.returncode
    except subprocess.TimeoutExpired:
        stdout, stderr = _kill_and_collect(proc)
        returncode = None
    except BaseException:
        _kill_and_collect(proc)
        raise
    return Finished(tuple(argv), returncode, stdout or b"", stderr or b"", time.monotonic() - started)


def _kill_and_collect(proc: subprocess.Popen[bytes]) -> tuple[bytes | None, bytes | None]:
    """Kill ``proc``'s process group and take what it printed so far."""
    kill_group(proc.pid)
    try:
        return proc.communicate(timeout=REAP_SECONDS)
    except subprocess.TimeoutExpired:
        # A grandchild that left the group still holds the pipes; stop reading them.
        proc.kill()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
        return b"", b""


class Child(ClosesOnExit):
    """A program the caller talks to over its stdin and stdout (both pipes, blocking until
    the caller says otherwise), its stderr kept in a temporary file. Start with
    :meth:`spawn`; :meth:`close` kills its process group and releases the pipes and the
    file, and may be called again."""

    def __init__(self, proc: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
        self._proc = proc
        self._stderr = stderr
        self._closed = False

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> Child:
        """Start ``argv`` in ``cwd`` in a session of its own (``env``: its whole environment,
        None: ours; ``preexec_fn`` runs in the child before ``exec``, to set its limits).
        Raises :class:`OSError` when the program cannot start."""
        stderr = tempfile.TemporaryFile(prefix="leanagent-stderr-")
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=None if env is None else dict(env),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=preexec_fn,
            )
        except BaseException:
            stderr.close()
            raise
        return cls(proc, stderr)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def stdin(self) -> IO[bytes]:
        assert self._proc.stdin is not None, "spawned with a pipe"
        return self._proc.stdin

    @property
    def stdout(self) -> IO[bytes]:
        assert self._proc.stdout is not None, "spawned with a pipe"
        return self._proc.stdout

    @property
    def returncode(self) -> int | None:
        """The program's exit status (negative: the signal that ended it); None while it runs."""
        return self._proc.poll()

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def stderr_tail(self, limit: int = TAIL_CHARS) -> str:
        """The last ``limit`` characters the program wrote to stderr ("" once closed)."""
        if self._stderr.closed:
            return ""
        # pread leaves the file offset alone: the program shares it and may still be writing.
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - 4 * limit)  # a UTF-8 character is at most 4 bytes
        return tail(os.pread(fd, size - start, start).decode("utf-8", errors="replace"), limit)

    def kill(self) -> None:
        """Kill the program's whole process group and reap the program; safe to repeat."""
        if self._proc.poll() is None:
            # Only before it is reaped: after, its pid (and group id) may be another's.
            kill_group(self._proc.pid)
        try:
            self._proc.wait(timeout=REAP_SECONDS)
        except subprocess.TimeoutExpired:
            log.warning("pid %d survived SIGKILL for %g s", self._proc.pid, REAP_SECONDS)

    def close(self) -> None:
        """Kill the process group and release the pipes and the stderr file; safe to repeat."""
        if self._closed:
            return
        self._closed = True
        self.kill()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass  # the pipe is already broken; nothing left to release
        self._stderr.close()
