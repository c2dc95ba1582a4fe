"""Finding the Lean toolchain: ``lean``, ``lake`` and the Lean REPL on PATH.

Lean is an external program; we never fake it. Every caller that needs one goes through
:func:`require_tool`, which fails with one sentence on how to install it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lean_env import process
from lean_env.errors import LeanNotFoundError


def elan_bin() -> Path:
    """Where elan installs its proxies (``$ELAN_HOME/bin``, by default ``~/.elan/bin``).

    Read at each call rather than at import, so that a process (or a test) that sets
    ``ELAN_HOME`` is looked up where it says, as elan itself would.
    """
    return Path(os.environ.get("ELAN_HOME", Path.home() / ".elan")) / "bin"


def find_tool(name: str) -> Path | None:
    """The executable ``name`` (``lean``, ``lake``, ``repl``) on PATH or in elan's bin, else None.

    elan's bin counts too because its installer may not have updated this shell's PATH.
    """
    found = shutil.which(name) or shutil.which(name, path=str(elan_bin()))
    return Path(found) if found else None


def require_tool(name: str) -> Path:
    """Like :func:`find_tool`, but a missing tool raises :class:`LeanNotFoundError`."""
    path = find_tool(name)
    if path is None:
        raise LeanNotFoundError(name)
    return path


def tool_version(path: Path, *, timeout: float = 30.0) -> str | None:
    """The first line ``path --version`` prints, or None if it cannot be run."""
    try:
        done = process.run([str(path), "--version"], timeout=timeout)
    except OSError:
        return None
    lines = (process.text(done.stdout) or process.text(done.stderr)).strip().splitlines()
    return lines[0] if done.returncode == 0 and lines else None


def core_sources(project_dir: Path, *, timeout: float = 30.0) -> Path | None:
    """The directory of the core library's sources (``Init.lean``, ``Init/``, ...) of the
    ``lean`` that checks ``project_dir``, or None when there is no ``lean`` or it has none.

    A release toolchain (elan's) keeps them in ``<prefix>/src/lean``, the prefix from ``lean
    --print-prefix`` run in the project (elan's proxy then runs the project's pin). A Lean
    built in a checkout of its repository (``build/release/stage1/bin/lean``), or one from
    before ``--print-prefix``, has them in the checkout's ``src``: the nearest ancestor of
    the binary with ``src/Init.lean`` (or ``src/lean/Init.lean``)."""
    lean = find_tool("lean")
    if lean is None:
        return None
    candidates = []
    try:
        done = process.run([str(lean), "--print-prefix"], cwd=project_dir, timeout=timeout)
        prefix = process.text(done.stdout).strip() if done.returncode == 0 else ""
    except OSError:
        prefix = ""
    if prefix and "\n" not in prefix:
        candidates.append(Path(prefix) / "src" / "lean")
    for ancestor in lean.resolve().parents[:5]:
        candidates += [ancestor / "src" / "lean", ancestor / "src"]
    return next((c for c in candidates if (c / "Init.lean").is_file()), None)


def read_toolchain(project_dir: Path) -> str | None:
    """The ``lean-toolchain`` pin of a Lake project (``leanprover/lean4:v4.20.0``), if any."""
    pin = project_dir / "lean-toolchain"
    return pin.read_text(encoding="utf-8").strip() or None if pin.is_file() else None
