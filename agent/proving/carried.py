"""The proofs carried over to a repository's new version (:mod:`curriculum.found_proofs`),
checked by Lean there before the repository is proved: one that holds is the run's proof
there (reported, written back); one that broke is withdrawn, and its theorem is a target
again, its new attempt's report saying why; one the check tells nothing of stays carried,
for the next run. Those in paths the skip globs leave alone are not checked."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.proving.attempts import AttemptReport
from agent.proving.recheck import Recheck, RecheckResult, recheck_proofs
from curriculum.results import FoundProof, StoredTheorem, TheoremKey
from curriculum.store import Store
from lean_env.lean.runner import FileRunner
from lean_env.records import AttemptOutcome, TheoremStatus
from lean_env.repos import is_skipped


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What checking one repository's carried proofs gave."""

    results: tuple[RecheckResult, ...]  # Lean's verdict on each (the report's "rechecked")
    proved: tuple[AttemptReport, ...]  # those that hold, as the run's attempts
    reopened: tuple[StoredTheorem, ...]  # the theorems of those that broke: targets again
    # theorem -> why its proof was withdrawn, for its new attempt's report
    withdrawn: dict[TheoremKey, str] = field(default_factory=dict)


class CarriedProofs:
    """The carried proofs of a run's repositories that Lean has not checked yet."""

    def __init__(self, store: Store, locations: Sequence[str], skip: Mapping[str, Sequence[str]]) -> None:
        self._store = store
        self._waiting: dict[str, list[FoundProof]] = {
            loc: [
                c
                for c in store.found_proofs(loc, unconfirmed=True)
                if not is_skipped(c.stored.theorem.path, skip.get(loc, ()))
            ]
            for loc in locations
        }

    def waiting(self, location: str) -> list[FoundProof]:
        return self._waiting.get(location, [])

    def confirm(
        self, location: str, directory: Path, *, run_id: int, runner: FileRunner, timeout: float
    ) -> Confirmation:
        """Have ``runner``'s Lean check the proofs carried over to ``location`` (checked out at
        ``directory``), once: the results are recorded under run ``run_id``."""
        carried = self._waiting.pop(location, [])
        results = recheck_proofs(self._store, run_id, carried, directory, runner=runner, timeout=timeout)
        proved, reopened, withdrawn = [], [], {}
        for result in results:
            stored, theorem = result.found.stored, result.found.stored.theorem
            found = f"carried over from {result.found.checked_at[:12]}"
            if result.verdict is Recheck.HOLDS:
                proved.append(
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
                withdrawn[stored.key] = f"its proof {found} broke at {stored.commit[:12]} ({result.why})"
                sorry = dataclasses.replace(theorem, status=TheoremStatus.SORRY, tactics=(), premises=())
                reopened.append(dataclasses.replace(stored, theorem=sorry))
        return Confirmation(tuple(results), tuple(proved), tuple(reopened), withdrawn)
