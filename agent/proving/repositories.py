"""The one proving pipeline of ``prove``, ``run`` and ``evaluate``: each repository's targets
attempted once per run (in a lifelong run right after the retriever's step of it, with the
premises of the retriever as trained so far; in an evaluation each attempt judged against the
original proof before it is recorded); every attempt of the run collected (those of before an
interruption too) into a :class:`~agent.proving.outcome.ProvingOutcome`; for ``run``, the
proofs written back.

Before a repository's sorries its checkout is built (:func:`agent.proving.targets.build_checkout`;
a build that fails is the repository's outcome, with no attempts) and the proofs carried over
to it are checked (:mod:`agent.proving.carried`; ``run`` only). Which sorries are targets is
:mod:`agent.proving.targets`' business; writing back, :mod:`agent.proving.patches`'s. The
prover's recipe is :meth:`agent.proving.scale.ProverRecipe.of_store`, as for ``evaluate``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent.proving.attempts import AttemptReport, earlier_attempts, flag_restatements, prove_targets
from agent.proving.carried import CarriedProofs
from agent.proving.config import ProvingConfig
from agent.proving.outcome import ProvingOutcome
from agent.proving.patches import write_patches
from agent.proving.recheck import RecheckResult
from agent.proving.scale import ProofDone, ProofJob, ProofRunner, ProverRecipe
from agent.proving.targets import JobTargets, build_checkout, job_targets
from curriculum.results import FoundProof, TheoremKey
from curriculum.store import Store
from lean_env.data_layout import DataLayout
from lean_env.lean.runner import FileRunner, LeanRunner
from lean_env.records import RepoTrace

if TYPE_CHECKING:
    from lean_env.lean.build import BuildOutcome
    from retrieval.embeddings import PremiseIndexes
    from retrieval.encoder import TextEncoder


class RepositoryProver:
    """Proves the sorries of a job's repositories, each at most once per run (:meth:`prove`),
    says what that gave (:meth:`outcome`) and writes the proofs back (:meth:`write_patches`).
    It proves with ``runner``, which its caller closes (:meth:`start`'s: :meth:`close`)."""

    def __init__(
        self,
        store: Store,
        run_id: int,
        runner: ProofRunner,
        job: JobTargets,
        traces: Sequence[RepoTrace],
        *,
        data_dir: Path,
        carried: CarriedProofs | None = None,
        judge: Callable[[ProofDone], ProofDone] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.runner = runner
        self.job = job
        self.carried = carried  # None: carried proofs are left for a lifelong run to check
        # What each finished attempt becomes before it is recorded (an evaluation judges it
        # against the original proof's axioms); None: as the search and final check left it.
        self.judge = judge
        self.layout = DataLayout(data_dir)  # the embedding store's, the builds' and the clones' home
        # Each repository's newest trace: the premises its theorems may use.
        self._traces = {t.spec.location: t for t in traces}
        # A resumed run reports the attempts it made before the interruption too (by then
        # proved_by_us, those it proved are no sorry targets any more).
        self.attempts: list[AttemptReport] = earlier_attempts(store, run_id, job.known)
        self._resumed = len(self.attempts)
        # location -> Lean's verdicts on the proofs carried over to it (the report's "rechecked")
        self.rechecked: dict[str, list[RecheckResult]] = {}
        # location -> how building its checkout went (none when the config asks for no build)
        self.builds: dict[str, BuildOutcome] = {}
        self._proved: set[str] = set()
        self._built: set[str] = set()
        # theorem -> why Lean withdrew its carried proof, for its new attempt's report
        self._withdrawn: dict[TheoremKey, str] = {}

    @classmethod
    def start(
        cls,
        store: Store,
        run_id: int,
        traces: Sequence[RepoTrace],
        locations: Sequence[str],
        config: ProvingConfig,
        *,
        data_dir: Path,
        skip: Mapping[str, Sequence[str]] | None = None,
        include_exercises: bool = False,
        runner_for: Callable[[Path], FileRunner] = LeanRunner.for_project,
    ) -> RepositoryProver:
        """Check out the repositories ``locations`` (in curriculum order), make sure Lean is
        there and load the generator, before any training: a missing toolchain or a bad
        generator is reported before hours of work, not after. The sorries in the paths
        ``skip`` gives a repository (globs) are left alone, only counted; so are exercises,
        listed with why, unless ``include_exercises`` (:func:`agent.proving.targets.job_targets`).
        ``runner_for`` is Lean for a checkout (the final checks)."""
        skip = skip or {}
        job = job_targets(
            store,
            traces,
            locations,
            skip=skip,
            include_exercises=include_exercises,
            cache_dir=DataLayout(data_dir).cache,
        )
        for directory in job.checkouts.values():
            runner_for(directory)  # raises LeanNotFoundError, with how to install
        recipe = ProverRecipe.of_store(store, config, data_dir, traces=traces, runner_for=runner_for)
        carried = CarriedProofs(store, list(job.targets), skip)
        return cls(store, run_id, ProofRunner.start(recipe), job, traces, data_dir=data_dir, carried=carried)

    @property
    def locations(self) -> list[str]:
        return list(self.job.targets)

    @property
    def target_count(self) -> int:
        return sum(len(found) for found in self.job.targets.values())

    def has_work(self, location: str) -> bool:
        return location not in self._proved and bool(self.job.targets.get(location) or self._waiting(location))

    def _waiting(self, location: str) -> list[FoundProof]:
        return self.carried.waiting(location) if self.carried is not None else []

    def prove(self, location: str, *, retriever: TextEncoder | None, indexes: PremiseIndexes | None = None) -> None:
        """Attempt the sorries of ``location`` (once per run), with premises from
        ``retriever`` when given, through the index ``indexes`` keeps (the evaluation's
        after a training step: nothing is embedded or built again)."""
        if location in self._proved:
            return
        self._proved.add(location)
        targets, directory = self.job.targets, self.job.checkouts[location]
        build = self.build(location)
        if build is not None and not build.usable:  # a repository-level outcome: no attempt is a failure for it
            return
        if self.carried is not None:
            self._confirm(location, directory)
        if targets.get(location):  # none: only carried proofs to check, no retriever needed
            self._prove_targets(location, retriever, indexes)

    def build(self, location: str) -> BuildOutcome | None:
        """Build the checkout of ``location`` for the files of its targets and carried proofs
        (once; :meth:`prove` does it first); None when the config asks for no build."""
        if location not in self._built:
            self._built.add(location)
            paths = [t.theorem.path for t in self.job.targets.get(location, ())]
            paths += [c.stored.theorem.path for c in self._waiting(location)]
            directory, config = self.job.checkouts[location], self.runner.recipe.config
            build = build_checkout(self._traces.get(location), directory, paths, config, data_dir=self.layout.root)
            if build is not None:
                self.builds[location] = build
        return self.builds.get(location)

    def _confirm(self, location: str, directory: Path) -> None:
        """Have Lean check the proofs carried over to ``location``: those that hold are the
        run's proofs, the theorems of those that broke are targets again."""
        assert self.carried is not None
        recipe, targets = self.runner.recipe, self.job.targets
        confirmed = self.carried.confirm(
            location,
            directory,
            run_id=self.run_id,
            runner=recipe.runner_for(directory),
            timeout=recipe.config.check_timeout,
        )
        self.rechecked[location] = list(confirmed.results)
        self.attempts += confirmed.proved
        self._withdrawn |= confirmed.withdrawn
        if confirmed.reopened:
            targets[location] = sorted([*targets.get(location, ()), *confirmed.reopened], key=lambda t: t.id)

    def _prove_targets(self, location: str, retriever: TextEncoder | None, indexes: PremiseIndexes | None) -> None:
        targets, recipe = self.job.targets, self.runner.recipe
        runner = self.runner
        if retriever is not None:
            from retrieval.embeddings import EmbeddingStore, PremiseIndexes

            indexes = indexes or PremiseIndexes(
                EmbeddingStore.of_data_dir(self.layout.root),
                options=recipe.config.index,
                device=retriever.placement.index_device,
            )
            # The repository's own premises suffice: no other repository's are accessible
            # from its theorems (imports are followed within a repository).
            runner = runner.with_retriever(
                retriever, (self._traces[location],), snapshot=self.layout.retriever, indexes=indexes
            )
        judge = self.judge

        def proved(jobs: list[ProofJob]) -> Iterator[ProofDone]:
            finished = runner.run(jobs)
            return finished if judge is None else map(judge, finished)

        reports = prove_targets(self.store, self.run_id, targets[location], checkouts=self.job.checkouts, prove=proved)
        self.attempts += [
            dataclasses.replace(r, detail=f"{note}; {r.detail}") if (note := self._withdrawn.get(r.key)) else r
            for r in reports
        ]

    def outcome(self) -> ProvingOutcome:
        """What proving gave so far, the proofs that only restate a lemma of their repository
        flagged (:func:`agent.proving.attempts.flag_restatements`)."""
        exercises: dict[str, list[tuple[str, str, str]]] = {}
        for (location, path, theorem), why in self.job.exercises.items():
            exercises.setdefault(location, []).append((path, theorem, why))
        rechecked = {location: tuple(found) for location, found in self.rechecked.items() if found}
        return ProvingOutcome(
            tuple(flag_restatements(self.attempts, list(self._traces.values()))),
            self._resumed,
            self.target_count,
            dict(self.job.skipped),
            exercises,
            rechecked,
            {loc: bump for loc in rechecked if (bump := toolchain_bump(self.store, loc)) is not None},
            dict(self.builds),
        )

    def write_patches(
        self, outcome: ProvingOutcome, directory: Path, name: str, *, keep_restatements: bool = False
    ) -> ProvingOutcome:
        """``outcome`` (this prover's) with its proofs written back
        (:func:`agent.proving.patches.write_patches`); those that only restate a lemma are left
        out unless ``keep_restatements``."""
        written = write_patches(
            outcome.attempts,
            self.locations,
            {t.key: t for t in self.job.known},
            self._traces,
            self.job.checkouts,
            directory,
            name,
            keep_restatements=keep_restatements,
            cache_dir=self.layout.cache,
        )
        return dataclasses.replace(outcome, written=written)

    def close(self) -> None:
        self.runner.close()


def toolchain_bump(store: Store, location: str) -> str | None:
    """``"X -> Y"`` when the newest stored version of ``location`` names another Lean
    toolchain than the version before it; None when it does not, or there is none before."""
    toolchains = [v.lean_version for v in store.versions() if v.location == location]
    if len(toolchains) < 2 or toolchains[-2] == toolchains[-1]:
        return None
    return f"{toolchains[-2] or 'none'} -> {toolchains[-1] or 'none'}"
