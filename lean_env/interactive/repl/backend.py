"""The Lean REPL as a :class:`~lean_env.interactive.interface.ProofBackend`: the fast path.

Opening a theorem sends its file, up to the theorem, with the theorem's statement and
``:= by sorry`` (see :mod:`lean_env.interactive.repl.theorem_text`) to the pooled process of the file's
import header; the `sorry`'s ``proofState`` is the initial state. A tactic is one
``{"tactic", "proofState"}`` request. Answers map onto the four outcomes:

* an error message, a ``Lean error`` response, a kernel rejection (``proofStatus`` "Error"),
  a `sorry` the tactic introduced, or goals closed with metavariables left -> ``LeanError``;
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
    LeanError,
    ProofFinished,
    SessionClosedError,
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
    TheoremSourceError,
)
from lean_env.interactive.repl.locate import repl_command
from lean_env.interactive.repl.pool import (
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
from lean_env.records import Theorem

logger = logging.getLogger(__name__)

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
        return LeanError("the tactic closes goals with `sorry`, which proves nothing")
    if response.goals:
        return None
    if status is ProofStatus.CONTAINS_MVARS:
        return LeanError("no goals remain, but the proof term still has metavariables")
    if status not in (ProofStatus.COMPLETED, ProofStatus.ABSENT):
        # "Not verified: ..." or a status newer than this client: the final check decides.
        logger.warning("REPL proof status %r treated as finished", response.proof_status)
    info = [m.data for m in response.messages]
    return ProofFinished(message="\n".join(info))


class ReplSession(ClosesOnExit):
    """One theorem open in a pooled REPL. Obtain from :meth:`ReplBackend.open`."""

    def __init__(self, backend: ReplBackend, key: PoolKey, theorem: Theorem, command: TheoremCommand) -> None:
        self.theorem = theorem
        self._backend = backend
        self._key = key
        self._command = command
        self._initial: TacticState | None = None
        self._incarnation: int | None = None
        self._ids: dict[tuple[str, ...], int] = {}  # tactic path -> proofState, this incarnation
        self._closed = False
        # Crashes and timeouts this session ran into, oldest first, for the caller to store.
        self.incidents: list[ReplCrashed | ReplTimedOut] = []

    # ------------------------------------------------------------------ opening

    def load(self) -> None:
        """Open the theorem on the current process (retrying once on a fresh one if it dies)."""
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
        handle = ReplStateHandle(sorry.proof_state, outcome.incarnation, (), id(self))
        goal = TacticState(sorry.goal, handle)
        if self._initial is not None and goal != self._initial:
            raise ReplStateLostError(
                f"re-opening {self.theorem.full_name} on a new REPL gave a different goal:\n"
                f"{goal.pp}\ninstead of\n{self._initial.pp}"
            )
        self._initial = self._initial or goal
        self._incarnation = outcome.incarnation
        self._ids = {(): sorry.proof_state}

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

    # ------------------------------------------------------------------ ProofSession

    @property
    def initial_state(self) -> TacticState:
        if self._initial is None:
            raise SessionClosedError("the session is not loaded; use ReplBackend.open")
        return self._initial

    def run_tactic(self, state: TacticState, tactic: str) -> TacticResult:
        """Run ``tactic`` on ``state`` (a state of this session), replaying it first if its
        process is gone."""
        if self._closed:
            raise SessionClosedError(f"the session for {self.theorem.full_name} is closed")
        handle = state.handle
        if not isinstance(handle, ReplStateHandle) or handle.session != id(self):
            raise ValueError(f"not a state of this REPL session ({self.theorem.full_name}): {state!r}")
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

        A replayed tactic that times out or crashes the process is returned as that outcome
        (the step did not run: we do not know its result); Lean answering differently from
        before raises :class:`ReplStateLostError`.
        """
        slot = self._backend.pool.get(self._key)
        if slot.incarnation != self._incarnation:
            logger.info("REPL for %s was restarted; re-opening the theorem", self.theorem.full_name)
            self.load()
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

    def close(self) -> None:
        """Forget the session (the REPL keeps no per-session resources to free); idempotent."""
        self._closed = True
        self._ids = {}


class ReplBackend(ClosesOnExit):
    """Opens theorems in pooled Lean REPL processes. Use as a context manager."""

    name = "repl"

    def __init__(self, pool: ReplPool, *, tactic_timeout: float = 10.0, command_timeout: float = 300.0) -> None:
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
        tactic_timeout: float = 10.0,
        command_timeout: float = 300.0,
        header_timeout: float = 600.0,
        recycling: Recycling = Recycling(),
    ) -> ReplBackend:
        """A backend with its own pool; no process starts before the first :meth:`open`.

        ``launcher`` overrides how processes start (tests, custom wrappers); otherwise the
        search of :func:`~lean_env.interactive.repl.locate.repl_command` decides per project, given
        ``repl`` (an explicit binary) and ``cache_dir`` (where
        :func:`~lean_env.interactive.repl.locate.build_repl` builds).
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
        source = repo_dir / theorem.path
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as e:
            raise TheoremSourceError(
                f"cannot read {theorem.path} in {repo_dir} for theorem {theorem.full_name}: {e}"
            ) from e
        command = theorem_command(text, theorem)
        key = PoolKey(project_dir=repo_dir.resolve(), header=command.header.text)
        session = ReplSession(self, key, theorem, command)
        session.load()
        return session

    def close(self) -> None:
        """Stop every REPL process; idempotent."""
        self.pool.close()
