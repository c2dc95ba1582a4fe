"""Lean projects and git repositories on disk, for the ingest, repository and data-CLI tests:
a minimal Lake project, and the same committed to a fresh repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
    (root / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage demo\nlean_lib Demo\n", encoding="utf-8")
    (root / "Demo" / "Basic.lean").write_text(source, encoding="utf-8")
    return root


def lemma_project(root: Path, name: str, lemmas: int) -> Path:
    """A Lake project whose theorems use its own lemmas (``exact NAME_l<i> b``), two theorems
    per lemma: source extraction gives the retriever one example per theorem."""
    lines = []
    for i in range(1, lemmas + 1):
        lines.append(f"theorem {name}_l{i} (a : Nat) : a + {i} = {i} + a := Nat.add_comm a {i}\n")
        for k in range(2):
            lines.append(f"theorem {name}_u{i}_{k} (b : Nat) : b + {i} = {i} + b := by\n  exact {name}_l{i} b\n")
    return lean_project(root, source="\n".join(lines))


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
