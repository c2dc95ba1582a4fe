"""Every solver call runs in child processes, under a deadline the parent enforces.

A solver's own time limit is a request: z3 checks it only between steps (and deleting its
context after a timeout took 14 s), cvc5 ignored it for minutes while translating, and none
of them notice SIGINT while in C code. So :func:`solve` never calls a solver in the calling
process. It starts one child per member of a :class:`Portfolio` (one for a single solver),
each with the :class:`~verify.smt.solvers.Problem` text, and waits for the first definitive
answer (sat or unsat), the deadline, or the end of every child; then it kills every child.
Hence:

* the wall-clock limit is the limit: past it the children are killed and the answer is
  UNKNOWN, whatever the solvers were doing;
* Ctrl-C in the parent (a ``KeyboardInterrupt`` out of the wait) kills the children before
  it propagates, within milliseconds;
* a race: the first sat/unsat wins and names its solver; an ``unknown`` from one member
  waits for the others.

Each child is a session leader, so "kill" is ``SIGKILL`` to its whole process group (a
``smtlib:CMD`` binary included), it ignores SIGINT (the parent decides, and a terminal's
Ctrl-C reaches only the parent's group), and on Linux it dies with the forkserver, which
dies with the parent (:mod:`verify.smt.forkserver_preload`), so a killed parent leaves no
solver running. Children come from
multiprocessing's *forkserver*: forking the parent (threads, pysmt state) is unsafe, spawning
costs an interpreter start per call, a fork of the single-threaded server that preloaded the
solver libraries costs about 5 ms.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import time
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from lean_env.process import kill_group
from verify.errors import SolverError, VerifyError, VerifyInputError
from verify.smt.solvers import (
    LIBRARY_SOLVERS,
    Problem,
    SmtBackend,
    SolveOutcome,
    Verdict,
    die_with_parent,
    installed,
    make_backend,
)

log = logging.getLogger(__name__)

PORTFOLIO = "portfolio"
# The default: z3 and bitwuzla race (those installed). `python bench/verify_scaling.py --sections
# solver --timeout 30` (docs/verify.md, "Solvers"): on length-64 UNSAT questions the two-way race
# beat z3 alone 1.6-2.5x and the three-way race 1.16-1.54x; cvc5 won none and timed out on one,
# so it races only when asked for.
AUTO = "auto"
_AUTO_MEMBERS = ("z3", "bitwuzla")
# The forkserver imports these once; every child forked from it has them loaded (and the
# first makes the server die with this process).
_PRELOAD = ["verify.smt.forkserver_preload", "verify.smt.solvers", "z3", "cvc5", "bitwuzla"]


@dataclass(frozen=True, slots=True)
class Portfolio:
    """The solvers that answer each question: several race, one runs alone."""

    name: str  # what was asked for: "portfolio", "z3", "z3,cvc5", "smtlib:..."; auto: its members
    members: tuple[SmtBackend, ...]


def make_portfolio(name: str) -> Portfolio:
    """The solvers called ``name``: ``auto`` (z3 and bitwuzla, those installed, racing),
    ``portfolio`` (z3, cvc5 and bitwuzla, those installed, racing), several names separated
    by commas (``z3,cvc5``: those race), or one solver by name.

    Unknown or missing solvers raise as in :func:`~verify.smt.solvers.make_backend`, before any work.
    """
    if name in (AUTO, PORTFOLIO):
        wanted = _AUTO_MEMBERS if name == AUTO else LIBRARY_SOLVERS
        members = tuple(make_backend(s) for s in wanted if installed(s)) or (make_backend("z3"),)
        return Portfolio(",".join(m.name for m in members) if name == AUTO else name, members)
    names = [part.strip() for part in name.split(",")] if "," in name and not name.startswith("smtlib:") else [name]
    if len(set(names)) != len(names) or "" in names:
        raise VerifyInputError(f"solver list {name!r} names a solver twice or names none")
    return Portfolio(name, tuple(make_backend(s) for s in names))


def _child(backend: SmtBackend, problem: Problem, timeout: float | None, conn: Connection) -> None:
    """A solver process: answer one problem, send ``("ok", outcome)`` or ``("error", message)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setsid()
    die_with_parent()
    try:
        message: tuple[str, Any] = ("ok", backend.solve(problem, timeout=timeout))
    except VerifyError as e:
        message = ("error", str(e))
    except Exception as e:  # the process boundary: whatever went wrong travels back as a message
        message = ("error", f"solver {backend.name} crashed: {type(e).__name__}: {e}")
    conn.send(message)
    conn.close()


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


@dataclass(slots=True)
class _Running:
    backend: SmtBackend
    process: Any  # multiprocessing.Process
    conn: Connection
    killed: bool = False  # reaped: its pid may belong to another process now


def _kill(run: _Running) -> None:
    """SIGKILL the child's process group (a child that is not yet its group's leader: the child),
    reap it and close its pipe; once only."""
    if run.killed:
        return
    run.killed = True
    if not kill_group(run.process.pid):
        run.process.kill()
    run.process.join()
    run.conn.close()


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """While a child starts, show multiprocessing a ``__main__`` without a file.

    Otherwise every child re-imports the parent's main script as ``__mp_main__`` (what spawn
    and forkserver do so that functions defined there unpickle): an import per solver call,
    and a script without an ``if __name__ == "__main__"`` guard would rerun itself. The
    child needs nothing from it (its target and arguments live in :mod:`verify`).
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _start(ctx: Any, backend: SmtBackend, problem: Problem, timeout: float | None) -> _Running:
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(backend, problem, timeout, send), name=f"verify-{backend.name}")
    with _main_module_hidden():
        process.start()
    send.close()  # the child holds its end; a child that dies leaves ours at EOF
    return _Running(backend, process, receive)


def _result(run: _Running) -> tuple[str, Any]:
    """What a finished child reported (its conn or its sentinel is ready)."""
    if run.conn.poll():
        try:
            return run.conn.recv()
        except EOFError:
            pass
    run.process.join()
    return "error", f"solver {run.backend.name} died without answering (exit code {run.process.exitcode})"


def solve(portfolio: Portfolio, problem: Problem, *, timeout: float | None) -> SolveOutcome:
    """Race ``portfolio``'s members on ``problem`` in child processes; the first sat or unsat wins.

    UNKNOWN when every member gave up or ``timeout`` seconds (wall clock, from this call)
    passed; then all are killed. A member that fails raises its :class:`SolverError`, unless
    another one gives a definitive answer. ``seconds`` is the wall-clock time of this call.
    """
    return solve_cubes(portfolio, [problem], jobs=1, timeout=timeout)[1]


def solve_cubes(
    portfolio: Portfolio, cubes: Sequence[Problem], *, jobs: int, timeout: float | None
) -> tuple[int, SolveOutcome]:
    """Decide the disjunction of ``cubes`` (problems that split one question's models between
    them): up to ``jobs`` of them at once, each raced by ``portfolio``'s members as in :func:`solve`.

    SAT as soon as one cube is SAT (its index and outcome are returned: its model answers the
    question); UNSAT when every cube is UNSAT (index -1, the solvers that answered named);
    UNKNOWN when some cube stayed undecided, or at the deadline (``timeout`` seconds, wall
    clock, from this call), when every child is killed. A cube whose members all failed raises
    the first failure as a :class:`SolverError`.
    """
    start = time.perf_counter()
    if timeout is not None and timeout <= 0:  # the caller's budget is spent before any solver started
        return -1, SolveOutcome(Verdict.UNKNOWN, 0.0, solver=portfolio.name)
    deadline = None if timeout is None else start + timeout
    ctx = _context()
    waiting = list(range(len(cubes)))
    active: dict[int, list[_Running]] = {}  # cube -> its members still running
    started: list[_Running] = []
    undecided: set[int] = set()
    errors: list[str] = []
    winners: set[str] = set()
    try:
        while waiting or active:
            remaining = None if deadline is None else deadline - time.perf_counter()
            if remaining is not None and remaining <= 0:
                log.info("%s: deadline of %.3g s passed, killing every solver", portfolio.name, timeout)
                undecided.update(active, waiting)
                break
            while waiting and len(active) < jobs:
                cube = waiting.pop(0)
                active[cube] = []
                for backend in portfolio.members:  # one by one: an interrupt meanwhile still kills those started
                    started.append(_start(ctx, backend, cubes[cube], remaining))
                    active[cube].append(started[-1])
            running = [run for runs in active.values() for run in runs]
            ready = set(wait([r.conn for r in running] + [r.process.sentinel for r in running], remaining))
            for cube, runs in list(active.items()):
                for run in [r for r in runs if r.conn in ready or r.process.sentinel in ready]:
                    runs.remove(run)
                    kind, value = _result(run)
                    if kind == "error":
                        errors.append(value)
                    elif value.verdict is Verdict.SAT:
                        return cube, SolveOutcome(value.verdict, time.perf_counter() - start, value.model, value.solver)
                    elif value.verdict is Verdict.UNSAT:
                        winners.add(value.solver)
                        for other in runs:  # now: the next cube gets its core
                            _kill(other)
                        del active[cube]
                        break
                else:
                    if not runs:  # every member gave up or failed
                        undecided.add(cube)
                        del active[cube]
    finally:
        for run in started:
            _kill(run)
    return -1, no_sat_cube(portfolio, undecided=bool(undecided), errors=errors, winners=winners, start=start)


def no_sat_cube(
    portfolio: Portfolio, *, undecided: bool, errors: Sequence[str], winners: set[str], start: float
) -> SolveOutcome:
    """The answer of cubes none of which was SAT: UNKNOWN when one stayed ``undecided`` (the
    first of ``errors`` raised, when members failed), else UNSAT by the solvers that answered
    (``winners``); ``start`` is when deciding began (:func:`time.perf_counter`)."""
    if undecided and errors:
        raise SolverError(errors[0])
    seconds = time.perf_counter() - start
    if undecided:
        return SolveOutcome(Verdict.UNKNOWN, seconds, solver=portfolio.name)
    return SolveOutcome(Verdict.UNSAT, seconds, solver=",".join(sorted(winners)))
