"""``leanagent prove`` as a library: search every chosen stored ``sorry`` theorem, have Lean
check what is found, record it under a run.

The theorems are chosen by name, repository and skip globs, exercises left alone
(:func:`agent.proving.targets.chosen_targets`), and proved through the pipeline ``run``
proves with (:class:`agent.proving.repositories.RepositoryProver`): each checkout built, each
theorem searched and finally checked, each attempt recorded as it finishes. A run that was
interrupted resumes with the theorems it had not attempted yet.

::

    with open_store(settings) as store:
        result = prove(store, ProveRequest(repo="./alpha"), ProvingConfig(), data_dir=settings.data_dir)
    result.proving.attempts  # every attempt of the run (a ProvingOutcome)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.proving.config import ProvingConfig
from agent.proving.outcome import ProvingOutcome
from agent.proving.repositories import RepositoryProver
from agent.proving.scale import ProofRunner, ProverRecipe
from agent.proving.targets import chosen_targets
from curriculum.runs import tracked_run
from curriculum.store import Store
from lean_env.data_layout import DataLayout
from lean_env.lean.runner import FileRunner, LeanRunner
from retrieval.formats import RETRIEVER_LENGTH

if TYPE_CHECKING:
    from retrieval.calibration import IndexQuality


@dataclass(frozen=True, slots=True)
class ProveRequest:
    """Which stored sorries to prove, and with which premises."""

    # Full names or PATH:NAME (agent.proving.theorem_refs), each naming one stored sorry;
    # None: every one (of `repo`).
    theorems: tuple[str, ...] | None = None
    repo: str | None = None  # a repository spec: only its sorries
    skip: tuple[str, ...] = ()  # globs of paths whose sorries are left alone
    include_exercises: bool = False  # prove the sorries that look like exercises too
    retriever: str | None = None  # premise encoder, name or directory; None: no retriever
    retriever_len: int = RETRIEVER_LENGTH  # tokens of a goal or premise it embeds

    def identity(self) -> dict[str, Any]:
        """What of the request a resumed run must match (the retriever is the recipe's)."""
        return {
            "theorems": None if self.theorems is None else list(self.theorems),
            "repo": self.repo,
            "skip": list(self.skip) or None,
            **({"include_exercises": True} if self.include_exercises else {}),
        }


@dataclass(frozen=True, slots=True)
class ProveResult:
    run_id: int
    resumed: bool  # an interrupted run of the same options was picked up
    proving: ProvingOutcome
    # The retriever's premise index: its kind and measured recall, served queries included
    # (None: no retriever, or Ray workers').
    index: IndexQuality | None = None


def prove(
    store: Store,
    request: ProveRequest,
    config: ProvingConfig,
    *,
    data_dir: Path,
    runner_for: Callable[[Path], FileRunner] = LeanRunner.for_project,
) -> ProveResult:
    """Prove the sorries ``request`` chooses under ``config``; resumes an unfinished run of
    the same options. ``runner_for`` is Lean for a checkout (the final checks)."""
    traces = tuple(store.latest_traces())
    job = chosen_targets(
        store,
        traces,
        request.theorems,
        request.repo,
        skip=request.skip,
        include_exercises=request.include_exercises,
        cache_dir=DataLayout(data_dir).cache,
    )
    recipe = ProverRecipe.of_store(
        store,
        config,
        data_dir,
        traces=traces,
        retriever=request.retriever,
        retriever_len=request.retriever_len,
        runner_for=runner_for,
    )
    identity = {"command": "prove", **recipe.identity(), **request.identity()}
    # Models load before the run starts: a bad name is the user's error, not a failed run
    # (nor a dead Ray worker).
    with (
        contextlib.closing(ProofRunner.start(recipe)) as runner,
        tracked_run(store, identity) as (run, resumed),
    ):
        prover = RepositoryProver(store, run.id, runner, job, traces, data_dir=data_dir)
        for location in prover.locations:
            prover.prove(location, retriever=None)
    return ProveResult(run.id, resumed, prover.outcome(), runner.index_quality)
