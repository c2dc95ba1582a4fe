"""Tracing a repository with LeanDojo and turning the result into our records.

:func:`trace_repo` is the DOJO ingestion backend: it runs ``lean_dojo.trace`` (which builds
the repository with ``lake build`` and runs LeanDojo's ``ExtractData.lean`` over every
file, the repository's and its dependencies') and converts the ``TracedRepo`` it returns
with :func:`records_from_traced_repo`.

lean_dojo reads its settings from environment variables *once, when it is imported*
(``lean_dojo/constants.py``: ``CACHE_DIR``, ``DISABLE_REMOTE_CACHE``,
``TACTIC_MEMORY_LIMIT``, ...). So it is imported lazily, inside :func:`trace_repo`, after
:func:`configure_dojo_env` has set them: the traced-repo cache goes under our data
directory, the remote cache of pre-traced repositories (a download from LeanDojo's server)
is off, and the memory limit is one this machine can hold. If something imported lean_dojo
earlier with other settings, tracing refuses rather than silently using them.

The conversion is pure and duck-typed: it touches only these attributes of lean_dojo 4.20.0
objects, so tests feed small fakes with the same names.

* ``TracedRepo``: ``repo`` (``LeanGitRepo``: ``lean_version``), ``traced_files``
* ``TracedFile``: ``path`` (``Path`` relative to the repo root), ``lean_file``,
  ``get_premise_definitions()`` (dicts as in ``corpus.jsonl``),
  ``get_direct_dependencies(repo)`` (``(module, path)`` pairs, including the implicit
  ``Init``), ``get_traced_theorems()``
* ``TracedTheorem``: ``theorem.full_name``, ``repo.is_lean4``, ``start``, ``end`` (``Pos``:
  ``line_nb``, ``column_nb``), ``locate_proof()``, ``get_theorem_statement()``,
  ``get_premise_full_names()``, ``get_traced_tactics()``
* ``TracedTactic``: ``tactic``, ``state_before``, ``state_after``, ``get_annotated_tactic()``
* ``LeanFile``: slicing by ``Pos`` (``lean_file[start:end]``)
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from lean_env.benchmark.dojo_shapes import (
    SORRY_RE,
    annotated_premises,
    keeps_tactic,
    premise_from_json,
    statement_text,
)
from lean_env.benchmark.read import canonical_order
from lean_env.errors import BackendError, LeanNotFoundError, UserInputError
from lean_env.lean.toolchain import find_tool
from lean_env.records import (
    PACKAGE_DIRS,
    IngestBackend,
    LeanFile,
    ParseProblem,
    Position,
    Premise,
    RepoSpec,
    RepoTrace,
    Theorem,
    TheoremStatus,
    TracedTactic,
)
from lean_env.syntax.lexer import mask

logger = logging.getLogger(__name__)

# lean_dojo/constants.py asserts this format at import time.
_MEMORY_LIMIT_RE = re.compile(r"\d+g")
# Lean processes of one traced repo share the machine with everything else; give them half.
_MEMORY_FRACTION = 0.5
_FALLBACK_MEMORY_GB = 4
_FULL_SHA_RE = re.compile(r"[0-9a-f]{40}")


class DojoInputError(UserInputError):
    """A repository LeanDojo cannot trace as given (not a git checkout, wrong commit, bad
    ``TACTIC_MEMORY_LIMIT``)."""


class DojoTraceError(BackendError):
    """LeanDojo failed while tracing, or was configured before we could configure it."""


def default_memory_limit() -> str:
    """Half of this machine's memory in whole GiB, as ``TACTIC_MEMORY_LIMIT`` wants (``"8g"``)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return f"{_FALLBACK_MEMORY_GB}g"
    return f"{max(1, int(total * _MEMORY_FRACTION) // 2**30)}g"


def dojo_environment(cache_dir: Path, *, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables lean_dojo must see when it is imported, given the current ``environ``.

    ``CACHE_DIR`` is ``cache_dir`` and ``DISABLE_REMOTE_CACHE`` is on, always; a
    ``TACTIC_MEMORY_LIMIT`` the user set is kept when it is valid, else one is derived from
    the machine's memory.
    """
    memory = environ.get("TACTIC_MEMORY_LIMIT") or default_memory_limit()
    if not _MEMORY_LIMIT_RE.fullmatch(memory):
        raise DojoInputError(f"TACTIC_MEMORY_LIMIT={memory!r} is not a whole number of gigabytes like '8g'")
    return {
        "CACHE_DIR": str(cache_dir.resolve()),
        "DISABLE_REMOTE_CACHE": "1",
        "TACTIC_MEMORY_LIMIT": memory,
    }


def configure_dojo_env(cache_dir: Path, *, environ: MutableMapping[str, str] | None = None) -> None:
    """Set lean_dojo's environment before it is imported; refuse if it was imported already
    with another cache or with the remote cache on.

    Every module that imports lean_dojo (tracing here, the LeanDojo proof backend) should
    call this first, with the same ``cache_dir``.
    """
    env = os.environ if environ is None else environ
    env.update(dojo_environment(cache_dir, environ=env))
    constants = sys.modules.get("lean_dojo.constants")
    if constants is None:
        return
    if Path(constants.CACHE_DIR) != cache_dir.resolve() or not constants.DISABLE_REMOTE_CACHE:
        raise DojoTraceError(
            "lean_dojo was imported before its environment was set "
            f"(its CACHE_DIR is {constants.CACHE_DIR}, remote cache "
            f"{'off' if constants.DISABLE_REMOTE_CACHE else 'on'}); call "
            "lean_env.trace.dojo.configure_dojo_env before anything imports lean_dojo"
        )


def trace_repo(repo_dir: Path, *, spec: RepoSpec, commit: str, cache_dir: Path) -> RepoTrace:
    """Trace the checkout ``repo_dir`` of ``spec`` at ``commit`` with LeanDojo (backend DOJO).

    Needs ``lean`` and ``lake`` (elan); fails with :class:`LeanNotFoundError` before
    anything else when they are missing. A git checkout is traced from its own directory
    (``LeanGitRepo.from_path``: no clone over the network) and must be at ``commit``; a
    directory that is not a git checkout is traced from ``spec``'s URL. LeanDojo caches the
    traced repository under ``cache_dir``, so tracing the same commit again is quick.

    Sets lean_dojo's variables in ``os.environ`` (see :func:`configure_dojo_env`) and puts
    the toolchain's directory on ``PATH``, because LeanDojo runs ``lake`` through the shell.
    """
    tools = {name: find_tool(name) for name in ("lean", "lake")}
    for name, tool in tools.items():
        if tool is None:
            raise LeanNotFoundError(name)
    if not repo_dir.is_dir():
        raise DojoInputError(f"{repo_dir} is not a directory; cannot trace {spec}")
    configure_dojo_env(cache_dir)
    _put_on_path([t for t in tools.values() if t is not None])
    try:
        import lean_dojo  # lazily: its constants read the environment set just above
    except ImportError as e:
        raise DojoTraceError("tracing with LeanDojo needs the lean-dojo package: pip install 'leanagent[dojo]'") from e
    except Exception as e:  # its import-time checks are bare asserts (git version, ...)
        raise DojoTraceError(f"lean_dojo could not start: {e!r}") from e

    lean_repo = _lean_git_repo(lean_dojo, repo_dir, spec=spec, commit=commit)
    logger.info("tracing %s at %s with LeanDojo %s", spec, lean_repo.commit, lean_dojo.__version__)
    try:
        traced = lean_dojo.trace(lean_repo)
    except Exception as e:  # lean_dojo raises bare asserts, CalledProcessError, git errors
        raise DojoTraceError(f"LeanDojo could not trace {spec} at {lean_repo.commit}: {e}") from e
    return records_from_traced_repo(traced, spec=spec, commit=lean_repo.commit)


def _put_on_path(tools: list[Path]) -> None:
    """LeanDojo runs ``lake`` and ``lean`` through the shell; elan's bin may not be on PATH."""
    path = os.environ.get("PATH", "")
    missing = [str(t.parent) for t in tools if str(t.parent) not in path.split(os.pathsep)]
    if missing:
        os.environ["PATH"] = os.pathsep.join([*dict.fromkeys(missing), path])


def _lean_git_repo(lean_dojo: Any, repo_dir: Path, *, spec: RepoSpec, commit: str) -> Any:
    try:
        if (repo_dir / ".git").exists():
            repo = lean_dojo.LeanGitRepo.from_path(repo_dir.resolve())
        elif spec.is_remote:
            repo = lean_dojo.LeanGitRepo(spec.location, commit)
        else:
            raise DojoInputError(
                f"{repo_dir} is not a git checkout; LeanDojo traces git repositories only "
                "(run `git init && git add -A && git commit` there, or give its URL)"
            )
    except DojoInputError:
        raise
    except Exception as e:
        raise DojoTraceError(f"LeanDojo cannot open {spec} at {commit}: {e}") from e
    if _FULL_SHA_RE.fullmatch(commit) and repo.commit != commit:
        raise DojoInputError(f"{repo_dir} is checked out at {repo.commit}, not {commit}; check out {commit} first")
    return repo


def records_from_traced_repo(
    traced_repo: Any,
    *,
    spec: RepoSpec,
    commit: str,
    include_dependency_theorems: bool = False,
) -> RepoTrace:
    """Our records for a lean_dojo ``TracedRepo`` (or anything with the same attributes).

    Files and premises come from every traced file, dependencies included (a proof may use
    any premise it imports, and ``corpus.jsonl`` has them all). Theorems come from the
    repository's own files; ``include_dependency_theorems`` adds those of its dependencies
    too (except Lean's own), as LeanDojo's benchmark generator does. Tactics are kept as the
    generator keeps them (none run on ``no goals``, no ``·``). A theorem whose proof
    cannot be located is left out and reported in ``problems``.
    """
    files: list[LeanFile] = []
    premises: list[Premise] = []
    theorems: list[Theorem] = []
    problems: list[ParseProblem] = []
    seen_premises: set[tuple[str, str]] = set()
    for tf in traced_repo.traced_files:
        path = Path(tf.path).as_posix()
        modules = sorted({module for module, _ in tf.get_direct_dependencies(traced_repo.repo)})
        files.append(LeanFile(path, tuple(modules)))
        for data in tf.get_premise_definitions():
            premise = premise_from_json(data, path)
            if premise is not None and (path, premise.full_name) not in seen_premises:
                seen_premises.add((path, premise.full_name))
                premises.append(premise)
        is_dependency = path.startswith(PACKAGE_DIRS)
        if is_dependency and not include_dependency_theorems:
            continue
        for tt in tf.get_traced_theorems():
            if tt.repo.is_lean4:
                continue
            try:
                theorems.append(_theorem(tt, path, tf.lean_file))
            except Exception as e:  # a malformed AST of one theorem must not stop the repo
                problems.append(ParseProblem(path, tt.start.line_nb, f"{tt.theorem.full_name}: {e}"))
    return canonical_order(
        RepoTrace(
            spec=spec,
            commit=commit,
            backend=IngestBackend.DOJO,
            lean_version=traced_repo.repo.lean_version,
            files=tuple(files),
            premises=tuple(premises),
            theorems=tuple(theorems),
            problems=tuple(problems),
        )
    )


def _theorem(tt: Any, path: str, lean_file: Any) -> Theorem:
    proof_start, proof_end = tt.locate_proof()
    proof = lean_file[proof_start:proof_end]
    start = _position(proof_start)
    sorries = _sorry_positions(proof, start)
    tactics = tuple(
        TracedTactic(
            tactic=t.tactic,
            state_before=t.state_before,
            state_after=t.state_after,
            premises=annotated_premises(list(t.get_annotated_tactic())),
        )
        for t in tt.get_traced_tactics()
        if keeps_tactic(t.tactic, t.state_before)
    )
    return Theorem(
        full_name=tt.theorem.full_name,
        path=path,
        start=_position(tt.start),
        end=_position(tt.end),
        statement=statement_text(tt.get_theorem_statement()),
        proof=proof,
        status=TheoremStatus.SORRY if sorries else TheoremStatus.PROVEN,
        tactics=tactics,
        premises=tuple(dict.fromkeys(tt.get_premise_full_names())),
        sorries=sorries,
        proof_start=start,
    )


def _position(pos: Any) -> Position:
    return Position(pos.line_nb, pos.column_nb)


def _sorry_positions(proof: str, start: Position) -> tuple[Position, ...]:
    """Where ``sorry``/``admit`` occur in ``proof`` (outside comments and strings), as file
    positions given that ``proof`` starts at ``start``."""
    masked = mask(proof)
    found = []
    for m in SORRY_RE.finditer(masked.masked):
        at = masked.position(m.start())
        column = at.column + start.column - 1 if at.line == 1 else at.column
        found.append(Position(start.line + at.line - 1, column))
    return tuple(found)
