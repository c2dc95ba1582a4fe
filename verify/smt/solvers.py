"""SMT backends behind one small interface, and the SMT-LIB2 text every question travels as.

A question leaves the process that encoded it as a :class:`Problem`: SMT-LIB2 text (QF_BV
declarations and assertions) and the variables whose values a SAT answer must report.
:mod:`verify.smt.portfolio` hands it to backends running in child processes; this module is
what runs there:

* ``z3``: z3's Python API parses the text in a fresh ``z3.Context``;
* ``cvc5``: cvc5's Python API and its own SMT-LIB parser;
* ``bitwuzla``: the bitwuzla Python package and its parser;
* ``smtlib:CMD``: the script written to a file and run as ``CMD FILE`` (e.g. ``smtlib:z3``,
  ``smtlib:"bitwuzla -m"``); the answer and ``get-value`` output are read from stdout.

The three library backends share one skeleton, :meth:`LibraryBackend.solve` (timing, the
verdict, reading values only on SAT, the package's errors as ``SolverError``); each writes
only how its API parses and checks (``_check``) and which exception it raises (``_error``).

Each backend is also given the time limit as its own soft limit, so that it usually stops
with ``unknown`` by itself; the hard limit is the parent's (:mod:`verify.smt.portfolio` kills
the child). An ``unknown`` answer or a timeout is :attr:`Verdict.UNKNOWN`, a result; it
never turns into ``unsat``. A solver that is missing, crashes or answers something
unreadable raises :class:`~verify.errors.SolverError`.
"""

from __future__ import annotations

import ctypes
import enum
import importlib
import importlib.util
import io
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pysmt.fnode import FNode
from pysmt.smtlib.printers import SmtDagPrinter

from verify.errors import SolverError, SolverUnavailableError, VerifyInputError
from verify.smt.bitvec import CHECK_EVERY, OutOfTime

# The solvers the package can call through a Python API (the ``solvers`` extra for the last two).
LIBRARY_SOLVERS = ("z3", "cvc5", "bitwuzla")
_PACKAGES = {"z3": "z3-solver", "cvc5": "cvc5", "bitwuzla": "bitwuzla"}
_PR_SET_PDEATHSIG = 1  # prctl(2)


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
    solver: str = ""  # the backend that answered (a portfolio's winner)


@dataclass(frozen=True, slots=True)
class Problem:
    """One satisfiability question as text, so that it can cross into another process."""

    smtlib: str  # set-logic, declarations and assertions; no check-sat
    variables: tuple[tuple[str, int], ...]  # (name, bit width) of the variables a SAT answer reports

    @classmethod
    def of(cls, assertions: Sequence[FNode], variables: Sequence[FNode], *, deadline: float | None = None) -> Problem:
        """The problem of a pysmt conjunction (the DAG printer shares subterms through ``let``);
        past ``deadline`` (:func:`time.perf_counter`) :class:`~verify.smt.bitvec.OutOfTime` is raised."""
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
        printer = _TimedPrinter(out, deadline)
        for a in assertions:
            out.write("(assert ")
            printer.printer(a)
            out.write(")\n")
        return cls(out.getvalue(), tuple((v.symbol_name(), v.symbol_type().width) for v in variables))

    def script(self) -> str:
        """The problem as a self-contained script: check, print the variables, exit."""
        values = f"(get-value ({' '.join(name for name, _ in self.variables)}))\n" if self.variables else ""
        return f"{self.smtlib}(check-sat)\n{values}(exit)\n"


class _TimedPrinter(SmtDagPrinter):
    """pysmt's DAG printer, looking at the clock every :data:`~verify.smt.bitvec.CHECK_EVERY`
    nodes: the formula of a large vocabulary takes seconds to write out."""

    def __init__(self, stream: io.StringIO, deadline: float | None) -> None:
        super().__init__(stream)
        self.deadline = deadline
        self.nodes = 0

    def _push_with_children_to_stack(self, formula: FNode, **kwargs: Any) -> None:
        self.nodes += 1
        if self.deadline is not None and self.nodes % CHECK_EVERY == 0 and time.perf_counter() > self.deadline:
            raise OutOfTime(f"writing the formula passed its deadline after {self.nodes} nodes")
        super()._push_with_children_to_stack(formula, **kwargs)


class SmtBackend(Protocol):
    """One SMT solver, run in the calling process (:mod:`verify.smt.portfolio` calls it in a child)."""

    # Read-only: the backends are frozen dataclasses, and CommandBackend derives its name.
    @property
    def name(self) -> str: ...

    def solve(self, problem: Problem, *, timeout: float | None) -> SolveOutcome:
        """Is the problem satisfiable? On SAT, the (unsigned) values of its variables by name."""
        ...


def _millis(timeout: float) -> int:
    return max(1, int(timeout * 1000))


Values = Callable[[], dict[str, int]]  # reads a SAT answer's variables from the solver that found it


class LibraryBackend(ABC):
    """A solver called through its Python API: :meth:`solve` is the one skeleton they share.

    It imports the solver's package (at the first call, so that choosing another solver never
    loads this one), times the call, hands the problem and the soft time limit in milliseconds
    to :meth:`_check`, reads the variables only on SAT (still timed), and turns the package's
    own exception into :class:`~verify.errors.SolverError`. A backend says only how its solver
    parses, checks and reports values.
    """

    __slots__ = ()

    # The solver's name, as the CLI spells it (each backend's dataclass field sets it).
    name: str
    # The Python package :meth:`solve` imports and hands to the hooks.
    module: ClassVar[str]

    def solve(self, problem: Problem, *, timeout: float | None) -> SolveOutcome:
        """Is the problem satisfiable? On SAT, the (unsigned) values of its variables by name."""
        lib = importlib.import_module(self.module)
        millis = None if timeout is None else _millis(timeout)
        start = time.perf_counter()
        try:
            verdict, values = self._check(lib, problem, millis)
            model = values() if verdict is Verdict.SAT else {}
        except self._error(lib) as e:
            raise SolverError(f"solver {self.name} failed: {e}") from e
        return SolveOutcome(verdict, time.perf_counter() - start, model, self.name)

    @abstractmethod
    def _check(self, lib: Any, problem: Problem, millis: int | None) -> tuple[Verdict, Values]:
        """Parse ``problem`` into a fresh solver (``millis``: its own time limit, if any) and
        check it: the verdict, and how to read the variables of ``problem`` should it be SAT."""

    @abstractmethod
    def _error(self, lib: Any) -> type[Exception]:
        """The exception class the package raises for its own failures."""


@dataclass(frozen=True, slots=True)
class Z3Backend(LibraryBackend):
    """z3 through its Python API, each call in a fresh ``z3.Context``.

    z3's heuristics depend on its context's history (pysmt's z3 solver shares the global
    context: the same formula took 0.4 s in one call and several seconds in the next); a
    fresh context makes run times repeat. Deleting a context after a long search can take
    longer than the search (14 s after a 2 s timeout): the child that ran it is killed
    instead, so that cost is never paid.
    """

    name: str = "z3"
    module: ClassVar[str] = "z3"

    def _check(self, lib: Any, problem: Problem, millis: int | None) -> tuple[Verdict, Values]:
        ctx = lib.Context()
        solver = lib.SolverFor("QF_BV", ctx=ctx)
        if millis is not None:
            solver.set("timeout", millis)
        solver.add(lib.parse_smt2_string(problem.smtlib, ctx=ctx))
        result = solver.check()
        verdict = Verdict.UNKNOWN if result == lib.unknown else Verdict.UNSAT if result == lib.unsat else Verdict.SAT

        def values() -> dict[str, int]:
            model = solver.model()
            return {
                name: model.eval(lib.BitVec(name, width, ctx), model_completion=True).as_long()
                for name, width in problem.variables
            }

        return verdict, values

    def _error(self, lib: Any) -> type[Exception]:
        return lib.Z3Exception


@dataclass(frozen=True, slots=True)
class Cvc5Backend(LibraryBackend):
    """cvc5 through its Python API, parsing the SMT-LIB2 text with its own parser."""

    name: str = "cvc5"
    module: ClassVar[str] = "cvc5"

    def _check(self, lib: Any, problem: Problem, millis: int | None) -> tuple[Verdict, Values]:
        tm = lib.TermManager()
        solver = lib.Solver(tm)
        solver.setOption("produce-models", "true")
        if millis is not None:
            solver.setOption("tlimit-per", str(millis))
        symbols = lib.SymbolManager(tm)
        parser = lib.InputParser(solver, symbols)
        parser.setStringInput(lib.InputLanguage.SMT_LIB_2_6, problem.smtlib, "query")
        while not (command := parser.nextCommand()).isNull():
            command.invoke(solver, symbols)
        result = solver.checkSat()
        verdict = Verdict.UNKNOWN if result.isUnknown() else Verdict.UNSAT if result.isUnsat() else Verdict.SAT

        def values() -> dict[str, int]:
            declared = {str(t): t for t in symbols.getDeclaredTerms()}
            return {name: int(solver.getValue(declared[name]).getBitVectorValue(10)) for name, _ in problem.variables}

        return verdict, values

    def _error(self, lib: Any) -> type[Exception]:
        return RuntimeError  # cvc5's Python API raises its errors as RuntimeError


@dataclass(frozen=True, slots=True)
class BitwuzlaBackend(LibraryBackend):
    """bitwuzla (Python package) parsing the SMT-LIB2 text."""

    name: str = "bitwuzla"
    module: ClassVar[str] = "bitwuzla"

    def _check(self, lib: Any, problem: Problem, millis: int | None) -> tuple[Verdict, Values]:
        tm = lib.TermManager()
        opts = lib.Options()
        opts.set(lib.Option.PRODUCE_MODELS, True)
        if millis is not None:
            opts.set(lib.Option.TIME_LIMIT_PER, millis)
        parser = lib.Parser(tm, opts)
        parser.parse(problem.smtlib, True, False)
        solver = parser.bitwuzla()
        result = solver.check_sat()
        unknown, unsat = result == lib.Result.UNKNOWN, result == lib.Result.UNSAT
        verdict = Verdict.UNKNOWN if unknown else Verdict.UNSAT if unsat else Verdict.SAT

        def values() -> dict[str, int]:
            declared = {str(t): t for t in parser.get_declared_funs()}
            return {name: int(solver.get_value(declared[name]).value(10)) for name, _ in problem.variables}

        return verdict, values

    def _error(self, lib: Any) -> type[Exception]:
        return lib.BitwuzlaException


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


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent exits (elsewhere: nothing to ask),
    so that a solver never outlives the process waiting for its answer."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


@dataclass(frozen=True, slots=True)
class CommandBackend:
    """Any SMT-LIB2 solver binary: ``command + [script file]``, answer on stdout.

    The binary is a child of the solver process, in its process group, so the deadline's
    kill of that group ends it too; its own time limit is whatever its command line says."""

    command: tuple[str, ...]

    @property
    def name(self) -> str:
        return "smtlib:" + " ".join(self.command)

    def solve(self, problem: Problem, *, timeout: float | None) -> SolveOutcome:
        del timeout  # the caller's deadline ends the process group
        with tempfile.TemporaryDirectory(prefix="leanagent-verify-") as tmp:
            path = Path(tmp) / "query.smt2"
            path.write_text(problem.script(), encoding="utf-8")
            start = time.perf_counter()
            try:
                done = subprocess.run(
                    [*self.command, str(path)],
                    capture_output=True,
                    text=True,
                    check=False,
                    preexec_fn=die_with_parent,  # the solver process is single-threaded: safe
                )
            except OSError as e:
                raise SolverError(f"cannot run solver {self.name!r}: {e.strerror or e}") from e
        seconds = time.perf_counter() - start
        lines = done.stdout.strip().splitlines()
        answer = lines[0].strip() if lines else ""
        if answer == "unsat":
            return SolveOutcome(Verdict.UNSAT, seconds, solver=self.name)
        if answer in ("unknown", "timeout"):
            return SolveOutcome(Verdict.UNKNOWN, seconds, solver=self.name)
        if answer != "sat":
            raise SolverError(
                f"solver {self.name!r} (exit {done.returncode}) gave no sat/unsat/unknown answer; "
                f"stdout: {done.stdout[-300:]!r}, stderr: {done.stderr[-300:]!r}"
            )
        model = _parse_values("\n".join(lines[1:]))
        missing = [name for name, _ in problem.variables if name not in model]
        if missing:
            raise SolverError(
                f"solver {self.name} said sat but gave no value for {missing}; output: {done.stdout[-300:]!r}"
            )
        return SolveOutcome(Verdict.SAT, seconds, model, self.name)


def installed(name: str) -> bool:
    """Whether the Python package of library solver ``name`` (z3, cvc5, bitwuzla) is importable."""
    return importlib.util.find_spec(name) is not None


def make_backend(name: str) -> SmtBackend:
    """The backend called ``name``: z3, cvc5, bitwuzla, or smtlib:CMD (any SMT-LIB2 binary).

    An unknown name is a :class:`VerifyInputError`; a known solver that is not installed
    (or a command not on PATH) is a :class:`SolverUnavailableError`, before any work.
    """
    if name in LIBRARY_SOLVERS:
        if not installed(name):
            raise SolverUnavailableError(f"solver {name} is not installed (pip install {_PACKAGES[name]})")
        backends: dict[str, Callable[[], SmtBackend]] = {
            "z3": Z3Backend,
            "cvc5": Cvc5Backend,
            "bitwuzla": BitwuzlaBackend,
        }
        return backends[name]()
    if name.startswith("smtlib:"):
        command = tuple(shlex.split(name[len("smtlib:") :]))
        if not command:
            raise VerifyInputError("solver smtlib:CMD needs a command, e.g. smtlib:z3 or smtlib:'bitwuzla -m'")
        if shutil.which(command[0]) is None:
            raise SolverUnavailableError(
                f"cannot run solver {name!r}: {command[0]!r} is not an executable file or on PATH"
            )
        return CommandBackend(command)
    raise VerifyInputError(
        f"unknown solver {name!r} (choose one of: portfolio, {', '.join(LIBRARY_SOLVERS)}, smtlib:CMD)"
    )
