"""The policy every backend's session shares, written once (pysmt's ``solve()`` around ``_solve()``).

A backend's session subclasses :class:`GuardedSession`, whose public methods are the
:class:`~lean_env.interactive.interface.ProofSession` interface and hold its rules:

* :meth:`~GuardedSession.start` takes the initial state from the backend's ``_start``; a
  session that fails to start is closed before the error propagates;
* :attr:`~GuardedSession.initial_state` refuses a session not started, and
  :meth:`~GuardedSession.run_tactic` one not started or closed
  (:class:`~lean_env.interactive.interface.SessionClosedError`) and a state this session did
  not make (``ValueError``: it may be another theorem's);
* a tactic that uses ``sorry`` or ``admit`` is a :class:`~lean_env.interactive.interface.LeanError`
  with the one message :data:`SORRY_REJECTED`, without running it;
* :meth:`~GuardedSession.close` is idempotent: the backend's ``_close`` runs once.

A backend writes only what is its own: how to start (``_start``), which handles are its
states' (``_handle``), how to run a tactic (``_run_tactic``) and what to release (``_close``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Generic, TypeVar

from lean_env.closing import ClosesOnExit
from lean_env.interactive.interface import LeanError, SessionClosedError, TacticResult, TacticState
from lean_env.proofs.text import uses_sorry
from lean_env.records import Theorem

# What every backend answers for a tactic that gives up, whether the text says so before it
# runs or Lean says so after (a `declaration uses 'sorry'` warning, LeanDojo's ProofGivenUp).
SORRY_REJECTED = "tactics that use `sorry` or `admit` are rejected: they close goals without proof"

H = TypeVar("H")  # the backend's handle on one of its states (TacticState.handle)


class GuardedSession(ABC, ClosesOnExit, Generic[H]):
    """One theorem open in a backend: the shared guards around the backend's own steps
    (see the module docstring). Open it with the backend's ``open()``."""

    # The backend as the messages name it ("LeanDojo", "file-check", "REPL").
    kind: ClassVar[str]

    def __init__(self, theorem: Theorem) -> None:
        self.theorem = theorem
        self._initial: TacticState | None = None
        self._closed = False

    def start(self) -> None:
        """Open the theorem and keep its initial state; on failure, close and re-raise."""
        try:
            self._initial = self._start()
        except BaseException:
            self.close()
            raise

    @property
    def initial_state(self) -> TacticState:
        """The theorem's goal (still there after :meth:`close`)."""
        if self._initial is None:
            raise SessionClosedError(self._not_started())
        return self._initial

    def run_tactic(self, state: TacticState, tactic: str) -> TacticResult:
        """Run ``tactic`` on ``state``, a state of this session (one of the four outcomes)."""
        handle = self._own(state)
        refusal = self._refusal(tactic)
        if refusal is not None:
            return LeanError(refusal)
        return self._run_tactic(state, handle, tactic)

    def close(self) -> None:
        """Release what the session holds; idempotent."""
        if not self._closed:
            self._closed = True
            self._close()

    def _check_open(self) -> None:
        """Raise :class:`SessionClosedError` unless the session has started and is not closed."""
        if self._closed:
            raise SessionClosedError(f"the {self.kind} session on {self.theorem.full_name} is closed")
        if self._initial is None:
            raise SessionClosedError(self._not_started())

    def _not_started(self) -> str:
        return f"the {self.kind} session on {self.theorem.full_name} was not started; use its backend's open()"

    def _own(self, state: TacticState) -> H:
        """The handle of ``state``, after checking that the session is open and that it made ``state``."""
        self._check_open()
        handle = self._handle(state.handle)
        if handle is None:
            raise ValueError(f"not a state of this {self.kind} session ({self.theorem.full_name}): {state.pp!r}")
        return handle

    def _refusal(self, tactic: str) -> str | None:
        """Why ``tactic`` is a Lean error without running it, if it is (a backend may add reasons)."""
        return SORRY_REJECTED if uses_sorry(tactic) else None

    @abstractmethod
    def _start(self) -> TacticState:
        """Open the theorem in the backend; its initial state."""

    @abstractmethod
    def _handle(self, handle: object) -> H | None:
        """``handle`` as this session's own, or None when no state of this session carries it."""

    @abstractmethod
    def _run_tactic(self, state: TacticState, handle: H, tactic: str) -> TacticResult:
        """Run ``tactic`` on ``state`` (whose handle, this session's, is ``handle``)."""

    @abstractmethod
    def _close(self) -> None:
        """Release the backend's resources (called once)."""
