"""``leanagent run`` with a sorry whose proof only invokes a lemma of the repository with the
same statement: reported as "restates X", left out of the patch unless --keep-restatements
(after FormalBook #67)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import fake_lean
from projects import git

from agent.cli.main import main

# The sorry states add_zero' with other binder names: not the same text (which would make it
# an exercise, agent/proving/exercises.py), the same statement up to them.
SOURCE = """\
theorem add_zero' (a : Nat) : a + 0 = a := by
  simp

theorem pair (m : Nat) : m + 0 = m ∧ True := ⟨add_zero' m, trivial⟩

theorem add_zero_again (n : Nat) : n + 0 = n := by
  sorry
"""
SCRIPT = {
    "theorems": {"add_zero_again": {"goals": "n : Nat\n⊢ n + 0 = n", "steps": {"exact add_zero'": {"done": True}}}}
}
SEARCH = ["--candidates", "8", "--max-expansions", "2", "--tactic-timeout", "20", "--check-timeout", "20"]


@pytest.fixture
def repos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)
    root = tmp_path / "book"
    root.mkdir()
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    (root / "Book.lean").write_text(SOURCE, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "book")
    (tmp_path / "repos.txt").write_text("book\n", encoding="utf-8")
    return tmp_path / "repos.txt"


@pytest.mark.parametrize("keep", [False, True], ids=["left-out", "kept"])
def test_a_restatement_is_reported_and_written_back_only_when_asked(
    repos: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], keep: bool
) -> None:
    capsys.readouterr()
    extra = ["--keep-restatements"] if keep else []
    argv = ["--data-dir", str(tmp_path / "data"), "run", str(repos), "--tracer", "source", "--no-train", *SEARCH]
    assert main([*argv, *extra, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    (attempt,) = payload["proving"]["attempts"]
    assert (attempt["outcome"], attempt["proof"], attempt["restates"]) == (
        "proved",
        "by\n  exact add_zero'",
        "add_zero'",
    )
    assert attempt["detail"].startswith("restates add_zero'; ")
    assert (str(tmp_path / "book") in payload["proving"]["patches"]) is keep
    markdown = Path(payload["report"][1]).read_text(encoding="utf-8")
    assert "add_zero_again restates add_zero', a lemma of its repository with the same statement" in markdown
