"""Running ``lean FILE`` once, with a time limit, and reading what it says.

Inside a Lake project (a ``lakefile.lean`` or ``lakefile.toml`` in the project directory)
the command is ``lake env lean FILE`` run from the project directory, so that imports of the
project and its dependencies resolve; elsewhere it is a bare ``lean FILE``. Either way the
run has a finite timeout: when it expires the whole process group (``lake``, ``lean`` and
anything they started) is killed and the run is reported as timed out, which callers treat
as "unknown", never as a failure.

Faults raise :class:`LeanRunError`: the program could not be started, was killed by a
signal, or failed without printing any error we could read (its stderr tail is attached).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lean_env import process
from lean_env.errors import BackendError
from lean_env.lean import budget
from lean_env.lean.diagnostics import Diagnostic, ParsedOutput, parse_diagnostics
from lean_env.lean.toolchain import require_tool

log = logging.getLogger(__name__)

LAKEFILES = ("lakefile.lean", "lakefile.toml")


class LeanRunError(BackendError):
    """``lean`` could not be run, crashed, or failed without a readable error."""


def is_lake_project(project_dir: Path) -> bool:
    """True when ``project_dir`` has a Lake configuration file."""
    return any((project_dir / name).is_file() for name in LAKEFILES)


@dataclass(frozen=True, slots=True)
class LeanRun:
    """The outcome of one ``lean FILE`` run that finished or timed out."""

    command: tuple[str, ...]
    # None when the run timed out and was killed.
    returncode: int | None
    output: ParsedOutput
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return self.output.diagnostics

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return self.output.errors


class PendingRun(Protocol):
    """A run started by :meth:`FileRunner.submit`."""

    @property
    def done(self) -> bool:
        """Whether :meth:`result` would answer without waiting."""
        ...

    def result(self) -> LeanRun:
        """The run's answer, waiting for it if need be (the same answer each time)."""
        ...


@dataclass(frozen=True, slots=True)
class FinishedRun:
    """A submitted run that was done before ``submit`` returned."""

    run: LeanRun

    @property
    def done(self) -> bool:
        return True

    def result(self) -> LeanRun:
        return self.run


class FileRunner(Protocol):
    """What a proof environment needs of Lean: the diagnostics of a file of one project as
    it is now. :class:`LeanRunner` starts ``lean`` for each run;
    :class:`~lean_env.lean.server.ServerRunner` keeps language servers that elaborate each
    version of a file from its first changed command, ``workers`` of them at once."""

    @property
    def workers(self) -> int:
        """How many runs :meth:`submit` can keep going at once (1: each is done before it returns)."""
        ...

    def run(self, file: Path, *, timeout: float) -> LeanRun:
        """Elaborate ``file`` and return its diagnostics, or a timed-out run after ``timeout`` s."""
        ...

    def submit(self, file: Path, *, timeout: float) -> PendingRun:
        """Start :meth:`run` on ``file`` as it is now; the file may change once this returns."""
        ...

    @property
    def idle_workers(self) -> int:
        """How many runs :meth:`submit` would start without waiting for one to end."""
        ...

    def wait_any(self) -> None:
        """Wait until some submitted run is done (at once when there is none)."""
        ...

    def close(self) -> None:
        """Release what the runner holds (a process); it may not be used after."""
        ...


@dataclass(frozen=True, slots=True)
class LeanRunner:
    """How to run Lean for one project: the command prefix and the directory to run it in."""

    project_dir: Path
    # ("/…/lake", "env", "lean") inside a Lake project, ("/…/lean",) elsewhere.
    command: tuple[str, ...]

    @classmethod
    def for_project(cls, project_dir: Path) -> LeanRunner:
        """Find ``lake`` (Lake project) or ``lean`` on PATH for ``project_dir``.

        Raises :class:`~lean_env.errors.LeanNotFoundError` when the tool is missing.
        """
        project_dir = project_dir.resolve()
        if is_lake_project(project_dir):
            return cls(project_dir, (str(require_tool("lake")), "env", "lean"))
        return cls(project_dir, (str(require_tool("lean")),))

    @property
    def workers(self) -> int:
        return 1

    def submit(self, file: Path, *, timeout: float) -> PendingRun:
        """:meth:`run`, done before this returns: one ``lean`` at a time."""
        return FinishedRun(self.run(file, timeout=timeout))

    @property
    def idle_workers(self) -> int:
        return 0  # nothing runs in the background: submit waits for each run

    def wait_any(self) -> None:
        """Nothing to wait for: every submitted run is done."""

    def run(self, file: Path, *, timeout: float) -> LeanRun:
        """Elaborate ``file`` and return its diagnostics, or a timed-out run after ``timeout`` s."""
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"a Lean run needs a finite positive timeout, got {timeout!r}")
        command = (*self.command, str(file))
        timeout = budget.clamp(timeout)
        if timeout <= 0:
            return spent_run(command)
        log.debug("running %s in %s (timeout %.1fs)", " ".join(command), self.project_dir, timeout)
        try:
            # In a session of its own, so a timeout kills lake, lean and their children.
            done = process.run(command, cwd=self.project_dir, timeout=timeout)
        except OSError as e:
            raise LeanRunError(f"could not start {' '.join(command)}: {e}") from e
        stdout, stderr = process.text(done.stdout), process.text(done.stderr)
        output = parse_diagnostics(stdout)
        if done.returncode is None:
            log.debug("%s timed out after %.1fs", file, done.seconds)
            return LeanRun(command, None, output, stdout, stderr, done.seconds, True)
        if done.returncode < 0:
            raise LeanRunError(
                f"{' '.join(command)} was killed by signal {-done.returncode}; "
                f"stderr: {process.tail(stderr) or '(empty)'}"
            )
        if done.returncode != 0 and not output.errors:
            raise LeanRunError(
                f"{' '.join(command)} exited with code {done.returncode} but printed no "
                f"error diagnostic; stdout: {process.tail(stdout) or '(empty)'}; "
                f"stderr: {process.tail(stderr) or '(empty)'}"
            )
        return LeanRun(command, done.returncode, output, stdout, stderr, done.seconds)

    def close(self) -> None:
        """Nothing to release: every run's process has ended with it."""


def spent_run(command: tuple[str, ...]) -> LeanRun:
    """The timed-out answer to a run that did not start: the attempt's budget was spent."""
    log.debug("not running %s: the attempt's time is spent", " ".join(command))
    return LeanRun(command, None, ParsedOutput(()), "", "", 0.0, timed_out=True)
