"""Shared by the database, ingest, curriculum and data-CLI tests: hand-built traces, tiny
Lean projects and git repositories on disk, and a database URL fixture that runs each test
against SQLite and (when LEANAGENT_TEST_POSTGRES_URL is set) PostgreSQL, in its own schema."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

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

POSTGRES_URL_ENV = "LEANAGENT_TEST_POSTGRES_URL"


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file, or a PostgreSQL schema dropped afterwards."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
        return
    base = os.environ[POSTGRES_URL_ENV]
    schema = f"test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        # psycopg passes `options` to the server: every connection of the test sees only its schema.
        url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def theorem(
    name: str,
    steps: int | None,
    *,
    path: str = "A.lean",
    line: int = 1,
    premises: Sequence[str] = (),
) -> Theorem:
    """A theorem with ``steps`` tactic steps (0: a term-mode proof; None: `sorry`)."""
    start, end = Position(line, 1), Position(line + 1 + (steps or 0), 10)
    if steps is None:
        return Theorem(
            name, path, start, end, f"theorem {name} : True", "sorry", TheoremStatus.SORRY,
            sorries=(Position(line, 30),), proof_start=Position(line, 27),
        )  # fmt: skip
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
    return Theorem(
        name, path, start, end, f"theorem {name} : True", proof, TheoremStatus.PROVEN,
        tactics=tactics, premises=tuple(premises), proof_start=Position(line, 27),
    )  # fmt: skip


def premise(name: str, *, path: str = "A.lean", line: int = 1) -> Premise:
    return Premise(
        name,
        path,
        Position(line, 1),
        Position(line + 2, 5),
        DeclKind.THEOREM,
        f"theorem {name} : True",
    )


def make_trace(
    location: str,
    commit: str,
    theorems: Sequence[Theorem],
    *,
    premises: Sequence[Premise] = (),
    files: Sequence[LeanFile] | None = None,
    problems: Sequence[ParseProblem] = (),
    ref: str | None = None,
) -> RepoTrace:
    paths = sorted({t.path for t in theorems} | {p.path for p in premises})
    return RepoTrace(
        spec=RepoSpec(location, ref),
        commit=commit,
        backend=IngestBackend.SOURCE,
        lean_version="leanprover/lean4:v4.20.0",
        files=tuple(files) if files is not None else tuple(LeanFile(p, ("Init",)) for p in paths),
        premises=tuple(premises),
        theorems=tuple(theorems),
        problems=tuple(problems),
    )


def rich_trace(location: str = "https://example.org/a.git", commit: str = "a" * 40) -> RepoTrace:
    """A trace using every field: imports, premises, tactic premise links (local and not),
    a sorry, a term-mode proof, a proof we cannot read, and a parse problem."""
    unread = Theorem(
        "C.unread",
        "C.lean",
        Position(9, 1),
        Position(9, 40),
        "theorem C.unread : True",
        None,
        TheoremStatus.PROVEN,
    )
    return make_trace(
        location,
        commit,
        [
            theorem("A.one", 1, premises=["A.p1", "Nat.succ"]),
            theorem("A.two", 3, line=5, premises=["A.p2"]),
            theorem("B.term", 0, path="B/B.lean"),
            theorem("B.hole", None, path="B/B.lean", line=7),
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


# ---- Lean projects and git repositories on disk ----------------------------------------


LEAN_SOURCE = """\
theorem demo_comm (a b : Nat) : a + b = b + a := by
  rw [Nat.add_comm]

theorem demo_true : True := trivial

theorem demo_id (p : Prop) : p → p := by
  intro h
  exact h

theorem demo_hole : 1 + 1 = 2 := by
  sorry
"""


def lean_project(root: Path, *, source: str = LEAN_SOURCE) -> Path:
    """A minimal Lake project (lakefile, lean-toolchain, one module) at ``root``."""
    (root / "Demo").mkdir(parents=True, exist_ok=True)
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    (root / "lakefile.lean").write_text(
        "import Lake\nopen Lake DSL\npackage demo\nlean_lib Demo\n", encoding="utf-8"
    )
    (root / "Demo" / "Basic.lean").write_text(source, encoding="utf-8")
    return root


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity; return stdout."""
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.org",
         "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def git_project(root: Path, *, source: str = LEAN_SOURCE) -> tuple[Path, str]:
    """A Lean project committed to a fresh git repository; (path, HEAD sha)."""
    lean_project(root, source=source)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return root, git(root, "rev-parse", "HEAD")
