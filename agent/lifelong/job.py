"""The lifelong job (``leanagent run``) as a library: ingest a repos file, order the
database by the curriculum, take one retriever training step for every repository (at its
newest commit) the learner has not learned yet, scoring every repository seen after each
step, and search proofs for the ``sorry`` theorems of the file's repositories, each right
after its repository's step, with premises from the retriever as trained so far. Found
proofs count only after Lean's final check. A report (JSON and Markdown, with plots) goes to
DATA_DIR/reports.

Everything is resumable: the learner is kept in DATA_DIR/learner after every step,
attempts are recorded per run, and a run that was killed, interrupted or failed is resumed
under its own id when started again with the same options (:meth:`LifelongOptions.identity`).

::

    job = LifelongJob(settings, LifelongOptions(Path("repos.txt"), proving=ProvingConfig()))  # the suggester
    result = job.run()   # a LifelongResult (agent/lifelong/results.py); the CLI prints it
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.lifelong.report import draw_plots, report_payload, report_sections
from agent.lifelong.results import LifelongResult
from agent.proving.config import ProvingConfig
from agent.proving.outcome import ProvingOutcome
from agent.proving.repositories import RepositoryProver
from agent.reports.files import check_directory, write_report
from agent.workspace.data import ingest_repositories
from agent.workspace.joblock import job_lock
from agent.workspace.settings import Settings
from lean_env.errors import LeanAgentError, LeanNotFoundError
from lean_env.records import RepoTrace, TheoremStatus
from lean_env.trace.choice import TracerChoice
from retrieval.formats import RETRIEVER_LENGTH
from retrieval.index_options import IndexOptions
from retrieval.model_files import model_key, save_model
from retrieval.progressive import Learner
from retrieval.split import TEST_FRACTION
from retrieval.train_config import TrainConfig

if TYPE_CHECKING:
    from agent.lifelong.pull_requests import PullRequestOptions
    from curriculum.store import Store
    from retrieval.embeddings import PremiseIndexes
    from retrieval.progressive import ProgressiveReport, ProgressRow


class WriteBackFailed(LeanAgentError):
    """A run did its work and wrote its report, but the proofs of some repository could not
    be written back (a remote that cannot be fetched, a file that changed): the run stays
    unfinished, so that running it again retries the write-back."""

    def __init__(self, failed: Mapping[str, str], report: Path) -> None:
        reasons = "; ".join(f"{location}: {why}" for location, why in failed.items())
        super().__init__(
            f"the proofs of {len(failed)} repositor{'y' if len(failed) == 1 else 'ies'} could not be written back "
            f"({reasons}); the run's report is {report}; run it again to retry"
        )


@dataclass(frozen=True, slots=True)
class RetrieverTraining:
    """How the job trains the premise retriever."""

    # The encoder to start from: a directory or a Hugging Face name; None: the bundled MiniLM.
    model: str | None = None
    # The progressive step's hyper-parameters (consolidation against forgetting, ...).
    config: TrainConfig = TrainConfig()
    # Share of each repository's theorems held out for the recall matrix.
    test_fraction: float = TEST_FRACTION
    # Tokens of a goal or premise embedded for the scores and for proving (ReProver's 2048;
    # training embeds config.max_length).
    embed_length: int = RETRIEVER_LENGTH
    # Where the encoder trains and embeds (retrieval.devices.placement); not part of the
    # identity, as for proving.
    device: str = "auto"
    # The premise index's options (its recall target), for the scores and for proving; not
    # part of the identity, as for proving.
    index: IndexOptions = IndexOptions()

    @property
    def learner(self) -> Learner:
        """The progressive learner these options train."""
        return Learner(self.config, self.test_fraction, model_id=model_key(self.model))

    def identity(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self.config),
            "model": model_key(self.model),
            "test_fraction": self.test_fraction,
            "embed_length": self.embed_length,
        }


@dataclass(frozen=True, slots=True)
class LifelongOptions:
    """What one lifelong run is asked to do."""

    # The repos file: one 'LOCATION [COMMIT] [skip=GLOB ...]' per line.
    repos: Path
    # How repositories are traced at ingestion.
    tracer: TracerChoice = TracerChoice.AUTO
    # None: ingest and order only (with proving: prove without premises).
    training: RetrieverTraining | None = RetrieverTraining()
    # None: no proof search.
    proving: ProvingConfig | None = None
    # True: without a Lean toolchain, proving is skipped with one line saying what it needs
    # (run's default suggester needs nothing else); False: a missing Lean is an error.
    lean_optional: bool = False
    # Globs of paths whose sorries are left alone in every repository (exercises), besides
    # each repository's own skip= globs in the repos file.
    skip: tuple[str, ...] = ()
    # Write back the proofs that only restate a lemma of their repository (reported either
    # way); not part of the identity: it changes what is written, not what is proved.
    keep_restatements: bool = False
    # Prove the sorries that look like exercises too (agent/proving/exercises.py), which are left
    # alone and listed by default.
    include_exercises: bool = False
    # Push each URL repository's branch of proofs and open a pull request (None: don't); not
    # part of the identity: it changes where the proofs go, not what is proved.
    pull_requests: PullRequestOptions | None = None

    def identity(self) -> dict[str, Any]:
        """What a resumed run must match (the number of proving workers is not part of it)."""
        return {
            "command": "run",
            "repos": str(self.repos.resolve()),
            "backend": str(self.tracer),
            "train": None if self.training is None else self.training.identity(),
            "prove": None if self.proving is None else self.proving.identity(),
            "skip": list(self.skip),
            **({"include_exercises": True} if self.include_exercises else {}),
        }


def nothing_to_prove(store: Store, location: str, options: LifelongOptions, skip: Sequence[str]) -> bool:
    """Whether the newest stored version of ``location`` gives ``options``' proving nothing to
    do: no carried proof to check, and every sorry not left alone (skip globs, exercises)
    attempted by some run already. (``prove --repo`` attempts them again.)"""
    from agent.proving.exercises import exercises
    from agent.proving.targets import left_alone

    if options.proving is None:
        return True
    if store.found_proofs(location, unconfirmed=True):
        return False
    sorries, _ = left_alone(store.theorems(status=TheoremStatus.SORRY, location=location), skip)
    if not options.include_exercises:
        # Without a checkout, by path, twin and statement only: an exercise that only its
        # comment tells apart makes the repository fetched, which is all it costs.
        traces = {t.spec.location: t for t in store.latest_traces(location=location)}
        left = exercises(sorries, traces, {})
        sorries = [t for t in sorries if t.key not in left]
    return len(store.attempted([t.id for t in sorries])) == len(sorries)


class LifelongJob:
    """One run of the lifelong loop; :meth:`run` does the work (nothing happens before).
    While it works it holds the data directory's and the database's job lock
    (:mod:`agent.workspace.joblock`): another job there makes it fail at once, or with ``wait`` wait."""

    def __init__(self, settings: Settings, options: LifelongOptions, *, wait: bool = False) -> None:
        self.settings = settings
        self.options = options
        self.wait = wait

    @property
    def reports_dir(self) -> Path:
        return self.settings.layout.reports

    def run(self) -> LifelongResult:
        from agent.lifelong import write_backs
        from curriculum.ingest import IngestStatus
        from curriculum.ordering import curriculum_of, traces_in_curriculum_order
        from curriculum.runs import tracked_run
        from lean_env.repos import parse_repos_file

        options, settings = self.options, self.settings
        specs = parse_repos_file(options.repos)
        check_directory(self.reports_dir, "the reports")  # before hours of work, not after
        with (
            job_lock(settings, "run", wait=self.wait) as store,
            tracked_run(store, options.identity()) as (run, resumed),
        ):
            skip = {spec.location: (*spec.skip, *options.skip) for spec in specs}
            redo = write_backs.unfinished(store, run.id)  # proofs found, not written back: fetched again
            outcomes = ingest_repositories(
                store,
                specs,
                settings,
                options.tracer,
                idle=lambda location: (
                    location not in redo and nothing_to_prove(store, location, options, skip.get(location, ()))
                ),
            )
            order = curriculum_of(store)
            ordered = traces_in_curriculum_order(store, order)
            # The file's repositories are the proving targets, in curriculum order, but those
            # whose unchanged remote was not even fetched: they have nothing to prove.
            mine = {o.location for o in outcomes}
            unchanged = {o.location for o in outcomes if o.status is IngestStatus.UNCHANGED_REMOTE}
            prover, skipped = self._start_prover(store, run.id, ordered, mine - unchanged, skip)
            training, indexes = None, None
            try:
                if options.training is not None:
                    training, indexes = self._train(ordered, options.training, prover, database=store.identity)
                elif prover is not None:
                    for location in prover.locations:
                        prover.prove(location, retriever=None)
            finally:
                if prover is not None:
                    prover.close()
            name = f"run-{run.id}"
            proving = None if prover is None else self._proofs_out(store, run.id, prover, name)
            result = LifelongResult(
                run_id=run.id,
                resumed=resumed,
                ingest=tuple(outcomes),
                curriculum=order,
                training=training,
                retriever_dir=settings.layout.retriever,
                proving=proving,
                proving_skipped=skipped,
                embeddings=None if indexes is None else indexes.counts,
                index=None if indexes is None else indexes.quality,
                sorries=sum(
                    t.status is TheoremStatus.SORRY
                    for trace in ordered
                    if trace.spec.location in mine
                    for t in trace.theorems
                ),
                plots=tuple(draw_plots(training, self.reports_dir, name)),
            )
            # Inside the run: a report that cannot be written fails the run, which is then
            # resumed (its work kept) rather than left finished without a report.
            paths = write_report(
                self.reports_dir,
                name,
                report_payload(result),
                title=f"leanagent run {run.id}",
                sections=report_sections(result),
                images=result.plots,
                keep_earlier=resumed,
            )
            if proving is not None and proving.written.failed:
                # Reported, and the run left unfinished: started again, it writes them back.
                raise WriteBackFailed(proving.written.failed, paths[1])
        return dataclasses.replace(result, report=tuple(paths))

    def _start_prover(
        self,
        store: Store,
        run_id: int,
        ordered: list[RepoTrace],
        targets: set[str],
        skip: Mapping[str, Sequence[str]],
    ) -> tuple[RepositoryProver | None, str | None]:
        """The prover of the repositories ``targets`` (in curriculum order), started before
        any training; or None and why proving is skipped (not asked, or no Lean where Lean
        is optional)."""
        options = self.options
        if options.proving is None:
            return None, None
        try:
            prover = RepositoryProver.start(
                store,
                run_id,
                ordered,
                [t.spec.location for t in ordered if t.spec.location in targets],
                options.proving,
                data_dir=self.settings.data_dir,
                skip=skip,
                include_exercises=options.include_exercises,
            )
        except LeanNotFoundError as error:
            if not options.lean_optional:
                raise
            reason = str(error)
            return None, f"not attempted: proving checks tactics with Lean, and {reason[:1].lower()}{reason[1:]}"
        return prover, None

    def _proofs_out(self, store: Store, run_id: int, prover: RepositoryProver, name: str) -> ProvingOutcome:
        """What proving gave, with the proofs written back and, when asked, pushed as pull
        requests (:func:`agent.lifelong.write_backs.settle`: the run's write-backs before it
        was resumed too, and the attempts of before at repositories not proved now)."""
        from agent.lifelong import write_backs

        options = self.options
        assert options.proving is not None
        proving = prover.write_patches(
            prover.outcome(), self.reports_dir, name, keep_restatements=options.keep_restatements
        )
        written = write_backs.settle(
            store,
            run_id,
            proving.written,
            proving.attempts,
            options.proving,
            options.pull_requests,
            rechecked=prover.rechecked,
        )
        elsewhere = write_backs.attempts_elsewhere(store, run_id, prover.locations)
        return dataclasses.replace(
            proving,
            attempts=(*elsewhere, *proving.attempts),
            resumed=proving.resumed + len(elsewhere),
            written=written,
        )

    def _train(
        self,
        ordered: list[RepoTrace],
        training: RetrieverTraining,
        prover: RepositoryProver | None,
        *,
        database: str,
    ) -> tuple[ProgressiveReport, PremiseIndexes]:
        """One step per repository the learner has not learned at its newest commit; with a
        prover, each file repository's sorries are attempted after its step. Also what was
        embedded: premises embedded once per encoder are kept in DATA_DIR/embeddings, and
        the index of a step's evaluation is the one its proving searches (returned, with
        what it embedded and the last index's quality)."""
        from tqdm import tqdm

        from retrieval.embeddings import EmbeddingStore, PremiseIndexes
        from retrieval.encoder import TextEncoder
        from retrieval.progressive import learner_id, prepare_checkpoint, run_progressive

        settings = self.settings
        # One learner per database (its identity, whatever URL reached it), starting model
        # and options, kept across runs: it is the lifelong state (another database or model
        # starts another learner, it never mixes).
        encoder = TextEncoder.load(training.model, max_length=training.embed_length, device=training.device)
        name = learner_id(training.learner, embed_length=encoder.max_length, place=database)
        learner = settings.layout.learner / f"{name}.pt"
        prepare_checkpoint(learner)
        newest = {t.spec.location: t.commit for t in ordered}
        indexes = PremiseIndexes(
            EmbeddingStore.of_data_dir(settings.data_dir),
            options=training.index,
            device=encoder.placement.index_device,
        )

        def after_step(row: ProgressRow) -> None:
            bar.update()
            # A repository is proved after the step of its newest commit (a row of an older
            # commit picked up from the learner is history), if it has sorries left to try.
            if prover is not None and row.commit == newest.get(row.repo) and prover.has_work(row.repo):
                prover.prove(row.repo, retriever=encoder, indexes=indexes)

        with tqdm(desc="training", unit="repo", disable=None) as bar:
            report = run_progressive(
                ordered, encoder, training.learner, on_step=after_step, checkpoint=learner, indexes=indexes
            )
        save_model(encoder, settings.layout.retriever, kept_in=learner)
        return report, indexes
