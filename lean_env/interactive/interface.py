"""The one interface between proof search and Lean, whatever the backend.

A :class:`ProofBackend` opens a theorem and hands back a :class:`ProofSession`; the
session's :attr:`~ProofSession.initial_state` is the theorem's goal, and
:meth:`~ProofSession.run_tactic` maps a (state, tactic) pair to one of four outcomes:

* :class:`TacticState` -- the tactic ran; these goals remain;
* :class:`ProofFinished` -- no goals remain;
* :class:`LeanError` -- Lean rejected the tactic (the message says why);
* :class:`TacticTimeout` -- the tactic did not finish within the time limit.

These are values, not exceptions: search treats them all as ordinary results. Faults of the
infrastructure (a backend process that crashed and could not be restarted, a protocol
desync) raise :class:`~lean_env.errors.BackendError`.

A timeout is never a failure to prove and never "this tactic is wrong": it only says we
do not know.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol, runtime_checkable

from lean_env.errors import LeanAgentError
from lean_env.records import Theorem

_WHITESPACE_RE = re.compile(r"\s+")


# A hypothesis line of a goal (at the line's start): the names it binds, before ` : `.
_HYPOTHESIS_RE = re.compile(r"^((?:[^\s:⊢]+ )*[^\s:⊢]+) :", re.MULTILINE)


def hypothesis_names(pp: str) -> list[str]:
    """The names that the hypotheses of Lean's pretty-printed goals bind, in order
    (``x y`` of ``x y : Nat``; inaccessible ones such as ``a✝`` too)."""
    return [name for line in _HYPOTHESIS_RE.finditer(pp) for name in line.group(1).split()]


def hypotheses_and_target(goal: str) -> tuple[tuple[tuple[str, str], ...], str]:
    """The hypotheses, one ``(name, type)`` per name (``x y : Nat`` is two), and the target
    of one goal as Lean prints it: a line per hypothesis group, continuation lines indented,
    the target after ``⊢``; a leading ``case`` tag is no hypothesis."""
    lines = goal.strip().split("\n")
    if lines and lines[0].startswith("case "):
        lines = lines[1:]
    groups: list[list[str]] = []  # [names, type] per hypothesis line
    target: list[str] = []
    for line in lines:
        if target:
            target.append(line.strip())
        elif line.startswith("⊢"):
            target.append(line[1:].strip())
        elif groups and (line[:1].isspace() or " : " not in line):
            groups[-1][1] += " " + line.strip()  # the type goes on
        else:
            names, _, type_ = line.partition(" : ")
            groups.append([names, type_.strip()])
    return tuple((name, type_) for names, type_ in groups for name in names.split()), " ".join(target)


def normalize_goals(pp: str) -> str:
    """Lean's pretty-printed goals with every run of whitespace folded to one space.

    States from different backends (and line-width settings) then compare equal exactly
    when they show the same goals.
    """
    return _WHITESPACE_RE.sub(" ", pp).strip()


@dataclass(frozen=True, slots=True)
class TacticState:
    """Open goals after some tactics; equal when the normalised goals are equal.

    ``handle`` is the backend's own reference to this state (a REPL ``proofState`` id, a
    LeanDojo state id, the tactic prefix of a file check); it does not take part in equality,
    so search merges states that different tactic paths reach.
    """

    pp: str = field(compare=False)
    handle: object = field(default=None, compare=False)
    key: str = field(init=False, repr=False)  # what equality and hashing use

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", normalize_goals(self.pp))

    @property
    def goals(self) -> tuple[str, ...]:
        """The goals the state shows, one text each (Lean separates goals by blank lines)."""
        return tuple(g for g in re.split(r"\n\s*\n", self.pp.strip()) if g.strip())

    @property
    def num_goals(self) -> int:
        return len(self.goals)


@dataclass(frozen=True, slots=True)
class ProofFinished:
    """No goals remain. ``message`` carries any non-error output Lean printed."""

    message: str = ""


@dataclass(frozen=True, slots=True)
class LeanError:
    """Lean rejected the tactic; ``message`` is Lean's error text."""

    message: str


@dataclass(frozen=True, slots=True)
class TacticTimeout:
    """The tactic ran past the time limit. Not a failure: we simply do not know."""

    seconds: float


TacticResult = TacticState | ProofFinished | LeanError | TacticTimeout


class SessionClosedError(LeanAgentError, RuntimeError):
    """A proof session used before it was opened or after it was closed: the caller's bug,
    not an outcome of Lean (every backend raises this one)."""


@runtime_checkable
class ProofSession(Protocol):
    """An open theorem in one backend. Use as a context manager; ``close()`` is idempotent."""

    @property
    def initial_state(self) -> TacticState: ...

    def run_tactic(self, state: TacticState, tactic: str) -> TacticResult: ...

    def close(self) -> None: ...

    def __enter__(self) -> ProofSession: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


@runtime_checkable
class BatchSession(ProofSession, Protocol):
    """A session that runs many tactics of one state together (the file check runs them in
    one Lean run): the outcomes, in order, are those :meth:`ProofSession.run_tactic` gives
    one by one."""

    def run_tactics(self, state: TacticState, tactics: Sequence[str]) -> Iterable[TacticResult]: ...


def tactic_outcomes(session: ProofSession, state: TacticState, tactics: Sequence[str]) -> Iterator[TacticResult]:
    """The outcome of each of ``tactics`` after ``state``, in order: all at once where the
    session batches, else one at a time as they are read (a search that stops at a proof
    runs no tactic after it)."""
    if isinstance(session, BatchSession):
        yield from session.run_tactics(state, tactics)
    else:
        for tactic in tactics:
            yield session.run_tactic(state, tactic)


# Seconds one tactic may run in a proof environment unless the caller says otherwise: every
# backend's default and the prover's (--tactic-timeout), so a backend opened on its own cuts a
# tactic where a proof search would.
TACTIC_TIMEOUT = 60.0

# Seconds opening a theorem (elaborating its file up to it) may take unless the caller says
# otherwise. Opening is not a tactic, so the tactic timeout does not cut it: a search may give
# each tactic a few seconds and still open a theorem late in a long file. Inside an attempt,
# the attempt's budget cuts it (lean_env.lean.budget).
OPEN_TIMEOUT = 300.0


@runtime_checkable
class ProofBackend(Protocol):
    """Something that can open theorems of a repository checked out at ``repo_dir``."""

    @property
    def name(self) -> str:
        """The backend's name in attempts and reports ("file", "server", "dojo", "repl")."""
        ...

    def open(self, repo_dir: Path, theorem: Theorem) -> ProofSession: ...

    def close(self) -> None: ...
