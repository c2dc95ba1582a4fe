"""Proof search over many theorems: in this process, or spread over Ray workers.

Both run :class:`agent.proving.theorem.TheoremProver` on every theorem, so both give the same attempts
(the search is deterministic given the generator, the premises and the proof environment);
only the order in which they finish differs. A Ray worker builds its own prover from a
:class:`ProverRecipe` (models loaded by name or directory, the premise corpus and the
suggester's stored steps shipped to it once) and keeps it for all the theorems it is given.
A worker's suggester learns the proofs that worker finds; the proofs of one call reach the
workers of the next call (the next repository of a lifelong run), not the other workers of
the same call, so with several workers a run may find proofs in another order, or fewer,
than in one process. The repositories' directories must be
readable where the workers run: this machine (Ray started here) or a shared file system
(a cluster joined through ``RAY_ADDRESS``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.generators.premises import PremiseSource, premise_source
from agent.generators.suggester import StepMemory, proved_steps
from agent.proving.config import ProvingConfig
from agent.proving.theorem import ProofAttempt, TheoremProver
from lean_env.errors import BackendError, UserInputError, first_line
from lean_env.lean.runner import FileRunner, LeanRunner
from lean_env.records import AttemptOutcome, RepoTrace, Theorem
from retrieval.formats import RETRIEVER_LENGTH
from retrieval.model_files import model_key, save_model

if TYPE_CHECKING:
    from agent.generators.ranking import TacticRanking
    from curriculum.results import StoredTheorem
    from curriculum.store import Store
    from retrieval.calibration import IndexQuality
    from retrieval.embeddings import PremiseIndexes
    from retrieval.encoder import TextEncoder

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
    """How a worker builds its prover and its premises; everything in it can be sent to
    another process."""

    config: ProvingConfig
    data_dir: Path  # the proof environments' caches (REPL builds, LeanDojo traces)
    retriever: str | None = None  # premise encoder, name or directory
    retriever_len: int = RETRIEVER_LENGTH  # tokens of a goal or premise it embeds
    # The premises the retriever chooses from (without one, and without a model, those the
    # suggester's templates are offered by name: retrieval.lexical).
    corpus: tuple[RepoTrace, ...] = ()
    memory: StepMemory = StepMemory()  # the suggester's stored steps and premise names
    # The ranking learned from recorded attempts (agent.generators.ranking); None: none.
    ranking: TacticRanking | None = None
    # The final check's Lean for a checkout (tests give an in-memory one: lean_env.lean.mock).
    runner_for: Callable[[Path], FileRunner] = LeanRunner.for_project

    @classmethod
    def of_store(
        cls,
        store: Store,
        config: ProvingConfig,
        data_dir: Path,
        *,
        traces: Sequence[RepoTrace],
        retriever: str | None = None,
        retriever_len: int = RETRIEVER_LENGTH,
        leave_out: Sequence[StoredTheorem] = (),
        runner_for: Callable[[Path], FileRunner] = LeanRunner.for_project,
    ) -> ProverRecipe:
        """The recipe of every proving job (``prove``, ``evaluate``, ``run``): the stored
        ``traces`` are the premise corpus and the suggester's memory, the attempts recorded in
        ``store`` teach the ranking (when ``config`` asks for one). Nothing of the theorems
        ``leave_out`` reaches the prover (an evaluation's targets): neither their proofs'
        steps nor what earlier attempts at them tried."""
        ranking = None
        if config.ranking:
            from agent.generators.ranking import TacticRanking

            tried = store.tried_tactics(leave_out={t.id for t in leave_out})
            ranking = TacticRanking.train([t for _, t in tried])
        return cls(
            config,
            data_dir,
            retriever=retriever,
            retriever_len=retriever_len,
            corpus=tuple(traces),
            memory=StepMemory.from_traces(traces, leave_out={t.key for t in leave_out}),
            ranking=ranking,
            runner_for=runner_for,
        )

    def identity(self) -> dict[str, Any]:
        """What of the recipe a resumed ``prove`` or ``evaluate`` run must match: the config's
        identity and the retriever (a model directory by its content)."""
        return {
            **self.config.identity(),
            "retriever": model_key(self.retriever) if self.retriever else None,
            "retriever_len": self.retriever_len if self.retriever else None,
        }

    def check(self) -> None:
        """Load the models once here, so that a bad name or directory is the user's error
        before any worker starts (a worker would die of it)."""
        if self.config.generator:
            from agent.generators.model import HFTacticGenerator

            HFTacticGenerator.load(self.config.generator, device=self.config.device)
        if self.retriever:
            self._encoder()

    def build(self) -> TheoremProver:
        """The prover, its generator conditioned on the premises this recipe names."""
        from retrieval.embeddings import EmbeddingStore

        premises: PremiseSource | None = None
        if self.retriever:
            # The data directory's store: a worker finds what the driver (or a run before) embedded.
            premises = premise_source(
                self.corpus,
                self._encoder(),
                k=self.config.premises,
                store=EmbeddingStore.of_data_dir(self.data_dir),
                options=self.config.index,
            )
        elif self.config.generator is None and self.corpus:
            # The suggester alone, no trained retriever: the premises its goals name, for its
            # templates (a model is given what the user asked for: none).
            from retrieval.corpus import PremiseCorpus
            from retrieval.lexical import LexicalRetriever

            premises = LexicalRetriever(PremiseCorpus(self.corpus), k=self.config.premises)
        return TheoremProver.load(
            self.config,
            data_dir=self.data_dir,
            memory=self.memory,
            premises=premises,
            ranking=self.ranking,
            runner_for=self.runner_for,
        )

    def _encoder(self) -> TextEncoder:
        from retrieval.encoder import TextEncoder

        return TextEncoder.load(self.retriever, max_length=self.retriever_len, device=self.config.device)


def prove_here(jobs: Sequence[ProofJob], prover: TheoremProver) -> Iterator[ProofDone]:
    """Prove ``jobs`` one after another in this process, in order."""
    for job in jobs:
        attempt, backend = prover.prove(job.location, job.repo_dir, job.theorem)
        yield ProofDone(job, attempt, backend)


class ProofRunner:
    """Runs proof jobs where the config says: in this process, with one prover kept for every
    call (its proof environments stay open), or on Ray workers that build their own from
    the recipe. :meth:`close` closes the prover."""

    def __init__(
        self, recipe: ProverRecipe, prover: TheoremProver | None, learned: list[ProofDone] | None = None
    ) -> None:
        self.recipe = recipe
        self._prover = prover
        # Ray: the proofs found by earlier calls, for the suggesters of the next call's
        # workers (in this process the prover learns them itself). Shared with the runners
        # with_retriever makes.
        self._learned = [] if learned is None else learned

    @classmethod
    def start(cls, recipe: ProverRecipe) -> ProofRunner:
        """Load the models here (one worker), or check that they load (Ray; a worker would
        die of a bad name): a bad generator or retriever is the user's error before any work."""
        if recipe.config.workers == 1:
            return cls(recipe, recipe.build())
        require_ray()
        recipe.check()
        return cls(recipe, None)

    def with_retriever(
        self, encoder: TextEncoder, corpus: tuple[RepoTrace, ...], *, snapshot: Path, indexes: PremiseIndexes
    ) -> ProofRunner:
        """This runner with premises from ``encoder`` over ``corpus``: in this process the
        encoder itself and the index ``indexes`` holds (the evaluation's, when it covers
        ``corpus``), for Ray workers a copy saved to ``snapshot`` (they find its embeddings
        in the data directory's store). It shares this runner's prover: close this one, not it."""
        from retrieval.index import PremiseRetriever

        if self._prover is not None:
            retriever = PremiseRetriever(indexes.index(corpus, encoder), encoder, k=self.recipe.config.premises)
            return ProofRunner(self.recipe, self._prover.with_premises(retriever))
        save_model(encoder, snapshot)
        recipe = dataclasses.replace(
            self.recipe, retriever=str(snapshot), retriever_len=encoder.max_length, corpus=corpus
        )
        return ProofRunner(recipe, None, self._learned)

    @property
    def index_quality(self) -> IndexQuality | None:
        """The kind and measured recall of the premise index this process's prover searches,
        served queries included; None without one (no retriever, the suggester's lexical
        premises, or Ray workers, whose indexes measure themselves in their own processes)."""
        from retrieval.index import PremiseRetriever

        premises = None if self._prover is None else self._prover.premises
        return premises.quality if isinstance(premises, PremiseRetriever) else None

    def run(self, jobs: list[ProofJob]) -> Iterator[ProofDone]:
        if self._prover is not None:
            return prove_here(jobs, self._prover)
        return self._run_on_ray(jobs)

    def _run_on_ray(self, jobs: list[ProofJob]) -> Iterator[ProofDone]:
        found = [step for done in self._learned for step in proved_steps(done.job.theorem, done.attempt.steps)]
        recipe = dataclasses.replace(self.recipe, memory=self.recipe.memory.with_steps(found))
        for done in prove_on_ray(jobs, recipe, workers=recipe.config.workers):
            if done.attempt.outcome is AttemptOutcome.PROVED:
                self._learned.append(done)
            yield done

    def close(self) -> None:
        if self._prover is not None:
            self._prover.close()


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
            for key, attempt, backend in ActorPool(actors).map_unordered(
                lambda actor, job: actor.prove.remote(job), list(jobs)
            ):
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
