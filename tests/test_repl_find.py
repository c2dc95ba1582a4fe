"""Finding and building the REPL, with stand-in `repl`, `lake` and `git` programs on PATH."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakes.repl_support import FAKE_GIT_SH, FAKE_LAKE_SH, executable

from lean_env.errors import LeanNotFoundError, UserInputError
from lean_env.interactive.repl.find import (
    REPL_ENV_VAR,
    ReplBuildError,
    ReplSource,
    build_repl,
    describe_repl,
    repl_command,
)

TOOLCHAIN = "leanprover/lean4:v4.20.0"


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An otherwise empty PATH (plus /bin for the stand-ins' shell), and no elan."""
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}/bin{os.pathsep}/usr/bin")
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    return directory


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "lean-toolchain").write_text(TOOLCHAIN + "\n")
    (root / "lakefile.toml").write_text('name = "demo"\n')
    return root


def built_tree(root: Path, toolchain: str) -> Path:
    (root).mkdir(parents=True, exist_ok=True)
    (root / "lean-toolchain").write_text(toolchain + "\n")
    return executable(root / ".lake" / "build" / "bin" / "repl")


def test_option_wins_and_runs_under_lake_env(bin_dir: Path, project: Path, tmp_path: Path) -> None:
    lake = executable(bin_dir / "lake")
    executable(bin_dir / "repl")
    mine = built_tree(tmp_path / "my-repl", TOOLCHAIN)
    status = describe_repl(project, repl=mine, environ={})
    assert status.found and status.source is ReplSource.OPTION
    assert status.argv == (str(lake), "env", str(mine))
    assert status.repl_toolchain == TOOLCHAIN and status.compatible is True
    assert repl_command(project, repl=mine, environ={}).argv == status.argv


def test_environment_variable_then_path(bin_dir: Path, project: Path, tmp_path: Path) -> None:
    on_path = executable(bin_dir / "repl")
    from_env = executable(tmp_path / "env-repl")
    status = describe_repl(project, environ={REPL_ENV_VAR: str(from_env)})
    assert status.source is ReplSource.ENVIRONMENT and status.argv == (str(from_env),)  # no lake
    status = describe_repl(project, environ={})
    assert status.source is ReplSource.PATH and status.argv == (str(on_path),)
    assert status.compatible is None  # a bare binary does not say which Lean built it


def test_project_dependency_runs_with_lake_exe(bin_dir: Path, project: Path) -> None:
    lake = executable(bin_dir / "lake")
    executable(bin_dir / "repl")
    (project / ".lake" / "packages" / "REPL").mkdir(parents=True)
    status = describe_repl(project, environ={})
    assert status.source is ReplSource.LAKE_PACKAGE and status.argv == (str(lake), "exe", "repl")


def test_built_cache_and_version_mismatch(bin_dir: Path, project: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = built_tree(cache / "repl-v4.20.0", TOOLCHAIN)
    status = describe_repl(project, cache_dir=cache, environ={})
    assert status.source is ReplSource.BUILT and status.binary == built and status.compatible
    old = built_tree(tmp_path / "old-repl", "leanprover/lean4:v4.19.0")
    status = describe_repl(project, repl=old, environ={})
    assert status.found and status.compatible is False and "WARNING" in status.detail


def test_missing_repl_says_how_to_install(bin_dir: Path, project: Path, tmp_path: Path) -> None:
    status = describe_repl(project, cache_dir=tmp_path / "empty-cache", environ={})
    assert not status.found and status.source is ReplSource.MISSING and status.argv == ()
    assert "git clone --branch v4.20.0 https://github.com/leanprover-community/repl" in status.detail
    with pytest.raises(LeanNotFoundError, match="no Lean REPL found"):
        repl_command(project, environ={})
    with pytest.raises(UserInputError, match="not an executable file"):
        repl_command(project, repl=tmp_path / "nope", environ={})


def test_build_clones_the_matching_tag_and_reuses_the_build(
    bin_dir: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool_log = tmp_path / "tools.log"
    monkeypatch.setenv("TOOL_LOG", str(tool_log))
    executable(bin_dir / "git", FAKE_GIT_SH)
    executable(bin_dir / "lake", FAKE_LAKE_SH)
    cache = tmp_path / "cache"
    binary = build_repl(project, cache_dir=cache)
    assert binary == cache / "repl-v4.20.0" / ".lake" / "build" / "bin" / "repl"
    calls = tool_log.read_text().splitlines()
    assert calls[0].startswith("git clone --depth 1 --branch v4.20.0 https://github.com/")
    assert calls[1] == "lake build repl"
    assert build_repl(project, cache_dir=cache) == binary
    assert len(tool_log.read_text().splitlines()) == 2  # reused, nothing run again
    assert describe_repl(project, cache_dir=cache, environ={}).source is ReplSource.BUILT


def test_build_failure_is_reported(bin_dir: Path, project: Path, tmp_path: Path) -> None:
    executable(bin_dir / "git", "echo 'fatal: Remote branch v4.20.0 not found' >&2; exit 128")
    executable(bin_dir / "lake")
    with pytest.raises(ReplBuildError, match="Remote branch v4.20.0 not found"):
        build_repl(project, cache_dir=tmp_path / "cache")
