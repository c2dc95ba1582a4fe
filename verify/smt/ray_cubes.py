"""Cubes decided on Ray workers (``verify ... --workers N``), for encoders whose lengths
outgrow one machine.

Each cube is one Ray task (one CPU) that races the portfolio's members on it in the worker,
as :func:`verify.smt.portfolio.solve` races them here, and the answers combine as
:func:`verify.smt.portfolio.solve_cubes` combines the child processes': SAT at the first SAT
cube, UNSAT when every cube is UNSAT, UNKNOWN when one stayed undecided or the deadline
passed (the tasks still running are then cancelled, their solvers killed with them). Joins
the running Ray instance, or the cluster ``RAY_ADDRESS`` names, or starts one on this machine
with ``workers`` CPUs for the call (and stops it after), as ``prove --workers`` does.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import Any

from verify.errors import SolverError, VerifyInputError
from verify.smt.portfolio import Portfolio, no_sat_cube, solve
from verify.smt.solvers import Problem, SolveOutcome, Verdict

log = logging.getLogger(__name__)


def require_ray() -> None:
    """Raise the user's error now when Ray is missing (before any encoding is spent)."""
    try:
        import ray  # noqa: F401
    except ImportError as error:
        raise VerifyInputError("cubes on Ray workers need Ray: pip install 'leanagent[ray]'") from error


def solve_cubes_on_ray(
    portfolio: Portfolio, cubes: Sequence[Problem], *, workers: int, timeout: float | None
) -> tuple[int, SolveOutcome]:
    """Decide the disjunction of ``cubes`` with up to ``workers`` of them running on Ray at
    once; returns what :func:`~verify.smt.portfolio.solve_cubes` returns (the SAT cube's index
    and outcome, or -1 and UNSAT or UNKNOWN). A cube whose members all failed raises the
    first failure as a :class:`SolverError` when no cube was SAT."""
    require_ray()
    import ray

    start = time.perf_counter()
    if timeout is not None and timeout <= 0:
        return -1, SolveOutcome(Verdict.UNKNOWN, 0.0, solver=portfolio.name)
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    decide = ray.remote(num_cpus=1)(_decide)
    shared = ray.put(portfolio)
    waiting = list(range(len(cubes)))
    running: dict[Any, int] = {}  # task -> its cube
    undecided: set[int] = set()
    errors: list[str] = []
    winners: set[str] = set()
    try:
        while waiting or running:
            remaining = None if timeout is None else timeout - (time.perf_counter() - start)
            if remaining is not None and remaining <= 0:
                log.info("%s on Ray: deadline of %.3g s passed, cancelling every cube", portfolio.name, timeout)
                undecided.update(waiting, running.values())
                break
            while waiting and len(running) < workers:
                cube = waiting.pop(0)
                running[decide.remote(shared, cubes[cube], remaining)] = cube
            ready, _ = ray.wait(list(running), num_returns=1, timeout=remaining)
            for task in ready:
                cube = running.pop(task)
                kind, value = ray.get(task)
                if kind == "error":
                    errors.append(value)
                    undecided.add(cube)
                elif value.verdict is Verdict.SAT:
                    return cube, dataclasses.replace(value, seconds=time.perf_counter() - start)
                elif value.verdict is Verdict.UNSAT:
                    winners.add(value.solver)
                else:
                    undecided.add(cube)
    finally:
        for task in running:
            ray.cancel(task, force=True)
        if started:
            ray.shutdown()
    return -1, no_sat_cube(portfolio, undecided=bool(undecided), errors=errors, winners=winners, start=start)


def _decide(portfolio: Portfolio, problem: Problem, timeout: float | None) -> tuple[str, Any]:
    """One cube, in a Ray worker: ("outcome", its SolveOutcome) or ("error", why), so that a
    solver's failure arrives as the project's message, not as Ray's wrapped traceback."""
    try:
        return "outcome", solve(portfolio, problem, timeout=timeout)
    except SolverError as error:
        return "error", str(error)
