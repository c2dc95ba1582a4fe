"""Naming stored theorems on the command line: ``NAME`` or ``PATH:NAME``.

A full name alone is not always one theorem: exercise/solution twins and folders of
standalone files (Lean's own tests declare ``ex1`` in 33 files) repeat it. ``PATH:NAME``
names the theorem ``NAME`` of the file ``PATH`` (relative to its repository), where NAME is
the full name or the name as declared there (``foo`` for ``Bar.foo`` inside ``namespace
Bar``). A reference that matches no theorem, or several, is the user's error, with the
choices named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from curriculum.results import StoredTheorem
from lean_env.errors import UserInputError
from lean_env.records import Theorem


@dataclass(frozen=True, slots=True)
class TheoremRef:
    """A theorem as the user names it: a name, and optionally the file it is in."""

    name: str
    path: str | None = None

    @classmethod
    def parse(cls, text: str) -> TheoremRef:
        """``NAME`` or ``PATH:NAME`` (PATH ends in ``.lean``; a Lean name has no ``:``)."""
        text = text.strip()
        path, colon, name = text.rpartition(":")
        if colon and path.rstrip().endswith(".lean"):
            path, name = path.strip(), name.strip()
            if not name:
                raise UserInputError(f"{text!r} names a file but no theorem; write PATH:NAME")
            return cls(name, Path(path).as_posix().removeprefix("./"))
        if not text:
            raise UserInputError("an empty theorem name")
        return cls(text)

    def matches(self, theorem: Theorem) -> bool:
        if self.path is None:
            return theorem.full_name == self.name
        declared = theorem.full_name == self.name or theorem.full_name.endswith(f".{self.name}")
        return theorem.path == self.path and declared

    def __str__(self) -> str:
        return self.name if self.path is None else f"{self.path}:{self.name}"


def read_theorem_refs(file: Path) -> list[TheoremRef]:
    """The references of a theorems file: one per line, ``#`` comments and blank lines
    skipped, a byte-order mark (as some editors write) ignored."""
    try:
        text = file.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise UserInputError(f"cannot read the theorems file {file}: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise UserInputError(f"the theorems file {file} is not UTF-8 text: {error.reason}") from error
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    refs = [TheoremRef.parse(line) for line in lines if line]
    if not refs:
        raise UserInputError(f"the theorems file {file} names no theorem")
    return refs


def resolve_refs(
    refs: Sequence[TheoremRef], candidates: Sequence[StoredTheorem], *, what: str, whats: str
) -> list[StoredTheorem]:
    """The one theorem of ``candidates`` each reference names, in the references' order
    (each once); ``what`` and ``whats`` say what a candidate is, and what several are, for
    the messages."""
    chosen: dict[int, StoredTheorem] = {}
    for ref in dict.fromkeys(refs):
        found = [t for t in candidates if ref.matches(t.theorem)]
        if not found:
            raise UserInputError(f"no {what} is called {str(ref)!r}")
        if len(found) > 1:
            raise UserInputError(f"{str(ref)!r} names several {whats}: {_choices(found)}")
        chosen.setdefault(found[0].id, found[0])
    return list(chosen.values())


def _choices(found: Sequence[StoredTheorem], *, shown: int = 5) -> str:
    """The references that name each of ``found`` alone, and how to give one: ``PATH:FULL_NAME``
    (one name declared in several namespaces of a file differs in its full name); where that is
    not enough (the same file in several repositories), with the repository to choose."""
    refs = [str(TheoremRef(t.theorem.full_name, t.theorem.path)) for t in found]
    if len(set(refs)) == len(refs):
        listed, advice = refs, "name one of them so"
    else:
        listed = [f"{ref} of {t.location}" for ref, t in zip(refs, found, strict=True)]
        advice = "name one as PATH:FULL_NAME and choose its repository with --repo"
    more = f" and {len(listed) - shown} more" if len(listed) > shown else ""
    return f"{', '.join(listed[:shown])}{more}; {advice}"
