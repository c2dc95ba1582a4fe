"""Finding (or building) the Lean REPL for a project, and saying where it came from.

The REPL must be built with the same Lean version as the project's ``.olean`` files, or
importing them fails. We look, in order:

1. an explicit binary (``--repl PATH``);
2. ``$LEANAGENT_REPL``;
3. the project's own dependency on the REPL (``.lake/packages/repl``), run as ``lake exe repl``;
4. ``repl`` on PATH;
5. a REPL we built earlier in ``cache_dir/repl-<lean version>``.

A binary runs as ``lake env BINARY`` inside a Lake project (so that the project's modules
and dependencies are on ``LEAN_PATH``), as itself elsewhere. When nothing is found,
:func:`build_repl` clones leanprover-community/repl at the tag of the project's Lean version
and builds it with ``lake`` (online only; the toolchain comes from elan).
:func:`describe_repl` reports all this without starting or building anything, for
``leanagent env doctor``.
"""

from __future__ import annotations

import enum
import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lean_env import process
from lean_env.errors import UserInputError
from lean_env.git import GitError, run_git
from lean_env.interactive.repl.errors import ReplError, ReplNotFoundError
from lean_env.interactive.repl.process import ReplCommand
from lean_env.lean.runner import is_lake_project
from lean_env.lean.toolchain import find_tool, read_toolchain

logger = logging.getLogger(__name__)

REPL_ENV_VAR = "LEANAGENT_REPL"
REPL_GIT_URL = "https://github.com/leanprover-community/repl"
# Lake packages are named after the repository's `name` in its lakefile: "REPL" upstream.
_PACKAGE_DIRS = ("REPL", "repl")


class ReplSource(enum.StrEnum):
    """Where the REPL we use comes from."""

    OPTION = "option"  # the repl argument
    ENVIRONMENT = "environment"  # $LEANAGENT_REPL
    LAKE_PACKAGE = "lake_package"  # a dependency of the project, run with `lake exe repl`
    PATH = "path"  # `repl` on PATH
    BUILT = "built"  # built by build_repl() into the cache
    MISSING = "missing"  # none of the above


class ReplPathError(UserInputError):
    """A REPL binary the user named (option or environment variable) that cannot be run."""


class ReplBuildError(ReplError):
    """Cloning or building the REPL failed (command, exit code and output tail attached)."""


@dataclass(frozen=True, slots=True)
class ReplStatus:
    """What :func:`describe_repl` found: the command, its Lean version, or what is missing."""

    found: bool
    source: ReplSource
    argv: tuple[str, ...]  # how the REPL would be started (empty when missing)
    binary: Path | None  # the executable itself, when known
    repl_toolchain: str | None  # the Lean version it was built with, when known
    project_toolchain: str | None  # the project's lean-toolchain pin
    detail: str  # one sentence: where it was found, or what is missing and how to install

    @property
    def compatible(self) -> bool | None:
        """Whether REPL and project use the same Lean; None when either is unknown."""
        return _same_lean(self.repl_toolchain, self.project_toolchain)


def _same_lean(a: str | None, b: str | None) -> bool | None:
    return None if a is None or b is None else lean_version(a) == lean_version(b)


def lean_version(toolchain: str) -> str:
    """The version part of a toolchain pin: ``leanprover/lean4:v4.20.0`` -> ``v4.20.0``."""
    return toolchain.strip().rsplit(":", 1)[-1]


def install_hint(project_dir: Path) -> str:
    """How to get a REPL for ``project_dir``, in one sentence."""
    pin = read_toolchain(project_dir)
    tag = lean_version(pin) if pin else "<your Lean version>"
    return (
        f"build it with: git clone --branch {tag} {REPL_GIT_URL} && cd repl && lake build repl, "
        f"then set {REPL_ENV_VAR} to PATH/TO/repl/.lake/build/bin/repl"
    )


def built_repl_dir(cache_dir: Path, toolchain: str) -> Path:
    """Where :func:`build_repl` keeps the REPL for one Lean version."""
    return cache_dir / f"repl-{lean_version(toolchain)}"


def _binary_in(repl_dir: Path) -> Path:
    return repl_dir / ".lake" / "build" / "bin" / "repl"


def _toolchain_of_binary(binary: Path) -> str | None:
    """The Lean version of a REPL built in a source tree (``ROOT/.lake/build/bin/repl``)."""
    parts = binary.resolve().parts
    if len(parts) > 4 and parts[-4:-1] == (".lake", "build", "bin"):
        return read_toolchain(Path(*parts[:-4]))
    return None


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _wrap(binary: Path, project_dir: Path) -> tuple[str, ...]:
    """``lake env BINARY`` in a Lake project when lake is there, else the bare binary."""
    lake = find_tool("lake")
    if lake is not None and is_lake_project(project_dir):
        return (str(lake), "env", str(binary))
    return (str(binary),)


def describe_repl(
    project_dir: Path,
    *,
    repl: Path | None = None,
    cache_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ReplStatus:
    """Which REPL :func:`repl_command` would start for ``project_dir``; starts and builds nothing."""
    environ = os.environ if environ is None else environ
    project_toolchain = read_toolchain(project_dir)

    def status(source: ReplSource, binary: Path | None, argv: tuple[str, ...], where: str) -> ReplStatus:
        repl_toolchain = _toolchain_of_binary(binary) if binary is not None else None
        note = ""
        if _same_lean(repl_toolchain, project_toolchain) is False:
            note = (
                f"; WARNING: it was built for Lean {lean_version(repl_toolchain or '')} but the "
                f"project uses {lean_version(project_toolchain or '')}, so its imports will not load"
            )
        return ReplStatus(
            True,
            source,
            argv,
            binary,
            repl_toolchain,
            project_toolchain,
            f"Lean REPL found ({where}): {' '.join(argv)}{note}",
        )

    named = [(repl, ReplSource.OPTION, "the repl argument")]
    if environ.get(REPL_ENV_VAR):
        named.append((Path(environ[REPL_ENV_VAR]), ReplSource.ENVIRONMENT, f"${REPL_ENV_VAR}"))
    for path, source, what in named:
        if path is None:
            continue
        path = path.expanduser()
        if not _runnable(path):
            return ReplStatus(
                False,
                source,
                (),
                path,
                None,
                project_toolchain,
                f"the Lean REPL given by {what} ({path}) is not an executable file; " + install_hint(project_dir),
            )
        return status(source, path, _wrap(path, project_dir), what)

    lake = find_tool("lake")
    packages = project_dir / ".lake" / "packages"
    for name in _PACKAGE_DIRS:
        if lake is not None and (packages / name).is_dir():
            built = _binary_in(packages / name)
            return status(
                ReplSource.LAKE_PACKAGE,
                built if _runnable(built) else None,
                (str(lake), "exe", "repl"),
                f"project dependency {packages / name}",
            )

    on_path = find_tool("repl")
    if on_path is not None:
        return status(ReplSource.PATH, on_path, _wrap(on_path, project_dir), "on PATH")

    if cache_dir is not None and project_toolchain is not None:
        built = _binary_in(built_repl_dir(cache_dir, project_toolchain))
        if _runnable(built):
            return status(ReplSource.BUILT, built, _wrap(built, project_dir), f"built in {cache_dir}")

    return ReplStatus(
        False,
        ReplSource.MISSING,
        (),
        None,
        None,
        project_toolchain,
        f"no Lean REPL found (no repl argument, no ${REPL_ENV_VAR}, no REPL dependency in "
        f"{project_dir}, no `repl` on PATH); " + install_hint(project_dir),
    )


def repl_command(
    project_dir: Path,
    *,
    repl: Path | None = None,
    cache_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ReplCommand:
    """The command that starts a REPL for ``project_dir`` (run in that directory).

    Raises :class:`ReplPathError` for a named binary that cannot run and
    :class:`ReplNotFoundError` when there is none.
    """
    found = describe_repl(project_dir, repl=repl, cache_dir=cache_dir, environ=environ)
    if found.found:
        return ReplCommand(argv=found.argv, cwd=project_dir)
    if found.source in (ReplSource.OPTION, ReplSource.ENVIRONMENT):
        raise ReplPathError(found.detail)
    raise ReplNotFoundError(found.detail)


def build_repl(project_dir: Path, *, cache_dir: Path, timeout: float = 3600.0) -> Path:
    """Clone leanprover-community/repl at the project's Lean version and build it; the binary.

    Needs ``git``, ``lake`` (elan installs the toolchain the clone pins) and network access.
    An existing build in the cache is reused. The clone pins the same toolchain as the
    project, because upstream tags each Lean release (``v4.20.0``) with a matching
    ``lean-toolchain``; we check that rather than trust it.
    """
    toolchain = read_toolchain(project_dir)
    if toolchain is None:
        raise ReplBuildError(f"{project_dir} has no lean-toolchain file, so the REPL's Lean version is unknown")
    target = built_repl_dir(cache_dir, toolchain)
    binary = _binary_in(target)
    if _runnable(binary):
        return binary
    git = find_tool("git")
    lake = find_tool("lake")
    if git is None or lake is None:
        missing = "git" if git is None else "lake (install elan)"
        raise ReplBuildError(f"cannot build the Lean REPL: {missing} is not on PATH")
    tag = lean_version(toolchain)
    if not (target / ".git").is_dir():
        if target.exists():
            shutil.rmtree(target)  # a clone that was interrupted
        target.parent.mkdir(parents=True, exist_ok=True)
        clone = ("clone", "--depth", "1", "--branch", tag, REPL_GIT_URL, str(target.absolute()))
        logger.info("running git %s", " ".join(clone))
        try:
            cloned = run_git(None, *clone, timeout=timeout)
        except GitError as e:
            raise ReplBuildError(f"cannot clone the Lean REPL: {e}") from e
        _check(cloned, why=f"no REPL release is tagged {tag} (or the network is unreachable)")
    pinned = read_toolchain(target)
    if pinned is None or lean_version(pinned) != tag:
        raise ReplBuildError(f"the REPL clone at {target} pins {pinned!r}, not the project's {toolchain!r}")
    _run([str(lake), "build", "repl"], cwd=target, timeout=timeout, why="lake could not build it")
    if not _runnable(binary):
        raise ReplBuildError(f"lake reported success but {binary} is not there")
    logger.info("built the Lean REPL %s at %s", tag, binary)
    return binary


def _run(argv: list[str], *, cwd: Path, timeout: float, why: str) -> None:
    logger.info("running %s in %s", " ".join(argv), cwd)
    try:
        done = process.run(argv, cwd=cwd, timeout=timeout)
    except OSError as e:
        raise ReplBuildError(f"`{' '.join(argv)}` failed: {e}") from e
    if done.timed_out:
        raise ReplBuildError(f"`{' '.join(argv)}` did not finish within {timeout:g} s; its processes were killed")
    _check(done, why=why)


def _check(done: process.Finished, *, why: str) -> None:
    """Raise :class:`ReplBuildError` unless the build step ``done`` exited with 0."""
    if done.returncode != 0:
        output = process.text(done.stderr) or process.text(done.stdout)
        command = " ".join(done.argv)
        raise ReplBuildError(f"`{command}` exited with code {done.returncode} ({why}): {process.tail(output)}")
