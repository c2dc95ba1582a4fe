"""Checking found proofs again with Lean: the proofs carried over to a repository's new
version before it is proved (:class:`agent.proving.repositories.RepositoryProver`), and on demand every
proof found for a repository's newest version (``leanagent recheck``), after a toolchain or
dependency bump the stored versions do not show (a new Lean on PATH, a rebuilt cache).

One Lean accepts holds and is recorded as the run's proof at that version; one it rejects
broke there and is withdrawn: its theorem is a `sorry` target again. A timeout, errors only
outside the theorem (the file is broken, not the proof), or a check that could not run tell
nothing: the proof is left as it was, for a later check."""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from curriculum.results import FoundProof
from curriculum.store import Store
from lean_env.errors import LeanAgentError
from lean_env.lean.runner import FileRunner
from lean_env.proofs.final_check import Verdict, check_proof
from lean_env.records import AttemptOutcome

log = logging.getLogger(__name__)

# The backend of an attempt that checked a found proof again instead of searching.
CARRIED_BACKEND = "carried"


class Recheck(enum.StrEnum):
    HOLDS = "holds"  # Lean accepts it at the theorem's commit: recorded as the run's proof
    BROKE = "broke"  # Lean rejects it (or it is vacuous) there: withdrawn, a target again
    UNKNOWN = "unknown"  # a timeout, errors only elsewhere, or no check: left as it was


@dataclass(frozen=True, slots=True)
class RecheckResult:
    found: FoundProof
    verdict: Recheck
    why: str  # one line: Lean's reasons (BROKE, UNKNOWN); "" when it holds
    seconds: float  # in Lean
    axioms: tuple[str, ...] | None = None  # the audit's, when it holds

    def to_json(self) -> dict[str, object]:
        stored = self.found.stored
        return {
            "theorem": stored.theorem.full_name,
            "repository": stored.location,
            "path": stored.theorem.path,
            "commit": stored.commit,
            "checked_at_before": self.found.checked_at,
            "verdict": self.verdict.value,
            "why": self.why,
            "seconds": self.seconds,
            "axioms": None if self.axioms is None else list(self.axioms),
        }


def recheck_proofs(
    store: Store, run_id: int, proofs: Sequence[FoundProof], directory: Path, *, runner: FileRunner, timeout: float
) -> list[RecheckResult]:
    """Have ``runner``'s Lean check each of ``proofs`` in ``directory`` (the checkout of their
    theorems' commit), record those that hold as run ``run_id``'s proofs and withdraw those
    that broke."""
    results = []
    for found in proofs:
        stored, theorem = found.stored, found.stored.theorem
        try:
            check = check_proof(directory, theorem, found.proof, runner=runner, timeout=timeout)
        except LeanAgentError as error:  # the file could not be read, Lean could not run
            log.warning(
                "%s: its proof accepted at %s could not be checked (%s); left as it was",
                theorem.full_name,
                found.checked_at[:12],
                error,
            )
            results.append(RecheckResult(found, Recheck.UNKNOWN, f"no check: {error}", 0.0))
            continue
        if check.accepted:
            store.record_attempt(
                run_id=run_id,
                theorem_id=stored.id,
                outcome=AttemptOutcome.PROVED,
                seconds=check.seconds,
                nodes=0,
                backend=CARRIED_BACKEND,
                proof=found.proof,
            )
            results.append(RecheckResult(found, Recheck.HOLDS, "", check.seconds, check.axioms))
        elif check.verdict is Verdict.TIMEOUT or check.only_elsewhere:
            why = "ran out of time" if check.verdict is Verdict.TIMEOUT else "; ".join(check.reasons)
            log.warning(
                "%s: the check of its proof accepted at %s is unknown%s (%s); left as it was",
                theorem.full_name,
                found.checked_at[:12],
                _elsewhere(found.checked_at, stored.commit),
                why,
            )
            results.append(RecheckResult(found, Recheck.UNKNOWN, why, check.seconds))
        else:
            store.withdraw_found_proof(stored.id)
            why = "; ".join(check.reasons) or str(check.verdict)
            log.warning(
                "%s: Lean rejects its proof accepted at %s%s (%s)",
                theorem.full_name,
                found.checked_at[:12],
                _elsewhere(found.checked_at, stored.commit),
                why,
            )
            results.append(RecheckResult(found, Recheck.BROKE, why, check.seconds))
    return results


def _elsewhere(checked_at: str, commit: str) -> str:
    """`` at COMMIT``, where the proof is checked at another commit than the one it was
    accepted at; nothing where it is the same (``accepted at 8177b24a at 8177b24a``)."""
    return "" if commit == checked_at else f" at {commit[:12]}"
