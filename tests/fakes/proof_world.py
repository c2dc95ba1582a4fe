"""An in-process proof session over a table of moves, for search tests."""

from __future__ import annotations

from lean_env.interactive.interface import (
    LeanError,
    ProofFinished,
    TacticResult,
    TacticState,
    TacticTimeout,
)

DONE = "<done>"


class WorldSession:
    """An in-process proof session over a table: state -> tactic -> next state, DONE, an
    error or a timeout. Records the tactics run."""

    def __init__(self, start: str, moves: dict[str, dict[str, str | LeanError | TacticTimeout]]) -> None:
        self.start, self.moves, self.ran = start, moves, []

    @property
    def initial_state(self) -> TacticState:
        return TacticState(self.start)

    def run_tactic(self, state: TacticState, tactic: str) -> TacticResult:
        self.ran.append((state.pp, tactic))
        outcome = self.moves.get(state.pp, {}).get(tactic, LeanError(f"no move {tactic!r} from here"))
        if isinstance(outcome, str):
            return ProofFinished() if outcome == DONE else TacticState(outcome)
        return outcome

    def close(self) -> None:
        pass

    def __enter__(self) -> WorldSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
