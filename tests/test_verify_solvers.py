"""Every SMT backend on one table of cases, in child processes; the portfolio race and the
deadline on fake solvers (fast, slow, unknown, broken); fake SMT-LIB binaries for garbage,
lies and hangs."""

from __future__ import annotations

import json
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from pysmt.environment import Environment
from pysmt.typing import BVType
from verify_synth import SynthConfig, random_spec

import verify.model.interpreter as ref
from verify.errors import Interrupted, SolverError, VerifyInputError, WitnessMismatchError
from verify.model.spec import Attention, save_spec
from verify.queries.questions import trsat
from verify.queries.results import QueryOptions
from verify.smt.portfolio import Portfolio, make_portfolio, solve
from verify.smt.solvers import CommandBackend, Problem, Verdict, installed, make_backend


def _backend_param(name: str, available: bool, why: str):
    return pytest.param(name, id=name, marks=pytest.mark.skipif(not available, reason=why))


BACKENDS = [
    _backend_param("z3", True, ""),
    _backend_param("cvc5", installed("cvc5"), "cvc5 is not installed"),
    _backend_param("bitwuzla", installed("bitwuzla"), "bitwuzla is not installed"),
    _backend_param("smtlib:z3", shutil.which("z3") is not None, "no z3 binary on PATH"),
    _backend_param("portfolio", True, ""),
]


def _formula(case: str) -> Problem:
    """Small QF_BV formulas with known answers."""
    m = Environment().formula_manager
    x, y = m.Symbol("x", BVType(8)), m.Symbol("y", BVType(8))
    if case == "sat-product":
        assertions = [
            m.Equals(m.BVMul(x, y), m.BV(35, 8)),
            m.BVUGT(x, m.BV(1, 8)),
            m.BVULT(x, m.BV(7, 8)),
            m.BVUGT(y, m.BV(1, 8)),
            m.BVULT(y, m.BV(8, 8)),
        ]
        return Problem.of(assertions, [x, y])
    if case == "unsat-order":
        return Problem.of([m.BVSLT(x, y), m.BVSLT(y, x)], [x, y])
    return Problem.of([m.Equals(m.BVAShr(x, m.BV(2, 8)), m.SBV(-1, 8)), m.BVSGT(x, m.SBV(-3, 8))], [x])


@pytest.mark.parametrize("backend_name", BACKENDS)
@pytest.mark.parametrize(
    "case, verdict, check",
    [
        pytest.param("sat-product", Verdict.SAT, lambda v: v["x"] * v["y"] == 35, id="sat-product"),
        pytest.param("unsat-order", Verdict.UNSAT, None, id="unsat-order"),
        pytest.param("sat-shift", Verdict.SAT, lambda v: v["x"] in (0xFD, 0xFE, 0xFF), id="sat-shift"),
    ],
)
def test_backends_answer_the_shared_table(backend_name: str, case: str, verdict: Verdict, check) -> None:
    outcome = solve(make_portfolio(backend_name), _formula(case), timeout=30)
    assert outcome.verdict is verdict
    assert outcome.solver in ("z3", "cvc5", "bitwuzla", "smtlib:z3")
    if check is not None:
        assert check(outcome.model), outcome.model


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_backends_agree_on_trsat_and_witnesses_replay(backend_name: str) -> None:
    spec = random_spec(np.random.default_rng(9), SynthConfig(attention=Attention.SOFTMAX_TABLE))
    ids = np.array([[a, b, c] for a in range(3) for b in range(3) for c in range(3)])
    reachable = set(ref.run_batch(spec, ids).labels.tolist())
    for label in (0, 1):
        result = trsat(
            spec,
            max_len=3,
            exact_len=True,
            label=label,
            options=QueryOptions(solver=backend_name, timeout=60, presearch=0),
        )
        assert result.verdict is (Verdict.SAT if label in reachable else Verdict.UNSAT)
        assert result.solver == backend_name and result.checks[0].solver is not None
        if result.witness is not None:
            assert ref.run(spec, result.witness.word).label == label


def _hard() -> Problem:
    """Factoring a 63-bit semiprime: far more than a second for every solver."""
    m = Environment().formula_manager
    x, y = m.Symbol("x", BVType(64)), m.Symbol("y", BVType(64))
    product = 3037000493 * 3037000453
    return Problem.of(
        [
            m.Equals(m.BVMul(x, y), m.BV(product, 64)),
            m.BVUGT(x, m.BV(1, 64)),
            m.BVUGT(y, m.BV(1, 64)),
            m.BVULT(x, m.BV(1 << 32, 64)),
            m.BVULT(y, m.BV(1 << 32, 64)),
        ],
        [x, y],
    )


@pytest.mark.parametrize("backend_name", ["z3", "portfolio"])
def test_a_timeout_is_unknown_within_the_deadline(backend_name: str) -> None:
    start = time.perf_counter()
    outcome = solve(make_portfolio(backend_name), _hard(), timeout=0.5)
    assert outcome.verdict is Verdict.UNKNOWN and time.perf_counter() - start < 1.5


# --- fake solvers: SMT-LIB binaries that answer, stall or break as told ---------------------------


# What every fake solver runs first: it writes its pid to NAME.pid (whole, by a rename: a
# reader never sees half of it), and may wait with ``after(OTHER)`` until the fake OTHER has
# exited, so that the order of their answers is a handshake, not a guess at how long a
# process takes to start.
_FAKE_PRELUDE = """\
import os, sys, time
def after(other):
    pidfile = os.path.join({directory!r}, other + ".pid")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            stat = open(f"/proc/{{int(open(pidfile).read())}}/stat").read()
            if stat.rpartition(") ")[2].split()[0] in ("Z", "X"):
                return
        except (FileNotFoundError, ProcessLookupError):  # reaped before or while read
            if os.path.exists(pidfile):
                return
        time.sleep(0.01)
open({pidfile!r} + ".partial", "w").write(str(os.getpid()))
os.replace({pidfile!r} + ".partial", {pidfile!r})
n = open(sys.argv[1]).read().count("(declare-fun w_")
"""


def _fake(tmp_path: Path, name: str, body: str) -> CommandBackend:
    """A fake solver binary; ``body`` may read ``n`` (the word length of the script) and call
    ``after(OTHER)`` (see _FAKE_PRELUDE)."""
    script = tmp_path / name
    prelude = _FAKE_PRELUDE.format(directory=str(tmp_path), pidfile=str(tmp_path / f"{name}.pid"))
    script.write_text(f"#!{sys.executable} -S\n{prelude}{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return CommandBackend((str(script),))


def _gone(pid: int) -> bool:
    """The process has exited within a second (SIGKILL is delivered asynchronously; a zombie
    waiting for its reaper counts: it runs nothing)."""
    deadline = time.perf_counter() + 1.0
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].split()[0]
        except FileNotFoundError:
            return True
        if state in ("Z", "X"):
            return True
        if time.perf_counter() > deadline:
            return False
        time.sleep(0.01)


FAST_SAT = "print('sat'); print('((x #x05) (y #x07))')"
FAST_UNSAT = "print('unsat')"
# Far longer than any test runs: a member that answers only if nobody stops it.
SLOW = "time.sleep(3600)"
# The deadline of a race that a member wins: far away, so that a loaded machine's slow start
# of the fakes is no timeout.
RACE_DEADLINE = 30.0


@pytest.mark.parametrize(
    "members, verdict, winner",
    [
        pytest.param([("slow", SLOW), ("fast", FAST_UNSAT)], Verdict.UNSAT, "fast", id="first-definitive-wins"),
        pytest.param([("fast", FAST_SAT), ("slow", SLOW)], Verdict.SAT, "fast", id="sat-wins-and-names-its-solver"),
        pytest.param(
            [("unknown", "print('unknown')"), ("late", "after('unknown'); print('unsat')")],
            Verdict.UNSAT,
            "late",
            id="unknown-waits-for-the-others",
        ),
        pytest.param(
            [("broken", "sys.exit(3)"), ("late", "after('broken'); print('unsat')")],
            Verdict.UNSAT,
            "late",
            id="a-broken-member-loses-to-an-answer",
        ),
        pytest.param([("slow", SLOW), ("slower", SLOW)], Verdict.UNKNOWN, None, id="deadline-kills-all"),
    ],
)
def test_the_portfolio_race(tmp_path: Path, members, verdict: Verdict, winner: str | None) -> None:
    backends = tuple(_fake(tmp_path, name, body) for name, body in members)
    timeout = 1.0 if winner is None else RACE_DEADLINE
    start = time.perf_counter()
    outcome = solve(Portfolio("fakes", backends), _formula("sat-product"), timeout=timeout)
    elapsed = time.perf_counter() - start
    assert outcome.verdict is verdict
    if winner is None:  # ended by its deadline, not by the members (an hour each)
        assert outcome.solver == "fakes" and 1.0 <= elapsed < 10.0
    else:  # decided by the winner: before the deadline, and without waiting for a stalled member
        assert outcome.solver.endswith(winner) and elapsed < RACE_DEADLINE
    # every fake binary, the stalled ones included, is dead once solve returns
    for name, _ in members:
        pidfile = tmp_path / f"{name}.pid"
        if pidfile.exists():
            assert _gone(int(pidfile.read_text())), name


def test_every_member_failing_is_a_solver_error(tmp_path: Path) -> None:
    backends = (_fake(tmp_path, "garbage", "print('segmentation fault')"), _fake(tmp_path, "exit", "sys.exit(1)"))
    with pytest.raises(SolverError, match="no sat/unsat/unknown answer"):
        solve(Portfolio("fakes", backends), _formula("sat-product"), timeout=10)


@pytest.fixture
def spec():
    return random_spec(np.random.default_rng(0), SynthConfig())


def _command(backend: CommandBackend) -> str:
    return "smtlib:" + " ".join(backend.command)


def test_fake_unknown_makes_an_unknown_answer(tmp_path: Path, spec) -> None:
    fake = _command(_fake(tmp_path, "unknown", "print('unknown')"))
    result = trsat(spec, max_len=2, options=QueryOptions(solver=fake, presearch=0))
    assert result.verdict is Verdict.UNKNOWN and result.undecided == (1, 2)
    assert result.witness is None and "unknown" in result.claim and "no word" not in result.claim


def test_a_witness_after_undecided_lengths_is_not_called_shortest(tmp_path: Path, spec) -> None:
    """Length 1 stays unknown (the fake stalls past the deadline), length 2 is SAT: the claim
    must name length 1 as undecided, since a shorter witness may exist."""
    word = next(w for w in ("aa", "ab", "ac", "ba", "bb", "bc", "ca", "cb", "cc") if ref.run(spec, w).accepted)
    codes = " ".join(f"(w_{i} #b{spec.word_alphabet.index(s):02b})" for i, s in enumerate(word))
    fake = _command(_fake(tmp_path, "mixed", f"if n == 1: {SLOW}\nprint('sat'); print('({codes})')"))
    start = time.perf_counter()
    result = trsat(spec, max_len=2, options=QueryOptions(solver=fake, presearch=0, timeout=0.5))
    assert time.perf_counter() - start < 10.0  # length 1 ended at its deadline, not the solver's hour
    assert result.verdict is Verdict.SAT and result.witness.word == tuple(word)
    assert [c.verdict for c in result.checks] == [Verdict.UNKNOWN, Verdict.SAT] and result.undecided == (1,)
    assert "length(s) [1] stayed undecided, so a shorter witness may exist" in result.claim


def test_fake_lying_sat_is_a_witness_mismatch(tmp_path: Path, spec) -> None:
    # claims every word is a witness; word 'a' (code 0) is not accepted by this model
    assert not ref.run(spec, "a").accepted
    liar = _command(_fake(tmp_path, "liar", "print('sat'); print('((w_0 #b00))')"))
    with pytest.raises(WitnessMismatchError):
        trsat(spec, max_len=1, exact_len=True, options=QueryOptions(solver=liar, presearch=0))


@pytest.mark.parametrize(
    "body, message",
    [
        pytest.param("print('segmentation fault'); sys.exit(139)", "no sat/unsat/unknown answer", id="garbage"),
        pytest.param("print('sat')", "gave no value", id="sat-without-model"),
    ],
)
def test_fake_broken_solver_is_a_solver_error(tmp_path: Path, spec, body: str, message: str) -> None:
    broken = _command(_fake(tmp_path, "broken", body))
    with pytest.raises(SolverError, match=message):
        trsat(spec, max_len=1, options=QueryOptions(solver=broken, presearch=0))


@pytest.mark.parametrize("backend_name", BACKENDS[:3])
def test_a_library_solver_that_fails_is_a_solver_error_naming_it(backend_name: str) -> None:
    """The shared skeleton (LibraryBackend.solve) turns each package's own exception into a
    SolverError that names the solver; here the script uses a symbol it never declared."""
    undeclared = Problem("(set-logic QF_BV)\n(assert (= y #b0101))\n", (("y", 4),))
    with pytest.raises(SolverError, match=f"^solver {backend_name} failed: "):
        make_backend(backend_name).solve(undeclared, timeout=10)


def test_missing_binary_and_unknown_names(tmp_path: Path) -> None:
    gone = tmp_path / "solver"
    gone.write_text("#!/bin/sh\n")
    gone.chmod(0o755)
    backend = make_backend(f"smtlib:{gone}")
    gone.unlink()  # found at validation, missing when run
    with pytest.raises(SolverError, match="cannot run solver"):
        solve(Portfolio("gone", (backend,)), _formula("sat-shift"), timeout=10)
    for name in ("yices", "smtlib:", "Z3", "smtlib:/no/such/solver", "z3,z3", "z3,", "z3,yices"):
        with pytest.raises(VerifyInputError, match="solver"):
            make_portfolio(name)


@pytest.mark.parametrize(
    "name, installed_solvers, expected_name, members",
    [
        pytest.param("auto", {"z3", "cvc5", "bitwuzla"}, "z3,bitwuzla", ("z3", "bitwuzla"), id="auto-races-two"),
        pytest.param("auto", {"z3", "cvc5"}, "z3", ("z3",), id="auto-without-bitwuzla"),
        pytest.param("portfolio", {"z3", "cvc5", "bitwuzla"}, "portfolio", ("z3", "cvc5", "bitwuzla"), id="three"),
        pytest.param("portfolio", {"z3"}, "portfolio", ("z3",), id="portfolio-of-one"),
        pytest.param("z3,cvc5", {"z3", "cvc5"}, "z3,cvc5", ("z3", "cvc5"), id="a-list"),
        pytest.param("bitwuzla", {"z3", "bitwuzla"}, "bitwuzla", ("bitwuzla",), id="one"),
    ],
)
def test_which_solvers_race(
    monkeypatch: pytest.MonkeyPatch, name: str, installed_solvers: set[str], expected_name: str, members: tuple
) -> None:
    """The default races z3 and bitwuzla where both are installed; cvc5 only when asked for."""
    monkeypatch.setattr("verify.smt.solvers.installed", lambda s: s in installed_solvers)
    monkeypatch.setattr("verify.smt.portfolio.installed", lambda s: s in installed_solvers)
    portfolio = make_portfolio(name)
    assert portfolio.name == expected_name and tuple(m.name for m in portfolio.members) == members
    assert QueryOptions().solver == "auto"


def test_the_script_declares_and_reads_back_the_variables() -> None:
    script = _formula("sat-product").script()
    assert "(declare-fun x () (_ BitVec 8))" in script and "(get-value (x y))" in script
    assert script.rstrip().endswith("(check-sat)\n(get-value (x y))\n(exit)".rstrip())
    assert isinstance(make_backend("smtlib:z3 -smt2"), CommandBackend)


# --- Ctrl-C ------------------------------------------------------------------------------------------


def test_an_interrupt_kills_the_solvers_at_once(tmp_path: Path) -> None:
    """A KeyboardInterrupt out of the wait (here raised by a SIGALRM handler, as Ctrl-C's is
    by SIGINT's, sent once both members run) kills every member before it propagates."""
    backends = (_fake(tmp_path, "slow", SLOW), _fake(tmp_path, "slower", SLOW))
    sent: list[float] = []

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def once_both_run() -> None:
        pidfiles = [tmp_path / f"{name}.pid" for name in ("slow", "slower")]
        deadline = time.perf_counter() + 30
        while not all(p.exists() for p in pidfiles) and time.perf_counter() < deadline:
            time.sleep(0.01)
        sent.append(time.perf_counter())
        signal.pthread_kill(threading.main_thread().ident, signal.SIGALRM)

    previous = signal.signal(signal.SIGALRM, interrupt)
    sender = threading.Thread(target=once_both_run)
    try:
        sender.start()
        with pytest.raises(KeyboardInterrupt):
            solve(Portfolio("fakes", backends), _formula("sat-product"), timeout=None)
    finally:
        sender.join()
        signal.signal(signal.SIGALRM, previous)
    assert time.perf_counter() - sent[0] < 10.0  # at once, not after the members' hour
    for name in ("slow", "slower"):
        assert _gone(int((tmp_path / f"{name}.pid").read_text())), name


def test_an_interrupted_query_keeps_what_it_decided(tmp_path: Path, spec) -> None:
    """Ctrl-C after two lengths: Interrupted (a KeyboardInterrupt) carries the partial result."""

    def progress(check) -> None:
        if check.length == 2:
            raise KeyboardInterrupt

    unsat = _command(_fake(tmp_path, "unsat", FAST_UNSAT))
    with pytest.raises(Interrupted) as info:
        trsat(spec, max_len=4, label=0, options=QueryOptions(solver=unsat, presearch=0), progress=progress)
    assert isinstance(info.value, KeyboardInterrupt)
    partial = info.value.partial
    assert not partial.complete and partial.verdict is Verdict.UNKNOWN
    assert [c.length for c in partial.checks] == [1, 2] and all(c.verdict is Verdict.UNSAT for c in partial.checks)
    assert partial.claim.startswith("unknown: interrupted at length 2; lengths decided: 1 unsat, 2 unsat")


@pytest.mark.parametrize(
    "signum, code, word",
    [
        pytest.param(signal.SIGINT, 130, "interrupted", id="ctrl-c"),
        pytest.param(signal.SIGTERM, 143, "terminated (SIGTERM)", id="sigterm"),
    ],
)
def test_ctrl_c_on_the_command_line_is_exit_130_with_the_partial_json(
    tmp_path: Path, spec, signum: int, code: int, word: str
) -> None:
    """SIGINT to ``leanagent verify trsat`` while a (fake, stalled) solver works on length 3,
    after lengths 1 and 2 were answered: exit 130 at once (not after the stalled solver), one line on
    stderr, the decided lengths in the JSON, the solver dead. SIGTERM the same, exit 143."""
    model = save_spec(spec, tmp_path / "m.json")
    stalled = tmp_path / "stalled"  # written by the solver of length 3, which then stalls
    fake = _command(_fake(tmp_path, "stall", f"if n >= 3: open({str(stalled)!r}, 'w').close(); {SLOW}\nprint('unsat')"))
    argv = [sys.executable, "-m", "agent.cli.main", "verify", "trsat", str(model), "--max-len", "4"]
    argv += ["--class", "0", "--presearch", "0", "--solver", fake, "--json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in proc.stderr:  # progress: one line per answered length
            lines.append(line)
            if line.startswith("verify: length 2:"):
                break
        deadline = time.perf_counter() + 30
        while not stalled.exists() and time.perf_counter() < deadline:  # length 3 is with the solver
            time.sleep(0.01)
        sent = time.perf_counter()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == code and time.perf_counter() - sent < 10.0  # not the solver's hour
    assert [line.split(":")[1] for line in lines] == [" length 1", " length 2"]
    assert "Traceback" not in err and err.strip().splitlines() == [
        f"leanagent: {word} at length 3; lengths decided: 1 unsat, 2 unsat; no witness at the decided lengths"
    ]
    data = json.loads(out)
    assert data["complete"] is False and data["exit"] == code and data["error"] == word
    assert [(c["length"], c["verdict"]) for c in data["checks"]] == [(1, "unsat"), (2, "unsat")]
    assert _gone(int((tmp_path / "stall.pid").read_text()))


def test_a_killed_parent_leaves_no_solver_running(tmp_path: Path) -> None:
    """SIGKILL (no handler runs) to a process waiting for a stalled solver: the forkserver,
    the solver process and the solver binary die with it."""
    fake = _fake(tmp_path, "orphan", SLOW)
    script = (
        "from verify.smt.portfolio import Portfolio, solve\n"
        "from verify.smt.solvers import CommandBackend, Problem\n"
        f"solve(Portfolio('x', (CommandBackend({fake.command!r}),)), Problem('', ()), timeout=None)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    pidfile = tmp_path / "orphan.pid"
    try:
        deadline = time.perf_counter() + 20
        while not pidfile.exists() and time.perf_counter() < deadline:  # the solver binary runs
            time.sleep(0.01)
    finally:
        parent.kill()
        parent.wait()
    assert _gone(int(pidfile.read_text()))
