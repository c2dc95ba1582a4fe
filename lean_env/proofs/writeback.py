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

Both can also work on another commit than the working tree (``base``): the files are then
read from that commit. :func:`write_back_fresh` uses that for a URL repository, whose proofs
were checked at the commit ingested while its remote branch may have moved on (the sorry
proved already, or gone): it fetches the branch, finds each proved sorry at the new head
(:func:`rebase_edits`: same full name and statement in the same file, still a sorry), leaves
the others out as stale, and makes the diff and a branch in the clone against that head.

Several proofs in one file are applied bottom-up (last proof span first) so that the
offsets of the earlier ones stay right; multi-line proofs are indented to the block of their
declaration (see :func:`lean_env.proofs.text.splice_proof`).
"""

from __future__ import annotations

import difflib
import logging
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lean_env.errors import UserInputError
from lean_env.git import WRITE_BACK_TIMEOUT, GitError, run_git
from lean_env.process import Finished
from lean_env.proofs.text import offset_of, proof_span, splice_proof
from lean_env.records import RepoSpec, Theorem, TheoremStatus

log = logging.getLogger(__name__)

# Used only when the user has no git identity configured, so that commit-tree can run.
_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "leanagent",
    "GIT_AUTHOR_EMAIL": "leanagent@localhost",
    "GIT_COMMITTER_NAME": "leanagent",
    "GIT_COMMITTER_EMAIL": "leanagent@localhost",
}


class WriteBackError(UserInputError):
    """Proofs that cannot be written back as asked: overlapping edits, a dirty file, a taken branch."""


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


def new_contents(repo_dir: Path, edits: Iterable[ProofEdit], *, base: str | None = None) -> dict[str, tuple[str, str]]:
    """``{path: (old text, new text)}`` for every file the edits touch, paths sorted; the old
    texts are the working tree's, or with ``base`` those of that commit of the git repository."""
    git = _Git(repo_dir)
    contents = {}
    for path, group in sorted(_by_path(edits).items()):
        old = _read(repo_dir / path) if base is None else git.blob(base, path)
        if old is None:
            raise WriteBackError(f"{path} is not in commit {base} of {repo_dir}")
        contents[path] = (old, apply_edits(old, group))
    return contents


def render_diff(repo_dir: Path, edits: Iterable[ProofEdit], *, base: str | None = None) -> str:
    """One unified diff (``git apply`` format) of all ``edits`` in the repository (its working
    tree, or the commit ``base``)."""
    return unified_diff(new_contents(repo_dir, edits, base=base))


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
    base: str | None = None,
) -> BranchResult:
    """Commit the edited files on a new branch off HEAD (or the commit ``base``, whose files
    the edits' positions are then of), leaving worktree, index and HEAD alone. A ``branch``
    that exists is refused; the default name (:func:`default_branch`) that exists already (two
    write-backs within a second) gets ``-2``, ``-3``, ... after it."""
    if not edits:
        raise WriteBackError("there are no proofs to write back")
    git = _Git(repo_dir)

    def taken(name: str) -> bool:
        return git.run("rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False).returncode == 0

    if branch is None:
        dated = branch = default_branch()
        number = 1
        while taken(branch):
            number += 1
            branch = f"{dated}-{number}"
    if git.run("check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise WriteBackError(f"{branch!r} is not a valid git branch name")
    if taken(branch):
        raise WriteBackError(f"branch {branch} already exists; choose another name")
    head = git.out("rev-parse", "--verify", f"{base or 'HEAD'}^{{commit}}")
    prefix = git.prefix
    contents = new_contents(repo_dir, edits, base=None if base is None else head)
    with tempfile.TemporaryDirectory(prefix="leanagent-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git.run("read-tree", head, env=index)
        for path, (old, new) in contents.items():
            git_path = prefix + path
            if git.blob(head, path) != old:
                raise WriteBackError(
                    f"{path} differs from HEAD (uncommitted changes?); commit or stash them "
                    "before writing proofs onto a branch, or use the diff instead"
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


@dataclass(frozen=True, slots=True)
class StaleProof:
    """A proof that does not go onto the newest commit: its sorry is gone there, or changed."""

    theorem: str
    path: str
    reason: str


def rebase_edits(
    repo_dir: Path, edits: Sequence[ProofEdit], *, checked: str, onto: str
) -> tuple[list[ProofEdit], list[StaleProof]]:
    """The edits whose sorry is still there at commit ``onto`` of the git repository, with the
    positions of ``onto``, and the others, stale. The proofs were checked at ``checked``: a
    theorem is found at ``onto`` in its file by its full name, its statement must be the one at
    ``checked`` (whitespace aside; both read by source extraction) and its proof must still
    hold a sorry."""
    from lean_env.trace.source import extract_file

    git = _Git(repo_dir)
    fresh: list[ProofEdit] = []
    stale: list[StaleProof] = []
    for path, group in sorted(_by_path(edits).items()):
        before, after = git.blob(checked, path), git.blob(onto, path)
        then = {t.full_name: t for t in extract_file(before, path=path).theorems} if before is not None else {}
        now = {t.full_name: t for t in extract_file(after, path=path).theorems} if after is not None else {}
        for edit in group:
            name = edit.theorem.full_name
            old, new = then.get(name, edit.theorem), now.get(name)
            if after is None:
                reason = f"{path} is gone"
            elif new is None:
                reason = f"{path} has no theorem {name} any more"
            elif new.plain_statement != old.plain_statement:
                reason = "its statement changed"
            elif new.status is not TheoremStatus.SORRY:
                reason = "it is proved there already"
            elif new.proof_start is None:
                reason = "its proof cannot be located there"
            else:
                fresh.append(ProofEdit(new, edit.proof))
                continue
            stale.append(StaleProof(name, path, f"{reason} at {onto[:12]}"))
    return fresh, stale


@dataclass(frozen=True, slots=True)
class FreshBranch:
    """A branch of the clone with one commit of proofs on a remote branch's head, to push."""

    clone: Path
    branch: str  # ours, leanagent/proofs-...
    commit: str
    onto: str  # the remote's branch
    base: str  # its head: the parent of `commit`
    checked: str  # the commit Lean checked the proofs at (their sorries are unchanged at `base`)
    theorems: tuple[tuple[str, str], ...]  # (path, full name) of each proof on it

    @classmethod
    def from_json(cls, payload: Mapping[str, Any]) -> FreshBranch:
        """The branch :meth:`to_json` gave."""
        theorems = tuple((str(t["path"]), str(t["theorem"])) for t in payload["theorems"])
        return cls(
            Path(payload["clone"]),
            str(payload["branch"]),
            str(payload["commit"]),
            str(payload["onto"]),
            str(payload["base"]),
            str(payload["checked"]),
            theorems,
        )

    def exists(self) -> bool:
        """Whether the clone still has the branch, at its commit."""
        if not self.clone.is_dir():
            return False
        done = _Git(self.clone).run("rev-parse", "--verify", "--quiet", f"refs/heads/{self.branch}", check=False)
        return done.returncode == 0 and done.stdout.decode("utf-8").strip() == self.commit

    def to_json(self) -> dict[str, Any]:
        return {
            "clone": str(self.clone),
            "branch": self.branch,
            "commit": self.commit,
            "onto": self.onto,
            "base": self.base,
            "checked": self.checked,
            "theorems": [{"path": path, "theorem": name} for path, name in self.theorems],
        }


@dataclass(frozen=True, slots=True)
class FreshWriteBack:
    """The proofs of a URL repository, put onto the newest commit of its branch."""

    diff: str  # applies to `base` ("" when every proof is stale)
    base: str
    branch: FreshBranch | None  # None when every proof is stale
    stale: tuple[StaleProof, ...]


def write_back_fresh(spec: RepoSpec, edits: Sequence[ProofEdit], *, checked: str, cache_dir: Path) -> FreshWriteBack:
    """Fetch the branch of the URL repository ``spec`` (:func:`lean_env.repos.fetch_head`),
    keep the edits (checked at ``checked``) whose sorry is still at its head, and make their
    diff and a branch with one commit listing the theorems, in the clone, on that head."""
    from lean_env.repos import fetch_head

    head = fetch_head(spec, cache_dir=cache_dir)
    fresh, stale = rebase_edits(head.clone, edits, checked=checked, onto=head.commit)
    if not fresh:
        return FreshWriteBack("", head.commit, None, tuple(stale))
    names = sorted({e.theorem.full_name for e in fresh})
    message = (
        f"leanagent: proofs of {len(names)} theorem{'s' * (len(names) != 1)}\n\n"
        + "".join(f"- {name}\n" for name in names)
        + f"\nEach proof passed Lean's check of its whole file, axioms audited, at {checked[:12]}.\n"
    )
    done = commit_to_branch(head.clone, fresh, message=message, base=head.commit)
    log.info(
        "proofs of %s on branch %s of %s, onto %s at %s",
        spec.location,
        done.branch,
        head.clone,
        head.branch,
        head.commit[:12],
    )
    on_branch = tuple((e.theorem.path, e.theorem.full_name) for e in fresh)
    branch = FreshBranch(head.clone, done.branch, done.commit, head.branch, head.commit, checked, on_branch)
    return FreshWriteBack(render_diff(head.clone, fresh, base=head.commit), head.commit, branch, tuple(stale))


def push_branch(repo_dir: Path, branch: str, remote: str, *, env: Mapping[str, str] | None = None) -> None:
    """Push ``branch`` of the git repository to the same branch of the URL ``remote``; git
    never asks for credentials (``env`` brings them)."""
    refspec = f"refs/heads/{branch}:refs/heads/{branch}"
    _Git(repo_dir).run("push", "--quiet", remote, refspec, env=env)


def _by_path(edits: Iterable[ProofEdit]) -> dict[str, list[ProofEdit]]:
    by_path: dict[str, list[ProofEdit]] = defaultdict(list)
    for edit in edits:
        by_path[edit.theorem.path].append(edit)
    return by_path


class _Git:
    """Runs git in one repository (:func:`~lean_env.git.run_git`); failures raise with git's stderr."""

    def __init__(self, repo_dir: Path) -> None:
        self._repo_dir = repo_dir
        self._prefix: str | None = None

    @property
    def prefix(self) -> str:
        """Where the repository directory is inside its git work tree (``sub/`` or "")."""
        if self._prefix is None:
            self._prefix = self.out("rev-parse", "--show-prefix")
        return self._prefix

    def blob(self, commit: str, path: str) -> str | None:
        """The text of ``path`` (relative to the repository directory) at ``commit``; None
        when the commit has no such file."""
        done = self.run("cat-file", "blob", f"{commit}:{self.prefix}{path}", check=False)
        return done.stdout.decode("utf-8") if done.returncode == 0 else None

    def run(
        self,
        *args: str,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> Finished:
        done = run_git(self._repo_dir, *args, timeout=WRITE_BACK_TIMEOUT, env=env, input=stdin)
        if check and done.returncode != 0:
            stderr = done.stderr.decode("utf-8", "replace").strip()
            if "not a git repository" in stderr:
                raise WriteBackError(f"{self._repo_dir} is not a git repository; a branch of proofs needs one")
            raise GitError(f"git -C {self._repo_dir} {' '.join(args)} failed: {stderr}")
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
