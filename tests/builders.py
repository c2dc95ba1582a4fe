"""The records tests hand to the code under test (see lean_env/records.py): premises, theorems,
the ``sorry`` targets a proof environment opens, and repository traces, built with every
field defaulted so that a test names only what it is about.

A builder takes the record's identity (a name, a location) positionally and the rest by
keyword. A few keywords are shortcuts that set several fields at once (``line``, and
``steps`` for a theorem); any other keyword is a field of the record and replaces whatever
the builder would have put there, e.g. ``theorem("t", proof_start=None)``. Records are
frozen, so a builder's result may be shared as a module constant.

Other helpers build other things: projects.py writes Lean projects and git repositories to
disk, db_cases.py gives the database fixture, and fakes/fake_lean.py's ``theorem_record``
reads a theorem out of a source text the way the fake ``lean`` sees it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from lean_env.records import (
    DeclKind,
    IngestBackend,
    LeanFile,
    ParseProblem,
    Position,
    Premise,
    RepoSpec,
    RepoTrace,
    Theorem,
    TheoremStatus,
    TracedTactic,
)


def premise(name: str, *, path: str = "A.lean", line: int = 1, **fields: Any) -> Premise:
    """The theorem ``name`` as a premise, declared at ``line`` of ``path`` over three lines
    (``theorem NAME : True`` is its code)."""
    built = Premise(
        name, path, Position(line, 1), Position(line + 2, 5), DeclKind.THEOREM, f"theorem {name} : True"
    )  # fmt: skip
    return dataclasses.replace(built, **fields)


def theorem(
    name: str,
    *,
    steps: int | None = 0,
    path: str = "A.lean",
    line: int = 1,
    premises: Sequence[str] = (),
    **fields: Any,
) -> Theorem:
    """``theorem NAME : True`` at ``line`` of ``path``, proved in ``steps`` tactic steps.

    ``steps=0`` is the term-mode proof ``trivial`` (which counts as one step), ``steps=None``
    a ``sorry`` (a target for the prover; its ``sorry`` at column 30). Tactic ``i`` is
    ``step{i} NAME`` from goal ``⊢ goal {i}`` to the next goal (none after the last) and
    uses every name in ``premises``, which the whole proof uses too. The proof starts at
    column 27 and the theorem ends on the line after its last step.
    """
    if steps is None:
        proof, status, tactics, sorries = "sorry", TheoremStatus.SORRY, (), (Position(line, 30),)
    else:
        tactics = tuple(
            TracedTactic(
                f"step{i} {name}",
                f"⊢ goal {i}",
                None if i == steps - 1 else f"⊢ goal {i + 1}",
                tuple(premises),
            )
            for i in range(steps)
        )
        proof = "by\n" + "\n".join(f"  {t.tactic}" for t in tactics) if steps else "trivial"
        status, sorries = TheoremStatus.PROVEN, ()
    built = Theorem(
        name, path, Position(line, 1), Position(line + 1 + (steps or 0), 10), f"theorem {name} : True",
        proof, status, tactics=tactics, premises=tuple(premises), sorries=sorries,
        proof_start=Position(line, 27),
    )  # fmt: skip
    return dataclasses.replace(built, **fields)


def target(
    name: str,
    *,
    path: str = "A.lean",
    line: int = 1,
    proof_start: Position | None = None,
    **fields: Any,
) -> Theorem:
    """A ``sorry`` theorem with no more than opening it in a proof environment reads: where it
    starts (``line``, column 1, ending on the next line) and where its proof starts (None:
    find it from the statement); no statement, proof text or ``sorry`` positions."""
    blank = {"statement": "", "proof": None, "sorries": (), "proof_start": proof_start}
    return theorem(name, steps=None, path=path, line=line, **{**blank, **fields})


def repo_trace(
    location: str,
    *,
    commit: str = "c0",
    theorems: Sequence[Theorem] = (),
    premises: Sequence[Premise] = (),
    files: Sequence[LeanFile] | None = None,
    problems: Sequence[ParseProblem] = (),
    ref: str | None = None,
    **fields: Any,
) -> RepoTrace:
    """What source extraction would store for ``location`` (at ``ref``) at ``commit``, under
    Lean v4.20.0. ``files`` defaults to every path the theorems and premises name, each
    importing ``Init``."""
    paths = sorted({t.path for t in theorems} | {p.path for p in premises})
    built = RepoTrace(
        spec=RepoSpec(location, ref),
        commit=commit,
        backend=IngestBackend.SOURCE,
        lean_version="leanprover/lean4:v4.20.0",
        files=tuple(files) if files is not None else tuple(LeanFile(p, ("Init",)) for p in paths),
        premises=tuple(premises),
        theorems=tuple(theorems),
        problems=tuple(problems),
    )
    return dataclasses.replace(built, **fields)


def rich_trace(location: str = "https://example.org/a.git", commit: str = "a" * 40) -> RepoTrace:
    """A trace using every field: imports, premises, tactic premise links (local and not),
    a sorry, a term-mode proof, a proof we cannot read, and a parse problem."""
    unread = theorem(
        "C.unread",
        path="C.lean",
        line=9,
        end=Position(9, 40),
        proof=None,
        proof_start=None,
    )
    return repo_trace(
        location,
        commit=commit,
        theorems=[
            theorem("A.one", steps=1, premises=["A.p1", "Nat.succ"]),
            theorem("A.two", steps=3, line=5, premises=["A.p2"]),
            theorem("B.term", steps=0, path="B/B.lean"),
            theorem("B.hole", steps=None, path="B/B.lean", line=7),
            unread,
        ],
        premises=[premise("A.p1"), premise("A.p2", line=4), premise("B.q", path="B/B.lean")],
        files=[
            LeanFile("A.lean", ("Init",)),
            LeanFile("B/B.lean", ("A", "Mathlib.Logic.Basic")),
            LeanFile("C.lean"),
        ],
        problems=[ParseProblem("C.lean", 3, "unterminated comment")],
        ref="main",
    )
