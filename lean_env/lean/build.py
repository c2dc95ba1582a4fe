"""Building a Lake project before its sorries are searched: without the ``.olean`` files of
its imports, every Lean run over a theorem's file fails on the import line, and each theorem
would be a "failure" that says nothing about proving (LeanInteract's users report workers
each rebuilding the project; the cure is one build, shared).

:func:`build_project` runs, within one time budget: ``lake exe cache get`` when the manifest
has Mathlib (its prebuilt ``.olean`` files instead of hours of building), then ``lake build``
of the modules the targets' files import. Dependencies are shared: the project's
``.lake/packages`` is a link to ``SHARED/KEY/packages``, where KEY hashes the
``lean-toolchain`` and ``lake-manifest.json``, so every repository and worker with the same
pair (and the next night's run) reuses one checkout and build of them; a file lock makes
builds of one KEY wait for each other. A project whose ``.lake/packages`` exists already (a
user's own directory, built by them) keeps it.

The outcome is a value: built, failed (with Lean's or Lake's first error) or timed out; only
a missing ``lake`` raises (:class:`~lean_env.errors.LeanNotFoundError`).
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from lean_env import process
from lean_env.lean.runner import is_lake_project
from lean_env.lean.toolchain import require_tool

log = logging.getLogger(__name__)

DEFAULT_BUILD_TIMEOUT = 3600.0
# Modules that ship built with the toolchain: nothing to build for them.
_CORE = ("Init", "Lean", "Std", "Lake")


class BuildStatus(enum.StrEnum):
    BUILT = "built"  # lake build (and the cache) succeeded; nothing to build counts too
    FAILED = "failed"  # a step exited non-zero: `first_error` says why
    TIMED_OUT = "timed_out"  # the budget ran out; the build was killed
    NOT_LAKE = "not_lake"  # no lakefile: plain `lean` checks the files, nothing to build


@dataclass(frozen=True, slots=True)
class BuildOutcome:
    status: BuildStatus
    seconds: float
    modules: tuple[str, ...] = ()  # what `lake build` was asked to build
    first_error: str = ""  # FAILED, TIMED_OUT: one line
    shared: str | None = None  # the shared directory of the dependencies, when linked
    cache: bool = False  # whether `lake exe cache get` ran (Mathlib in the manifest)

    @property
    def usable(self) -> bool:
        """Whether Lean can check the project's files now."""
        return self.status in (BuildStatus.BUILT, BuildStatus.NOT_LAKE)

    def text(self) -> str:
        """One line for reports."""
        if self.status is BuildStatus.NOT_LAKE:
            return "not a Lake project: nothing to build"
        what = f"lake build of {len(self.modules)} module(s)" + (" after lake exe cache get" if self.cache else "")
        if self.status is BuildStatus.BUILT:
            return f"built ({what}, {self.seconds:.1f} s)"
        verb = "timed out" if self.status is BuildStatus.TIMED_OUT else "failed"
        return f"build {verb} ({what}, {self.seconds:.1f} s): {self.first_error}"


def imported_modules(imports: Sequence[str]) -> tuple[str, ...]:
    """The modules of ``imports`` that a build must make, sorted (the toolchain's own aside)."""
    return tuple(sorted({m for m in imports if m.split(".", 1)[0] not in _CORE}))


def build_key(project_dir: Path) -> str:
    """What projects that may share built dependencies have in common: their toolchain and
    their lake manifest (16 hex digits of a hash)."""
    digest = hashlib.sha256()
    for name in ("lean-toolchain", "lake-manifest.json"):
        path = project_dir / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
    return digest.hexdigest()[:16]


def build_project(project_dir: Path, modules: Sequence[str], *, shared_root: Path, timeout: float) -> BuildOutcome:
    """Make ``modules`` (and their dependencies) of the Lake project ``project_dir`` built,
    in ``timeout`` seconds at most, with the dependencies shared under ``shared_root``."""
    if not is_lake_project(project_dir):
        return BuildOutcome(BuildStatus.NOT_LAKE, 0.0)
    lake = str(require_tool("lake"))
    started = time.monotonic()
    modules = imported_modules(modules)
    shared_dir = shared_root / build_key(project_dir)
    shared_dir.mkdir(parents=True, exist_ok=True)
    shared = _link_packages(project_dir, shared_dir / "packages")
    cache = _has_mathlib(project_dir)
    try:
        with FileLock(str(shared_dir / "lock"), timeout=timeout):
            steps = [[lake, "exe", "cache", "get"]] if cache else []
            if modules:
                steps.append([lake, "build", *modules])
            for step in steps:
                left = timeout - (time.monotonic() - started)
                status, error = _run(step, project_dir, left)
                if status is not BuildStatus.BUILT:
                    seconds = time.monotonic() - started
                    return BuildOutcome(status, seconds, modules, error, shared, cache)
    except Timeout:
        error = f"another build of the same dependencies ({shared_dir}) held its lock for {timeout:g} s"
        return BuildOutcome(BuildStatus.TIMED_OUT, time.monotonic() - started, modules, error, shared, cache)
    return BuildOutcome(BuildStatus.BUILT, time.monotonic() - started, modules, "", shared, cache)


def _link_packages(project_dir: Path, packages: Path) -> str | None:
    """Point the project's ``.lake/packages`` at the shared ``packages``; None when it has
    its own (kept as it is)."""
    # A link's relative target is read from the link's folder, not from where it was made: a
    # relative data directory (--data-dir data) made one that pointed nowhere. Such a link is
    # found not to point at ``packages`` below, and made again.
    packages = packages.absolute()
    link = project_dir / ".lake" / "packages"
    if link.is_symlink():
        if link.resolve() == packages.resolve():
            return str(packages)
        link.unlink()
    elif link.exists():
        log.info("%s has its own .lake/packages; its dependencies are not shared", project_dir)
        return None
    packages.mkdir(parents=True, exist_ok=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(packages, target_is_directory=True)
    return str(packages)


def _has_mathlib(project_dir: Path) -> bool:
    manifest = project_dir / "lake-manifest.json"
    try:
        packages = json.loads(manifest.read_text(encoding="utf-8")).get("packages", [])
    except (OSError, ValueError, AttributeError):
        return False
    return any(isinstance(p, dict) and str(p.get("name", "")).lower() == "mathlib" for p in packages)


def _run(command: list[str], cwd: Path, timeout: float) -> tuple[BuildStatus, str]:
    """Run one build step; its status and, when it did not succeed, one line saying why."""
    what = " ".join(Path(command[0]).name if i == 0 else part for i, part in enumerate(command))
    if timeout <= 0:
        return BuildStatus.TIMED_OUT, f"no time left for {what}"
    log.info("%s in %s (at most %.0f s)", what, cwd, timeout)
    # In a session of its own: a timeout kills lake and every lean it started.
    done = process.run(command, cwd=cwd, timeout=timeout, merge_stderr=True)
    if done.timed_out:
        return BuildStatus.TIMED_OUT, f"{what} did not finish within {timeout:.0f} s"
    if done.returncode == 0:
        return BuildStatus.BUILT, ""
    return BuildStatus.FAILED, f"{what} exited with code {done.returncode}: {first_error(process.text(done.stdout))}"


def first_error(output: str) -> str:
    """The first line of a build's output that reports an error, else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[-1] if lines else "(no output)"
