"""Which tracer turns a checkout into records: the choice ``--tracer`` makes.

``dojo`` (LeanDojo tracing: real goals and premises; needs Lean), ``source`` (Lean-free
source extraction) and ``auto``, which takes ``dojo`` when a Lean toolchain is on PATH and
lean_dojo is importable, else ``source``, and logs which it took (with LeanDojo available
it still extracts from source what LeanDojo cannot trace: see :func:`make_tracer`).
"""

from __future__ import annotations

import enum
import functools
import importlib.util
import logging
import re
from pathlib import Path
from typing import Protocol

from lean_env.lean.toolchain import core_sources, find_tool, require_tool
from lean_env.records import IngestBackend, RepoTrace
from lean_env.repos import Checkout

log = logging.getLogger(__name__)

_FULL_SHA_RE = re.compile(r"[0-9a-f]{40}")


class TracerChoice(enum.StrEnum):
    """What the user asks for on the command line (``--tracer``)."""

    AUTO = "auto"  # dojo when Lean and lean_dojo are available, else source
    DOJO = "dojo"
    SOURCE = "source"


class Tracer(Protocol):
    """Turns a checkout into records (the seam between ingestion and the backends)."""

    def __call__(self, checkout: Checkout) -> RepoTrace: ...


def choose_backend(choice: TracerChoice) -> IngestBackend:
    """The backend to trace with; ``dojo`` needs Lean on PATH (else LeanNotFoundError)."""
    if choice is TracerChoice.DOJO:
        require_tool("lean")
        return IngestBackend.DOJO
    if choice is TracerChoice.SOURCE:
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


def make_tracer(choice: TracerChoice, *, dojo_cache: Path) -> Tracer:
    """The tracer for ``--tracer choice``.

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
    if choice is TracerChoice.DOJO:
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

    return trace_repo(checkout.path, spec=checkout.spec, commit=checkout.commit, cache_dir=dojo_cache)


def _trace_source(checkout: Checkout) -> RepoTrace:
    from lean_env.trace.source import extract_repo

    return extract_repo(
        checkout.path,
        spec=checkout.spec,
        commit=checkout.commit,
        lean_version=checkout.lean_version,
        core=core_sources(checkout.path),
    )
