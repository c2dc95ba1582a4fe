"""A URL repository whose remote head is already stored, with nothing left to do there, costs
one ``git ls-remote``: no clone, no fetch, no Lean (issue 26, item 2; SorryDB's check)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes import fake_lean
from projects import git

from agent.cli.main import main
from lean_env.records import RepoSpec
from lean_env.repos import remote_commit

SOURCE = """\
theorem keep (p : Prop) (h : p) : p := by
  sorry
"""
SEARCH = ["--candidates", "8", "--max-expansions", "2", "--tactic-timeout", "20", "--check-timeout", "20"]


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bare repository with one sorry that the built-in suggester cannot prove with the fake
    lean (no scripted step is proposed), pushed from tmp_path/work."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    fake_lean.activate(monkeypatch, tmp_path / "bin", {"theorems": {}})
    work = tmp_path / "work"
    work.mkdir()
    (work / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    (work / "Book.lean").write_text(SOURCE, encoding="utf-8")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "a sorry")
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(tmp_path / "remote.git")], check=True)
    git(work, "remote", "add", "origin", str(tmp_path / "remote.git"))
    (tmp_path / "repos.txt").write_text(f"file://{tmp_path / 'remote.git'}\n", encoding="utf-8")
    return tmp_path / "remote.git"


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    argv = ["--data-dir", str(tmp_path / "data"), "run", str(tmp_path / "repos.txt"), "--tracer", "source"]
    code = main([*argv, "--no-train", *SEARCH, "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _clones(tmp_path: Path) -> Path:
    return tmp_path / "data" / "cache" / "clones"


def test_an_unchanged_head_whose_sorries_were_attempted_is_not_fetched_nor_proved(
    remote: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _run(tmp_path, capsys)
    assert [o["status"] for o in first["ingest"]] == ["added"]
    assert [a["outcome"] for a in first["proving"]["attempts"]] != []

    # No clone to fetch into and no lean on PATH: the second run needs neither.
    shutil.rmtree(_clones(tmp_path))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    second = _run(tmp_path, capsys)
    [outcome] = second["ingest"]
    assert (outcome["status"], outcome["commit"]) == ("unchanged-remote", git(remote, "rev-parse", "main"))
    assert outcome["sorries"] == 1 and second["proving"]["attempts"] == []
    assert second["proving_skipped"] is None and not _clones(tmp_path).exists()
    markdown = Path(second["report"][1]).read_text(encoding="utf-8")
    assert "1 not even fetched: git ls-remote found the stored head" in markdown


def test_a_new_head_is_fetched_and_proved(
    remote: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(tmp_path, capsys)
    work = tmp_path / "work"
    (work / "Book.lean").write_text(SOURCE + "\ntheorem more : True := by\n  sorry\n", encoding="utf-8")
    git(work, "commit", "-qam", "another sorry")
    git(work, "push", "-q", "origin", "HEAD:main")
    again = _run(tmp_path, capsys)
    [outcome] = again["ingest"]
    assert (outcome["status"], outcome["commit"]) == ("added", git(remote, "rev-parse", "main"))
    assert {a["theorem"] for a in again["proving"]["attempts"]} == {"keep", "more"}


def test_a_stored_head_with_a_sorry_never_attempted_is_fetched_and_proved(
    remote: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(tmp_path, capsys, "--no-prove")["proving"] is None
    again = _run(tmp_path, capsys)
    assert [o["status"] for o in again["ingest"]] == ["unchanged"]
    assert [a["theorem"] for a in again["proving"]["attempts"]] == ["keep"]


def test_ingest_of_a_stored_head_costs_one_ls_remote(
    remote: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--data-dir", str(tmp_path / "data"), "ingest", f"file://{remote}", "--tracer", "source", "--json"]
    assert main(argv) == 0
    shutil.rmtree(_clones(tmp_path))
    capsys.readouterr()
    assert main(argv) == 0
    [outcome] = json.loads(capsys.readouterr().out)
    assert outcome["status"] == "unchanged-remote" and not _clones(tmp_path).exists()


def test_ls_remote_names_a_branch_a_tag_or_the_head(remote: Path, tmp_path: Path) -> None:
    head = git(remote, "rev-parse", "main")
    work = tmp_path / "work"
    git(work, "tag", "-a", "v1", "-m", "the first")  # annotated: ls-remote peels it to the commit
    git(work, "push", "-q", "origin", "v1")
    url = f"file://{remote}"
    assert [remote_commit(RepoSpec(url, ref)) for ref in (None, "main", "v1", head)] == [head] * 4
    assert remote_commit(RepoSpec(url, "no-such-branch")) is None
    assert remote_commit(RepoSpec(url, head[:12])) is None  # a short SHA: only a fetch can tell
    assert remote_commit(RepoSpec(f"file://{tmp_path / 'gone.git'}")) is None
