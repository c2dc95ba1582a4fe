"""What proving a job's repositories gave (:class:`ProvingOutcome`): the one record that
``prove`` prints and ``run`` reports, made by :meth:`agent.proving.repositories.RepositoryProver.outcome`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.proving.patches import WrittenBack

if TYPE_CHECKING:
    from agent.proving.attempts import AttemptReport
    from agent.proving.recheck import RecheckResult
    from lean_env.lean.build import BuildOutcome


@dataclass(frozen=True, slots=True)
class ProvingOutcome:
    attempts: tuple[AttemptReport, ...]  # every attempt of the run, earlier ones first
    # How many of `attempts` were made before the run was interrupted and resumed.
    resumed: int
    targets: int  # sorry theorems not left alone, with those whose carried proof failed
    skipped: dict[str, int]  # repository -> its sorries left alone (skip globs), not in `targets`
    # Sorries left alone as exercises (agent/proving/exercises.py), not in `targets`:
    # (path, theorem, why) per repository.
    exercises: dict[str, list[tuple[str, str, str]]] = dataclasses.field(default_factory=dict)
    # Repository -> Lean's verdicts on the found proofs carried over to its new version.
    rechecked: dict[str, tuple[RecheckResult, ...]] = dataclasses.field(default_factory=dict)
    # Repository -> how its toolchain changed from the version before ("X -> Y"), when it did.
    bumps: dict[str, str] = dataclasses.field(default_factory=dict)
    # Repository -> how building its checkout went; one that failed had no attempts.
    builds: dict[str, BuildOutcome] = dataclasses.field(default_factory=dict)
    # The patches, and for URL repositories the branches and stale proofs (`run`; `prove`
    # writes nothing back).
    written: WrittenBack = dataclasses.field(default_factory=WrittenBack)

    @property
    def patches(self) -> dict[str, str]:
        """Repository -> the patch file of its proofs (git apply format)."""
        return self.written.patches

    @property
    def made_now(self) -> tuple[AttemptReport, ...]:
        """The attempts made since the run last (re)started."""
        return self.attempts[self.resumed :]
