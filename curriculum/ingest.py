"""Ingestion: repository specs -> checkout at a commit -> trace -> the database.

For each spec, in order: resolve it to a checkout at a concrete commit
(:func:`lean_env.repos.resolve`); if the store already holds that (location, commit), stop
there (re-ingesting is a no-op, and tracing is the expensive part); otherwise trace it with
the chosen backend and store the trace in one transaction. A failure on one repository
raises after the earlier ones are committed, so a re-run resumes where it stopped.

Backends: ``dojo`` (LeanDojo tracing: real goals and premises; needs Lean), ``source``
(Lean-free source extraction) and ``auto``, which takes ``dojo`` when a Lean toolchain is
on PATH and lean_dojo is importable, else ``source``, and logs which it took (with
LeanDojo available it still extracts from source what LeanDojo cannot trace: see
:func:`make_tracer`).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib.util
import logging
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tqdm import tqdm

from curriculum.store import Store
from lean_env.lean.toolchain import find_tool, require_tool
from lean_env.records import IngestBackend, RepoSpec, RepoTrace
from lean_env.repos import Checkout, resolve

log = logging.getLogger(__name__)

_FULL_SHA_RE = re.compile(r"[0-9a-f]{40}")


class BackendChoice(enum.StrEnum):
    """What the user asks for on the command line (``--backend``)."""

    AUTO = "auto"  # dojo when Lean and lean_dojo are available, else source
    DOJO = "dojo"
    SOURCE = "source"


class IngestStatus(enum.StrEnum):
    ADDED = "added"  # traced and stored now
    UNCHANGED = "unchanged"  # this (location, commit) was stored already; nothing traced


class Tracer(Protocol):
    """Turns a checkout into records (the seam between ingestion and the backends)."""

    def __call__(self, checkout: Checkout) -> RepoTrace: ...


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    """What ingesting one repository did, with the counts the store now holds for it."""

    location: str
    commit: str
    status: IngestStatus
    # The backend that produced the stored trace (for UNCHANGED: the one used back then).
    backend: IngestBackend
    files: int
    premises: int
    theorems: int
    sorries: int


def choose_backend(choice: BackendChoice) -> IngestBackend:
    """The backend to trace with; ``dojo`` needs Lean on PATH (else LeanNotFoundError)."""
    if choice is BackendChoice.DOJO:
        require_tool("lean")
        return IngestBackend.DOJO
    if choice is BackendChoice.SOURCE:
        return IngestBackend.SOURCE
    lean, dojo = find_tool("lean"), importlib.util.find_spec("lean_dojo")
    backend = IngestBackend.DOJO if lean is not None and dojo is not None else IngestBackend.SOURCE
    log.info(
        "ingest backend: %s (auto: Lean %s, lean_dojo %s)",
        backend,
        f"at {lean}" if lean else "not on PATH",
        "importable" if dojo else "not installed",
    )
    return backend


def make_tracer(choice: BackendChoice, *, dojo_cache: Path) -> Tracer:
    """The tracer for ``--backend choice``.

    ``auto`` with LeanDojo available still extracts from source the checkouts LeanDojo
    cannot trace (it traces git checkouts at a commit: a URL's clone or a clean local git
    root; not a plain directory, a project inside a bigger repository, a tree with
    uncommitted changes or an archived commit), and logs it. LeanDojo caches traced
    repositories in ``dojo_cache``, which must be the one every other LeanDojo user in the
    process gets (``<data dir>/lean_dojo``): lean_dojo reads it once, at import.
    """
    backend = choose_backend(choice)
    if backend is IngestBackend.SOURCE:
        return _trace_source
    trace_dojo = functools.partial(_trace_dojo, dojo_cache=dojo_cache)
    if choice is BackendChoice.DOJO:
        return trace_dojo

    def trace_auto(checkout: Checkout) -> RepoTrace:
        if dojo_can_trace(checkout):
            return trace_dojo(checkout)
        log.info("LeanDojo traces git checkouts only; extracting %s from source", checkout.path)
        return _trace_source(checkout)

    return trace_auto


def dojo_can_trace(checkout: Checkout) -> bool:
    """True when ``checkout`` is a git checkout at a real commit (what LeanDojo traces)."""
    return (checkout.path / ".git").exists() and _FULL_SHA_RE.fullmatch(checkout.commit) is not None


def _trace_dojo(checkout: Checkout, *, dojo_cache: Path) -> RepoTrace:
    from lean_env.trace.dojo import trace_repo

    return trace_repo(
        checkout.path, spec=checkout.spec, commit=checkout.commit, cache_dir=dojo_cache
    )


def _trace_source(checkout: Checkout) -> RepoTrace:
    from lean_env.trace.source import extract_repo

    return extract_repo(
        checkout.path,
        spec=checkout.spec,
        commit=checkout.commit,
        lean_version=checkout.lean_version,
    )


def ingest_specs(
    store: Store,
    specs: Sequence[RepoSpec],
    *,
    cache_dir: Path,
    tracer: Tracer,
    progress: bool = False,
) -> list[IngestOutcome]:
    """Resolve, trace (unless stored already) and store every spec, in order."""
    outcomes = []
    with _bar(len(specs), progress) as bar:
        for spec in specs:
            bar.set_postfix_str(spec.name)
            checkout = resolve(spec, cache_dir=cache_dir)
            added = False
            if store.has_version(checkout.location, checkout.commit):
                log.info(
                    "%s@%s is stored already; not tracing it again",
                    checkout.location,
                    checkout.commit,
                )
            else:
                log.info("tracing %s at %s", checkout.location, checkout.commit)
                trace = tracer(checkout)
                # The store keys a version by the checkout, whatever the backend echoed.
                if (trace.spec, trace.commit) != (checkout.spec, checkout.commit):
                    trace = dataclasses.replace(trace, spec=checkout.spec, commit=checkout.commit)
                added = _store(store, trace)
            outcomes.append(_outcome(store, checkout.location, checkout.commit, added=added))
            bar.update()
    return outcomes


def ingest_traces(
    store: Store, traces: Iterable[RepoTrace], *, progress: bool = False
) -> list[IngestOutcome]:
    """Store ready-made traces (e.g. read from a LeanDojo Benchmark 4 directory)."""
    traces = list(traces)
    outcomes = []
    with _bar(len(traces), progress) as bar:
        for trace in traces:
            bar.set_postfix_str(trace.spec.name)
            added = _store(store, trace)
            outcomes.append(_outcome(store, trace.spec.location, trace.commit, added=added))
            bar.update()
    return outcomes


def _bar(total: int, progress: bool) -> tqdm[Any]:
    # disable=None: draw only when stderr is a terminal (no bar noise in logs and pipes).
    return tqdm(
        total=total, desc="ingest", unit="repo", file=sys.stderr, disable=None if progress else True
    )


def _store(store: Store, trace: RepoTrace) -> bool:
    if trace.problems:
        log.warning(
            "%s@%s: %d parse problem(s), first: %s:%d: %s",
            trace.spec.location,
            trace.commit,
            len(trace.problems),
            trace.problems[0].path,
            trace.problems[0].line,
            trace.problems[0].reason,
        )
    return store.add_trace(trace)


def _outcome(store: Store, location: str, commit: str, *, added: bool) -> IngestOutcome:
    """Report what the store holds for (location, commit), and whether this call added it."""
    version = store.version(location, commit)
    if version is None:  # add_trace returned without error, so this is a store bug
        raise AssertionError(f"{location}@{commit} is not stored after ingesting it")
    return IngestOutcome(
        location=location,
        commit=commit,
        status=IngestStatus.ADDED if added else IngestStatus.UNCHANGED,
        backend=version.backend,
        files=version.files,
        premises=version.premises,
        theorems=version.theorems,
        sorries=version.sorries,
    )
