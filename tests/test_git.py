"""The one git runner (lean_env.git): its policy reaches git whoever calls it, a timeout
kills git's process group, and faults are GitError; against a stand-in ``git`` on PATH, and
the real one for what git itself says."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fakes.repl_support import executable, pid_running

from lean_env.git import GitError, run_git

# Prints the policy's variables as git sees them, its arguments, then its stdin.
SHOW_ENV = 'echo "$GIT_TERMINAL_PROMPT|$GIT_ASKPASS|$GIT_SSH_COMMAND|$LC_ALL|$EXTRA|$*"; cat'


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory first on PATH, for a stand-in git."""
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}/bin{os.pathsep}/usr/bin")
    return directory


@pytest.mark.parametrize(
    ("ssh", "seen"),
    [
        pytest.param(None, "ssh -o BatchMode=yes", id="ssh-in-batch-mode"),
        pytest.param("ssh -i key", "ssh -i key", id="the-users-ssh-command-kept"),
    ],
)
def test_the_policy_reaches_git_with_the_callers_env_and_input(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ssh: str | None, seen: str
) -> None:
    executable(bin_dir / "git", SHOW_ENV)
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")  # the user's own settings do not win
    monkeypatch.setenv("LC_ALL", "fr_FR.UTF-8")
    if ssh is None:
        monkeypatch.delenv("GIT_SSH_COMMAND", raising=False)
    else:
        monkeypatch.setenv("GIT_SSH_COMMAND", ssh)
    done = run_git(tmp_path, "push", "origin", env={"EXTRA": "header"}, input=b"on stdin")
    assert done.returncode == 0
    assert done.stdout.decode() == f"0|true|{seen}|C|header|-C {tmp_path} push origin\non stdin"


def test_without_a_repository_git_runs_without_c(bin_dir: Path) -> None:
    executable(bin_dir / "git", 'echo "$*"')
    assert run_git(None, "ls-remote", "--", "https://example.org/x").stdout == b"ls-remote -- https://example.org/x\n"


def test_a_failure_is_returned_with_what_git_said_in_english(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    done = run_git(tmp_path, "rev-parse", "HEAD")
    assert done.returncode == 128 and b"not a git repository" in done.stderr


def test_a_timeout_kills_git_and_what_it_started(bin_dir: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "ssh.pid"
    executable(bin_dir / "git", f'sleep 60 & echo $! > "{pid_file}"; wait')
    started = time.monotonic()
    with pytest.raises(GitError, match=r"git fetch timed out after 1s in "):
        run_git(tmp_path, "fetch", timeout=1.0)
    assert time.monotonic() - started < 6
    ssh = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while pid_running(ssh) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pid_running(ssh), "what git started must die with it"


def test_no_git_is_a_clear_error(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(GitError, match="git is not installed"):
        run_git(None, "status")
