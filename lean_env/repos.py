"""Repository specs: reading a repos file and turning a spec into a local checkout at a
concrete commit.

A spec is a git URL or a local path, optionally at a commit (:class:`RepoSpec`). Before
anything is traced or stored, :func:`resolve` pins it down to a :class:`Checkout`: a local
directory holding exactly the sources of one concrete commit, plus the key the database
uses (the URL, or the absolute path of a local project).

* A **local path** must be a Lake project (``lakefile.lean``, ``lakefile.toml`` or
  ``lean-toolchain``). Its commit is ``git rev-parse HEAD`` when the path is the top of a
  git work tree with no uncommitted changes to its sources; otherwise it is a content hash
  of its ``.lean`` files (:func:`lean_sources`: the files source extraction reads, plus
  ``lakefile.lean``) and ``lean-toolchain`` (``content-<hex>``, or ``<sha>-dirty-<hex>``
  for a modified git tree), so that re-ingesting an unchanged directory is a no-op and a
  changed one becomes a new version. A commit given for a local git repository is
  extracted with ``git archive`` into the cache: the user's working tree and index are
  never touched.
* A **URL** is cloned into the cache (``<cache>/clones``) and checked out at the commit
  (default: the remote's default branch head; a branch name means the remote's branch,
  fetched again on every resolve; a SHA the clone has needs no fetch). Network failures
  become one :class:`RepoUnavailableError`; when a fetch fails but the cached clone can
  still answer (an older head, a known tag), it is used with a warning.
  :func:`fetch_head` fetches again before proofs are written back, so that they go onto the
  newest commit of the branch (there a failed fetch is an error).

Repos file format (``examples/repos.txt``): one spec per line, ``LOCATION [COMMIT]
[skip=GLOB ...]``; ``#`` starts a comment; blank lines are ignored; relative paths resolve
against the directory of the repos file; a path with spaces is quoted as in a shell
(``"my repo"``). ``skip=GLOB`` marks paths of the repository whose sorries are left alone
(exercises): see :func:`is_skipped`.
"""

from __future__ import annotations

import errno
import hashlib
import io
import logging
import os
import re
import shlex
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from lean_env.errors import RepoSpecError
from lean_env.git import DEFAULT_TIMEOUT, GitError, run_git
from lean_env.lean.toolchain import read_toolchain
from lean_env.paths import check_path, shown
from lean_env.process import Finished
from lean_env.records import RepoSpec

log = logging.getLogger(__name__)

# Any one of these makes a directory a Lake project.
PROJECT_MARKERS = ("lakefile.lean", "lakefile.toml", "lean-toolchain")
# Build output and fetched dependencies: not the project's own sources.
_SKIPPED_DIRS = frozenset({".lake", "lake-packages", ".git", "build"})
# An abbreviated or full commit SHA (as opposed to a branch or tag name).
_SHA_RE = re.compile(r"[0-9a-f]{7,40}")
# The repos-file word that marks paths whose sorries are left alone.
_SKIP = "skip="
# The longest line of a repos file: a path (at most 4096 bytes on Linux), a commit and skip
# globs fit many times over; a longer line is refused before it is split into words (which
# takes time quadratic in its length: 41 s for a 1 MB line).
MAX_LINE = 16_384


class RepoUnavailableError(RepoSpecError):
    """A repository that cannot be fetched or checked out (offline, unreachable, bad ref)."""


@dataclass(frozen=True, slots=True)
class Checkout:
    """A spec pinned to a concrete commit, with the directory holding those sources."""

    # The spec as given, with the location made canonical (absolute path or URL as given).
    spec: RepoSpec
    # The directory to trace: the user's project, an archive in the cache, or a clone.
    path: Path
    # A full git SHA, or a content hash for directories that are not a clean git tree.
    commit: str
    # The ``lean-toolchain`` pin, e.g. ``leanprover/lean4:v4.20.0``.
    lean_version: str | None

    @property
    def location(self) -> str:
        """The database key of the repository: a URL or an absolute path."""
        return self.spec.location


def parse_spec(text: str, *, base_dir: Path | None = None) -> RepoSpec:
    """A spec from the command line: ``LOCATION`` or ``LOCATION@COMMIT``.

    The ``@`` of ``git@host:owner/repo`` is not a commit separator: a suffix counts as a
    commit only when it contains no ``/`` or ``:``. Relative paths resolve against
    ``base_dir`` (default: the current directory).
    """
    location, commit = text.strip(), None
    head, sep, tail = location.rpartition("@")
    if sep and head and tail and "/" not in tail and ":" not in tail:
        location, commit = head, tail
    return _make_spec(location, commit, base_dir=base_dir or Path.cwd(), where=repr(shown(text)))


def parse_repos_file(path: Path) -> list[RepoSpec]:
    """Every spec of a repos file, in order; a malformed line raises :class:`RepoSpecError`
    naming the file and line number."""
    try:
        check_path(path, where="the repos file", error=RepoSpecError)
        text = path.read_text(encoding="utf-8-sig")  # as editors write it, maybe with a BOM
    except (OSError, UnicodeDecodeError) as e:
        raise RepoSpecError(f"cannot read repos file {path}: {e}") from e
    specs = []
    for number, raw in enumerate(text.splitlines(), start=1):
        where = f"{path}:{number}"
        if len(raw) > MAX_LINE:
            raise RepoSpecError(f"{where}: a line of {len(raw)} characters (at most {MAX_LINE}): {shown(raw)!r}")
        if "\x00" in raw:
            raise RepoSpecError(f"{where}: a NUL byte; a repos file is text, one repository per line")
        try:
            # Shell-like words: a path with spaces is quoted, "my repo" or 'my repo'.
            fields = shlex.split(raw, comments=True)
        except ValueError as e:
            raise RepoSpecError(f"{where}: {e} (quote a path with spaces whole): {raw.strip()!r}") from e
        if not fields:
            continue
        options = [f for f in fields[1:] if "=" in f]
        words = [f for f in fields[1:] if "=" not in f]
        unknown = [f for f in options if not f.startswith(_SKIP)]
        if len(words) > 1 or unknown:
            raise RepoSpecError(
                f"{where}: expected 'LOCATION [COMMIT] [{_SKIP}GLOB ...]', got {raw.strip()!r}"
                + (f" ({unknown[0].partition('=')[0]!r} is no option)" if unknown else "")
            )
        skip = tuple(f.removeprefix(_SKIP) for f in options)
        specs.append(_make_spec(fields[0], words[0] if words else None, base_dir=path.parent, where=where, skip=skip))
    if not specs:
        raise RepoSpecError(f"{path} lists no repositories")
    return specs


def _make_spec(
    location: str, commit: str | None, *, base_dir: Path, where: str, skip: tuple[str, ...] = ()
) -> RepoSpec:
    try:
        spec = RepoSpec(location, commit, skip)
    except ValueError as e:
        raise RepoSpecError(f"{where}: {e}") from e
    if spec.is_remote:
        return RepoSpec(location.rstrip("/"), commit, skip)
    path = base_dir / Path(location).expanduser()
    check_path(path, where=where, error=RepoSpecError)
    return RepoSpec(str(path.resolve()), commit, skip)


def is_skipped(path: str, globs: Sequence[str]) -> bool:
    """True when the repository path ``path`` (POSIX, relative to its root) is one ``globs``
    leave alone. A glob is matched against the whole path, ``*`` across ``/`` too
    (``Exercises/*``, ``*_exercise.lean``, ``*`` for the whole repository); a glob naming a
    directory (``MIL``, ``MIL/``) leaves everything under it alone."""
    return any(fnmatchcase(path, glob) or fnmatchcase(path, glob.rstrip("/") + "/*") for glob in globs)


def unmatched_globs(paths: Iterable[str], globs: Sequence[str]) -> list[str]:
    """The ``globs`` that leave none of ``paths`` alone (a typo, or a directory renamed)."""
    paths = list(paths)
    return [glob for glob in globs if not any(is_skipped(path, (glob,)) for path in paths)]


def resolve(spec: RepoSpec, *, cache_dir: Path, git_timeout: float = DEFAULT_TIMEOUT) -> Checkout:
    """Pin ``spec`` to a local directory at a concrete commit (cloning or archiving into
    ``cache_dir`` when needed)."""
    if spec.is_remote:
        return _resolve_remote(spec, cache_dir=cache_dir, timeout=git_timeout)
    return _resolve_local(spec, cache_dir=cache_dir, timeout=git_timeout)


def _resolve_local(spec: RepoSpec, *, cache_dir: Path, timeout: float) -> Checkout:
    root = Path(spec.location).expanduser().resolve()
    spec = RepoSpec(str(root), spec.commit, spec.skip)
    if not root.is_dir():
        raise RepoSpecError(f"{root} does not exist or is not a directory")
    _require_lean_project(root)
    toplevel = _git_toplevel(root, timeout=timeout)
    if spec.commit is None:
        return Checkout(spec, root, _local_commit(root, toplevel, timeout=timeout), read_toolchain(root))
    if toplevel is None:
        raise RepoSpecError(f"{root} is not a git repository, so commit {spec.commit!r} cannot be checked out")
    sha = _rev_parse(toplevel, spec.commit, timeout=timeout, what=str(root))
    prefix = root.relative_to(toplevel).as_posix()
    dest = cache_dir / "archives" / _slug(str(root)) / sha
    if not dest.is_dir():
        tree = sha if prefix == "." else f"{sha}:{prefix}"
        archive = _git(toplevel, "archive", "--format=tar", tree, timeout=timeout, what=str(root))
        _extract_atomically(archive, dest)
    _require_lean_project(dest, what=f"{root} at {sha}")
    return Checkout(spec, dest, sha, read_toolchain(dest))


def _resolve_remote(spec: RepoSpec, *, cache_dir: Path, timeout: float) -> Checkout:
    url = spec.location
    clone = cache_dir / "clones" / _slug(url)
    fetch_error: RepoUnavailableError | None = None
    if not (clone / ".git").is_dir():
        _clone(url, clone, timeout=timeout)
    elif not (
        spec.commit is not None and _SHA_RE.fullmatch(spec.commit) and _has_commit(clone, spec.commit, timeout=timeout)
    ):
        # A branch or the default head may have moved: fetch (a known SHA cannot move).
        try:
            _git(clone, "fetch", "--quiet", "--tags", "--force", "origin", timeout=timeout, what=url)
        except RepoUnavailableError as e:
            fetch_error = e
    ref = spec.commit or "HEAD"
    # A branch name means the remote's branch (origin/<ref>), never a stale local one.
    sha = _try_rev_parse(clone, f"origin/{ref}", timeout=timeout) or _try_rev_parse(clone, ref, timeout=timeout)
    if sha is None:
        raise fetch_error or RepoUnavailableError(f"{url} has no commit {ref!r}")
    if fetch_error is not None:
        log.warning("%s; using the cached clone at %s", fetch_error, sha[:12])
    _git(clone, "checkout", "--quiet", "--force", "--detach", sha, timeout=timeout, what=url)
    _require_lean_project(clone, what=f"{url} at {sha}")
    return Checkout(spec, clone, sha, read_toolchain(clone))


def remote_commit(spec: RepoSpec, *, git_timeout: float = DEFAULT_TIMEOUT) -> str | None:
    """The commit the URL ``spec`` names at its remote now, asked with ``git ls-remote`` (no
    clone, no fetch; SorryDB's way to skip unchanged repositories): a full SHA is itself, a
    name is the remote's branch of that name, else its tag (peeled), no name its HEAD. None
    when ls-remote cannot say (unreachable, a short SHA, a name it lacks): resolving then
    fetches, or falls back to the cached clone, as always."""
    if spec.commit is not None and len(spec.commit) == 40 and _SHA_RE.fullmatch(spec.commit):
        return spec.commit
    if spec.commit is not None and _SHA_RE.fullmatch(spec.commit):
        return None
    wanted = (
        ["HEAD"]
        if spec.commit is None
        else [f"refs/heads/{spec.commit}", f"refs/tags/{spec.commit}^{{}}", f"refs/tags/{spec.commit}"]
    )
    try:
        out = _run_git(None, "ls-remote", "--", spec.location, *wanted, timeout=git_timeout)
    except RepoUnavailableError as error:
        log.info("git ls-remote %s: %s", spec.location, error)
        return None
    if out.returncode != 0:
        log.info(
            "git ls-remote %s: %s", spec.location, _git_reason(out.stderr.decode(errors="replace"), out.returncode)
        )
        return None
    refs: dict[str, str] = {}
    for line in out.stdout.decode().splitlines():
        sha, _, ref = line.partition("\t")
        refs[ref] = sha
    return next((refs[ref] for ref in wanted if ref in refs), None)


@dataclass(frozen=True, slots=True)
class RemoteHead:
    """The newest commit of a URL repository's branch, in its clone in the cache."""

    clone: Path
    branch: str  # the remote's branch, without ``origin/``
    commit: str  # its head, a full SHA


def fetch_head(spec: RepoSpec, *, cache_dir: Path, git_timeout: float = DEFAULT_TIMEOUT) -> RemoteHead:
    """Fetch the remote of the URL ``spec`` into its clone in ``cache_dir`` and return the head
    of the branch proofs go to: ``spec.commit`` when it names a branch of the remote, else the
    remote's default branch (a pinned SHA or tag still gets its proofs on the branch people
    work on). Nothing is checked out. Unlike ingestion, which falls back to the cached clone,
    a fetch that fails is a :class:`RepoUnavailableError`: the point is the newest commit."""
    url = spec.location
    clone = cache_dir / "clones" / _slug(url)
    if not (clone / ".git").is_dir():
        _clone(url, clone, timeout=git_timeout)
    _git(clone, "fetch", "--quiet", "--tags", "--force", "origin", timeout=git_timeout, what=url)
    branch = (
        spec.commit
        if spec.commit and _try_rev_parse(clone, f"refs/remotes/origin/{spec.commit}", timeout=git_timeout)
        else None
    )
    if branch is None:
        # The default branch may have been renamed since the clone: ask the remote.
        _git(clone, "remote", "set-head", "origin", "--auto", timeout=git_timeout, what=url)
        head = _git(clone, "symbolic-ref", "--short", "refs/remotes/origin/HEAD", timeout=git_timeout, what=url)
        branch = head.decode().strip().removeprefix("origin/")
    return RemoteHead(clone, branch, _rev_parse(clone, f"refs/remotes/origin/{branch}", timeout=git_timeout, what=url))


def _clone(url: str, clone: Path, *, timeout: float) -> None:
    """Clone into a temporary directory and rename it into place, so that a clone killed
    half-way never looks like a clone."""
    shutil.rmtree(clone, ignore_errors=True)
    clone.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".clone-", dir=clone.parent))
    try:
        _git(None, "clone", "--quiet", "--no-checkout", url, str(tmp), timeout=timeout, what=url)
        _move_into_place(tmp, clone, done=clone / ".git")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _move_into_place(tmp: Path, dest: Path, *, done: Path) -> None:
    """Rename the finished ``tmp`` to ``dest``; another process that got there first with
    the same content (``done`` exists) is not an error."""
    try:
        tmp.rename(dest)
    except OSError:
        if not done.is_dir():
            raise


def _require_lean_project(root: Path, *, what: str | None = None) -> None:
    if not any((root / marker).is_file() for marker in PROJECT_MARKERS):
        raise RepoSpecError(f"{what or root} is not a Lean project (it has none of {', '.join(PROJECT_MARKERS)})")


def _local_commit(root: Path, toplevel: Path | None, *, timeout: float) -> str:
    """HEAD for a clean git project root, else a hash of the sources (see module docs)."""
    if toplevel != root:
        return f"content-{_content_hash(root)}"
    head = _try_rev_parse(root, "HEAD", timeout=timeout)
    if head is None:  # a fresh `git init` without commits
        return f"content-{_content_hash(root)}"
    # Only changes to what the content hash covers make the tree dirty.
    status = _git(
        root, "status", "--porcelain", "--untracked-files=all", "--", "*.lean", "lean-toolchain",
        timeout=timeout, what=str(root),
    )  # fmt: skip
    if status.strip():
        return f"{head}-dirty-{_content_hash(root)[:16]}"
    return head


def _content_hash(root: Path) -> str:
    digest = hashlib.sha256()
    pin = root / "lean-toolchain"
    paths = (["lean-toolchain"] if pin.is_file() else []) + list(lean_sources(root).paths)
    for rel in sorted(paths):
        digest.update(rel.encode())
        digest.update(b"\0")
        try:
            digest.update(hashlib.sha256((root / rel).read_bytes()).digest())
        except OSError as error:  # unreadable (permissions): its name stands for it
            digest.update(f"unreadable: {error.strerror}".encode())
    return digest.hexdigest()[:40]


@dataclass(frozen=True, slots=True)
class LeanSources:
    """The ``.lean`` files of a project directory, as POSIX paths relative to it."""

    paths: tuple[str, ...]  # regular files (or symlinks to them), sorted
    skipped: tuple[tuple[str, str], ...]  # (path, why) of those that cannot be read as files


def lean_sources(root: Path) -> LeanSources:
    """Every ``.lean`` file under ``root`` outside build output, fetched dependencies and
    hidden directories (``lakefile.lean`` included). A symlink to a regular file counts as
    that file; a dangling or looping symlink, a FIFO, a socket, a device or a directory
    named ``X.lean`` is skipped with the reason, and never opened (a FIFO would block a
    read forever). Symlinked directories are not entered (no cycles)."""
    paths: list[str] = []
    skipped: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS and not d.startswith("."))
        rel = Path(dirpath).relative_to(root)
        for name in filenames:
            if not name.endswith(".lean"):
                continue
            path = (rel / name).as_posix()
            why = _not_a_file(Path(dirpath) / name)
            if why is None:
                paths.append(path)
            else:
                skipped.append((path, why))
        # A directory named X.lean is listed among the directories: it is no source either.
        skipped += [((rel / d).as_posix(), "a directory, not a file") for d in dirnames if d.endswith(".lean")]
    return LeanSources(tuple(sorted(paths)), tuple(sorted(skipped)))


def _not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a source file, or None when it can (stat follows symlinks)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "a dangling symlink (its target does not exist)"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symlink loop"
        return f"cannot be examined: {error.strerror or error}"
    return None if stat.S_ISREG(mode) else "not a regular file (a FIFO, socket or device)"


def _slug(location: str) -> str:
    """A cache directory name: readable tail plus a stable hash of the whole location."""
    name = RepoSpec(location).name
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]
    return f"{safe}-{hashlib.sha256(location.encode()).hexdigest()[:12]}"


def _extract_atomically(archive: bytes, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".archive-", dir=dest.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        _move_into_place(tmp, dest, done=dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _git_toplevel(path: Path, *, timeout: float) -> Path | None:
    out = _run_git(path, "rev-parse", "--show-toplevel", timeout=timeout)
    return Path(out.stdout.decode().strip()).resolve() if out.returncode == 0 else None


def _has_commit(repo: Path, ref: str, *, timeout: float) -> bool:
    return _run_git(repo, "cat-file", "-e", f"{ref}^{{commit}}", timeout=timeout).returncode == 0


def _try_rev_parse(repo: Path, ref: str, *, timeout: float) -> str | None:
    out = _run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", timeout=timeout)
    return out.stdout.decode().strip() if out.returncode == 0 else None


def _rev_parse(repo: Path, ref: str, *, timeout: float, what: str) -> str:
    sha = _try_rev_parse(repo, ref, timeout=timeout)
    if sha is None:
        raise RepoUnavailableError(f"{what} has no commit {ref!r}")
    return sha


def _git(repo: Path | None, *args: str, timeout: float, what: str) -> bytes:
    """Run git; a failure raises :class:`RepoUnavailableError` naming ``what`` and the line
    of git's stderr that says why (``Could not resolve host``, ``Repository not found``)."""
    out = _run_git(repo, *args, timeout=timeout)
    if out.returncode != 0:
        reason = _git_reason(out.stderr.decode(errors="replace"), out.returncode)
        raise RepoUnavailableError(f"cannot {args[0]} {what}: {reason}")
    return out.stdout


def _git_reason(stderr: str, returncode: int | None) -> str:
    """The first diagnostic line of git's stderr: ssh's complaint comes before git's
    ``fatal:`` line, and the advice git appends after it ("Please make sure you have the
    correct access rights...") says nothing about the cause."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(("fatal:", "error:", "ssh:")):
            return line
    return lines[0] if lines else f"exit code {returncode}"


def _run_git(repo: Path | None, *args: str, timeout: float) -> Finished:
    """git (:func:`~lean_env.git.run_git`); a repository that git cannot read is the user's
    to fix (a URL, a path, the network), so its faults are :class:`RepoUnavailableError`."""
    try:
        return run_git(repo, *args, timeout=timeout)
    except GitError as e:
        raise RepoUnavailableError(str(e)) from e
