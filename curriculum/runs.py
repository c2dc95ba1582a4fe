"""Runs: one invocation of a resumable job (``leanagent run``, ``leanagent prove``),
recorded in the database under the identity of what it was asked to do."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from curriculum.results import RunRecord
from curriculum.store import Store
from lean_env.errors import LeanAgentError
from lean_env.records import RunStatus


@contextlib.contextmanager
def tracked_run(store: Store, identity: Mapping[str, Any]) -> Iterator[tuple[RunRecord, bool]]:
    """A run recorded in ``store`` for the block: an unfinished one of the same ``identity``
    (a JSON-serialisable description of the job and every option that changes its results)
    is resumed under its own id, so its finished work is not repeated; else a new one starts.
    Yields the run and whether it was resumed; marks it finished, failed or interrupted."""
    resumed = store.resume_run(identity)
    run = resumed or store.start_run(identity)
    try:
        yield run, resumed is not None
    except BaseException as e:
        status = RunStatus.INTERRUPTED if isinstance(e, KeyboardInterrupt) else RunStatus.FAILED
        # If the database itself failed, marking the run fails too: report the first error.
        with contextlib.suppress(LeanAgentError):
            store.finish_run(run.id, status=status)
        raise
    store.finish_run(run.id)
