"""Every SMT backend on one table of cases; fake SMT-LIB binaries for unknown, garbage, lies and hangs."""

from __future__ import annotations

import importlib.util
import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
from pysmt.environment import Environment
from pysmt.typing import BVType

import verify.interpreter as ref
from verify.errors import SolverError, VerifyInputError, WitnessMismatchError
from verify.queries import QueryOptions, Verdict, trsat
from verify.solvers import CommandBackend, make_backend, smtlib_script
from verify.spec import Attention
from verify.synth import SynthConfig, random_spec


def _backend_param(name: str, available: bool, why: str):
    return pytest.param(name, id=name, marks=pytest.mark.skipif(not available, reason=why))


BACKENDS = [
    _backend_param("z3", True, ""),
    _backend_param("cvc5", importlib.util.find_spec("cvc5") is not None, "cvc5 is not installed"),
    _backend_param("bitwuzla", importlib.util.find_spec("bitwuzla") is not None, "bitwuzla is not installed"),
    _backend_param("smtlib:z3", shutil.which("z3") is not None, "no z3 binary on PATH"),
]


def _formula(env: Environment, case: str):
    """Small QF_BV formulas with known answers; returns (assertions, variables)."""
    m = env.formula_manager
    x, y = m.Symbol("x", BVType(8)), m.Symbol("y", BVType(8))
    if case == "sat-product":
        return [
            m.Equals(m.BVMul(x, y), m.BV(35, 8)),
            m.BVUGT(x, m.BV(1, 8)),
            m.BVULT(x, m.BV(7, 8)),
            m.BVUGT(y, m.BV(1, 8)),
            m.BVULT(y, m.BV(8, 8)),
        ], [x, y]
    if case == "unsat-order":
        return [m.BVSLT(x, y), m.BVSLT(y, x)], [x, y]
    return [m.Equals(m.BVAShr(x, m.BV(2, 8)), m.SBV(-1, 8)), m.BVSGT(x, m.SBV(-3, 8))], [x]


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
    env = Environment()
    assertions, variables = _formula(env, case)
    outcome = make_backend(backend_name).check(env, assertions, variables, timeout=30)
    assert outcome.verdict is verdict
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
        if result.witness is not None:
            assert ref.run(spec, result.witness.word).label == label


def test_z3_timeout_is_unknown_not_unsat() -> None:
    env = Environment()
    m = env.formula_manager
    x, y = m.Symbol("x", BVType(64)), m.Symbol("y", BVType(64))
    # factoring a 63-bit semiprime takes far more than a millisecond
    product = 3037000493 * 3037000453
    hard = [
        m.Equals(m.BVMul(x, y), m.BV(product, 64)),
        m.BVUGT(x, m.BV(1, 64)),
        m.BVUGT(y, m.BV(1, 64)),
        m.BVULT(x, m.BV(1 << 32, 64)),
        m.BVULT(y, m.BV(1 << 32, 64)),
    ]
    outcome = make_backend("z3").check(env, hard, [x, y], timeout=0.001)
    assert outcome.verdict is Verdict.UNKNOWN


def _fake_solver(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-solver"
    script.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return f"smtlib:{script}"


@pytest.fixture
def spec():
    return random_spec(np.random.default_rng(0), SynthConfig())


def test_fake_unknown_makes_an_unknown_answer(tmp_path: Path, spec) -> None:
    result = trsat(
        spec, max_len=2, options=QueryOptions(solver=_fake_solver(tmp_path, "print('unknown')"), presearch=0)
    )
    assert result.verdict is Verdict.UNKNOWN
    assert result.witness is None and "unknown" in result.claim and "no word" not in result.claim


def test_fake_hang_is_killed_and_unknown(tmp_path: Path, spec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("verify.solvers._KILL_GRACE_SECONDS", 0.2)
    result = trsat(
        spec, max_len=1, options=QueryOptions(solver=_fake_solver(tmp_path, "time.sleep(60)"), timeout=0.3, presearch=0)
    )
    assert result.verdict is Verdict.UNKNOWN
    assert result.checks[0].solve_seconds < 10


def test_fake_lying_sat_is_a_witness_mismatch(tmp_path: Path, spec) -> None:
    # claims every word is a witness; word 'a' (code 0) is not accepted by this model
    assert not ref.run(spec, "a").accepted
    liar = _fake_solver(tmp_path, "print('sat'); print('((w_0 #b00))')")
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
    with pytest.raises(SolverError, match=message):
        trsat(spec, max_len=1, options=QueryOptions(solver=_fake_solver(tmp_path, body), presearch=0))


def test_missing_binary_and_unknown_names(spec) -> None:
    with pytest.raises(SolverError, match="cannot run solver"):
        trsat(spec, max_len=1, options=QueryOptions(solver="smtlib:/no/such/solver", presearch=0))
    for name in ("yices", "smtlib:", "Z3"):
        with pytest.raises(VerifyInputError, match="solver"):
            make_backend(name)


def test_smtlib_script_declares_and_reads_back_the_variables() -> None:
    env = Environment()
    assertions, variables = _formula(env, "sat-product")
    script = smtlib_script(assertions, variables)
    assert "(declare-fun x () (_ BitVec 8))" in script and "(get-value (x y))" in script
    assert isinstance(make_backend("smtlib:z3 -smt2"), CommandBackend)
