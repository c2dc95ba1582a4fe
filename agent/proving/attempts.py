"""The attempts of a proving run: one report per attempt (:class:`AttemptReport`), each
recorded in the database as it finishes (:func:`prove_targets`), those of before an
interruption read back (:func:`earlier_attempts`), and proofs that only restate a lemma
flagged (:func:`flag_restatements`)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.proving.recheck import CARRIED_BACKEND
from agent.proving.scale import ProofDone, ProofJob
from agent.proving.theorem import ProofAttempt
from curriculum.results import StoredTheorem, TheoremKey, theorem_key
from curriculum.store import Store
from lean_env.proofs.axioms import nonstandard
from lean_env.records import AttemptOutcome, RepoTrace

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
            tried=attempt.tried,
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
