"""Proving the stored ``sorry`` theorems of a job: which theorems, checked out where, every
attempt recorded in the database as it finishes, and the prover's lifecycle across a
lifelong run (one repository after another, each with the retriever as trained so far).

Used by ``leanagent prove`` and by the lifelong job (:mod:`agent.lifelong`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.prove import ProofAttempt, ProvingConfig
from agent.scale import ProofDone, ProofJob, ProofRunner, ProverRecipe
from curriculum.results import StoredTheorem
from curriculum.store import Store
from lean_env.errors import UserInputError
from lean_env.records import AttemptOutcome, RepoSpec, RepoTrace, TheoremStatus
from lean_env.repos import parse_spec, resolve

if TYPE_CHECKING:
    from retrieval.embeddings import PremiseIndexes
    from retrieval.encoder import TextEncoder

# Runs proof jobs somewhere (this process, Ray workers) and yields each as it finishes.
ProofExecutor = Callable[[list[ProofJob]], Iterator[ProofDone]]


@dataclass(frozen=True, slots=True)
class AttemptReport:
    """One proof attempt of a run, as reports show it."""

    theorem: str  # the theorem's full name
    repository: str  # its repository's location
    outcome: AttemptOutcome
    proof: str | None  # the checked proof (PROVED), or the candidate the final check rejected
    tactics: int | None  # tactics in the found proof (0 without one); None: not known any more
    expansions: int  # search nodes expanded
    seconds: float
    detail: str  # one line: why it ended so

    @property
    def proved(self) -> bool:
        return self.outcome is AttemptOutcome.PROVED

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "outcome": self.outcome.value}

    @classmethod
    def of(cls, stored: StoredTheorem, attempt: ProofAttempt) -> AttemptReport:
        search = attempt.search
        return cls(
            theorem=stored.theorem.full_name,
            repository=stored.location,
            outcome=attempt.outcome,
            proof=attempt.proof,
            tactics=len(search.proof or ()) if search else 0,
            expansions=search.expansions if search else 0,
            seconds=attempt.seconds,
            detail=attempt.detail,
        )


def select_targets(store: Store, names: Sequence[str] | None, repo: str | None) -> list[StoredTheorem]:
    """The stored sorry theorems to prove: all, those of the repository ``repo`` (a spec),
    or those called ``names`` (each must name exactly one)."""
    location = parse_spec(repo).location if repo else None
    sorries = store.theorems(status=TheoremStatus.SORRY, location=location)
    if repo and not store.theorems(location=location):
        raise UserInputError(f"no stored repository is {location}")
    if names is None:
        return sorries
    chosen = []
    for name in dict.fromkeys(names):
        found = [t for t in sorries if t.theorem.full_name == name]
        if not found:
            raise UserInputError(f"no stored sorry theorem is called {name!r}")
        if len(found) > 1:
            raise UserInputError(
                f"{name!r} is a sorry theorem of several repositories "
                f"({', '.join(t.location for t in found)}); choose one with --repo"
            )
        chosen += found
    return chosen


def checkout_all(theorems: Sequence[StoredTheorem], *, cache_dir: Path) -> dict[str, Path]:
    """The directory of every repository of ``theorems``, at its stored commit (clones of
    URLs live in ``cache_dir``); a repository changed since ingestion is the user's error."""
    return {loc: _checkout(loc, commit, cache_dir) for loc, commit in {(t.location, t.commit) for t in theorems}}


def _checkout(location: str, commit: str, cache_dir: Path) -> Path:
    local = not RepoSpec(location).is_remote
    # A local directory is proved where it is (its stored commit may be a content hash).
    checkout = resolve(RepoSpec(location, None if local else commit), cache_dir=cache_dir)
    if checkout.commit != commit:
        raise UserInputError(
            f"{location} changed since it was ingested (now {checkout.commit[:16]}, stored {commit[:16]}); "
            "run 'leanagent ingest' on it again first"
        )
    return checkout.path


def prove_targets(
    store: Store,
    run_id: int,
    targets: Sequence[StoredTheorem],
    *,
    checkouts: Mapping[str, Path],
    prove: ProofExecutor,
) -> list[AttemptReport]:
    """Prove every target that run ``run_id`` has not attempted yet with ``prove``, record
    each attempt as it finishes, and return one report per attempt made now, in target
    order. ``checkouts`` maps repositories to their directories."""
    from tqdm import tqdm

    done = {a.theorem_id for a in store.attempts(run_id=run_id)}
    jobs = [ProofJob(t.id, t.location, checkouts[t.location], t.theorem) for t in targets if t.id not in done]
    reports: dict[int, AttemptReport] = {}
    stored = {t.id: t for t in targets}
    for finished in tqdm(prove(jobs), total=len(jobs), desc="proving", unit="theorem", disable=None):
        attempt = finished.attempt
        store.record_attempt(
            run_id=run_id,
            theorem_id=finished.job.key,
            outcome=attempt.outcome,
            seconds=attempt.seconds,
            nodes=attempt.search.expansions if attempt.search else 0,
            backend=finished.backend,
            proof=attempt.proof if attempt.outcome is AttemptOutcome.PROVED else None,
        )
        reports[finished.job.key] = AttemptReport.of(stored[finished.job.key], attempt)
    return [reports[job.key] for job in jobs if job.key in reports]


def earlier_attempts(store: Store, run_id: int, theorems: Sequence[StoredTheorem]) -> list[AttemptReport]:
    """Reports, as :func:`prove_targets` gives them, of the attempts run ``run_id`` recorded
    at ``theorems`` before now (a resumed run); what only the search knew is not stored."""
    by_id = {t.id: t for t in theorems}
    return [
        AttemptReport(
            theorem=by_id[a.theorem_id].theorem.full_name,
            repository=by_id[a.theorem_id].location,
            outcome=a.outcome,
            proof=a.proof,
            tactics=None,
            expansions=a.nodes,
            seconds=a.seconds,
            detail="attempted before the run resumed",
        )
        for a in store.attempts(run_id=run_id)
        if a.theorem_id in by_id
    ]


class RepositoryProver:
    """Proves the sorries of a job's repositories, each repository at most once per run,
    with the premises of the retriever as trained so far; collects every attempt of the run
    (those of before an interruption too) and writes the proofs back as patches."""

    def __init__(
        self,
        store: Store,
        run_id: int,
        runner: ProofRunner,
        *,
        targets: dict[str, list[StoredTheorem]],
        known: Sequence[StoredTheorem],
        checkouts: dict[str, Path],
        traces: Sequence[RepoTrace],
        data_dir: Path,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.runner = runner
        self.targets = targets  # location -> its sorry theorems, in curriculum order
        self.checkouts = checkouts
        self.data_dir = data_dir  # the embedding store's home
        self.snapshot = data_dir / "retriever"  # where the retriever is saved for Ray workers
        # Each repository's newest trace: the premises its theorems may use.
        self._traces = {t.spec.location: t for t in traces}
        self._known = {(t.location, t.theorem.full_name): t for t in known}
        # A resumed run reports the attempts it made before the interruption too (by then
        # proved_by_us, those it proved are no sorry targets any more).
        self.attempts: list[AttemptReport] = earlier_attempts(store, run_id, known)
        self._proved: set[str] = set()

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
    ) -> RepositoryProver:
        """Check out the repositories ``locations`` (in curriculum order), make sure Lean is
        there and load the generator, before any training: a missing toolchain or a bad
        generator is reported before hours of work, not after."""
        from lean_env.lean.runner import LeanRunner

        targets = {loc: store.theorems(status=TheoremStatus.SORRY, location=loc) for loc in locations}
        known = [t for loc in locations for t in store.theorems(location=loc)]
        # Every repository, not only those with sorries left: a resumed run writes the
        # patches of proofs it found before the interruption too.
        checkouts = checkout_all(known, cache_dir=data_dir / "cache")
        for directory in checkouts.values():
            LeanRunner.for_project(directory)  # raises LeanNotFoundError, with how to install
        runner = ProofRunner.start(ProverRecipe(config, data_dir))
        return cls(
            store,
            run_id,
            runner,
            targets=targets,
            known=known,
            checkouts=checkouts,
            traces=traces,
            data_dir=data_dir,
        )

    @property
    def locations(self) -> list[str]:
        return list(self.targets)

    @property
    def target_count(self) -> int:
        return sum(len(found) for found in self.targets.values())

    def has_work(self, location: str) -> bool:
        return location not in self._proved and bool(self.targets.get(location))

    def prove(self, location: str, *, retriever: TextEncoder | None, indexes: PremiseIndexes | None = None) -> None:
        """Attempt the sorries of ``location`` (once per run), with premises from
        ``retriever`` when given, through the index ``indexes`` keeps (the evaluation's
        after a training step: nothing is embedded or built again)."""
        if location in self._proved:
            return
        self._proved.add(location)
        runner = self.runner
        if retriever is not None:
            from retrieval.embeddings import EmbeddingStore, PremiseIndexes

            indexes = indexes or PremiseIndexes(EmbeddingStore.of_data_dir(self.data_dir))
            # The repository's own premises suffice: no other repository's are accessible
            # from its theorems (imports are followed within a repository).
            runner = runner.with_retriever(
                retriever, (self._traces[location],), snapshot=self.snapshot, indexes=indexes
            )
        self.attempts += prove_targets(
            self.store, self.run_id, self.targets[location], checkouts=self.checkouts, prove=runner.run
        )

    def write_patches(self, directory: Path, name: str) -> dict[str, str]:
        """One patch per repository with proofs found in this run (``git apply`` format),
        written to ``directory``; returns repository -> patch file."""
        from agent.report import write_text_atomically
        from lean_env.proofs.writeback import ProofEdit, render_diff

        patches = {}
        for number, location in enumerate(self.locations, start=1):
            edits = [
                ProofEdit(self._known[(location, a.theorem)].theorem, a.proof or "")
                for a in self.attempts
                if a.repository == location and a.proved
            ]
            if edits:
                path = directory / f"{name}-{number}-{Path(location).name or 'repo'}.patch"
                write_text_atomically(path, render_diff(self.checkouts[location], edits))
                patches[location] = str(path)
        return patches

    def close(self) -> None:
        self.runner.close()
