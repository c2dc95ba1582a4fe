"""Checking found proofs again with Lean: the proofs carried over to a repository's new
version before it is proved (:class:`agent.proving.repositories.RepositoryProver`), and on demand every
proof found for a repository's newest version (``leanagent recheck``), after a toolchain or
dependency bump the stored versions do not show (a new Lean on PATH, a rebuilt cache).

One Lean accepts holds and is recorded as the run's proof at that version; one it rejects
broke there and is withdrawn: its theorem is a `sorry` target again. A timeout, errors only
outside the theorem (the file is broken, not the proof), an import that failed (the checkout
is not built), or a check that could not run tell nothing: the proof is left as it was, for a
later check. ``recheck`` builds each checkout first, as ``run`` does
(:func:`recheck_repository`); where the build fails, no proof of it is checked."""

from __future__ import annotations

import enum
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from curriculum.results import FoundProof
from curriculum.store import Store
from lean_env.errors import LeanAgentError, UserInputError
from lean_env.lean.runner import FileRunner
from lean_env.proofs.final_check import Verdict, check_proof
from lean_env.records import AttemptOutcome, RepoSpec, RepoTrace
from lean_env.repos import parse_spec

if TYPE_CHECKING:
    from lean_env.lean.build import BuildOutcome

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


@dataclass(frozen=True, slots=True)
class RepositoryRecheck:
    """``recheck`` of one repository: how its checkout was built, and Lean's verdicts."""

    location: str
    build: BuildOutcome | None  # None: no build asked (--no-build)
    results: tuple[RecheckResult, ...]


def recheck_repository(
    store: Store,
    run_id: int,
    proofs: Sequence[FoundProof],
    directory: Path,
    *,
    trace: RepoTrace | None,
    runner: FileRunner,
    check_timeout: float,
    build_timeout: float | None,
    data_dir: Path,
) -> RepositoryRecheck:
    """Build the checkout ``directory`` (the imports of the files of ``proofs``, as ``run``
    builds before proving; ``build_timeout`` None: not), then :func:`recheck_proofs`. A build
    that fails or times out checks nothing: every proof is UNKNOWN, left as it was (Lean
    would reject every file on its imports, which says nothing of a proof)."""
    from agent.proving.targets import build_imports

    location = proofs[0].stored.location if proofs else str(directory)
    paths = sorted({p.stored.theorem.path for p in proofs})
    build = build_imports(trace, directory, paths, timeout=build_timeout, data_dir=data_dir)
    if build is not None and not build.usable:
        log.warning(
            "%s: %d found proof(s) not checked, left as they were: the checkout could not be built (%s)",
            location,
            len(proofs),
            build.text(),
        )
        why = f"not checked: {build.text()}"
        return RepositoryRecheck(location, build, tuple(RecheckResult(p, Recheck.UNKNOWN, why, 0.0) for p in proofs))
    results = recheck_proofs(store, run_id, proofs, directory, runner=runner, timeout=check_timeout)
    return RepositoryRecheck(location, build, tuple(results))


def stored_location(text: str, stored: Collection[str]) -> str:
    """The stored repository ``text`` names: its location as stored, or as ingestion reads a
    repos file's or the command line's (a relative path against the current directory, ``~``
    expanded; a URL without its trailing ``/``); else the user's error, naming those stored
    under the same name."""
    if text in stored:
        return text
    try:
        location = parse_spec(text).location
    except UserInputError:
        location = text
    if location in stored:
        return location
    name = RepoSpec(location).name
    alike = sorted(loc for loc in stored if RepoSpec(loc).name == name)
    read = f" (read as {location})" if location != text else ""
    hint = f"; stored under that name: {', '.join(alike)}" if alike else "; 'leanagent db stats' lists them"
    raise UserInputError(f"no stored repository {text!r}{read}{hint}")


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
