"""A proof replayed tactic by tactic in a proof environment, to show where it goes wrong."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lean_env.interactive.interface import (
    LeanError,
    ProofBackend,
    ProofFinished,
    TacticState,
    TacticTimeout,
)
from lean_env.records import Theorem


@dataclass(frozen=True, slots=True)
class ReplayStep:
    """One tactic of a replayed proof and what the proof environment answered."""

    tactic: str
    outcome: str  # the result's kind: TacticState, ProofFinished, LeanError or TacticTimeout
    goals: str | None = None  # the goals left (TacticState)
    error: str | None = None  # Lean's message (LeanError)
    seconds: float | None = None  # the time limit that ran out (TacticTimeout)

    def to_json(self) -> dict[str, Any]:
        """The step for JSON output: the fields its outcome has."""
        step: dict[str, Any] = {"tactic": self.tactic, "outcome": self.outcome}
        for name in ("goals", "error", "seconds"):
            value = getattr(self, name)
            if value is not None:
                step[name] = value
        return step


def replay_tactics(
    backend: ProofBackend,
    repo: Path,
    theorem: Theorem,
    tactics: Sequence[str],
    *,
    on_step: Callable[[ReplayStep], None] | None = None,
) -> list[ReplayStep]:
    """Run ``tactics`` one after another on ``theorem``'s goal; stop at the first that
    finishes the proof, fails or times out. ``on_step`` sees each step (a progress bar)."""
    steps: list[ReplayStep] = []
    with backend.open(repo, theorem) as session:
        state = session.initial_state
        for tactic in tactics:
            result = session.run_tactic(state, tactic)
            kind = type(result).__name__
            if isinstance(result, TacticState):
                step = ReplayStep(tactic, kind, goals=result.pp)
                state = result
            elif isinstance(result, LeanError):
                step = ReplayStep(tactic, kind, error=result.message)
            elif isinstance(result, TacticTimeout):
                step = ReplayStep(tactic, kind, seconds=result.seconds)
            else:
                step = ReplayStep(tactic, kind)
            steps.append(step)
            if on_step:
                on_step(step)
            if isinstance(result, (ProofFinished, LeanError, TacticTimeout)):
                break
    return steps
