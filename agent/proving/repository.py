"""Proving the stored ``sorry`` theorems of a job: which theorems, checked out where, every
attempt recorded in the database as it finishes, and the prover's lifecycle across a
lifelong run (one repository after another, each with the retriever as trained so far).

Used by ``leanagent prove`` and by the lifelong job (:mod:`agent.lifelong.job`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.generators.suggester import StepMemory
from agent.proving.recheck import CARRIED_BACKEND, Recheck, RecheckResult, recheck_proofs
from agent.proving.scale import ProofDone, ProofJob, ProofRunner, ProverRecipe
from agent.proving.theorem import ProofAttempt, ProvingConfig
from agent.proving.theorem_refs import TheoremRef, resolve_refs
from curriculum.results import FoundProof, StoredTheorem, TheoremKey, theorem_key
from curriculum.store import Store
from lean_env.errors import LeanAgentError, UserInputError
from lean_env.lean.runner import FileRunner, LeanRunner
from lean_env.proofs.axioms import nonstandard
from lean_env.records import AttemptOutcome, RepoSpec, RepoTrace, TheoremStatus
from lean_env.repos import is_skipped, parse_spec, resolve, unmatched_globs

if TYPE_CHECKING:
    from lean_env.lean.build import BuildOutcome
    from lean_env.proofs.github import PullRequest
    from lean_env.proofs.writeback import FreshBranch, StaleProof
    from retrieval.embeddings import PremiseIndexes
    from retrieval.encoder import TextEncoder

log = logging.getLogger(__name__)

# The outcomes whose proof Lean compiled: recorded with the proof (a vacuous one for reports).
_CHECKED = (AttemptOutcome.PROVED, AttemptOutcome.VACUOUS)
# Runs proof jobs somewhere (this process, Ray workers) and yields each as it finishes.
ProofExecutor = Callable[[list[ProofJob]], Iterator[ProofDone]]


@dataclass(frozen=True, slots=True)
class AttemptReport:
    """One proof attempt of a run, as reports show it."""

    theorem: str  # the theorem's full name
    repository: str  # its repository's location
    path: str  # its file, relative to the repository: full names repeat across files
    outcome: AttemptOutcome
    proof: str | None  # the checked proof (PROVED, VACUOUS), or the candidate the final check rejected
    tactics: int | None  # tactics in the found proof (0 without one); None: not known any more
    expansions: int  # search nodes expanded
    seconds: float
    detail: str  # one line: why it ended so
    # The axioms the final check's audit found the theorem to depend on; None: no audit (no
    # proof checked, Lean printed none, or an attempt of before a resumption).
    axioms: tuple[str, ...] | None = None
    # A proof carried over from an earlier version and checked again here, not searched.
    carried: bool = False
    # Wall seconds in Lean (opening, tactics, final check); None: not known any more.
    lean_seconds: float | None = None
    # The premise of the repository that the proof only invokes, with the theorem's own
    # statement (agent/proving/restatements.py); such a proof is not written back unless asked.
    restates: str | None = None

    @property
    def proved(self) -> bool:
        return self.outcome is AttemptOutcome.PROVED

    @property
    def key(self) -> TheoremKey:
        return (self.repository, self.path, self.theorem)

    @property
    def nonstandard_axioms(self) -> tuple[str, ...]:
        return nonstandard(self.axioms or ())

    def to_json(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "outcome": self.outcome.value,
            "axioms": None if self.axioms is None else list(self.axioms),
            "nonstandard_axioms": list(self.nonstandard_axioms),
        }

    @classmethod
    def of(cls, stored: StoredTheorem, attempt: ProofAttempt) -> AttemptReport:
        search = attempt.search
        return cls(
            theorem=stored.theorem.full_name,
            repository=stored.location,
            path=stored.theorem.path,
            outcome=attempt.outcome,
            proof=attempt.proof,
            tactics=len(search.proof or ()) if search else 0,
            expansions=search.expansions if search else 0,
            seconds=attempt.seconds,
            detail=attempt.detail,
            axioms=attempt.check.axioms if attempt.check else None,
            lean_seconds=attempt.lean_seconds,
        )


def flag_restatements(reports: Sequence[AttemptReport], traces: Sequence[RepoTrace]) -> list[AttemptReport]:
    """``reports`` with :attr:`AttemptReport.restates` set on the proofs that only restate a
    lemma of their own repository (``traces``: the stored versions the theorems are of)."""
    from agent.proving.restatements import restated

    by_location = {t.spec.location: t for t in traces}
    theorems = {theorem_key(t.spec.location, th): th for t in traces for th in t.theorems}
    flagged = []
    for report in reports:
        theorem, trace = theorems.get(report.key), by_location.get(report.repository)
        restates = None
        if report.proved and theorem is not None and trace is not None:
            restates = restated(report.proof, theorem, trace.premises)
        if restates is not None and report.restates is None:
            report = dataclasses.replace(report, restates=restates, detail=f"restates {restates}; {report.detail}")
        flagged.append(report)
    return flagged


@dataclass(frozen=True, slots=True)
class Targets:
    """The sorry theorems a job proves, and how many it leaves alone (their paths are skipped)."""

    theorems: list[StoredTheorem]
    skipped: int


def select_targets(store: Store, names: Sequence[str] | None, repo: str | None, *, skip: Sequence[str] = ()) -> Targets:
    """The stored sorry theorems to prove: all, those of the repository ``repo`` (a spec),
    or those ``names`` name (``NAME`` or ``PATH:NAME``, :mod:`agent.proving.theorem_refs`; each must
    name exactly one); none in a path ``skip`` leaves alone (:func:`lean_env.repos.is_skipped`),
    and naming one of those is an error."""
    location = parse_spec(repo).location if repo else None
    sorries = store.theorems(status=TheoremStatus.SORRY, location=location)
    if repo and not store.theorems(location=location):
        raise UserInputError(f"no stored repository is {location}")
    kept = [t for t in sorries if not is_skipped(t.theorem.path, skip)]
    if names is None:
        return Targets(kept, len(sorries) - len(kept))
    chosen = resolve_refs([TheoremRef.parse(n) for n in names], sorries, what="stored sorry theorem")
    for stored in chosen:
        if is_skipped(stored.theorem.path, skip):
            raise UserInputError(f"{stored.theorem.full_name!r} is in {stored.theorem.path}, which --skip leaves alone")
    return Targets(chosen, 0)


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


def build_checkout(
    trace: RepoTrace | None, directory: Path, paths: Iterable[str], config: ProvingConfig, *, data_dir: Path
) -> BuildOutcome | None:
    """Build the checkout ``directory`` for the files ``paths`` of ``trace`` (their imports),
    dependencies shared in DATA_DIR/builds, as ``config`` asks; None when it asks for none."""
    from lean_env.lean.build import build_project

    if config.build_timeout is None:
        return None
    wanted = set(paths)
    imports = [m for f in (trace.files if trace is not None else ()) if f.path in wanted for m in f.imports]
    outcome = build_project(directory, imports, shared_root=data_dir / "builds", timeout=config.build_timeout)
    (log.info if outcome.usable else log.error)("%s: %s", directory, outcome.text())
    return outcome


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
            proof=attempt.proof if attempt.outcome in _CHECKED else None,
            steps=attempt.steps if attempt.outcome is AttemptOutcome.PROVED else (),
        )
        reports[finished.job.key] = AttemptReport.of(stored[finished.job.key], attempt)
    return [reports[job.key] for job in jobs if job.key in reports]


def earlier_attempts(store: Store, run_id: int, theorems: Sequence[StoredTheorem]) -> list[AttemptReport]:
    """Reports, as :func:`prove_targets` gives them, of the attempts run ``run_id`` recorded
    at ``theorems`` before now (a resumed run); what only the search knew is not stored.

    A run resumed after a new commit was ingested made some attempts at the version before.
    Those are history: a proof it found there was carried over to the new version, where
    proving the repository has Lean check it again (:meth:`RepositoryProver.prove`), and
    the theorems it failed on, if still `sorry`, are targets again."""
    by_id = {t.id: t for t in theorems}
    return [
        AttemptReport(
            theorem=by_id[a.theorem_id].theorem.full_name,
            repository=by_id[a.theorem_id].location,
            path=by_id[a.theorem_id].theorem.path,
            outcome=a.outcome,
            proof=a.proof,
            tactics=None,
            expansions=a.nodes,
            seconds=a.seconds,
            detail="carried over; checked again before the run resumed"
            if a.backend == CARRIED_BACKEND
            else "attempted before the run resumed",
            carried=a.backend == CARRIED_BACKEND,
        )
        for a in store.attempts(run_id=run_id)
        if a.theorem_id in by_id
    ]


@dataclass(frozen=True, slots=True)
class WrittenBack:
    """What became of a run's proofs: a patch per repository; for a URL repository, made on the
    newest commit of its branch, with a branch of one commit in its clone, ready to push, and
    the proofs whose sorry is gone or changed there left out (stale)."""

    patches: dict[str, str]  # repository -> its patch file (git apply format)
    branches: dict[str, FreshBranch]  # URL repository -> the branch in its clone
    stale: dict[str, tuple[StaleProof, ...]]  # URL repository -> the proofs left out
    failed: dict[str, str] = dataclasses.field(default_factory=dict)  # repository -> why its write-back failed
    # URL repository -> the pull request of its branch (run --pull-request)
    pull_requests: dict[str, PullRequest] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "patches": self.patches,
            "write_back_failed": self.failed,
            "branches": {location: branch.to_json() for location, branch in self.branches.items()},
            "pull_requests": {location: dataclasses.asdict(pr) for location, pr in self.pull_requests.items()},
            "stale": [
                {"repository": location, **dataclasses.asdict(proof)}
                for location, proofs in self.stale.items()
                for proof in proofs
            ],
        }


class RepositoryProver:
    """Proves the sorries of a job's repositories, each repository at most once per run,
    with the premises of the retriever as trained so far; collects every attempt of the run
    (those of before an interruption too) and writes the proofs back as patches.

    Before a repository's sorries, Lean checks the proofs carried over to its newest version
    from an earlier one (:mod:`curriculum.found_proofs`), which were checked only at the
    commit they were found at: one Lean accepts becomes this run's proof there (recorded,
    reported, written back); one it rejects is withdrawn, and its theorem is a target."""

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
        skipped: dict[str, int] | None = None,
        skip: Mapping[str, Sequence[str]] | None = None,
        exercises: Mapping[TheoremKey, str] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.runner = runner
        self.targets = targets  # location -> its sorry theorems, in curriculum order
        self.checkouts = checkouts
        self.data_dir = data_dir  # the embedding store's home
        self.snapshot = data_dir / "retriever"  # where the retriever is saved for Ray workers
        self.cache_dir = data_dir / "cache"  # the clones of URL repositories
        self.skipped = skipped or {}  # location -> its sorries left alone (skip globs), not targets
        self.exercises = dict(exercises or {})  # sorry -> why it is an exercise, left alone (not a target)
        # The carried proofs to check, but in paths a repository's skip globs leave alone.
        skip = skip or {}
        self._unconfirmed: dict[str, list[FoundProof]] = {
            loc: [
                c
                for c in store.found_proofs(loc, unconfirmed=True)
                if not is_skipped(c.stored.theorem.path, skip.get(loc, ()))
            ]
            for loc in targets
        }
        # location -> Lean's verdicts on the proofs carried over to it (the report's "rechecked")
        self.rechecked: dict[str, list[RecheckResult]] = {}
        # location -> how building its checkout went (none when the config asks for no build)
        self.builds: dict[str, BuildOutcome] = {}
        # Each repository's newest trace: the premises its theorems may use.
        self._traces = {t.spec.location: t for t in traces}
        self._known = {t.key: t for t in known}
        # A resumed run reports the attempts it made before the interruption too (by then
        # proved_by_us, those it proved are no sorry targets any more).
        self.attempts: list[AttemptReport] = earlier_attempts(store, run_id, known)
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
        ``skip`` gives a repository (globs) are left alone, only counted; so are exercises
        (:mod:`agent.proving.exercises`), listed with why, unless ``include_exercises``.
        ``runner_for`` is Lean for a checkout (the final checks)."""
        from agent.proving.exercises import exercises

        skip = skip or {}
        by_location = {t.spec.location: t for t in traces}
        for loc in locations:
            files = [f.path for f in by_location[loc].files] if loc in by_location else []
            for glob in unmatched_globs(files, skip.get(loc, ())):
                log.warning("skip=%s matches no file of %s: it leaves nothing alone", glob, loc)
        sorries = {loc: store.theorems(status=TheoremStatus.SORRY, location=loc) for loc in locations}
        targets = {
            loc: [t for t in found if not is_skipped(t.theorem.path, skip.get(loc, ()))]
            for loc, found in sorries.items()
        }
        skipped = {
            loc: len(found) - len(targets[loc]) for loc, found in sorries.items() if len(found) > len(targets[loc])
        }
        known = [t for loc in locations for t in store.theorems(location=loc)]
        # Every repository, not only those with sorries left: a resumed run writes the
        # patches of proofs it found before the interruption too.
        checkouts = checkout_all(known, cache_dir=data_dir / "cache")
        sorry_targets = [t for here in targets.values() for t in here]
        left = {} if include_exercises else exercises(sorry_targets, by_location, checkouts)
        targets = {loc: [t for t in here if t.key not in left] for loc, here in targets.items()}
        for directory in checkouts.values():
            runner_for(directory)  # raises LeanNotFoundError, with how to install
        recipe = ProverRecipe(
            config, data_dir, corpus=tuple(traces), memory=StepMemory.from_traces(traces), runner_for=runner_for
        )
        runner = ProofRunner.start(recipe)
        return cls(
            store,
            run_id,
            runner,
            targets=targets,
            known=known,
            checkouts=checkouts,
            traces=traces,
            data_dir=data_dir,
            skipped=skipped,
            skip=skip,
            exercises=left,
        )

    @property
    def locations(self) -> list[str]:
        return list(self.targets)

    @property
    def target_count(self) -> int:
        return sum(len(found) for found in self.targets.values())

    def has_work(self, location: str) -> bool:
        return location not in self._proved and bool(self.targets.get(location) or self._unconfirmed.get(location))

    def prove(self, location: str, *, retriever: TextEncoder | None, indexes: PremiseIndexes | None = None) -> None:
        """Attempt the sorries of ``location`` (once per run), with premises from
        ``retriever`` when given, through the index ``indexes`` keeps (the evaluation's
        after a training step: nothing is embedded or built again)."""
        if location in self._proved:
            return
        self._proved.add(location)
        paths = [t.theorem.path for t in self.targets.get(location, ())]
        paths += [c.stored.theorem.path for c in self._unconfirmed.get(location, ())]
        config = self.runner.recipe.config
        build = build_checkout(
            self._traces.get(location), self.checkouts[location], paths, config, data_dir=self.data_dir
        )
        if build is not None:
            self.builds[location] = build
            if not build.usable:  # a repository-level outcome: no attempt is a failure for it
                return
        self._confirm_carried(location)
        if not self.targets.get(location):  # only carried proofs to check: no retriever needed
            return
        runner = self.runner
        if retriever is not None:
            from retrieval.embeddings import EmbeddingStore, PremiseIndexes

            indexes = indexes or PremiseIndexes(
                EmbeddingStore.of_data_dir(self.data_dir),
                options=runner.recipe.config.index,
                device=retriever.placement.index_device,
            )
            # The repository's own premises suffice: no other repository's are accessible
            # from its theorems (imports are followed within a repository).
            runner = runner.with_retriever(
                retriever, (self._traces[location],), snapshot=self.snapshot, indexes=indexes
            )
        reports = prove_targets(
            self.store, self.run_id, self.targets[location], checkouts=self.checkouts, prove=runner.run
        )
        self.attempts += [
            dataclasses.replace(r, detail=f"{note}; {r.detail}") if (note := self._withdrawn.get(r.key)) else r
            for r in reports
        ]

    def _confirm_carried(self, location: str) -> None:
        """Have Lean check, in the checkout of ``location``, each proof carried over to it and
        not checked there yet (:func:`agent.proving.recheck.recheck_proofs`): one that holds is this
        run's proof there (reported, written back); one that broke is withdrawn and its
        theorem becomes a target; one the check tells nothing of stays carried, for the
        next run. Skipped paths are not checked."""
        carried = self._unconfirmed.pop(location, [])
        recipe, directory = self.runner.recipe, self.checkouts[location]
        runner = recipe.runner_for(directory)
        timeout = recipe.config.check_timeout
        results = recheck_proofs(self.store, self.run_id, carried, directory, runner=runner, timeout=timeout)
        self.rechecked[location] = results
        for result in results:
            stored, theorem = result.found.stored, result.found.stored.theorem
            found = f"carried over from {result.found.checked_at[:12]}"
            if result.verdict is Recheck.HOLDS:
                self.attempts.append(
                    AttemptReport(
                        theorem=theorem.full_name,
                        repository=location,
                        path=theorem.path,
                        outcome=AttemptOutcome.PROVED,
                        proof=result.found.proof,
                        tactics=len(theorem.tactics),
                        expansions=0,
                        seconds=result.seconds,
                        detail=f"{found}; Lean accepts it at {stored.commit[:12]} too",
                        axioms=result.axioms,
                        carried=True,
                        lean_seconds=result.seconds,
                    )
                )
            elif result.verdict is Recheck.BROKE:
                self._withdrawn[stored.key] = f"its proof {found} broke at {stored.commit[:12]} ({result.why})"
                reopened = dataclasses.replace(theorem, status=TheoremStatus.SORRY, tactics=(), premises=())
                targets = [*self.targets.get(location, ()), dataclasses.replace(stored, theorem=reopened)]
                self.targets[location] = sorted(targets, key=lambda t: t.id)  # trace order

    def write_patches(self, directory: Path, name: str, *, keep_restatements: bool = False) -> WrittenBack:
        """One patch per repository with proofs found in this run (``git apply`` format),
        written to ``directory``. A URL repository's remote is fetched first: its patch, and a
        branch in its clone, are made on the newest commit of its branch, without the proofs
        whose sorry is not there any more (:func:`lean_env.proofs.writeback.write_back_fresh`).
        A proof that only restates a lemma of its repository is flagged in :attr:`attempts`
        and left out, unless ``keep_restatements``."""
        from lean_env.files import write_text_atomically
        from lean_env.proofs.writeback import ProofEdit, render_diff, write_back_fresh

        self.attempts = flag_restatements(self.attempts, list(self._traces.values()))
        patches, branches, stale, failed = {}, {}, {}, {}
        for number, location in enumerate(self.locations, start=1):
            proved = [(self._known[a.key], a) for a in self.attempts if a.repository == location]
            edits = [
                ProofEdit(stored.theorem, a.proof or "")
                for stored, a in proved
                if a.proved and (keep_restatements or a.restates is None)
            ]
            if not edits:
                continue
            # One repository's write-back failing (its clone, its files, a position that does
            # not fit) loses that patch, never the report of the run that found the proofs.
            try:
                if RepoSpec(location).is_remote:
                    # Every theorem of a repository here is of its newest stored commit.
                    checked = proved[0][0].commit
                    spec = self._traces[location].spec
                    fresh = write_back_fresh(spec, edits, checked=checked, cache_dir=self.cache_dir)
                    diff, stale[location] = fresh.diff, fresh.stale
                    if fresh.branch is not None:
                        branches[location] = fresh.branch
                else:
                    diff = render_diff(self.checkouts[location], edits)
                if diff:
                    path = directory / f"{name}-{number}-{Path(location).name or 'repo'}.patch"
                    write_text_atomically(path, diff)
                    patches[location] = str(path)
            except LeanAgentError as error:
                log.error("the proofs of %s could not be written back: %s", location, error)
                failed[location] = str(error)
        return WrittenBack(patches, branches, {loc: found for loc, found in stale.items() if found}, failed)

    def close(self) -> None:
        self.runner.close()
