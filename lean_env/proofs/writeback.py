"""Writing found proofs back: a unified diff per repository, or a git branch with one commit.

Neither way touches the user's working tree, index or HEAD:

* :func:`render_diff` reads the files and returns a ``git apply``-able unified diff
  (``a/PATH``/``b/PATH`` headers) of every proof edit in the repository.
* :func:`commit_to_branch` (``--apply``) builds the commit with git plumbing on a temporary
  index -- ``hash-object -w`` for the new file contents, ``read-tree HEAD`` +
  ``update-index --cacheinfo`` + ``write-tree`` for the tree, ``commit-tree -p HEAD`` for the
  commit -- and creates a new branch (``leanagent/proofs-YYYYMMDD-HHMMSS`` by default) on it
  with ``update-ref``, refusing to overwrite an existing branch. Files to change must be
  unmodified with respect to HEAD, since the theorem positions were read from them.

Several proofs in one file are applied bottom-up (last proof span first) so that the
offsets of the earlier ones stay right; multi-line proofs are indented to the block of their
declaration (see :func:`lean_env.proofs.text.splice_proof`).
"""

from __future__ import annotations

import difflib
import logging
import os
import subprocess
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lean_env.errors import BackendError, UserInputError
from lean_env.proofs.text import offset_of, proof_span, splice_proof
from lean_env.records import Theorem

log = logging.getLogger(__name__)

_GIT_TIMEOUT = 60.0
# Used only when the user has no git identity configured, so that commit-tree can run.
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "leanagent",
    "GIT_AUTHOR_EMAIL": "leanagent@localhost",
    "GIT_COMMITTER_NAME": "leanagent",
    "GIT_COMMITTER_EMAIL": "leanagent@localhost",
}


class WriteBackError(UserInputError):
    """Proofs that cannot be written back as asked: overlapping edits, a dirty file, a taken branch."""


class GitError(BackendError):
    """A git command failed unexpectedly."""


@dataclass(frozen=True, slots=True)
class ProofEdit:
    """Replace ``theorem``'s proof (``proof_start``..``end``) by ``proof`` (text after ``:=``)."""

    theorem: Theorem
    proof: str


@dataclass(frozen=True, slots=True)
class BranchResult:
    """The branch ``--apply`` created, its one commit, and the files it changed."""

    branch: str
    commit: str
    files: tuple[str, ...]


def apply_edits(text: str, edits: Sequence[ProofEdit]) -> str:
    """``text`` with every edit applied, bottom-up; overlapping proof spans are an error."""
    ordered = sorted(edits, key=lambda e: offset_of(text, proof_span(e.theorem)[0]), reverse=True)
    limit = len(text) + 1
    for edit in ordered:
        start, end = (offset_of(text, p) for p in proof_span(edit.theorem))
        if end > limit:
            raise WriteBackError(
                f"the proofs of {edit.theorem.full_name} and another theorem overlap in "
                f"{edit.theorem.path}; write one of them back at a time"
            )
        text, _ = splice_proof(text, edit.theorem, edit.proof)
        limit = start
    return text


def new_contents(repo_dir: Path, edits: Iterable[ProofEdit]) -> dict[str, tuple[str, str]]:
    """``{path: (old text, new text)}`` for every file the edits touch, paths sorted."""
    by_path: dict[str, list[ProofEdit]] = defaultdict(list)
    for edit in edits:
        by_path[edit.theorem.path].append(edit)
    contents = {}
    for path in sorted(by_path):
        old = _read(repo_dir / path)
        contents[path] = (old, apply_edits(old, by_path[path]))
    return contents


def render_diff(repo_dir: Path, edits: Iterable[ProofEdit]) -> str:
    """One unified diff (``git apply`` format) of all ``edits`` in the repository."""
    return unified_diff(new_contents(repo_dir, edits))


def unified_diff(contents: Mapping[str, tuple[str, str]]) -> str:
    """The unified diff of ``{path: (old, new)}``, one file after another."""
    chunks = []
    for path, (old, new) in contents.items():
        lines = difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
        chunks.append("".join(_terminated(lines)))
    return "".join(chunks)


def default_branch(now: datetime | None = None) -> str:
    """``leanagent/proofs-YYYYMMDD-HHMMSS`` in UTC."""
    return f"leanagent/proofs-{(now or datetime.now(UTC)):%Y%m%d-%H%M%S}"


def commit_to_branch(
    repo_dir: Path,
    edits: Sequence[ProofEdit],
    *,
    branch: str | None = None,
    message: str | None = None,
) -> BranchResult:
    """Commit the edited files on a new branch off HEAD, leaving worktree, index and HEAD alone."""
    if not edits:
        raise WriteBackError("there are no proofs to write back")
    git = _Git(repo_dir)
    branch = branch or default_branch()
    if git.run("check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise WriteBackError(f"{branch!r} is not a valid git branch name")
    if git.run("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0:
        raise WriteBackError(f"branch {branch} already exists; choose another with --branch")
    head = git.out("rev-parse", "--verify", "HEAD^{commit}")
    prefix = git.out("rev-parse", "--show-prefix")
    contents = new_contents(repo_dir, edits)
    with tempfile.TemporaryDirectory(prefix="leanagent-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git.run("read-tree", head, env=index)
        for path, (old, new) in contents.items():
            git_path = prefix + path
            committed = git.run("cat-file", "blob", f"{head}:{git_path}", check=False)
            if committed.returncode != 0 or committed.stdout.decode("utf-8", "replace") != old:
                raise WriteBackError(
                    f"{path} differs from HEAD (uncommitted changes?); commit or stash them "
                    "before --apply, or use the diff instead"
                )
            mode = git.out("ls-tree", head, "--", git_path).split()[0]
            blob = git.out("hash-object", "-w", "--stdin", "--path", git_path, stdin=new.encode())
            git.run("update-index", "--cacheinfo", f"{mode},{blob},{git_path}", env=index)
        tree = git.out("write-tree", env=index)
    names = sorted({e.theorem.full_name for e in edits})
    message = message or (
        f"leanagent: proofs of {len(names)} theorem{'s' * (len(names) != 1)}\n\n"
        + "".join(f"- {name}\n" for name in names)
    )
    identity = {} if git.run("var", "GIT_AUTHOR_IDENT", check=False).returncode == 0 else _FALLBACK_IDENTITY
    commit = git.out("commit-tree", tree, "-p", head, stdin=message.encode(), env=identity)
    git.run("update-ref", f"refs/heads/{branch}", commit, "0" * len(head))
    log.info("wrote %d proofs to branch %s (%s)", len(edits), branch, commit[:12])
    return BranchResult(branch, commit, tuple(contents))


class _Git:
    """Runs git in one repository with a timeout; failures raise with git's stderr."""

    def __init__(self, repo_dir: Path) -> None:
        self._repo_dir = repo_dir

    def run(
        self,
        *args: str,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        command = ["git", "-C", str(self._repo_dir), *args]
        try:
            done = subprocess.run(
                command,
                input=stdin if stdin is not None else b"",
                capture_output=True,
                timeout=_GIT_TIMEOUT,
                env={**os.environ, **(env or {})},
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise GitError(f"could not run {' '.join(command)}: {e}") from e
        if check and done.returncode != 0:
            stderr = done.stderr.decode("utf-8", "replace").strip()
            if "not a git repository" in stderr:
                raise WriteBackError(f"{self._repo_dir} is not a git repository; --apply needs one")
            raise GitError(f"{' '.join(command)} failed: {stderr}")
        return done

    def out(self, *args: str, **kwargs: object) -> str:
        return self.run(*args, **kwargs).stdout.decode("utf-8").strip()  # type: ignore[arg-type]


def _read(path: Path) -> str:
    # Bytes, not read_text(): universal-newline decoding would turn CRLF files into LF ones.
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as e:
        raise WriteBackError(f"cannot read {path}: {e}") from e


def _terminated(lines: Iterable[str]) -> Iterable[str]:
    """Diff lines, with git's marker after a last line that has no newline."""
    for line in lines:
        yield line
        if not line.endswith("\n"):
            yield "\n\\ No newline at end of file\n"
