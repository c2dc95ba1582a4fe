"""Proof search over many theorems: in this process, or spread over Ray workers.

Both run :class:`agent.prove.TheoremProver` on every theorem, so both give the same attempts
(the search is deterministic given the generator, the premises and the proof environment);
only the order in which they finish differs. A Ray worker builds its own prover from a
:class:`ProverRecipe` (models loaded by name or directory, the premise corpus shipped to it
once) and keeps it for all the theorems it is given. The repositories' directories must be
readable where the workers run: this machine (Ray started here) or a shared file system
(a cluster joined through ``RAY_ADDRESS``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.prove import ProofAttempt, ProveConfig, TheoremProver, premise_source
from lean_env.errors import BackendError, UserInputError, first_line
from lean_env.records import RepoTrace, Theorem

if TYPE_CHECKING:
    from lean_env.interactive.interface import ProofBackend

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ProofJob:
    """One theorem to prove: ``key`` is the caller's id for it (the database's)."""

    key: int
    location: str
    repo_dir: Path
    theorem: Theorem


@dataclass(frozen=True, slots=True)
class ProofDone:
    job: ProofJob
    attempt: ProofAttempt
    backend: str  # the proof environment that made the attempt


@dataclass(frozen=True, slots=True)
class ProverRecipe:
    """How a worker builds its prover; everything in it can be sent to another process."""

    generator: str  # a Hugging Face name or a directory
    open_backend: Callable[[Path], ProofBackend]  # a module-level function or a partial of one
    config: ProveConfig
    retriever: str | None = None  # premise encoder, name or directory
    premises: int = 10  # premises per goal with a retriever
    corpus: tuple[RepoTrace, ...] = ()  # the premises the retriever chooses from

    def check(self) -> None:
        """Load the models once here, so that a bad name or directory is the user's error
        before any worker starts (a worker would die of it)."""
        from agent.generator import HFTacticGenerator
        from retrieval.encoder import TextEncoder

        HFTacticGenerator.load(self.generator)
        if self.retriever:
            TextEncoder.load(self.retriever)

    def build(self) -> TheoremProver:
        from agent.generator import HFTacticGenerator
        from retrieval.encoder import TextEncoder

        premises = premise_source(self.corpus, TextEncoder.load(self.retriever), k=self.premises) if self.retriever else None
        return TheoremProver(HFTacticGenerator.load(self.generator), open_backend=self.open_backend, premises=premises, config=self.config)


def prove_here(jobs: Sequence[ProofJob], prover: TheoremProver) -> Iterator[ProofDone]:
    """Prove ``jobs`` one after another in this process, in order."""
    for job in jobs:
        attempt, backend = prover.prove(job.location, job.repo_dir, job.theorem)
        yield ProofDone(job, attempt, backend)


def require_ray() -> None:
    """Raise the user's error now when Ray is missing (before any work is spent)."""
    try:
        import ray  # noqa: F401
    except ImportError as error:
        raise UserInputError("parallel proof search needs Ray: pip install 'leanagent[ray]'") from error


class WorkerError(BackendError):
    """A Ray worker died (its process, not a proof attempt, failed)."""


def prove_on_ray(jobs: Sequence[ProofJob], recipe: ProverRecipe, *, workers: int) -> Iterator[ProofDone]:
    """Prove ``jobs`` on up to ``workers`` Ray actors (one CPU each), yielding each as it
    finishes.

    Joins the running Ray instance, or the cluster ``RAY_ADDRESS`` names, or starts one on
    this machine with ``workers`` CPUs for the call (and stops it after). No more actors are
    made than the cluster has CPUs: one that Ray cannot place would be given jobs and never
    run them. An error raised in a worker is raised here as itself.
    """
    require_ray()
    import ray
    from ray.util import ActorPool

    if not jobs:
        return
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    actors: list[Any] = []
    finished = False
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        if workers > cpus:
            log.warning("Ray has %d CPU(s): proving on %d worker(s), not %d", cpus, cpus, workers)
        worker = ray.remote(num_cpus=1)(_RayProver)
        shared = ray.put(recipe)  # the corpus travels once, not once per worker
        actors = [worker.remote(shared) for _ in range(max(1, min(workers, cpus, len(jobs))))]
        by_key = {job.key: job for job in jobs}
        try:
            for key, attempt, backend in ActorPool(actors).map_unordered(lambda actor, job: actor.prove.remote(job), jobs):
                yield ProofDone(by_key[key], attempt, backend)
        except ray.exceptions.RayTaskError as error:
            # e.g. a missing Lean in a worker: raised as the project's own error, whose
            # message is one line, rather than Ray's wrapper with the worker's traceback.
            if isinstance(error.cause, Exception):
                raise error.cause from None
            raise WorkerError(f"a Ray worker failed: {first_line(error)}") from None
        except ray.exceptions.RayActorError as error:
            raise WorkerError(f"a Ray worker died: {first_line(error)}") from None
        finished = True
    finally:
        if finished:
            # Best effort: the workers close their proof environments.
            with contextlib.suppress(Exception):
                ray.get([actor.close.remote() for actor in actors], timeout=60)
        else:
            # Interrupted or failed: a close would wait behind each worker's running search.
            for actor in actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor)
        if started:
            ray.shutdown()


class _RayProver:
    """A Ray actor around one :class:`TheoremProver` (built in the worker, kept for its jobs)."""

    def __init__(self, recipe: ProverRecipe) -> None:
        self.prover = recipe.build()

    def prove(self, job: ProofJob) -> tuple[int, ProofAttempt, str]:
        attempt, backend = self.prover.prove(job.location, job.repo_dir, job.theorem)
        return job.key, attempt, backend

    def close(self) -> None:
        self.prover.close()


