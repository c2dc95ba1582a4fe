"""Sorries that are exercises, found without being told (agent/proving/exercises.py), on a project
shaped like mathematics_in_lean_source: left alone and listed with why by ``run`` and
``prove``, proved with ``--include-exercises``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import fake_lean
from projects import git

from agent.cli.main import main

FILES = {
    # mathematics_in_lean's shape: the exercise, then a SOLUTIONS section stating it again.
    "MIL/C02/S01.lean": """\
-- Try these.
theorem mul_comm3 (a b c : Nat) : c * b * a = b * (a * c) := by
  sorry

-- SOLUTIONS:
theorem mul_comm3' (a b c : Nat) : c * b * a = b * (a * c) := by
  simp [Nat.mul_comm, Nat.mul_left_comm]

theorem real_gap (n : Nat) : n + 0 = n := by
  sorry
""",
    "Exercises/Basic.lean": "theorem in_folder (p : Prop) : p → p := by\n  sorry\n",
    "Book/Ch1.lean": "theorem twin (p : Prop) : p → p := by\n  sorry\n",
    "Book/Ch1_solutions.lean": "theorem twin (p : Prop) : p → p := by\n  intro h\n  exact h\n",
    "Book/Ch2.lean": "/-- Exercise: prove this one yourself. -/\n"
    "theorem commented (p : Prop) : p ∧ p → p := by\n  sorry\n",
    "Book/Ch3.lean": "-- An exercise\n-- for the reader.\ntheorem lined (p q : Prop) : p → q → p := by\n  sorry\n",
}
PROVABLE = {"goals": "⊢ goal", "steps": {"decide": {"done": True}}}
SCRIPT = {"theorems": dict.fromkeys(["real_gap", "mul_comm3", "in_folder", "twin", "commented", "lined"], PROVABLE)}
SEARCH = ["--candidates", "8", "--max-expansions", "2", "--tactic-timeout", "20", "--check-timeout", "20"]
EXERCISES = {
    ("MIL/C02/S01.lean", "mul_comm3"): "mul_comm3' (MIL/C02/S01.lean) proves the same statement",
    ("Exercises/Basic.lean", "in_folder"): "its file is an exercise file (Exercises)",
    ("Book/Ch1.lean", "twin"): "its solutions are in Book/Ch1_solutions.lean",
    ("Book/Ch2.lean", "commented"): "its docstring says so: '/-- Exercise: prove this one yourself. -/'",
    ("Book/Ch3.lean", "lined"): "its comment says so: '-- An exercise -- for the reader.'",
}


@pytest.fixture
def repos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)
    root = tmp_path / "mil"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "mil")
    (tmp_path / "repos.txt").write_text("mil\n", encoding="utf-8")
    return tmp_path / "repos.txt"


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_run_leaves_exercises_alone_and_lists_why(repos: Path, tmp_path: Path, capsys) -> None:
    data = str(tmp_path / "data")
    payload = _json(capsys, "--data-dir", data, "run", str(repos), "--tracer", "source", "--no-train", *SEARCH)
    attempts = payload["proving"]["attempts"]
    assert [(a["path"], a["theorem"], a["outcome"]) for a in attempts] == [("MIL/C02/S01.lean", "real_gap", "proved")]
    (listed,) = payload["proving"]["exercises"].values()
    assert {(e["path"], e["theorem"]): e["why"] for e in listed} == EXERCISES
    markdown = Path(payload["report"][1]).read_text(encoding="utf-8")
    assert "5 sorry theorem(s) of" in markdown and "left alone as exercises" in markdown
    assert "Book/Ch1.lean:twin: exercise: its solutions are in Book/Ch1_solutions.lean" in markdown


def test_include_exercises_proves_them_too(repos: Path, tmp_path: Path, capsys) -> None:
    data = str(tmp_path / "data")
    argv = ["--data-dir", data, "run", str(repos), "--tracer", "source", "--no-train", "--include-exercises"]
    payload = _json(capsys, *argv, *SEARCH)
    assert sorted(a["theorem"] for a in payload["proving"]["attempts"] if a["outcome"] == "proved") == sorted(
        ["real_gap", *(name for _, name in EXERCISES)]
    )
    assert payload["proving"]["exercises"] == {}


def test_prove_leaves_exercises_alone_too(repos: Path, tmp_path: Path, capsys) -> None:
    data = str(tmp_path / "data")
    _json(capsys, "--data-dir", data, "ingest", "--repos", str(repos), "--tracer", "source")
    payload = _json(capsys, "--data-dir", data, "prove", "--proof-backend", "file", *SEARCH)
    assert [a["theorem"] for a in payload["attempts"]] == ["real_gap"]
    assert {(e["path"], e["theorem"]): e["why"] for e in payload["exercises"]} == EXERCISES
