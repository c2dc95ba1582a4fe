"""Repository specs: the repos file, command-line specs, and resolving local paths and git
URLs to a checkout at a concrete commit (with real git, on local repositories only)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from projects import git, git_project, lean_project

from lean_env.errors import RepoSpecError
from lean_env.records import RepoSpec
from lean_env.repos import (
    RepoUnavailableError,
    _git_reason,
    fetch_head,
    is_skipped,
    parse_repos_file,
    parse_spec,
    resolve,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("https://github.com/o/r", RepoSpec("https://github.com/o/r"), id="url"),
        pytest.param(
            "https://github.com/o/r/@abc123",
            RepoSpec("https://github.com/o/r", "abc123"),
            id="url-at-commit",
        ),
        pytest.param("git@github.com:o/r.git", RepoSpec("git@github.com:o/r.git"), id="scp-url-not-a-commit"),
        pytest.param(
            "git@github.com:o/r.git@v1.0",
            RepoSpec("git@github.com:o/r.git", "v1.0"),
            id="scp-url-at-tag",
        ),
        pytest.param("proj@deadbeef", RepoSpec("/base/proj", "deadbeef"), id="relative-path-at-commit"),
        pytest.param("/abs/proj", RepoSpec("/abs/proj"), id="absolute-path"),
    ],
)
def test_parse_spec(text: str, expected: RepoSpec) -> None:
    assert parse_spec(text, base_dir=Path("/base")) == expected


def test_repos_file_comments_blank_lines_and_relative_paths(tmp_path: Path) -> None:
    repos = tmp_path / "lists" / "repos.txt"
    repos.parent.mkdir()
    repos.write_text(
        "# the demo projects\n\n../demo-logic\n  https://github.com/o/r  0123abc   # pinned\n/abs/path main\n",
        encoding="utf-8",
    )
    assert parse_repos_file(repos) == [
        RepoSpec(str(tmp_path / "demo-logic")),
        RepoSpec("https://github.com/o/r", "0123abc"),
        RepoSpec("/abs/path", "main"),
    ]


def test_a_repos_file_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "repos.txt").write_text("\ufeff/abs/path main\n", encoding="utf-8")
    assert parse_repos_file(tmp_path / "repos.txt") == [RepoSpec("/abs/path", "main")]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("https://x/y skip=MIL", RepoSpec("https://x/y", None, ("MIL",)), id="skip-only"),
        pytest.param(
            "https://x/y skip='Ex*/*' v1 skip=*_ex.lean",
            RepoSpec("https://x/y", "v1", ("Ex*/*", "*_ex.lean")),
            id="commit-between-skips",
        ),
        pytest.param("'/a b' main skip=*", RepoSpec("/a b", "main", ("*",)), id="quoted-path-whole-repository"),
    ],
)
def test_a_repos_file_line_marks_paths_to_leave_alone(tmp_path: Path, line: str, expected: RepoSpec) -> None:
    (tmp_path / "repos.txt").write_text(line + "\n", encoding="utf-8")
    assert parse_repos_file(tmp_path / "repos.txt") == [expected]


@pytest.mark.parametrize(
    ("path", "globs", "skipped"),
    [
        pytest.param("MIL/C02/S01.lean", ("MIL",), True, id="a-directory"),
        pytest.param("MIL/C02/S01.lean", ("MIL/",), True, id="a-directory-with-slash"),
        pytest.param("MILx/A.lean", ("MIL",), False, id="not-a-prefix-of-a-name"),
        pytest.param("MIL/C02/S01.lean", ("MIL/*",), True, id="star-crosses-slashes"),
        pytest.param("Lib/Basic_exercise.lean", ("*_exercise.lean",), True, id="a-file-pattern"),
        pytest.param("Lib/Basic.lean", ("*_exercise.lean", "Ex/*"), False, id="none-matches"),
        pytest.param("Lib/Basic.lean", ("*",), True, id="the-whole-repository"),
        pytest.param("Lib/Basic.lean", (), False, id="no-globs"),
        pytest.param("lib/basic.lean", ("Lib/*",), False, id="case-matters"),
    ],
)
def test_is_skipped(path: str, globs: tuple[str, ...], skipped: bool) -> None:
    assert is_skipped(path, globs) is skipped


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            "ok/path\nhttps://x/y abc def\n",
            r"repos\.txt:2: expected 'LOCATION \[COMMIT\] \[skip=GLOB \.\.\.\]'",
            id="three-fields",
        ),
        pytest.param("https://x/y sikp=MIL\n", r"repos\.txt:1: .*'sikp' is no option", id="unknown-option"),
        pytest.param("https://x/y skip=\n", r"repos\.txt:1: a skip glob cannot be empty", id="empty-skip"),
        pytest.param("# c\n\nhttps://x/y ab$c\n", r"repos\.txt:3: not a valid commit", id="bad-commit"),
        pytest.param("# only comments\n\n", r"lists no repositories", id="empty"),
        pytest.param("ok/path\nfoo\0bar\n", r"repos\.txt:2: a NUL byte", id="nul-byte"),
        pytest.param(
            "# c\n" + "x" * 1_000_000 + "\n",
            r"repos\.txt:2: a line of 1000000 characters \(at most 16384\)",
            id="1-mb-line",
        ),
        pytest.param("d" * 300 + "\n", r"repos\.txt:1: the path is too long for the file system", id="long-name"),
    ],
)
def test_a_malformed_repos_file_names_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    repos = tmp_path / "repos.txt"
    repos.write_text(content, encoding="utf-8")
    with pytest.raises(RepoSpecError, match=message):
        parse_repos_file(repos)


def test_a_missing_repos_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(RepoSpecError, match="cannot read repos file"):
        parse_repos_file(tmp_path / "nope.txt")


# ---- local paths -----------------------------------------------------------------------


def test_a_plain_directory_gets_a_stable_content_hash(tmp_path: Path) -> None:
    root = lean_project(tmp_path / "proj")
    first = resolve(RepoSpec(str(root)), cache_dir=tmp_path / "cache")
    assert first.commit.startswith("content-") and first.path == root
    assert first.lean_version == "leanprover/lean4:v4.20.0"
    # Build output does not change the version; an edited source does.
    (root / ".lake" / "build").mkdir(parents=True)
    (root / ".lake" / "build" / "Junk.lean").write_text("-- built")
    assert resolve(RepoSpec(str(root)), cache_dir=tmp_path / "cache").commit == first.commit
    (root / "Demo" / "Basic.lean").write_text("theorem changed : True := trivial\n")
    assert resolve(RepoSpec(str(root)), cache_dir=tmp_path / "cache").commit != first.commit


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        pytest.param(lambda p: p.mkdir(), "is not a Lean project", id="not-a-lean-project"),
        pytest.param(lambda p: None, "does not exist", id="missing"),
        pytest.param(lambda p: p.write_text("x"), "is not a directory", id="a-file"),
    ],
)
def test_a_local_path_that_is_not_a_project_is_one_clear_error(tmp_path: Path, setup, message: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "thing"
    setup(path)
    with pytest.raises(RepoSpecError, match=message):
        resolve(RepoSpec(str(path)), cache_dir=tmp_path / "cache")


def test_a_git_project_uses_head_and_marks_uncommitted_changes(tmp_path: Path) -> None:
    root, head = git_project(tmp_path / "proj")
    assert resolve(RepoSpec(str(root)), cache_dir=tmp_path / "cache").commit == head
    (root / "NOTES.md").write_text("untracked, not a source")
    assert resolve(RepoSpec(str(root)), cache_dir=tmp_path / "cache").commit == head
    (root / "Demo" / "Basic.lean").write_text("theorem edited : True := trivial\n")
    dirty = resolve(RepoSpec(str(root)), cache_dir=tmp_path / "cache").commit
    assert dirty.startswith(f"{head}-dirty-")


def test_a_project_inside_a_bigger_git_repo_is_hashed_by_content(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    root = lean_project(tmp_path / "examples" / "demo")
    assert resolve(RepoSpec(str(root)), cache_dir=tmp_path / "cache").commit.startswith("content-")


def test_a_commit_of_a_local_repo_is_archived_without_touching_the_working_tree(
    tmp_path: Path,
) -> None:
    root, old = git_project(tmp_path / "proj", source="theorem old_one : True := trivial\n")
    (root / "Demo" / "Basic.lean").write_text("theorem new_one : True := trivial\n")
    git(root, "commit", "-qam", "second")
    (root / "Demo" / "Basic.lean").write_text("theorem uncommitted : True := trivial\n")
    status_before = git(root, "status", "--porcelain")

    checkout = resolve(RepoSpec(str(root), old[:10]), cache_dir=tmp_path / "cache")
    assert checkout.commit == old and checkout.location == str(root)
    assert checkout.path.is_relative_to(tmp_path / "cache")
    assert (checkout.path / "Demo" / "Basic.lean").read_text() == "theorem old_one : True := trivial\n"
    # The user's tree, index and worktree list are as they were.
    assert (root / "Demo" / "Basic.lean").read_text() == "theorem uncommitted : True := trivial\n"
    assert git(root, "status", "--porcelain") == status_before
    assert len(git(root, "worktree", "list").splitlines()) == 1
    # A second resolve reuses the archive.
    assert resolve(RepoSpec(str(root), old), cache_dir=tmp_path / "cache").path == checkout.path


def test_a_commit_of_a_subdirectory_project_is_archived_from_that_subdirectory(
    tmp_path: Path,
) -> None:
    git(tmp_path, "init", "-q")
    lean_project(tmp_path / "examples" / "demo")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "c")
    checkout = resolve(RepoSpec(str(tmp_path / "examples" / "demo"), "HEAD"), cache_dir=tmp_path / "cache")
    assert (checkout.path / "lakefile.lean").is_file() and (checkout.path / "Demo" / "Basic.lean").is_file()


@pytest.mark.parametrize(
    ("make_repo", "commit", "message"),
    [
        pytest.param(lambda p: lean_project(p), "abc123", "is not a git repository", id="not-git"),
        pytest.param(lambda p: git_project(p), "0" * 40, "has no commit", id="unknown-commit"),
    ],
)
def test_a_commit_that_cannot_be_checked_out_is_one_clear_error(
    tmp_path: Path, make_repo, commit: str, message: str
) -> None:  # type: ignore[no-untyped-def]
    make_repo(tmp_path / "proj")
    with pytest.raises(RepoSpecError, match=message):
        resolve(RepoSpec(str(tmp_path / "proj"), commit), cache_dir=tmp_path / "cache")


# ---- URLs (file:// to local repositories: no network) -------------------------------------


@pytest.fixture
def remote(tmp_path: Path) -> tuple[str, str, str]:
    """A git "server" repository with two commits: (url, first sha, second sha)."""
    root, first = git_project(tmp_path / "origin")
    (root / "Demo" / "Basic.lean").write_text("theorem later : True := trivial\n")
    git(root, "commit", "-qam", "second")
    return f"file://{root}", first, git(root, "rev-parse", "HEAD")


def test_a_url_is_cloned_into_the_cache_at_the_default_head_or_a_commit(
    tmp_path: Path, remote: tuple[str, str, str]
) -> None:
    url, first, second = remote
    cache = tmp_path / "cache"
    head = resolve(RepoSpec(url), cache_dir=cache)
    assert (head.commit, head.location) == (second, url)
    assert head.path.is_relative_to(cache / "clones")
    assert "later" in (head.path / "Demo" / "Basic.lean").read_text()
    pinned = resolve(RepoSpec(url, first), cache_dir=cache)
    assert pinned.commit == first and pinned.path == head.path
    assert "demo_comm" in (pinned.path / "Demo" / "Basic.lean").read_text()


def test_a_branch_is_fetched_again_when_it_moves(tmp_path: Path, remote: tuple[str, str, str]) -> None:
    url, _, second = remote
    cache = tmp_path / "cache"
    assert resolve(RepoSpec(url, "main"), cache_dir=cache).commit == second
    origin = tmp_path / "origin"
    (origin / "Demo" / "Basic.lean").write_text("theorem third : True := trivial\n")
    git(origin, "commit", "-qam", "third")
    third = git(origin, "rev-parse", "HEAD")
    assert resolve(RepoSpec(url, "main"), cache_dir=cache).commit == third
    assert resolve(RepoSpec(url), cache_dir=cache).commit == third


def test_a_cached_clone_is_used_when_the_remote_is_gone(
    tmp_path: Path, remote: tuple[str, str, str], caplog: pytest.LogCaptureFixture
) -> None:
    url, first, second = remote
    cache = tmp_path / "cache"
    resolve(RepoSpec(url), cache_dir=cache)
    shutil.rmtree(tmp_path / "origin")
    with caplog.at_level(logging.WARNING):
        assert resolve(RepoSpec(url), cache_dir=cache).commit == second
    assert "using the cached clone" in caplog.text
    assert resolve(RepoSpec(url, first), cache_dir=cache).commit == first  # already fetched
    with pytest.raises(RepoUnavailableError, match="cannot fetch"):
        resolve(RepoSpec(url, "f" * 40), cache_dir=cache)


@pytest.mark.parametrize(
    ("requested", "branch"),
    [
        pytest.param(None, "main", id="default-branch"),
        pytest.param("side", "side", id="the-branch-ingested"),
        pytest.param("v1", "main", id="a-tag-gets-the-default-branch"),
        pytest.param("first", "main", id="a-sha-gets-the-default-branch"),
    ],
)
def test_fetch_head_finds_the_newest_commit_of_the_branch_proofs_go_to(
    tmp_path: Path, remote: tuple[str, str, str], requested: str | None, branch: str
) -> None:
    url, first, _ = remote
    origin = tmp_path / "origin"
    git(origin, "tag", "v1", first)
    git(origin, "branch", "side", first)
    resolve(RepoSpec(url, first if requested == "first" else requested), cache_dir=tmp_path / "cache")
    # Both branches move on after ingestion (main last: the origin's HEAD, its default branch).
    for name in ("side", "main"):
        git(origin, "checkout", "-q", name)
        (origin / "Demo" / "Basic.lean").write_text(f"theorem on_{name} : True := trivial\n")
        git(origin, "commit", "-qam", f"{name} moves")
    head = fetch_head(RepoSpec(url, first if requested == "first" else requested), cache_dir=tmp_path / "cache")
    assert (head.branch, head.commit) == (branch, git(origin, "rev-parse", branch))
    assert head.clone == resolve(RepoSpec(url), cache_dir=tmp_path / "cache").path


def test_fetch_head_follows_a_renamed_default_branch_and_fails_in_one_line_offline(
    tmp_path: Path, remote: tuple[str, str, str]
) -> None:
    url, _, second = remote
    origin = tmp_path / "origin"
    resolve(RepoSpec(url), cache_dir=tmp_path / "cache")
    git(origin, "branch", "-m", "main", "trunk")
    assert fetch_head(RepoSpec(url), cache_dir=tmp_path / "cache").branch == "trunk"
    shutil.rmtree(origin)
    with pytest.raises(RepoUnavailableError, match=f"cannot fetch {url}") as info:
        fetch_head(RepoSpec(url), cache_dir=tmp_path / "cache")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("file:///nonexistent/leanagent-test/repo.git", id="missing"),
        pytest.param("https://127.0.0.1:9/o/r.git", id="refused"),
    ],
)
def test_an_unreachable_url_is_one_clear_error(tmp_path: Path, url: str) -> None:
    with pytest.raises(RepoUnavailableError, match=f"cannot clone {url}") as info:
        resolve(RepoSpec(url), cache_dir=tmp_path / "cache")
    assert "\n" not in str(info.value)
    assert list((tmp_path / "cache" / "clones").iterdir()) == []  # no half clone left behind


SSH_FAILURE = """ssh: connect to host 127.0.0.1 port 9: Connection refused
fatal: Could not read from remote repository.

Please make sure you have the correct access rights
and the repository exists.
"""


@pytest.mark.parametrize(
    ("stderr", "reason"),
    [
        pytest.param(SSH_FAILURE, "ssh: connect to host 127.0.0.1 port 9: Connection refused", id="ssh"),
        pytest.param(
            "warning: redirecting\nfatal: repository 'x' not found\n",
            "fatal: repository 'x' not found",
            id="fatal-after-noise",
        ),
        pytest.param("something odd\nand more\n", "something odd", id="no-diagnostic-prefix"),
        pytest.param("", "exit code 128", id="silent"),
    ],
)
def test_a_git_failure_names_the_line_that_says_why(stderr: str, reason: str) -> None:
    assert _git_reason(stderr, 128) == reason


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no ssh client")
def test_an_unreachable_ssh_url_fails_without_prompting(tmp_path: Path) -> None:
    url = "ssh://git@127.0.0.1:9/o/r.git"
    with pytest.raises(RepoUnavailableError, match="Connection refused") as info:
        resolve(RepoSpec(url), cache_dir=tmp_path / "cache", git_timeout=30)
    assert "\n" not in str(info.value)


def test_a_url_that_is_not_a_lean_project(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / "README").write_text("not lean")
    git(origin, "init", "-q")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "c")
    with pytest.raises(RepoSpecError, match="is not a Lean project"):
        resolve(RepoSpec(f"file://{origin}"), cache_dir=tmp_path / "cache")
