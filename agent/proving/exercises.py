"""Sorries that are exercises, found without being told (besides the ``skip=`` globs): a
maintainer answered a LeanAgent pull request with "the sorry is there because these are
exercises" (mathematics_in_lean_source #247). Such a sorry is left alone by default and
listed in the report with why; ``--include-exercises`` proves it.

A sorry theorem is an exercise when

* its file is an exercise file: a folder or file name says so (``Exercises/``,
  ``exercises/``, ``Chapter1Exercises.lean``);
* its file has a solutions twin in the project: ``Foo_solutions.lean``, ``FooSolutions.lean``
  or ``Solutions/Foo.lean`` beside ``Foo.lean`` (any case);
* a declaration the project proves states the same (its statement, without its name, is
  the same text up to whitespace): a ``-- SOLUTIONS:`` section, as mathematics_in_lean has;
* its docstring or the comment right above it says "exercise".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from curriculum.results import StoredTheorem, TheoremKey
from lean_env.records import RepoTrace, Theorem, TheoremStatus
from lean_env.syntax.lexer import IDENT

_EXERCISE_RE = re.compile(r"exercise", re.IGNORECASE)
# The declaration keyword and name that a statement starts with (`theorem foo`, `example`).
_HEAD_RE = re.compile(
    rf"^\s*(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable)\s+)*(?:theorem|lemma|example)(?:\s+{IDENT})?"
)


def exercises(
    theorems: Sequence[StoredTheorem], traces: Mapping[str, RepoTrace], checkouts: Mapping[str, Path]
) -> dict[TheoremKey, str]:
    """Which of the sorry ``theorems`` are exercises, and why (one line each)."""
    solved = {
        location: {_claim(t.statement): t for t in trace.theorems if t.status is TheoremStatus.PROVEN}
        for location, trace in traces.items()
    }
    files = {location: {f.path.lower() for f in trace.files} for location, trace in traces.items()}
    texts: dict[tuple[str, str], str | None] = {}
    found: dict[TheoremKey, str] = {}
    for stored in theorems:
        location, theorem = stored.location, stored.theorem
        why = _by_path(theorem.path) or _by_twin(theorem.path, files.get(location, set()))
        if why is None and (solution := solved.get(location, {}).get(_claim(theorem.statement))) is not None:
            why = f"{solution.full_name} ({solution.path}) proves the same statement"
        if why is None and location in checkouts:
            key = (location, theorem.path)
            if key not in texts:
                texts[key] = _read(checkouts[location] / theorem.path)
            why = _by_comment(theorem, texts[key])
        if why is not None:
            found[stored.key] = why
    return found


def _by_path(path: str) -> str | None:
    for part in PurePosixPath(path).parts:
        if _EXERCISE_RE.search(part):
            return f"its file is an exercise file ({part})"
    return None


def _by_twin(path: str, files: set[str]) -> str | None:
    """The solutions twin of ``path`` among ``files`` (lowercase paths), as a reason."""
    file = PurePosixPath(path)
    stem, parent = file.stem, file.parent
    twins = [parent / f"{stem}_solutions.lean", parent / f"{stem}solutions.lean", parent / "solutions" / file.name]
    for twin in twins:
        if str(twin).lower() in files:
            return f"its solutions are in {twin}"
    return None


def _claim(statement: str) -> str:
    """A statement without its keyword and name, whitespace folded: what it claims."""
    return " ".join(_HEAD_RE.sub("", statement, count=1).split())


def _by_comment(theorem: Theorem, text: str | None) -> str | None:
    """Whether the comment right above ``theorem`` (its docstring too) says exercise."""
    if text is None:
        return None
    every = text.split("\n")
    # The declaration's own docstring, which the source reader counts as part of it.
    own = "\n".join(every[max(0, theorem.start.line - 1) :]).lstrip()
    if own.startswith("/--") and _EXERCISE_RE.search(doc := own[: own.find("-/") + 2]):
        return f"its docstring says so: {' '.join(doc.split())[:80]!r}"
    lines = every[: max(0, theorem.start.line - 1)]
    comment: list[str] = []
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[-1].rstrip().endswith("-/"):  # a block comment or docstring: up to its opening
        while lines:
            comment.append(lines.pop())
            if "/-" in comment[-1]:
                break
    else:
        while lines and lines[-1].lstrip().startswith("--"):
            comment.append(lines.pop())
    said = " ".join(line.strip() for line in reversed(comment))
    if _EXERCISE_RE.search(said):
        return f"its comment says so: {said[:80]!r}"
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
