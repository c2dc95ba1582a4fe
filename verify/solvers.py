"""SMT backends behind one small interface, and the SMT-LIB2 export they share.

* ``z3`` (default): z3's Python API in a fresh z3 context per call, the formula translated
  by pysmt's converter.
* ``cvc5``: through pysmt, in the caller's own pysmt ``Environment``.
* ``bitwuzla``: the SMT-LIB2 export parsed by the bitwuzla Python package in process.
* ``smtlib:CMD``: the SMT-LIB2 export written to a file and run as ``CMD FILE`` (e.g.
  ``smtlib:z3``, ``smtlib:"bitwuzla -m"``); the answer and ``get-value`` output are read
  from stdout.

An ``unknown`` answer or a timeout is :attr:`Verdict.UNKNOWN`, a result; it never turns
into ``unsat``. A solver that is missing, crashes or answers something unreadable raises
:class:`~verify.errors.SolverError`.
"""

from __future__ import annotations

import enum
import importlib.util
import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pysmt.environment import Environment
from pysmt.exceptions import PysmtException, SolverReturnedUnknownResultError
from pysmt.fnode import FNode
from pysmt.smtlib.printers import SmtDagPrinter

from verify.errors import SolverError, SolverUnavailableError, VerifyInputError

SOLVER_NAMES = ("z3", "cvc5", "bitwuzla", "smtlib:CMD")
# A subprocess solver that ignores its own limits is killed this long after the timeout.
_KILL_GRACE_SECONDS = 2.0


class Verdict(enum.Enum):
    """The answer to one satisfiability question."""

    SAT = "sat"  # a model exists (for queries: a witness word, replayed by the interpreter)
    UNSAT = "unsat"  # no model exists within the encoded question
    UNKNOWN = "unknown"  # the solver gave up (timeout, resource limit); says nothing either way


@dataclass(frozen=True, slots=True)
class SolveOutcome:
    """A backend's answer: the verdict and, when SAT, the values of the requested variables."""

    verdict: Verdict
    seconds: float
    model: dict[str, int] = field(default_factory=dict)


class SmtBackend(Protocol):
    """One SMT solver. ``check`` answers whether the conjunction of ``assertions`` is satisfiable."""

    name: str

    def check(
        self, env: Environment, assertions: Sequence[FNode], variables: Sequence[FNode], *, timeout: float | None
    ) -> SolveOutcome:
        """Solve; on SAT return the (unsigned) values of ``variables`` by name."""
        ...


def smtlib_script(assertions: Sequence[FNode], variables: Sequence[FNode]) -> str:
    """A self-contained SMT-LIB2 script (QF_BV) that checks the assertions and prints the variables."""
    out = io.StringIO()
    out.write("(set-logic QF_BV)\n(set-option :produce-models true)\n")
    symbols: dict[str, FNode] = {}
    for a in assertions:
        for s in a.get_free_variables():
            symbols[s.symbol_name()] = s
    for s in variables:
        symbols[s.symbol_name()] = s
    for name in sorted(symbols):
        t = symbols[name].symbol_type()
        sort = f"(_ BitVec {t.width})" if t.is_bv_type() else "Bool"
        out.write(f"(declare-fun {name} () {sort})\n")
    for a in assertions:
        out.write("(assert ")
        SmtDagPrinter(out).printer(a)
        out.write(")\n")
    out.write("(check-sat)\n")
    if variables:
        out.write(f"(get-value ({' '.join(v.symbol_name() for v in variables)}))\n")
    out.write("(exit)\n")
    return out.getvalue()


@dataclass(frozen=True, slots=True)
class Z3Backend:
    """z3 through its Python API, each call in a fresh ``z3.Context``.

    pysmt's z3 solver shares z3's global context across calls; z3's heuristics depend on
    that context's history, so the same formula could take 0.4 s in one call and several
    seconds in the next. A fresh context per call makes run times reproducible (and the
    outliers go). pysmt's converter translates the formula.
    """

    name: str = "z3"

    def check(
        self, env: Environment, assertions: Sequence[FNode], variables: Sequence[FNode], *, timeout: float | None
    ) -> SolveOutcome:
        import z3
        from pysmt.solvers.z3 import Z3Converter

        start = time.perf_counter()
        try:
            ctx = z3.Context()
            converter = Z3Converter(env, ctx)
            solver = z3.SolverFor("QF_BV", ctx=ctx)
            if timeout is not None:
                solver.set("timeout", max(1, int(timeout * 1000)))
            for a in assertions:
                solver.add(converter.convert(a))
            result = solver.check()
            if result == z3.unknown:
                return SolveOutcome(Verdict.UNKNOWN, time.perf_counter() - start)
            if result == z3.unsat:
                return SolveOutcome(Verdict.UNSAT, time.perf_counter() - start)
            model = solver.model()
            values = {
                v.symbol_name(): model.eval(converter.convert(v), model_completion=True).as_long() for v in variables
            }
        except (z3.Z3Exception, PysmtException) as e:
            raise SolverError(f"solver z3 failed: {e}") from e
        return SolveOutcome(Verdict.SAT, time.perf_counter() - start, values)


@dataclass(frozen=True, slots=True)
class PysmtBackend:
    """A solver through pysmt (cvc5), with the solver's own per-call time limit."""

    name: str

    def check(
        self, env: Environment, assertions: Sequence[FNode], variables: Sequence[FNode], *, timeout: float | None
    ) -> SolveOutcome:
        options: dict[str, object] = {}
        if timeout is not None:
            ms = max(1, int(timeout * 1000))
            options = {"tlimit-per": ms}
        start = time.perf_counter()
        try:
            with env.factory.Solver(name=self.name, logic="QF_BV", solver_options=options) as solver:
                for a in assertions:
                    solver.add_assertion(a)
                try:
                    sat = solver.solve()
                except SolverReturnedUnknownResultError:
                    return SolveOutcome(Verdict.UNKNOWN, time.perf_counter() - start)
                model = {v.symbol_name(): solver.get_value(v).constant_value() for v in variables} if sat else {}
        except PysmtException as e:
            raise SolverError(f"solver {self.name} failed: {e}") from e
        return SolveOutcome(Verdict.SAT if sat else Verdict.UNSAT, time.perf_counter() - start, model)


_VALUE = re.compile(r"\(\s*([^\s()]+)\s+(#b[01]+|#x[0-9a-fA-F]+|\(_\s+bv(\d+)\s+\d+\))\s*\)")


def _parse_values(text: str) -> dict[str, int]:
    values = {}
    for name, lit, decimal in _VALUE.findall(text):
        if decimal:
            values[name] = int(decimal)
        elif lit.startswith("#b"):
            values[name] = int(lit[2:], 2)
        else:
            values[name] = int(lit[2:], 16)
    return values


def _check_model(name: str, model: dict[str, int], variables: Sequence[FNode], output: str) -> None:
    missing = [v.symbol_name() for v in variables if v.symbol_name() not in model]
    if missing:
        raise SolverError(f"solver {name} said sat but gave no value for {missing}; output: {output[-300:]!r}")


@dataclass(frozen=True, slots=True)
class BitwuzlaBackend:
    """bitwuzla (Python package) reading the SMT-LIB2 export in process."""

    name: str = "bitwuzla"

    def check(
        self, env: Environment, assertions: Sequence[FNode], variables: Sequence[FNode], *, timeout: float | None
    ) -> SolveOutcome:
        del env  # the script carries everything
        try:
            import bitwuzla as bz
        except ImportError as e:
            raise SolverUnavailableError("solver bitwuzla is not installed (pip install bitwuzla)") from e
        script = smtlib_script(assertions, ())
        start = time.perf_counter()
        try:
            tm = bz.TermManager()
            opts = bz.Options()
            opts.set(bz.Option.PRODUCE_MODELS, True)
            if timeout is not None:
                opts.set(bz.Option.TIME_LIMIT_PER, max(1, int(timeout * 1000)))
            parser = bz.Parser(tm, opts)
            parser.parse(script, True, False)
            solver = parser.bitwuzla()
            result = solver.check_sat()
            if result == bz.Result.UNKNOWN:
                return SolveOutcome(Verdict.UNKNOWN, time.perf_counter() - start)
            if result == bz.Result.UNSAT:
                return SolveOutcome(Verdict.UNSAT, time.perf_counter() - start)
            declared = {str(t): t for t in parser.get_declared_funs()}
            model = {}
            for v in variables:
                term = declared.get(v.symbol_name())
                # A variable absent from the assertions is unconstrained: any value will do.
                model[v.symbol_name()] = int(solver.get_value(term).value(10)) if term is not None else 0
        except bz.BitwuzlaException as e:
            raise SolverError(f"solver bitwuzla failed: {e}") from e
        return SolveOutcome(Verdict.SAT, time.perf_counter() - start, model)


@dataclass(frozen=True, slots=True)
class CommandBackend:
    """Any SMT-LIB2 solver binary: ``command + [script file]``, answer on stdout."""

    command: tuple[str, ...]

    @property
    def name(self) -> str:
        return "smtlib:" + " ".join(self.command)

    def check(
        self, env: Environment, assertions: Sequence[FNode], variables: Sequence[FNode], *, timeout: float | None
    ) -> SolveOutcome:
        del env
        script = smtlib_script(assertions, variables)
        with tempfile.TemporaryDirectory(prefix="leanagent-verify-") as tmp:
            path = Path(tmp) / "query.smt2"
            path.write_text(script, encoding="utf-8")
            start = time.perf_counter()
            try:
                proc = subprocess.Popen(
                    [*self.command, str(path)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    start_new_session=True,
                )
            except OSError as e:
                raise SolverError(f"cannot run solver {self.name!r}: {e.strerror or e}") from e
            try:
                stdout, stderr = proc.communicate(timeout=None if timeout is None else timeout + _KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                return SolveOutcome(Verdict.UNKNOWN, time.perf_counter() - start)
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        seconds = time.perf_counter() - start
        lines = stdout.strip().splitlines()
        answer = lines[0].strip() if lines else ""
        if answer == "unsat":
            return SolveOutcome(Verdict.UNSAT, seconds)
        if answer in ("unknown", "timeout"):
            return SolveOutcome(Verdict.UNKNOWN, seconds)
        if answer != "sat":
            raise SolverError(
                f"solver {self.name!r} (exit {proc.returncode}) gave no sat/unsat/unknown answer; "
                f"stdout: {stdout[-300:]!r}, stderr: {stderr[-300:]!r}"
            )
        model = _parse_values("\n".join(lines[1:]))
        _check_model(self.name, model, variables, stdout)
        return SolveOutcome(Verdict.SAT, seconds, model)


def make_backend(name: str) -> SmtBackend:
    """The backend called ``name``: z3, cvc5, bitwuzla, or smtlib:CMD (any SMT-LIB2 binary).

    An unknown name is a :class:`VerifyInputError`; a known solver that is not installed
    (or a command not on PATH) is a :class:`SolverUnavailableError`, before any work.
    """
    if name in ("z3", "cvc5"):
        if name not in available_pysmt_solvers():
            raise SolverUnavailableError(
                f"solver {name} is not installed for pysmt here (pip install {name if name == 'cvc5' else 'z3-solver'})"
            )
        return Z3Backend() if name == "z3" else PysmtBackend(name)
    if name == "bitwuzla":
        if importlib.util.find_spec("bitwuzla") is None:
            raise SolverUnavailableError("solver bitwuzla is not installed (pip install bitwuzla)")
        return BitwuzlaBackend()
    if name.startswith("smtlib:"):
        command = tuple(shlex.split(name[len("smtlib:") :]))
        if not command:
            raise VerifyInputError("solver smtlib:CMD needs a command, e.g. smtlib:z3 or smtlib:'bitwuzla -m'")
        if shutil.which(command[0]) is None:
            raise SolverUnavailableError(
                f"cannot run solver {name!r}: {command[0]!r} is not an executable file or on PATH"
            )
        return CommandBackend(command)
    raise VerifyInputError(f"unknown solver {name!r} (choose one of: {', '.join(SOLVER_NAMES)})")


def available_pysmt_solvers() -> tuple[str, ...]:
    """The pysmt backends (z3, cvc5) importable here, for tests and the CLI's help."""
    return tuple(sorted(n for n in Environment().factory.all_solvers() if n in ("z3", "cvc5")))
