"""The Lean REPL as a :class:`~lean_env.interactive.interface.ProofBackend`: the fast path.

Opening a theorem sends its file, up to the theorem, with the theorem's statement and
``:= by sorry`` (see :mod:`lean_env.interactive.repl.theorem_text`) to the pooled process of the file's
import header; the `sorry`'s ``proofState`` is the initial state. A tactic is one
``{"tactic", "proofState"}`` request. Answers map onto the four outcomes:

* an error message, a ``Lean error`` response, a kernel rejection (``proofStatus`` "Error"),
  a `sorry` the tactic introduced, or goals closed with metavariables left -> ``LeanError``
  (a tactic whose text uses ``sorry`` or ``admit`` is one without being sent, as in every
  backend: :mod:`lean_env.interactive.session`);
* no goals and ``proofStatus`` "Completed" -> ``ProofFinished``;
* goals -> ``TacticState`` (goals joined by blank lines, as LeanDojo prints them);
* no answer within ``tactic_timeout`` -> ``TacticTimeout`` (the process tree is killed).

**States survive restarts.** A state's handle holds the tactic path from the initial state
and the incarnation of the process that made it. When that process is gone (a timeout
killed it, it crashed, the pool evicted it, a memory cap ended it), the next tactic on the
state first re-opens the theorem on the new process and replays the path, checking that
each replayed state shows the same goals; only if Lean then disagrees (it should not: it is
deterministic) does :class:`ReplStateLostError` say the state is lost.

**Crashes are recorded.** A tactic whose process dies is retried once on a fresh process
(the crash may come from memory the process accumulated, not from the tactic). If it
crashes again, the tactic's outcome is a ``LeanError`` saying the REPL crashed, and both
attempts are in :attr:`ReplSession.incidents` (and the pool's ``incidents``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

from lean_env.closing import ClosesOnExit
from lean_env.interactive.interface import (
    OPEN_TIMEOUT,
    TACTIC_TIMEOUT,
    LeanError,
    ProofFinished,
    TacticResult,
    TacticState,
    TacticTimeout,
    normalize_goals,
)
from lean_env.interactive.repl.errors import (
    ReplCrashError,
    ReplError,
    ReplOpenError,
    ReplProtocolError,
    ReplTimeoutError,
)
from lean_env.interactive.repl.find import repl_command
from lean_env.interactive.repl.pool import (
    HEADER_TIMEOUT,
    Launcher,
    PoolKey,
    Recycling,
    ReplCrashed,
    ReplOutcome,
    ReplPool,
    ReplReply,
    ReplTimedOut,
)
from lean_env.interactive.repl.process import DEFAULT_MEMORY_LIMIT_MB, ReplCommand
from lean_env.interactive.repl.protocol import (
    CommandRequest,
    CommandResponse,
    ErrorResponse,
    ProofStatus,
    ProofStepResponse,
    ReplSorry,
    TacticRequest,
)
from lean_env.interactive.repl.theorem_text import TheoremCommand, theorem_command
from lean_env.interactive.session import SORRY_REJECTED, GuardedSession
from lean_env.proofs.theorem_source import read_theorem_file
from lean_env.records import Theorem

logger = logging.getLogger(__name__)

# Seconds the command that opens a theorem (the declarations of its file before it, then its
# statement) may take, by default: as long as any backend's opening.
COMMAND_TIMEOUT = OPEN_TIMEOUT

_LEAN_ERROR_PREFIX = "Lean error:\n"


class ReplStateLostError(ReplError):
    """A proof state could not be rebuilt on a new REPL process."""


@dataclass(frozen=True, slots=True)
class ReplStateHandle:
    """What a :class:`TacticState` from this backend carries: enough to rebuild it anywhere."""

    proof_state: int  # the REPL's proofState id, valid in `incarnation` only
    incarnation: int  # which process made it (see PooledRepl.incarnation)
    path: tuple[str, ...]  # tactics from the initial state, to replay on a new process
    # Which ReplSession made it (its id()): a path means nothing in another theorem's session.
    session: int = field(default=0, compare=False)


def outcome_of_step(response: ProofStepResponse) -> TacticResult | None:
    """The search outcome of a tactic's answer; None when it is a new state.

    Kept apart from I/O so that it is one table, tested against recorded answers.
    """
    if response.errors:
        return LeanError("\n\n".join(m.data for m in response.errors))
    status = response.status
    if status is ProofStatus.ERROR:
        return LeanError(response.proof_status or "the kernel rejected the proof")
    if response.sorries or status is ProofStatus.CONTAINS_SORRY:
        return LeanError(SORRY_REJECTED)
    if response.goals:
        return None
    if status is ProofStatus.CONTAINS_MVARS:
        return LeanError("no goals remain, but the proof term still has metavariables")
    if status not in (ProofStatus.COMPLETED, ProofStatus.ABSENT):
        # "Not verified: ..." or a status newer than this client: the final check decides.
        logger.warning("REPL proof status %r treated as finished", response.proof_status)
    info = [m.data for m in response.messages]
    return ProofFinished(message="\n".join(info))


class ReplSession(GuardedSession[ReplStateHandle]):
    """One theorem open in a pooled REPL. Obtain from :meth:`ReplBackend.open`."""

    kind = "REPL"

    def __init__(self, backend: ReplBackend, key: PoolKey, theorem: Theorem, command: TheoremCommand) -> None:
        super().__init__(theorem)
        self._backend = backend
        self._key = key
        self._command = command
        self._incarnation: int | None = None
        self._ids: dict[tuple[str, ...], int] = {}  # tactic path -> proofState, this incarnation
        # Crashes and timeouts this session ran into, oldest first, for the caller to store.
        self.incidents: list[ReplCrashed | ReplTimedOut] = []

    # ------------------------------------------------------------------ opening

    def _start(self) -> TacticState:
        """Open the theorem on the current process (retrying once on a fresh one if it dies);
        its initial state."""
        outcome = self._send_open()
        if isinstance(outcome, ReplCrashed):
            logger.info("REPL died opening %s; retrying on a new process", self.theorem.full_name)
            outcome = self._send_open()
        if isinstance(outcome, ReplTimedOut):
            raise ReplTimeoutError(
                f"opening {self.theorem.full_name} ({self.theorem.path}) took over {outcome.seconds:g} s",
                seconds=outcome.seconds,
            )
        if isinstance(outcome, ReplCrashed):
            raise ReplCrashError(
                f"the Lean REPL died twice opening {self.theorem.full_name} ({self.theorem.path})",
                returncode=outcome.returncode,
                stderr_tail=outcome.stderr_tail,
            )
        sorry = self._initial_sorry(outcome.response)
        assert sorry.proof_state is not None
        self._incarnation = outcome.incarnation
        self._ids = {(): sorry.proof_state}
        return TacticState(sorry.goal, ReplStateHandle(sorry.proof_state, outcome.incarnation, (), id(self)))

    def _send_open(self) -> ReplOutcome:
        slot = self._backend.pool.get(self._key)
        request = CommandRequest(cmd=self._command.cmd, env=slot.header_env)
        outcome = slot.run(request, timeout=self._backend.command_timeout)
        if not isinstance(outcome, ReplReply):
            self.incidents.append(outcome)
        return outcome

    def _initial_sorry(self, response: object) -> ReplSorry:
        name = f"{self.theorem.full_name} ({self.theorem.path})"
        if not isinstance(response, CommandResponse):
            raise ReplOpenError(f"the Lean REPL refused to open {name}: {response}")
        start = self._command.statement_start
        in_statement = [m for m in response.errors if (m.pos.line, m.pos.column) >= (start.line, start.column)]
        for m in response.errors:
            if m not in in_statement:
                logger.warning(
                    "%s: Lean error before the theorem, at line %d: %s",
                    self.theorem.path,
                    m.pos.line + self._command.line_offset,
                    m.data,
                )
        if in_statement:
            raise ReplOpenError(
                f"Lean rejects the statement of {name}: "
                + "; ".join(f"line {m.pos.line + self._command.line_offset}: {m.data}" for m in in_statement)
            )
        ours = [s for s in response.sorries if s.pos == self._command.sorry_pos]
        if not ours or ours[-1].proof_state is None:
            raise ReplOpenError(
                f"the Lean REPL gave no proof state for {name} (the `sorry` at command position "
                f"{self._command.sorry_pos} is not among {len(response.sorries)} reported)"
            )
        return ours[-1]

    # ------------------------------------------------------------------ tactics

    def _handle(self, handle: object) -> ReplStateHandle | None:
        return handle if isinstance(handle, ReplStateHandle) and handle.session == id(self) else None

    def _run_tactic(self, state: TacticState, handle: ReplStateHandle, tactic: str) -> TacticResult:
        """Run ``tactic`` on ``state``, replaying it first if its process is gone."""
        outcome = self._step(state, handle.path, tactic)
        if isinstance(outcome, ReplCrashed):
            logger.info("REPL died on %r; retrying once on a new process", tactic)
            outcome = self._step(state, handle.path, tactic)
        if isinstance(outcome, ReplCrashed):
            return LeanError(f"{outcome.describe()} while running this tactic (twice)")
        if isinstance(outcome, ReplTimedOut):
            return TacticTimeout(outcome.seconds)
        return self._result(outcome, handle.path + (tactic,))

    def _step(self, state: TacticState, path: tuple[str, ...], tactic: str) -> ReplOutcome:
        proof_state = self._resolve(state, path)
        if not isinstance(proof_state, int):
            return proof_state  # the replay timed out or crashed: that is this step's outcome
        slot = self._backend.pool.get(self._key)
        outcome = slot.run(
            TacticRequest(tactic=tactic, proof_state=proof_state),
            timeout=self._backend.tactic_timeout,
        )
        if not isinstance(outcome, ReplReply):
            self.incidents.append(outcome)
        return outcome

    def _result(self, outcome: ReplReply, path: tuple[str, ...]) -> TacticResult:
        response = outcome.response
        if isinstance(response, ErrorResponse):
            if response.message.startswith(_LEAN_ERROR_PREFIX):
                return LeanError(response.message.removeprefix(_LEAN_ERROR_PREFIX))
            raise ReplProtocolError(f"the Lean REPL refused a tactic of {self.theorem.full_name}", raw=response.message)
        if not isinstance(response, ProofStepResponse):
            raise ReplProtocolError("a tactic got a command's answer", raw=repr(response))
        result = outcome_of_step(response)
        if result is not None:
            return result
        if outcome.incarnation == self._incarnation:
            self._ids[path] = response.proof_state
        return TacticState(
            "\n\n".join(response.goals),
            ReplStateHandle(response.proof_state, outcome.incarnation, path, id(self)),
        )

    def _resolve(self, state: TacticState, path: tuple[str, ...]) -> int | ReplTimedOut | ReplCrashed:
        """The proofState id of ``path`` on the current process, replaying what is missing.

        A replayed tactic (or re-opening the theorem) that times out, or a replayed tactic
        that crashes the process, is returned as that outcome (the step did not run: we do not
        know its result); Lean answering differently from before raises
        :class:`ReplStateLostError`.
        """
        slot = self._backend.pool.get(self._key)
        if slot.incarnation != self._incarnation:
            logger.info("REPL for %s was restarted; re-opening the theorem", self.theorem.full_name)
            try:
                goal = self._start()
            except ReplTimeoutError as error:  # re-opening is the replay's first step
                return ReplTimedOut(seconds=error.seconds, incarnation=slot.incarnation)
            if goal != self.initial_state:
                raise ReplStateLostError(
                    f"re-opening {self.theorem.full_name} on a new REPL gave a different goal:\n"
                    f"{goal.pp}\ninstead of\n{self.initial_state.pp}"
                )
        for depth in range(1, len(path) + 1):
            prefix = path[:depth]
            if prefix in self._ids:
                continue
            goals = self._replay(prefix)
            if not isinstance(goals, str):
                return goals
            if depth == len(path) and normalize_goals(goals) != state.key:
                raise ReplStateLostError(
                    f"replaying {list(path)} of {self.theorem.full_name} on a new REPL gave "
                    f"other goals:\n{goals}\ninstead of\n{state.pp}"
                )
        return self._ids[path]

    def _replay(self, path: tuple[str, ...]) -> str | ReplTimedOut | ReplCrashed:
        """Run the last tactic of ``path`` on its parent's state; returns the goals shown,
        or the timeout or crash that stopped it."""
        parent = self._ids[path[:-1]]
        slot = self._backend.pool.get(self._key)
        outcome = slot.run(TacticRequest(tactic=path[-1], proof_state=parent), timeout=self._backend.tactic_timeout)
        if not isinstance(outcome, ReplReply):
            self.incidents.append(outcome)
            return outcome
        if (
            outcome.incarnation != self._incarnation
            or not isinstance(outcome.response, ProofStepResponse)
            or outcome_of_step(outcome.response) is not None
        ):
            raise ReplStateLostError(
                f"replaying {list(path)} of {self.theorem.full_name} on a new REPL failed "
                f"({outcome}); the state is lost"
            )
        self._ids[path] = outcome.response.proof_state
        logger.debug("replayed %d tactic(s) of %s", len(path), self.theorem.full_name)
        return "\n\n".join(outcome.response.goals)

    def _close(self) -> None:
        """Forget the session's states (the REPL keeps no per-session resources to free)."""
        self._ids = {}


class ReplBackend(ClosesOnExit):
    """Opens theorems in pooled Lean REPL processes. Use as a context manager."""

    name = "repl"

    def __init__(
        self, pool: ReplPool, *, tactic_timeout: float = TACTIC_TIMEOUT, command_timeout: float = COMMAND_TIMEOUT
    ) -> None:
        if not all(math.isfinite(t) and t > 0 for t in (tactic_timeout, command_timeout)):
            raise ValueError(f"REPL timeouts must be finite and positive, got {tactic_timeout}, {command_timeout}")
        self.pool = pool
        self.tactic_timeout = tactic_timeout
        self.command_timeout = command_timeout

    @classmethod
    def create(
        cls,
        *,
        repl: Path | None = None,
        cache_dir: Path | None = None,
        launcher: Launcher | None = None,
        max_processes: int = 2,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        tactic_timeout: float = TACTIC_TIMEOUT,
        command_timeout: float = COMMAND_TIMEOUT,
        header_timeout: float = HEADER_TIMEOUT,
        recycling: Recycling = Recycling(),
    ) -> ReplBackend:
        """A backend with its own pool; no process starts before the first :meth:`open`.

        ``launcher`` overrides how processes start (tests, custom wrappers); otherwise the
        search of :func:`~lean_env.interactive.repl.find.repl_command` decides per project, given
        ``repl`` (an explicit binary) and ``cache_dir`` (where
        :func:`~lean_env.interactive.repl.find.build_repl` builds).
        """

        def locate(project_dir: Path) -> ReplCommand:
            return repl_command(project_dir, repl=repl, cache_dir=cache_dir)

        pool = ReplPool(
            launcher or locate,
            max_size=max_processes,
            memory_limit_mb=memory_limit_mb,
            header_timeout=header_timeout,
            recycling=recycling,
        )
        return cls(pool, tactic_timeout=tactic_timeout, command_timeout=command_timeout)

    def open(self, repo_dir: Path, theorem: Theorem) -> ReplSession:
        """Open ``theorem`` of the repository checked out at ``repo_dir``.

        Raises :class:`TheoremSourceError` when its file is missing or does not fit its
        positions, :class:`ReplOpenError` when Lean rejects its statement, and other
        :class:`ReplError` faults when the REPL cannot be run.
        """
        command = theorem_command(read_theorem_file(repo_dir, theorem), theorem)
        key = PoolKey(project_dir=repo_dir.resolve(), header=command.header.text)
        session = ReplSession(self, key, theorem, command)
        session.start()
        return session

    def close(self) -> None:
        """Stop every REPL process; idempotent."""
        self.pool.close()
