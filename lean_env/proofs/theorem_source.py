"""Finding the theorem a proof is for (by name, in a file of a repository), and reading the
file a theorem is in: every backend and the final check read it through
:func:`read_theorem_file`, and fail with its one error."""

from __future__ import annotations

from pathlib import Path

from lean_env.errors import UserInputError
from lean_env.records import Theorem


class TheoremSourceError(UserInputError):
    """The theorem's source file is missing or does not contain the theorem where it should be."""


def read_theorem_file(repo_dir: Path, theorem: Theorem) -> str:
    """The text of ``theorem``'s file in the checkout at ``repo_dir``, as its positions count
    it (UTF-8, a byte-order mark kept); :class:`TheoremSourceError` when it cannot be read."""
    path = repo_dir / theorem.path
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise TheoremSourceError(f"cannot read {path} for theorem {theorem.full_name}: {e}") from e


def locate_theorem(repo: Path, file: Path, full_name: str) -> Theorem:
    """The theorem ``full_name`` of ``file`` (relative to ``repo``, or absolute inside it),
    read by source extraction; a missing directory, file or theorem is the user's error."""
    from lean_env.trace.source import extract_file

    if not repo.is_dir():
        raise UserInputError(f"repository directory {repo} does not exist")
    path = file if file.is_absolute() else repo / file
    try:
        rel = path.resolve().relative_to(repo).as_posix()
    except ValueError as e:
        raise UserInputError(f"{file} is not inside the repository {repo}") from e
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UserInputError(f"cannot read {path}: {e.strerror or e}") from e
    theorems = extract_file(text, path=rel).theorems
    for theorem in theorems:
        if theorem.full_name == full_name:
            if theorem.proof_start is None:
                raise UserInputError(f"the proof of {full_name} in {rel} could not be located")
            return theorem
    names = ", ".join(t.full_name for t in theorems[:10]) or "none"
    more = f" (and {len(theorems) - 10} more)" if len(theorems) > 10 else ""
    raise UserInputError(f"no theorem {full_name} in {rel}; theorems there: {names}{more}")
