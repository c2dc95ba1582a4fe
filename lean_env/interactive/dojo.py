"""The LeanDojo backend: ``lean_dojo.Dojo`` (lean-dojo 4.20.0) behind our proof interface.

``Dojo(theorem, timeout=…)`` is a context manager whose ``__enter__`` returns
``(dojo, initial_state)``; ``dojo.run_tac(state, tactic)`` returns a ``lean_dojo``
``TacticState`` / ``ProofFinished`` / ``LeanError`` / ``ProofGivenUp``, and raises
``DojoTacticTimeoutError`` (the tactic ran past ``timeout`` seconds -- LeanDojo's timeout
is per interaction), ``DojoCrashError`` (the Lean process died) or, on entry,
``DojoInitError``. We map them to:

========================  =================================================================
``TacticState``           :class:`~lean_env.interactive.interface.TacticState` (handle: see below)
``ProofFinished``         :class:`~lean_env.interactive.interface.ProofFinished` with Lean's message
``LeanError``             :class:`~lean_env.interactive.interface.LeanError`
``ProofGivenUp``          :class:`~lean_env.interactive.interface.LeanError` (the tactic used ``sorry``;
                          :data:`~lean_env.interactive.session.SORRY_REJECTED`)
``DojoTacticTimeoutError`` :class:`~lean_env.interactive.interface.TacticTimeout`; LeanDojo's process is
                          then in an unknown state, so it is closed and a fresh ``Dojo`` is
                          entered on the next tactic, replaying the state's tactic path
``DojoCrashError``        :class:`DojoCrashedError` (the session is closed)
``DojoInitError``         :class:`DojoOpenError` (so is any other failure of entering, such as
                          an assert of LeanDojo's tracing; the half-entered Dojo is exited)
========================  =================================================================

A ``lean_dojo.Theorem`` needs the repository as a ``LeanGitRepo``; the backend takes a
factory from the repository directory, by default ``LeanGitRepo.from_path`` (the checkout's
HEAD commit; LeanDojo traces that commit, so uncommitted changes are not seen). The file
path is the theorem's repository-relative path and the name its full name.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from lean_env.errors import BackendError, UserInputError
from lean_env.interactive.interface import (
    OPEN_TIMEOUT,
    TACTIC_TIMEOUT,
    LeanError,
    ProofFinished,
    TacticResult,
    TacticState,
    TacticTimeout,
)
from lean_env.interactive.session import SORRY_REJECTED, GuardedSession
from lean_env.lean import budget
from lean_env.records import Theorem
from lean_env.trace.dojo import configure_dojo_env

log = logging.getLogger(__name__)


class DojoUnavailableError(UserInputError):
    """The dojo backend was asked for but lean-dojo is not installed."""

    def __init__(self) -> None:
        super().__init__("the dojo backend needs the lean-dojo package: pip install 'leanagent[dojo]'")


class DojoOpenError(BackendError):
    """LeanDojo could not open the theorem (``DojoInitError`` or a crash on entry)."""


class DojoCrashedError(BackendError):
    """LeanDojo's Lean process died while running a tactic."""


@dataclass(frozen=True, slots=True)
class DojoHandle:
    """Our handle on a LeanDojo state: which ``Dojo`` it lives in and how to reach it again."""

    generation: int  # which Dojo process of this session produced ``state``
    state: Any = field(repr=False)  # the lean_dojo.TacticState
    path: tuple[str, ...]  # tactics from the initial state, to replay after a restart
    # Which DojoSession made it (its id()): a path means nothing in another theorem's session.
    session: int = field(compare=False)


def _lean_dojo(cache_dir: Path | None = None) -> Any:
    """Import lean_dojo, first pointing its cache at ``cache_dir`` (it reads that at import)."""
    if cache_dir is not None:
        configure_dojo_env(cache_dir)
    try:
        import lean_dojo
    except ImportError as e:
        raise DojoUnavailableError() from e
    return lean_dojo


def _default_repo_factory(repo_dir: Path) -> Any:
    return _lean_dojo().LeanGitRepo.from_path(repo_dir)


@dataclass(frozen=True, slots=True)
class DojoBackend:
    """Opens theorems with LeanDojo. ``dojo_class`` and ``repo_factory`` are test seams."""

    name: ClassVar[str] = "dojo"

    # Seconds one interaction (one tactic) may take; LeanDojo's own per-interaction timeout.
    timeout: float = TACTIC_TIMEOUT
    # repo dir -> lean_dojo.LeanGitRepo; the default uses the checkout's HEAD commit.
    repo_factory: Callable[[Path], Any] = _default_repo_factory
    # The Dojo class (lean_dojo.Dojo unless a test substitutes a fake).
    dojo_class: Any = None
    # LeanDojo's CACHE_DIR, the same one tracing uses; None leaves lean_dojo's environment
    # as it is (tests, or a caller that configured it already).
    cache_dir: Path | None = None

    def open(self, repo_dir: Path, theorem: Theorem) -> DojoSession:
        """Enter a ``Dojo`` on ``theorem`` of the repository at ``repo_dir``."""
        lean_dojo = _lean_dojo(self.cache_dir)
        if not theorem.path.endswith(".lean"):
            raise UserInputError(f"theorem {theorem.full_name}: {theorem.path} is not a .lean file")
        try:
            repo = self.repo_factory(repo_dir)
        except Exception as e:  # LeanGitRepo raises git, network and value errors alike
            raise DojoOpenError(f"LeanDojo cannot use {repo_dir} as a git repository: {e}") from e
        target = lean_dojo.Theorem(repo, Path(theorem.path), theorem.full_name)
        dojo_class = self.dojo_class or lean_dojo.Dojo
        # LeanDojo reads the initial state within the Dojo's timeout: entering elaborates the
        # file up to the theorem, which is no tactic, so it gets the opening's time (what is left
        # of the attempt's budget, when entered again after a timeout); each tactic then gets
        # its own (DojoSession._run).
        session = DojoSession(
            lambda: dojo_class(target, timeout=max(1, math.ceil(budget.clamp(OPEN_TIMEOUT)))),
            theorem=theorem,
            timeout=self.timeout,
        )
        session.start()
        return session

    def close(self) -> None:
        """Nothing to release: every session owns its Dojo."""


class DojoSession(GuardedSession[DojoHandle]):
    """One theorem in LeanDojo. Use :meth:`start` (or the backend's ``open``); ``close()`` is idempotent."""

    kind = "LeanDojo"

    def __init__(self, make_dojo: Callable[[], Any], *, theorem: Theorem, timeout: float) -> None:
        super().__init__(theorem)
        self._make_dojo = make_dojo
        self._timeout = timeout
        self._context: Any = None  # the entered Dojo context manager, or None
        self._dojo: Any = None
        self._generation = 0
        # Tactic path -> lean_dojo state, for the current Dojo only (cleared when it exits), so
        # a state of an earlier Dojo is rebuilt from its deepest known prefix, not from scratch.
        self._states: dict[tuple[str, ...], Any] = {}
        self._lean_dojo = _lean_dojo()

    def _start(self) -> TacticState:
        """Enter the first Dojo; its initial state."""
        initial = self._enter()
        return TacticState(initial.pp, handle=DojoHandle(self._generation, initial, (), id(self)))

    def _handle(self, handle: object) -> DojoHandle | None:
        return handle if isinstance(handle, DojoHandle) and handle.session == id(self) else None

    def _run_tactic(self, state: TacticState, handle: DojoHandle, tactic: str) -> TacticResult:
        """Run ``tactic`` on the state in LeanDojo and map the outcome (module docstring)."""
        dojo_state = self._reach(handle)
        if dojo_state is None:
            return TacticTimeout(self._timeout)
        return self._run(dojo_state, handle.path, tactic)

    def _close(self) -> None:
        self._exit()

    def _run(self, dojo_state: Any, path: tuple[str, ...], tactic: str) -> TacticResult:
        errors = self._lean_dojo
        seconds = budget.clamp(self._timeout)
        if seconds <= 0:
            return TacticTimeout(self._timeout)
        # pexpect reads each answer within its spawn's `timeout`, which LeanDojo sets once for
        # the Dojo: what is left of the attempt's budget cuts it for this interaction.
        self._dojo.proc.timeout = seconds
        try:
            result = self._dojo.run_tac(dojo_state, tactic)
        except errors.DojoTacticTimeoutError:
            log.debug("tactic %r timed out on %s; restarting the Dojo", tactic, self.theorem.full_name)
            self._exit()
            return TacticTimeout(self._timeout)
        except errors.DojoCrashError as e:
            self.close()
            raise DojoCrashedError(
                f"LeanDojo's Lean process died ({e}) running {tactic!r} on {self.theorem.full_name}"
            ) from e
        if isinstance(result, errors.TacticState):
            self._states[(*path, tactic)] = result
            return TacticState(result.pp, handle=DojoHandle(self._generation, result, (*path, tactic), id(self)))
        if isinstance(result, errors.ProofFinished):
            return ProofFinished(result.message or "")
        if isinstance(result, errors.LeanError):
            return LeanError(result.error)
        if isinstance(result, errors.ProofGivenUp):
            return LeanError(SORRY_REJECTED)
        raise DojoCrashedError(f"LeanDojo returned an unknown result {result!r} for {tactic!r}")

    def _reach(self, handle: DojoHandle) -> Any:
        """The LeanDojo state for ``handle`` in the current Dojo, replaying after a restart.

        A state of an earlier Dojo (one a timeout ended) is rebuilt in the current one from
        the deepest prefix of its tactic path that the current one already reached; a Dojo
        is entered only when none runs. Returns None when the replay itself timed out (then
        the answer is a timeout too).
        """
        if self._dojo is not None and handle.generation == self._generation:
            return handle.state
        if self._dojo is None:
            self._enter()
        path = handle.path
        depth = max(d for d in range(len(path) + 1) if path[:d] in self._states)
        state = self._states[path[:depth]]
        for index in range(depth, len(path)):
            result = self._run(state, path[:index], path[index])
            if isinstance(result, TacticTimeout):
                return None
            if not isinstance(result, TacticState):
                raise DojoCrashedError(
                    f"replaying {path!r} on {self.theorem.full_name} after a restart "
                    f"gave {result!r} at {path[index]!r}; LeanDojo is not deterministic here"
                )
            reached = result.handle
            assert isinstance(reached, DojoHandle), "this backend's states carry its handles"
            state = reached.state
        if state.pp != handle.state.pp:
            raise DojoCrashedError(
                f"replaying {path!r} on {self.theorem.full_name} after a restart gave the goals "
                f"{state.pp!r} instead of {handle.state.pp!r}"
            )
        return state

    def _enter(self) -> Any:
        context = self._make_dojo()
        try:
            dojo, initial = context.__enter__()
        except Exception as e:  # DojoInitError, and the asserts and git errors of tracing
            # Entering may fail after Lean started: exiting kills it and removes the modified
            # file; when it failed before that, exiting has nothing to clean and may itself fail.
            try:
                context.__exit__(None, None, None)
            except Exception:
                log.debug("nothing to clean up after the failed Dojo entry", exc_info=True)
            raise DojoOpenError(
                f"LeanDojo could not open {self.theorem.full_name} in {self.theorem.path}: {type(e).__name__}: {e}"
            ) from e
        self._context, self._dojo = context, dojo
        self._generation += 1
        self._states = {(): initial}
        return initial

    def _exit(self) -> None:
        context, self._context, self._dojo = self._context, None, None
        self._states = {}
        if context is not None:
            try:
                context.__exit__(None, None, None)
            except Exception:  # LeanDojo's cleanup kills processes; a failure there is not ours
                log.warning("LeanDojo cleanup failed for %s", self.theorem.full_name, exc_info=True)
