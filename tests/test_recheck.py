"""``leanagent recheck``: every found proof of a repository's newest version is checked again
by Lean; one that holds is recorded, one that broke is withdrawn (its theorem a sorry target
again), one whose check tells nothing is left as it was (issue 26, item 3)."""

from __future__ import annotations

import json
import shutil
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
    return _proved_by_run(root, tmp_path, capsys)


def _proved_by_run(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """``root`` committed and its two sorries proved by ``run``: the data directory."""
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
    ("cwd", "repo", "said"),
    [
        pytest.param(".", "book", None, id="as-the-repos-file-wrote-it"),
        pytest.param(".", "./book/", None, id="with-dot-and-slash"),
        pytest.param("book", ".", None, id="the-current-directory"),
        pytest.param("data", "book", "(read as {tmp}/data/book); stored under that name: {tmp}/book", id="elsewhere"),
        pytest.param(".", "books", "(read as {tmp}/books); 'leanagent db stats' lists them", id="no-such-name"),
    ],
)
def test_a_repository_is_named_as_the_repos_file_names_it(
    proved: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cwd: str,
    repo: str,
    said: str | None,
) -> None:
    """repos.txt says `book`, relative to its folder: `--repo book` there (or any path to the
    same directory) is that repository, as ingestion resolved it; elsewhere the message names
    what it read and the stored repository of that name."""
    monkeypatch.chdir(tmp_path / cwd)
    code, payload, err = _recheck(proved, capsys, "--repo", repo)
    if said is None:
        assert code == 0 and len(payload["rechecked"]) == 2, err
    else:
        assert code == EXIT_USAGE and f"no stored repository {repo!r} {said.format(tmp=tmp_path)}" in err, err


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A Lake project whose Book.lean imports Book.Basic; `run` built it (the fake lake's
    build record in .lake/build) and proved both sorries. The fake lean rejects every file
    of a checkout whose imports are not built, as the 2021 Lean does."""
    fake_lean.activate(monkeypatch, tmp_path / "bin", {**_script(), "imports_need_build": True})
    root = tmp_path / "book"
    (root / "Book").mkdir(parents=True)
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    (root / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage book\nlean_lib Book\n", encoding="utf-8")
    (root / "Book" / "Basic.lean").write_text("def basic : Nat := 1\n", encoding="utf-8")
    (root / "Book.lean").write_text("import Book.Basic\n\n" + SOURCE, encoding="utf-8")
    (root / ".gitignore").write_text(".lake\n", encoding="utf-8")
    return _proved_by_run(root, tmp_path, capsys)


@pytest.mark.parametrize(
    ("extra", "lake", "verdicts", "said"),
    [
        pytest.param((), {}, ["holds", "holds"], "built (lake build of 1 module(s)", id="built-first"),
        pytest.param(
            ("--no-build",),
            {},
            ["unknown", "unknown"],
            "an import failed (line 1; are the imports built?): unknown package 'Book'",
            id="not-built-tells-nothing",
        ),
        pytest.param(
            (),
            {"build": {"exit": 1, "output": "error: ./Book/Basic.lean:1:4: unknown identifier 'x'"}},
            ["unknown", "unknown"],
            "not checked: build failed (lake build of 1 module(s)",
            id="a-failed-build-checks-nothing",
        ),
    ],
)
def test_a_checkout_whose_build_is_gone_is_built_first_and_never_breaks_a_proof(
    built: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: tuple[str, ...],
    lake: dict[str, Any],
    verdicts: list[str],
    said: str,
) -> None:
    """The clone's .lake/build is gone (a new Lean on PATH, a cleaned cache): `recheck` builds
    it as `run` does and the proofs hold; unbuilt (--no-build) or unbuildable, every file fails
    on its imports, which says nothing of a proof: each is left as it was, and it says why."""
    shutil.rmtree(tmp_path / "book" / ".lake" / "build")
    fake_lean.activate(monkeypatch, tmp_path / "bin", {**_script(), "imports_need_build": True, "lake": lake})
    code, payload, err = _recheck(built, capsys, *extra)
    assert code == 0, err
    assert [r["verdict"] for r in payload["rechecked"]] == verdicts
    build = payload["builds"][str(tmp_path / "book")]
    if verdicts[0] == "holds":
        assert build["status"] == "built"
    else:
        assert {r["why"][: len(said)] for r in payload["rechecked"]} == {said}
        assert build is None if extra else build["status"] == "failed"
    assert set(_statuses(built).values()) == {TheoremStatus.PROVED_BY_US}
    capsys.readouterr()
    assert main(["--data-dir", str(built), "recheck", "--check-timeout", "3", *extra]) == 0
    human = capsys.readouterr().out
    assert "0 broke" in human
    if lake:
        assert "its 2 found proofs not checked, left as they were (a build failure says nothing of a proof)" in human


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
