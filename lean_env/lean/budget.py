"""The wall-clock budget of one proving attempt, which every Lean call made inside it keeps.

An attempt (open the theorem, search, final check) runs inside :func:`time_budget`. Every
place that starts Lean with a timeout of its own (a ``lean FILE`` run, a language-server
check, a Lean REPL request, a LeanDojo interaction) asks :func:`clamp` for the time it may
take: its own timeout, cut to what is left of the budget. A call that runs past it is
abandoned as a timeout and its process group killed, as for its own timeout; a call that
would start once the budget is spent (:func:`clamp` <= 0) does not start and is answered as
timed out. So a theorem's attempt ends within its budget plus the time it takes to kill and
reap a process (a few seconds at most), also when Lean ignores its own limits (the 2021
Lean 4 loops on heartbeat errors).

Outside a budget nothing is cut. What is shared by many attempts is not cut either: a Lean
REPL's import of a file header (loaded once per process, docs/lean-backends.md) and builds.

A context variable rather than a parameter: the budget crosses the four backends'
``open``/``run_tactic`` seams and the final check, and none of them should change its
signature for it (asyncio's and trio's cancel scopes work the same way). It is per thread
and per Ray worker task, as the attempts are.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# time.monotonic() at which the innermost budget ends; None outside any.
_DEADLINE: ContextVar[float | None] = ContextVar("leanagent_lean_deadline", default=None)


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Every Lean call inside ends within ``seconds`` from now (or by an enclosing budget's
    end, when that comes first)."""
    if not (seconds > 0 and not math.isnan(seconds)):
        raise ValueError(f"a time budget needs a positive number of seconds, got {seconds!r}")
    deadline = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float:
    """Seconds left of the current budget (<= 0 once spent; infinite outside any)."""
    deadline = _DEADLINE.get()
    return math.inf if deadline is None else deadline - time.monotonic()


def clamp(timeout: float) -> float:
    """``timeout`` cut to what is left of the current budget; <= 0: do not start the call."""
    return min(timeout, remaining())


def spent() -> bool:
    """Whether the current budget has run out."""
    return remaining() <= 0
