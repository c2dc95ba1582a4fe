"""Building a Lake checkout before proving it (issue 26, item 1), against the fake ``lake``:
the cache for Mathlib, ``lake build`` of the imports, dependencies shared by (toolchain,
manifest), failures and timeouts as a repository-level outcome of ``run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import fake_lean
from projects import git

from agent.cli.main import main
from curriculum.store import Store
from lean_env.lean.build import BuildStatus, build_key, build_project

MANIFEST = {"version": "1.1.0", "packages": [{"name": "mathlib", "rev": "abc"}], "name": "book"}


def _lake_project(root: Path, *, manifest: dict[str, Any] | None = MANIFEST, source: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    (root / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage book\nlean_lib Book\n", encoding="utf-8")
    if manifest is not None:
        (root / "lake-manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (root / "Book.lean").write_text(source, encoding="utf-8")
    return root


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake lean and lake on PATH, logging each call; returns the log."""
    fake_lean.activate(monkeypatch, tmp_path / "bin", {})
    monkeypatch.setenv("FAKE_LEAN_LOG", str(tmp_path / "calls.jsonl"))
    return tmp_path / "calls.jsonl"


def _logged(log: Path) -> list[list[str]]:
    """The arguments of each `lake` call (`env lean` ones too) in the fake's log."""
    if not log.exists():
        return []
    runs = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [run["argv"][1:] for run in runs if run.get("argv", [""])[0] == "--lake"]


def test_the_cache_then_the_imports_are_built_and_dependencies_shared(tmp_path: Path, calls: Path) -> None:
    one = _lake_project(tmp_path / "one")
    shared = tmp_path / "builds"
    outcome = build_project(
        one, ["Init", "Mathlib.Data.Nat", "Book.Basic", "Lean.Elab"], shared_root=shared, timeout=30
    )
    assert (outcome.status, outcome.modules, outcome.cache) == (
        BuildStatus.BUILT,
        ("Book.Basic", "Mathlib.Data.Nat"),
        True,
    )
    assert _logged(calls) == [["exe", "cache", "get"], ["build", "Book.Basic", "Mathlib.Data.Nat"]]
    packages = shared / build_key(one) / "packages"
    assert (one / ".lake" / "packages").resolve() == packages.resolve() and outcome.shared == str(packages)
    assert (one / ".lake" / "build" / "fake-built").read_text(encoding="utf-8") == "Book.Basic\nMathlib.Data.Nat\n"

    # The same toolchain and manifest share the directory; another manifest gets its own.
    two = _lake_project(tmp_path / "two")
    other = _lake_project(tmp_path / "other", manifest={"version": "1.1.0", "packages": [], "name": "other"})
    assert build_project(two, ["Book.Basic"], shared_root=shared, timeout=30).shared == str(packages)
    elsewhere = build_project(other, ["Book.Basic"], shared_root=shared, timeout=30)
    assert elsewhere.shared is not None and elsewhere.shared != str(packages) and not elsewhere.cache
    assert _logged(calls)[-1] == ["build", "Book.Basic"] and ["exe", "cache", "get"] not in _logged(calls)[3:]


def test_a_relative_data_directory_links_the_shared_packages_absolutely(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--data-dir data`` (the docs' crontab line) gives a relative shared root: the link
    points at it from anywhere, and a relative link an earlier version made is mended."""
    project = _lake_project(tmp_path / "clone")
    monkeypatch.chdir(tmp_path)
    packages = tmp_path / "data" / "builds" / build_key(project) / "packages"
    link = project / ".lake" / "packages"
    link.parent.mkdir()
    link.symlink_to(Path("data") / "builds" / build_key(project) / "packages")  # as made before: dangling
    outcome = build_project(project, ["Book.Basic"], shared_root=Path("data") / "builds", timeout=30)
    assert outcome.status is BuildStatus.BUILT and outcome.shared == str(packages)
    assert link.readlink() == packages and link.resolve() == packages.resolve() and packages.is_dir()


def test_a_project_with_its_own_packages_keeps_them(tmp_path: Path, calls: Path) -> None:
    root = _lake_project(tmp_path / "mine")
    (root / ".lake" / "packages" / "mathlib").mkdir(parents=True)
    outcome = build_project(root, [], shared_root=tmp_path / "builds", timeout=30)
    assert (outcome.status, outcome.shared) == (BuildStatus.BUILT, None)
    assert not (root / ".lake" / "packages").is_symlink() and _logged(calls) == [["exe", "cache", "get"]]


def test_no_lakefile_means_nothing_to_build(tmp_path: Path, calls: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    assert build_project(root, ["Mathlib"], shared_root=tmp_path / "builds", timeout=30).status is BuildStatus.NOT_LAKE
    assert _logged(calls) == []


ERROR = "✖ [2/3] Building Book.Basic\nerror: ./Book/Basic.lean:3:8: unknown identifier 'x'\nerror: build failed"


@pytest.mark.parametrize(
    ("lake", "status", "said"),
    [
        (
            {"build": {"exit": 1, "output": ERROR}},
            BuildStatus.FAILED,
            "error: ./Book/Basic.lean:3:8: unknown identifier",
        ),
        ({"cache": {"exit": 1, "output": "error: no cache for this revision"}}, BuildStatus.FAILED, "no cache"),
        ({"build": {"hang": True}}, BuildStatus.TIMED_OUT, "did not finish within 2 s"),
    ],
    ids=["lean-error", "cache", "hang"],
)
def test_failures_and_timeouts_are_outcomes(tmp_path: Path, monkeypatch, lake, status, said) -> None:
    fake_lean.activate(monkeypatch, tmp_path / "bin", {"lake": lake})
    root = _lake_project(tmp_path / "book")
    outcome = build_project(root, ["Book.Basic"], shared_root=tmp_path / "builds", timeout=2)
    assert outcome.status is status and said in outcome.first_error and not outcome.usable
    assert outcome.seconds < 10


SOURCE = """\
import Book.Basic

theorem keep (p : Prop) (h : p) : p := by
  sorry
"""
SCRIPT = {"theorems": {"keep": {"goals": "p : Prop\nh : p\n⊢ p", "steps": {"exact h": {"done": True}}}}}
SEARCH = ["--candidates", "8", "--max-expansions", "2", "--tactic-timeout", "20", "--check-timeout", "20"]


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    argv = ["--data-dir", str(tmp_path / "data"), "run", str(tmp_path / "repos.txt"), "--tracer", "source"]
    assert main([*argv, "--no-train", *SEARCH, "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Lake project whose one sorry imports Book.Basic, with a lake whose build fails."""
    root = _failing_build(tmp_path, monkeypatch, SOURCE)
    (tmp_path / "repos.txt").write_text("book\n", encoding="utf-8")
    return root


def _failing_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> Path:
    """A committed Lake project of ``source`` importing Book.Basic, with a lake whose build fails."""
    fake_lean.activate(monkeypatch, tmp_path / "bin", {**SCRIPT, "lake": {"build": {"exit": 1, "output": ERROR}}})
    monkeypatch.setenv("FAKE_LEAN_LOG", str(tmp_path / "calls.jsonl"))
    root = _lake_project(tmp_path / "book", manifest=None, source=source)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a theorem")
    return root


def test_run_builds_before_proving_and_a_failed_build_attempts_nothing(
    book: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = _run(tmp_path, capsys)
    build = failed["proving"]["builds"][str(book)]
    assert (build["status"], build["modules"]) == ("failed", ["Book.Basic"])
    assert failed["proving"]["attempts"] == [] and ["build", "Book.Basic"] in _logged(tmp_path / "calls.jsonl")
    with Store.open(f"sqlite:///{tmp_path / 'data' / 'leanagent.db'}") as store:
        assert store.attempts() == []
    markdown = Path(failed["report"][1]).read_text(encoding="utf-8")
    assert f"{book}: build failed (lake build of 1 module(s)" in markdown
    assert "unknown identifier 'x'; its sorries were not attempted" in markdown
    # A result, not a failure of the run (exit 0, as the README says): the summary says it.
    argv = ["--data-dir", str(tmp_path / "data"), "run", str(tmp_path / "repos.txt"), "--tracer", "source"]
    assert main([*argv, "--no-train", *SEARCH]) == 0
    assert f"{book}: build failed (lake build of 1 module(s)" in capsys.readouterr().out

    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)  # fixed upstream
    built = _run(tmp_path, capsys)
    assert built["proving"]["builds"][str(book)]["status"] == "built"
    assert [(a["theorem"], a["outcome"]) for a in built["proving"]["attempts"]] == [("keep", "proved")]


def test_with_no_build_the_checkout_is_proved_as_it_is(
    book: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = _run(tmp_path, capsys, "--no-build")
    assert payload["proving"]["builds"] == {}
    assert [(a["theorem"], a["outcome"]) for a in payload["proving"]["attempts"]] == [("keep", "proved")]
    assert not any(argv[:1] == ["build"] for argv in _logged(tmp_path / "calls.jsonl"))


def test_prove_builds_too_and_leaves_an_unbuilt_repository_alone(
    book: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", str(book), "--tracer", "source"]) == 0
    capsys.readouterr()
    assert main([*data, "prove", *SEARCH, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["attempts"] == [] and payload["builds"][str(book)]["status"] == "failed"
    assert main([*data, "prove", *SEARCH]) == 0
    assert f"{book}: build failed (lake build of 1 module(s)" in capsys.readouterr().out


PROVED_SOURCE = """\
import Book.Basic

theorem keep (p : Prop) (h : p) : p := by
  exact h
"""


def test_evaluate_builds_first_and_refuses_a_checkout_that_does_not_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evaluate`` proves through the pipeline of ``prove`` and ``run``: it builds the
    checkout first, and where the build fails it says so and evaluates nothing (every check
    would fail on the imports: a Pass@1 of 0 that says nothing about proving)."""
    root = _failing_build(tmp_path, monkeypatch, PROVED_SOURCE)
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", str(root), "--tracer", "source"]) == 0
    capsys.readouterr()
    assert main([*data, "evaluate", *SEARCH, "--json"]) == 1
    err = capsys.readouterr().err
    assert "does not build cannot be evaluated" in err and "unknown identifier 'x'" in err
    assert "Traceback" not in err and ["build", "Book.Basic"] in _logged(tmp_path / "calls.jsonl")
    with Store.open(f"sqlite:///{tmp_path / 'data' / 'leanagent.db'}") as store:
        assert store.attempts() == []

    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)  # fixed upstream
    assert main([*data, "evaluate", *SEARCH, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [(t["theorem"], t["outcome"]) for t in payload["theorems"]] == [("keep", "proved")]
