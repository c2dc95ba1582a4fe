"""The data directory as jobs use it: the database, the caches of checkouts and traces,
and the stored repositories in curriculum order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agent.workspace.settings import Settings
from lean_env.errors import UserInputError
from lean_env.paths import shown

if TYPE_CHECKING:
    from curriculum.ingest import IngestOutcome
    from curriculum.store import Store
    from lean_env.records import RepoSpec, RepoTrace
    from lean_env.trace.choice import TracerChoice


def open_store(settings: Settings, *, read_only: bool = False) -> Store:
    """The database of ``settings`` (its data directory created first); ``read_only`` for a
    command that only reads (:meth:`~curriculum.store.Store.open_to_read`: an existing
    database is read where it cannot be written)."""
    from curriculum.store import Store

    try:  # (nothing to do, and nothing written, where it exists)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserInputError(
            f"cannot create the data directory {shown(str(settings.data_dir))}: {e.strerror or e}"
        ) from e
    return Store.open_to_read(settings.db_url) if read_only else Store.open(settings.db_url)


def ingest_repositories(
    store: Store,
    specs: Sequence[RepoSpec],
    settings: Settings,
    tracer: TracerChoice,
    *,
    idle: Callable[[str], bool] | None = None,
) -> list[IngestOutcome]:
    """Check out, trace (unless stored already) and store every spec, with a progress bar;
    clones and LeanDojo's traces are cached in the data directory. ``idle``: see
    :func:`curriculum.ingest.ingest_specs` (URL repositories unchanged with nothing to do)."""
    from curriculum.ingest import ingest_specs
    from lean_env.trace.choice import make_tracer

    trace = make_tracer(tracer, dojo_cache=settings.layout.lean_dojo)
    return ingest_specs(store, specs, cache_dir=settings.layout.cache, tracer=trace, progress=True, idle=idle)


def ordered_traces(settings: Settings) -> list[RepoTrace]:
    """The newest version of every stored repository, in curriculum order; an empty
    database is the user's error (nothing to train or evaluate on)."""
    from curriculum.ordering import curriculum_of, traces_in_curriculum_order

    with open_store(settings) as store:
        traces = traces_in_curriculum_order(store, curriculum_of(store))
    if not traces:
        raise UserInputError("the database holds no repositories: run 'leanagent ingest' or 'leanagent run' first")
    return traces
