"""A stand-in for ``lean_dojo.Dojo`` that answers with the real lean_dojo result classes.

Only the ``Dojo`` class is fake: results and exceptions are lean_dojo's own
(``TacticState``, ``ProofFinished``, ``LeanError``, ``ProofGivenUp``,
``DojoTacticTimeoutError``, ``DojoCrashError``, ``DojoInitError``), so the backend's mapping
is tested against what LeanDojo really returns. Like ``Dojo``, it is a context manager whose
``__enter__`` returns ``(dojo, initial_state)``, and ``run_tac(state, tactic)`` answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

import lean_dojo

# (goals of a state, tactic) -> a function of the next state id giving a lean_dojo result,
# or an exception instance/class to raise.
Table = Mapping[tuple[str, str], Callable[[int], Any]]


class FakeDojo:
    """Answers ``run_tac`` from ``table``; unknown tactics get LeanDojo's error value."""

    def __init__(
        self,
        theorem: Any,
        timeout: int,
        *,
        start: str,
        table: Table,
        log: list[tuple] | None = None,
        fail: Exception | None = None,
    ) -> None:
        self.theorem, self.timeout = theorem, timeout
        self._start, self._table, self._fail = start, table, fail
        self._log = log if log is not None else []
        self._next_sid = 0
        self.read_timeouts: list[float] = []  # the process's read timeout at each run_tac

    def __enter__(self) -> tuple[FakeDojo, lean_dojo.TacticState]:
        self._log.append(("enter", self.theorem.full_name, str(self.theorem.file_path), self.timeout))
        if self._fail is not None:
            raise self._fail
        # The real Dojo's REPL process (a pexpect spawn), here only its read timeout.
        self.proc = SimpleNamespace(timeout=self.timeout)
        return self, lean_dojo.TacticState(self._start, 0)

    def __exit__(self, *exc: object) -> None:
        self._log.append(("exit",))

    def run_tac(self, state: lean_dojo.TacticState, tactic: str) -> Any:
        if not isinstance(state, lean_dojo.TacticState):
            raise RuntimeError(f"Attempting to run a tactic on an invalid state {state}.")
        self._log.append(("run", tactic))
        self.read_timeouts.append(self.proc.timeout)
        self._next_sid += 1
        answer = self._table.get((state.pp, tactic))
        made = answer(self._next_sid) if answer else lean_dojo.LeanError("unknown tactic")
        if isinstance(made, Exception):
            raise made
        return made


def dojo_class(
    *,
    start: str,
    table: Table,
    log: list[tuple] | None = None,
    fail: Exception | None = None,
    made: list[FakeDojo] | None = None,
):
    """A ``Dojo``-shaped factory ``(theorem, timeout=…) -> FakeDojo`` for ``DojoBackend``;
    each Dojo it makes is appended to ``made``."""

    def make(theorem: Any, timeout: int) -> FakeDojo:
        dojo = FakeDojo(theorem, timeout, start=start, table=table, log=log, fail=fail)
        if made is not None:
            made.append(dojo)
        return dojo

    return make
