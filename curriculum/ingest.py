"""Ingestion: repository specs -> checkout at a commit -> trace -> the database.

For each spec, in order: resolve it to a checkout at a concrete commit
(:func:`lean_env.repos.resolve`); if the store already holds that (location, commit), stop
there (re-ingesting is a no-op, and tracing is the expensive part); otherwise trace it with
the chosen backend and store the trace in one transaction, which also carries the proofs
our search found for the repository's previous version over to the theorems still `sorry`
in this one with the same statement (:mod:`curriculum.found_proofs`). A failure on one
repository raises after the earlier ones are committed, so a re-run resumes where it stopped.

The tracer is chosen by :func:`lean_env.trace.choice.make_tracer` (``--tracer``).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from curriculum.results import AddedTrace
from curriculum.store import Store
from lean_env.records import PACKAGE_DIRS, IngestBackend, RepoSpec, RepoTrace
from lean_env.repos import remote_commit, resolve
from lean_env.trace.choice import Tracer

log = logging.getLogger(__name__)


class IngestStatus(enum.StrEnum):
    ADDED = "added"  # traced and stored now
    UNCHANGED = "unchanged"  # this (location, commit) was stored already; nothing traced
    # A URL repository whose remote head (git ls-remote) is its newest stored commit, with
    # nothing left to do there: not cloned, fetched or checked out.
    UNCHANGED_REMOTE = "unchanged-remote"


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
    sorries: int  # still `sorry`: carried-over proofs are not counted
    # Proofs found for the previous version carried over to this one now (0 when UNCHANGED).
    carried_proofs: int


def ingest_specs(
    store: Store,
    specs: Sequence[RepoSpec],
    *,
    cache_dir: Path,
    tracer: Tracer,
    progress: bool = False,
    idle: Callable[[str], bool] | None = None,
) -> list[IngestOutcome]:
    """Resolve, trace (unless stored already) and store every spec, in order. With ``idle``
    (location -> whether its newest stored version has nothing left to do), a URL spec is
    first asked of its remote with ``git ls-remote``: when the head is that version and
    ``idle`` says so, nothing is cloned or fetched (:attr:`IngestStatus.UNCHANGED_REMOTE`)."""
    outcomes = []
    with _bar(len(specs), progress) as bar:
        for spec in specs:
            bar.set_postfix_str(spec.name)
            if idle is not None and spec.is_remote and (head := _stored_head(store, spec)) is not None:
                if idle(spec.location):
                    log.info("%s: its head %s is stored and has nothing left to do", spec.location, head[:12])
                    unchanged = _outcome(store, spec.location, head, added=AddedTrace(added=False))
                    outcomes.append(dataclasses.replace(unchanged, status=IngestStatus.UNCHANGED_REMOTE))
                    bar.update()
                    continue
            checkout = resolve(spec, cache_dir=cache_dir)
            added = AddedTrace(added=False)
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


def ingest_traces(store: Store, traces: Iterable[RepoTrace], *, progress: bool = False) -> list[IngestOutcome]:
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


def _stored_head(store: Store, spec: RepoSpec) -> str | None:
    """The remote's head for ``spec`` (git ls-remote) when it is the newest stored version."""
    head = remote_commit(spec)
    return head if head is not None and store.newest_commit(spec.location) == head else None


def _bar(total: int, progress: bool) -> tqdm[Any]:
    # disable=None: draw only when stderr is a terminal (no bar noise in logs and pipes).
    return tqdm(total=total, desc="ingest", unit="repo", file=sys.stderr, disable=None if progress else True)


def _store(store: Store, trace: RepoTrace) -> AddedTrace:
    # The repository's own problems are the user's to see; its packages' and the core
    # library's (read for their premises) are not theirs to mend.
    own = [p for p in trace.problems if not p.path.startswith(PACKAGE_DIRS)]
    if own:
        log.warning(
            "%s@%s: %d parse problem(s), first: %s:%d: %s",
            trace.spec.location,
            trace.commit,
            len(own),
            own[0].path,
            own[0].line,
            own[0].reason,
        )
    if len(own) < len(trace.problems):
        log.info(
            "%s@%s: %d parse problem(s) in dependencies and the core library",
            trace.spec.location,
            trace.commit,
            len(trace.problems) - len(own),
        )
    return store.add_trace(trace)


def _outcome(store: Store, location: str, commit: str, *, added: AddedTrace) -> IngestOutcome:
    """Report what the store holds for (location, commit), and what this call added."""
    version = store.version(location, commit)
    if version is None:  # add_trace returned without error, so this is a store bug
        raise AssertionError(f"{location}@{commit} is not stored after ingesting it")
    return IngestOutcome(
        location=location,
        commit=commit,
        status=IngestStatus.ADDED if added.added else IngestStatus.UNCHANGED,
        backend=version.backend,
        files=version.files,
        premises=version.premises,
        theorems=version.theorems,
        sorries=version.sorries,
        carried_proofs=len(added.carried_proofs),
    )
