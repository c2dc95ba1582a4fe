"""The LeanDojo backend with the real lean_dojo result and exception classes and a fake Dojo."""

from __future__ import annotations

import time

import pytest

from lean_env.interactive.dojo import (
    DojoBackend,
    DojoCrashedError,
    DojoHandle,
    DojoOpenError,
)
from lean_env.interactive.interface import (
    OPEN_TIMEOUT,
    LeanError,
    ProofBackend,
    ProofFinished,
    ProofSession,
    SessionClosedError,
    TacticState,
    TacticTimeout,
)
from lean_env.interactive.session import SORRY_REJECTED
from lean_env.lean import budget
from lean_env.records import Position, Theorem, TheoremStatus

lean_dojo = pytest.importorskip("lean_dojo")
fake_dojo = pytest.importorskip("fakes.fake_dojo")
pytestmark = pytest.mark.dojo

START = "p : Prop\n⊢ p → p"
INTRO = "p : Prop\nh : p\n⊢ p"

THEOREM = Theorem(
    full_name="Demo.imp_self'",
    path="Demo/Basic.lean",
    start=Position(3, 1),
    end=Position(4, 8),
    statement="theorem imp_self' (p : Prop) : p → p",
    proof="by\n  sorry",
    status=TheoremStatus.SORRY,
    proof_start=Position(3, 41),
)


TABLE = {
    (START, "intro h"): lambda sid: lean_dojo.TacticState(INTRO, sid),
    (INTRO, "exact h"): lambda sid: lean_dojo.ProofFinished(sid, "done"),
    (INTRO, "exact x"): lambda sid: lean_dojo.LeanError("unknown identifier 'x'"),
    (INTRO, "give_up"): lambda sid: lean_dojo.ProofGivenUp(),
    (INTRO, "spin"): lambda sid: lean_dojo.DojoTacticTimeoutError(),
    (INTRO, "oom"): lambda sid: lean_dojo.DojoCrashError("OOM"),
}


def _backend(log: list, fail: Exception | None = None, timeout: float = 30.0) -> DojoBackend:
    return DojoBackend(
        timeout=timeout,
        repo_factory=lambda repo_dir: f"repo:{repo_dir.name}",
        dojo_class=fake_dojo.dojo_class(start=START, table=TABLE, log=log, fail=fail),
    )


def _run(session, tactics):
    state, result = session.initial_state, None
    for tactic in tactics:
        result = session.run_tactic(state, tactic)
        if isinstance(result, TacticState):
            state = result
    return result


def test_open_builds_a_lean_dojo_theorem_and_maps_the_initial_state(tmp_path):
    log: list = []
    backend = _backend(log, timeout=2.5)
    assert isinstance(backend, ProofBackend)
    with backend.open(tmp_path, THEOREM) as session:
        assert isinstance(session, ProofSession)
        assert session.initial_state == TacticState(START)
        assert isinstance(session.initial_state.handle, DojoHandle)
    # Entering is no tactic: LeanDojo reads the initial state within the opening's timeout.
    assert log == [("enter", "Demo.imp_self'", "Demo/Basic.lean", OPEN_TIMEOUT), ("exit",)]
    with budget.time_budget(20.0), backend.open(tmp_path, THEOREM) as session:
        session.run_tactic(session.initial_state, "intro h")
    assert log[2][3] == 20  # within an attempt, what is left of its budget
    assert log[3:] == [("run", "intro h"), ("exit",)]


@pytest.mark.parametrize(
    ("tactics", "expected"),
    [
        pytest.param(["intro h"], TacticState(INTRO), id="state"),
        pytest.param(["intro h", "exact h"], ProofFinished("done"), id="finished"),
        pytest.param(["intro h", "exact x"], LeanError("unknown identifier 'x'"), id="lean-error"),
        pytest.param(["intro h", "give_up"], LeanError(SORRY_REJECTED), id="proof-given-up"),
        pytest.param(["intro h", "sorry"], LeanError(SORRY_REJECTED), id="sorry-not-sent"),
        pytest.param(["intro h", "spin"], TacticTimeout(30.0), id="timeout"),
    ],
)
def test_each_result_kind(tmp_path, tactics, expected):
    with _backend([]).open(tmp_path, THEOREM) as session:
        assert _run(session, tactics) == expected


def test_the_attempts_time_budget_cuts_each_interaction(tmp_path):
    """LeanDojo fixes its read timeout when the Dojo starts: under a time budget each
    interaction gets what is left of it, and none runs once it is spent."""
    made: list = []
    backend = DojoBackend(
        timeout=30.0,
        repo_factory=lambda repo_dir: f"repo:{repo_dir.name}",
        dojo_class=fake_dojo.dojo_class(start=START, table=TABLE, made=made),
    )
    with backend.open(tmp_path, THEOREM) as session:
        assert isinstance(session.run_tactic(session.initial_state, "intro h"), TacticState)
        with budget.time_budget(5.0):
            assert isinstance(session.run_tactic(session.initial_state, "intro h"), TacticState)
        with budget.time_budget(1e-9):
            time.sleep(1e-3)
            assert session.run_tactic(session.initial_state, "intro h") == TacticTimeout(30.0)
    [dojo] = made
    assert dojo.read_timeouts[0] == 30.0 and 4.0 < dojo.read_timeouts[1] <= 5.0
    assert len(dojo.read_timeouts) == 2  # the spent budget ran nothing


def test_after_a_timeout_the_dojo_restarts_and_replays_the_path(tmp_path):
    log: list = []
    with _backend(log).open(tmp_path, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        assert session.run_tactic(state, "spin") == TacticTimeout(30.0)
        assert session.run_tactic(state, "exact h") == ProofFinished("done")
    assert [entry[0] for entry in log] == [
        "enter",
        "run",
        "run",
        "exit",
        "enter",
        "run",
        "run",
        "exit",
    ]
    assert log[5:7] == [("run", "intro h"), ("run", "exact h")]


def test_states_of_an_ended_dojo_are_rebuilt_in_the_running_one(tmp_path):
    log: list = []
    with _backend(log).open(tmp_path, THEOREM) as session:
        initial = session.initial_state
        intro = session.run_tactic(initial, "intro h")
        assert session.run_tactic(intro, "spin") == TacticTimeout(30.0)
        assert session.run_tactic(intro, "exact x") == LeanError("unknown identifier 'x'")
        # Both are states of the first Dojo; the second one serves them without re-entering.
        assert session.run_tactic(initial, "intro h") == TacticState(INTRO)
        assert session.run_tactic(intro, "exact h") == ProofFinished("done")
        assert log.count(("exit",)) == 1 and [e[0] for e in log].count("enter") == 2
    assert log.count(("exit",)) == 2  # every entered Dojo is exited: no Lean process leaks
    runs = [e[1] for e in log if e[0] == "run"]
    assert runs == ["intro h", "spin", "intro h", "exact x", "intro h", "exact h"]


def test_crash_raises_and_closes(tmp_path):
    log: list = []
    with _backend(log).open(tmp_path, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        with pytest.raises(DojoCrashedError, match="OOM.*'oom'.*Demo.imp_self'"):
            session.run_tactic(state, "oom")
        with pytest.raises(SessionClosedError, match="closed"):
            session.run_tactic(state, "exact h")
    assert log.count(("exit",)) == 1


def test_init_error_is_an_open_error(tmp_path):
    fail = lean_dojo.DojoInitError("Cannot find the *.ast.json file")
    log: list = []
    with pytest.raises(DojoOpenError, match="Demo.imp_self'.*DojoInitError.*ast.json"):
        _backend(log, fail=fail).open(tmp_path, THEOREM)
    assert [e[0] for e in log] == ["enter", "exit"]  # the half-entered Dojo is cleaned up


def test_any_failure_of_entering_is_an_open_error(tmp_path):
    fail = AssertionError("Unable to find Lean4Repl.lean in the traced repo")
    with pytest.raises(DojoOpenError, match="AssertionError: Unable to find Lean4Repl"):
        _backend([], fail=fail).open(tmp_path, THEOREM)


def test_states_from_another_backend_are_refused(tmp_path):
    with _backend([]).open(tmp_path, THEOREM) as session:
        with pytest.raises(ValueError, match="LeanDojo"):
            session.run_tactic(TacticState(START, handle=("intro h",)), "intro h")


def test_missing_lean_dojo_is_a_clear_user_error(tmp_path, monkeypatch):
    from lean_env.interactive.dojo import DojoUnavailableError

    monkeypatch.setitem(__import__("sys").modules, "lean_dojo", None)
    with pytest.raises(DojoUnavailableError, match=r"pip install 'leanagent\[dojo\]'"):
        DojoBackend().open(tmp_path, THEOREM)


def test_a_directory_lean_dojo_cannot_use_is_an_open_error(tmp_path):
    def not_a_repo(repo_dir):
        raise ValueError(f"{repo_dir} is not a valid URL")

    backend = DojoBackend(repo_factory=not_a_repo, dojo_class=fake_dojo.dojo_class(start=START, table=TABLE))
    with pytest.raises(DojoOpenError, match="cannot use .* as a git repository"):
        backend.open(tmp_path, THEOREM)
