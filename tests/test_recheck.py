"""``leanagent recheck``: every found proof of a repository's newest version is checked again
by Lean; one that holds is recorded, one that broke is withdrawn (its theorem a sorry target
again), one whose check tells nothing is left as it was (issue 26, item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import fake_lean
from projects import git

from agent.cli.main import EXIT_USAGE, main
from curriculum.store import Store
from lean_env.records import TheoremStatus

SOURCE = """\
theorem keep (p : Prop) (h : p) : p := by
  sorry

theorem other (n : Nat) : n = n := by
  sorry
"""
GOALS = {"keep": "p : Prop\nh : p\n⊢ p", "other": "n : Nat\n⊢ n = n"}
PROOFS = {"keep": "exact h", "other": "rfl"}
SEARCH = ["--candidates", "8", "--max-expansions", "2", "--tactic-timeout", "20", "--check-timeout", "20"]


def _script(**answers: dict[str, Any]) -> dict[str, Any]:
    """Each theorem's one proof step, answered ``done`` unless ``answers`` says otherwise."""
    return {
        "theorems": {
            name: {"goals": GOALS[name], "steps": {PROOFS[name]: answers.get(name, {"done": True})}} for name in GOALS
        }
    }


@pytest.fixture
def proved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A local repository whose two sorries `run` proved: the data directory."""
    fake_lean.activate(monkeypatch, tmp_path / "bin", _script())
    root = tmp_path / "book"
    root.mkdir()
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    (root / "Book.lean").write_text(SOURCE, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "two sorries")
    (tmp_path / "repos.txt").write_text("book\n", encoding="utf-8")
    data = tmp_path / "data"
    argv = ["--data-dir", str(data), "run", str(tmp_path / "repos.txt"), "--tracer", "source", "--no-train"]
    assert main([*argv, *SEARCH, "--json"]) == 0
    attempts = json.loads(capsys.readouterr().out)["proving"]["attempts"]
    assert {a["theorem"]: a["outcome"] for a in attempts} == {"keep": "proved", "other": "proved"}
    return data


def _recheck(data: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    code = main(["--data-dir", str(data), "recheck", "--check-timeout", "3", "--json", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def _statuses(data: Path) -> dict[str, TheoremStatus]:
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        return {t.theorem.full_name: t.theorem.status for t in store.theorems()}


def test_proofs_that_still_hold_are_recorded_again(proved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, payload, err = _recheck(proved, capsys)
    assert code == 0, err
    assert [(r["theorem"], r["verdict"], r["why"]) for r in payload["rechecked"]] == [
        ("keep", "holds", ""),
        ("other", "holds", ""),
    ]
    assert {r["checked_at_before"] for r in payload["rechecked"]} == {payload["rechecked"][0]["commit"]}
    assert set(_statuses(proved).values()) == {TheoremStatus.PROVED_BY_US}


def test_a_broken_proof_is_withdrawn_and_an_unknown_one_left(
    proved: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The Lean on PATH changed: `keep`'s proof is an error now, `other`'s check hangs."""
    fake_lean.activate(
        monkeypatch, tmp_path / "bin", _script(keep={"error": "unknown identifier 'h'"}, other={"hang": True})
    )
    code, payload, err = _recheck(proved, capsys)
    assert code == 0, err
    # Checked at the commit it was accepted at: the commit is said once.
    commit = payload["rechecked"][0]["commit"][:12]
    warned = [r.getMessage() for r in caplog.records if r.name == "agent.proving.recheck"]
    assert warned == [
        f"keep: Lean rejects its proof accepted at {commit} ({payload['rechecked'][0]['why']})",
        f"other: the check of its proof accepted at {commit} is unknown (ran out of time); left as it was",
    ]
    verdicts = {r["theorem"]: (r["verdict"], r["why"]) for r in payload["rechecked"]}
    assert verdicts["keep"][0] == "broke" and "unknown identifier 'h'" in verdicts["keep"][1]
    assert verdicts["other"] == ("unknown", "ran out of time")
    assert _statuses(proved) == {"keep": TheoremStatus.SORRY, "other": TheoremStatus.PROVED_BY_US}

    capsys.readouterr()
    assert main(["--data-dir", str(proved), "recheck", "--check-timeout", "3"]) == 0
    human = capsys.readouterr().out
    assert "1 found proof checked again: 0 hold, 0 broke" in human and "1 unknown (left as they were)" in human


def test_only_the_repository_asked_for(proved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, payload, _ = _recheck(proved, capsys, "--repo", str(tmp_path / "book"))
    assert code == 0 and len(payload["rechecked"]) == 2
    code, _, err = _recheck(proved, capsys, "--repo", "https://example.org/none.git")
    assert code == EXIT_USAGE and "no stored repository 'https://example.org/none.git'" in err


@pytest.mark.parametrize(
    "checked_at, commit, said",
    [
        pytest.param("8177b24a" * 5, "8177b24a" * 5, "", id="same-commit"),
        pytest.param("8177b24a" * 5, "9c0ffee1" * 5, " at 9c0ffee19c0f", id="newer"),
    ],
)
def test_a_warning_names_the_commit_checked_at_only_where_it_is_another(
    checked_at: str, commit: str, said: str
) -> None:
    from agent.proving.recheck import _elsewhere

    assert _elsewhere(checked_at, commit) == said
