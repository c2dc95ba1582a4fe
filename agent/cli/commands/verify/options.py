"""The options every solving ``leanagent verify`` command shares, their reading into
:class:`~verify.queries.results.QueryOptions`, per-length progress, and the answer to Ctrl-C.

Kept apart from the command modules so that ``trsat``/``robust``/``equiv`` and
``train-example`` take the same options, checked the same way (argparse types: one line,
exit 2, before any work).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import sys
from typing import Any

from agent.cli.options import at_least, non_negative_number, positive_seconds
from agent.cli.signals import interrupt_exit, interrupt_line
from agent.reports.output import emit

SOLVER_HELP = (
    "auto (default: z3 and bitwuzla, those installed, race on each length) | z3 | cvc5 | bitwuzla | "
    "portfolio (z3, cvc5 and bitwuzla race) | names separated by commas race (e.g. z3,cvc5) | "
    "smtlib:CMD (any SMT-LIB2 binary, e.g. smtlib:z3)"
)


def encoding_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-tabulate", action="store_true", help="encode layer 1 symbolically (ablation)")
    p.add_argument("--no-prune", action="store_true", help="no interval pruning: one worst-case width (ablation)")


def solver_options(p: argparse.ArgumentParser) -> None:
    """--solver, --timeout, --presearch, --canonical, --jobs, --workers, --enumerate and the encoding switches."""
    p.add_argument("--solver", default="auto", help=SOLVER_HELP)
    p.add_argument(
        "--timeout",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="wall-clock seconds for each length, all of it: the interpreter pre-pass, the encoding and "
        "the solver stage; past it the encoding stops or the solver processes are killed, and the length "
        "is unknown (default: none)",
    )
    # (flag, least value, default, metavar, help): the whole-number options, one call each
    counts = [
        (
            "--presearch",
            0,
            1024,
            "W",
            "candidate words per length run through the interpreter before the solver: all of them "
            "when there are at most W, which decides the length, else W ordered and random ones that "
            "can find a witness and measure the cost of a word for --enumerate (default: 1024; 0 = no "
            "pre-pass at all: solver only)",
        ),
        (
            "--canonical",
            0,
            1 << 15,
            "C",
            "with the pre-pass on: when a sound reduction (see docs/verify.md) leaves at most C words "
            "that stand for all words of a length, run them all, which decides it (default: 32768)",
        ),
        (
            "--jobs",
            1,
            1,
            "N",
            "solver stage: split a length's words on their first symbols into 4N cubes and decide N at a time "
            "in child processes (SAT at the first SAT cube, UNSAT when all are; default: 1, the length as one "
            "question)",
        ),
        (
            "--workers",
            1,
            1,
            "N",
            "solver stage: the same cubes (4N) decided on N Ray workers, each racing the solvers in its worker; "
            "joins the Ray cluster RAY_ADDRESS names, else starts one here (pip install 'leanagent[ray]'; "
            "default: 1, no Ray)",
        ),
    ]
    for flag, least, default, metavar, text in counts:
        p.add_argument(flag, type=at_least(least), default=default, metavar=metavar, help=text)
    p.add_argument(
        "--enumerate",
        dest="enumeration",
        type=non_negative_number,
        default=None,
        metavar="S",
        help="with the pre-pass on: run every word of a length through the interpreter, which decides it, "
        "when that takes at most S seconds at the cost per word the pre-pass measured; else the solver "
        "answers (default: half of --timeout, or 10 without one: verify.queries.results.ENUMERATION_SECONDS; "
        "0 = never beyond --presearch)",
    )
    encoding_options(p)


def encoding(args: argparse.Namespace) -> Any:
    from verify.smt.encoding import EncodingOptions

    return EncodingOptions(tabulate=not args.no_tabulate, prune=not args.no_prune)


def query_options(args: argparse.Namespace) -> Any:
    """The options of :func:`solver_options`; an unknown or missing solver fails here, before any work."""
    from verify.queries.results import QueryOptions
    from verify.smt.portfolio import make_portfolio

    make_portfolio(args.solver)
    if args.workers > 1:
        from verify.smt.ray_cubes import require_ray

        require_ray()
    return QueryOptions(
        solver=args.solver,
        timeout=args.timeout,
        encoding=encoding(args),
        presearch=args.presearch,
        canonical=args.canonical,
        enumeration=args.enumeration,
        jobs=args.jobs,
        workers=args.workers,
    )


def progress_lines(prefix: str = "verify") -> Any:
    """A progress callback: one line on stderr per answered length (what, how, by whom, how long)."""

    def step(check: Any) -> None:
        by = check.method.value if check.solver is None else f"{check.method.value}, {check.solver}"
        if check.solver is None and check.words:
            by += f", {check.words} words"
        print(f"{prefix}: length {check.length}: {check.verdict.value} ({by}, {check.seconds:.2f} s)", file=sys.stderr)
        sys.stderr.flush()

    return step


def jsonable(value: Any) -> Any:
    """Results as JSON-ready data: dataclasses as dicts, enums as their values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def interrupted(error: Any, *, as_json: bool) -> int:
    """Ctrl-C or SIGTERM during a query (:class:`verify.errors.Interrupted`): one line on
    stderr and, with ``--json``, one object on stdout: the partial result (``complete`` false)
    with the ``error`` and ``exit`` fields every failing command prints. Exit 130 (143 for
    SIGTERM: :mod:`agent.cli.signals`)."""
    partial = error.partial
    line = interrupt_line(error, "interrupted" if partial is None else partial.claim.removeprefix("unknown: "))
    code = interrupt_exit(error)
    print(f"leanagent: {line}", file=sys.stderr)
    if as_json:
        payload = {} if partial is None else jsonable(partial)
        payload.update({"complete": False, "error": interrupt_line(error, "interrupted"), "exit": code})
        emit(payload, "", as_json=True)
    return code
