"""The proving loop of a lifelong run: each repository's sorries attempted once per run, right
after the retriever's step of it, with the premises of the retriever as trained so far;
every attempt of the run collected (those of before an interruption too), then the proofs
written back.

Before a repository's sorries its checkout is built (:func:`agent.proving.targets.build_checkout`;
a build that fails is the repository's outcome, with no attempts) and the proofs carried over
to it are checked (:mod:`agent.proving.carried`). Which sorries are targets is
:func:`agent.proving.targets.job_targets`'s business; writing back, :mod:`agent.proving.write_back`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent.generators.suggester import StepMemory
from agent.proving.attempts import AttemptReport, earlier_attempts, flag_restatements, prove_targets
from agent.proving.carried import CarriedProofs
from agent.proving.recheck import RecheckResult
from agent.proving.scale import ProofRunner, ProverRecipe, learned_ranking
from agent.proving.targets import JobTargets, build_checkout, job_targets
from agent.proving.theorem import ProvingConfig
from agent.proving.write_back import WrittenBack, write_patches
from curriculum.results import TheoremKey
from curriculum.store import Store
from lean_env.lean.runner import FileRunner, LeanRunner
from lean_env.records import RepoTrace

if TYPE_CHECKING:
    from lean_env.lean.build import BuildOutcome
    from retrieval.embeddings import PremiseIndexes
    from retrieval.encoder import TextEncoder


class RepositoryProver:
    """Proves the sorries of a job's repositories, each at most once per run (:meth:`prove`),
    and writes the proofs back (:meth:`write_patches`); :meth:`close` when done."""

    def __init__(
        self,
        store: Store,
        run_id: int,
        runner: ProofRunner,
        job: JobTargets,
        carried: CarriedProofs,
        traces: Sequence[RepoTrace],
        *,
        data_dir: Path,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.runner = runner
        self.job = job
        self.carried = carried
        self.data_dir = data_dir  # the embedding store's, the builds' and the clones' home
        # Each repository's newest trace: the premises its theorems may use.
        self._traces = {t.spec.location: t for t in traces}
        # A resumed run reports the attempts it made before the interruption too (by then
        # proved_by_us, those it proved are no sorry targets any more).
        self.attempts: list[AttemptReport] = earlier_attempts(store, run_id, job.known)
        # location -> Lean's verdicts on the proofs carried over to it (the report's "rechecked")
        self.rechecked: dict[str, list[RecheckResult]] = {}
        # location -> how building its checkout went (none when the config asks for no build)
        self.builds: dict[str, BuildOutcome] = {}
        self._proved: set[str] = set()
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
            store, traces, locations, skip=skip, include_exercises=include_exercises, cache_dir=data_dir / "cache"
        )
        for directory in job.checkouts.values():
            runner_for(directory)  # raises LeanNotFoundError, with how to install
        recipe = ProverRecipe(
            config,
            data_dir,
            corpus=tuple(traces),
            memory=StepMemory.from_traces(traces),
            ranking=learned_ranking(store, config),
            runner_for=runner_for,
        )
        carried = CarriedProofs(store, list(job.targets), skip)
        return cls(store, run_id, ProofRunner.start(recipe), job, carried, traces, data_dir=data_dir)

    @property
    def locations(self) -> list[str]:
        return list(self.job.targets)

    @property
    def target_count(self) -> int:
        return sum(len(found) for found in self.job.targets.values())

    def has_work(self, location: str) -> bool:
        return location not in self._proved and bool(self.job.targets.get(location) or self.carried.waiting(location))

    def prove(self, location: str, *, retriever: TextEncoder | None, indexes: PremiseIndexes | None = None) -> None:
        """Attempt the sorries of ``location`` (once per run), with premises from
        ``retriever`` when given, through the index ``indexes`` keeps (the evaluation's
        after a training step: nothing is embedded or built again)."""
        if location in self._proved:
            return
        self._proved.add(location)
        targets, directory = self.job.targets, self.job.checkouts[location]
        recipe = self.runner.recipe
        paths = [t.theorem.path for t in targets.get(location, ())]
        paths += [c.stored.theorem.path for c in self.carried.waiting(location)]
        build = build_checkout(self._traces.get(location), directory, paths, recipe.config, data_dir=self.data_dir)
        if build is not None:
            self.builds[location] = build
            if not build.usable:  # a repository-level outcome: no attempt is a failure for it
                return
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
        if not targets.get(location):  # only carried proofs to check: no retriever needed
            return
        runner = self.runner
        if retriever is not None:
            from retrieval.embeddings import EmbeddingStore, PremiseIndexes

            indexes = indexes or PremiseIndexes(
                EmbeddingStore.of_data_dir(self.data_dir),
                options=recipe.config.index,
                device=retriever.placement.index_device,
            )
            # The repository's own premises suffice: no other repository's are accessible
            # from its theorems (imports are followed within a repository).
            runner = runner.with_retriever(
                retriever, (self._traces[location],), snapshot=self.data_dir / "retriever", indexes=indexes
            )
        reports = prove_targets(
            self.store, self.run_id, targets[location], checkouts=self.job.checkouts, prove=runner.run
        )
        self.attempts += [
            dataclasses.replace(r, detail=f"{note}; {r.detail}") if (note := self._withdrawn.get(r.key)) else r
            for r in reports
        ]

    def write_patches(self, directory: Path, name: str, *, keep_restatements: bool = False) -> WrittenBack:
        """The run's proofs written back (:func:`agent.proving.write_back.write_patches`),
        after the proofs that only restate a lemma of their repository are flagged in
        :attr:`attempts` (left out unless ``keep_restatements``)."""
        self.attempts = flag_restatements(self.attempts, list(self._traces.values()))
        return write_patches(
            self.attempts,
            self.locations,
            {t.key: t for t in self.job.known},
            self._traces,
            self.job.checkouts,
            directory,
            name,
            keep_restatements=keep_restatements,
            cache_dir=self.data_dir / "cache",
        )

    def close(self) -> None:
        self.runner.close()
