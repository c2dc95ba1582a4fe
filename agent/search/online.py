"""Generators that learn while they prove: the seam between the prover and such a
generator, and the session recorder that tells it what each tactic did.

The prover asks an :class:`OnlineGenerator` for one :class:`Episode` per theorem: a
:class:`~agent.search.tree.TacticGenerator` for that theorem's search that is also shown every
tactic's outcome (:meth:`Episode.observe`: e.g. a tactic Lean does not know). After Lean's
final check accepted a proof, the prover hands its steps, with the states they ran in, to
:meth:`OnlineGenerator.learn`, so that the very next theorem can use them. The best-first
search itself is unchanged: it sees a generator and a session, as before.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Protocol, runtime_checkable

from agent.search.tree import TacticGenerator
from lean_env.interactive.interface import (
    ProofFinished,
    ProofSession,
    TacticResult,
    TacticState,
    TacticTimeout,
    tactic_outcomes,
)
from lean_env.records import TacticOutcome, Theorem, TracedTactic, TriedTactic


class Episode(TacticGenerator, Protocol):
    """The generator of one theorem's search, shown the outcome of every tactic run."""

    def observe(self, state: TacticState, tactic: str, outcome: TacticResult) -> None: ...


@runtime_checkable
class OnlineGenerator(Protocol):
    """Gives an :class:`Episode` per theorem and learns the proofs Lean accepted."""

    def episode(self, location: str, theorem: Theorem) -> Episode: ...

    def learn(self, location: str, theorem: Theorem, steps: Sequence[TracedTactic]) -> tuple[TracedTactic, ...]:
        """Remember the checked proof ``steps`` of ``theorem`` (of the repository
        ``location``); returns the steps as remembered (with the premises they use)."""
        ...


class RecordingSession:
    """A :class:`~lean_env.interactive.interface.ProofSession` that passes every tactic to
    ``session``, shows its outcome to ``episode``, and keeps the outcomes so that a found
    proof's steps can be given with the states they ran in (:meth:`steps`)."""

    def __init__(self, session: ProofSession, episode: Episode) -> None:
        self._session = session
        self._episode = episode
        self._outcomes: dict[tuple[TacticState, str], TacticResult] = {}
        self.lean_seconds = 0.0  # wall time spent in the proof environment's tactic runs

    @property
    def initial_state(self) -> TacticState:
        return self._session.initial_state

    def run_tactic(self, state: TacticState, tactic: str) -> TacticResult:
        return next(self.run_tactics(state, (tactic,)))

    def run_tactics(self, state: TacticState, tactics: Sequence[str]) -> Iterator[TacticResult]:
        """As the wrapped session runs them (in one batch where it batches), each recorded
        and shown to the episode as it is read."""
        started = time.monotonic()
        for tactic, outcome in zip(tactics, tactic_outcomes(self._session, state, tactics), strict=True):
            self.lean_seconds += time.monotonic() - started
            self._outcomes[(state, tactic)] = outcome
            self._episode.observe(state, tactic, outcome)
            yield outcome
            started = time.monotonic()

    def steps(self, proof: Sequence[str]) -> tuple[TracedTactic, ...]:
        """The tactics of ``proof`` (a path this session ran from its initial state), each
        with the goals before and after it (None after the last: no goals remain)."""
        out = []
        state: TacticState | None = self.initial_state
        for tactic in proof:
            assert state is not None, f"{tactic!r} follows the step that closed the proof"
            after = self._outcomes[(state, tactic)]
            next_state = after if isinstance(after, TacticState) else None
            out.append(TracedTactic(tactic, state.pp, next_state.pp if next_state else None))
            state = next_state
        return tuple(out)

    def tried(self, proof: Sequence[str] = ()) -> tuple[TriedTactic, ...]:
        """Every tactic this session ran, once per state, in the order run, with what it did;
        the steps of ``proof`` (a path from the initial state) marked as on it."""
        on_proof = set()
        state: TacticResult = self.initial_state
        for tactic in proof:
            assert isinstance(state, TacticState), f"{tactic!r} follows the step that closed the proof"
            on_proof.add((state, tactic))
            state = self._outcomes[(state, tactic)]
        return tuple(
            TriedTactic(state.pp, tactic, *_outcome_of(outcome), on_proof=(state, tactic) in on_proof)
            for (state, tactic), outcome in self._outcomes.items()
        )

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> RecordingSession:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _outcome_of(result: TacticResult) -> tuple[TacticOutcome, int | None]:
    """A tactic's answer as recorded: its kind, and the goals it left (None: not known)."""
    if isinstance(result, TacticState):
        return TacticOutcome.STATE, result.num_goals
    if isinstance(result, ProofFinished):
        return TacticOutcome.PROOF, 0
    if isinstance(result, TacticTimeout):
        return TacticOutcome.TIMEOUT, None
    return TacticOutcome.ERROR, None
