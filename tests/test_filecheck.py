"""The file-check backend against the fake ``lean`` (tests/fakes/fake_lean.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import fake_lean
from filecheck_cases import AND_SWAP, GOALS, IMP_SELF, SCRIPT, SOURCE, activate, demo_repo, live_members, log_lines

from lean_env.errors import LeanNotFoundError
from lean_env.interactive.filecheck import FileCheckBackend, FileCheckError
from lean_env.interactive.interface import (
    LeanError,
    ProofBackend,
    ProofFinished,
    ProofSession,
    SessionClosedError,
    TacticState,
    TacticTimeout,
)
from lean_env.interactive.probe import DROPPED
from lean_env.interactive.session import SORRY_REJECTED
from lean_env.lean.runner import LeanRunError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return demo_repo(tmp_path)


def _run(session, tactics: list[str]):
    state = session.initial_state
    result = None
    for tactic in tactics:
        result = session.run_tactic(state, tactic)
        if isinstance(result, TacticState):
            state = result
    return result


def test_backend_and_session_speak_the_proof_environment_interface(monkeypatch, tmp_path, repo):
    activate(monkeypatch, tmp_path)
    backend = FileCheckBackend(timeout=20)
    assert isinstance(backend, ProofBackend)
    with backend.open(repo, IMP_SELF) as session:
        assert isinstance(session, ProofSession)
        assert session.initial_state.pp == GOALS["start"]
        assert session.initial_state.handle == ()


@pytest.mark.parametrize(
    ("tactics", "expected"),
    [
        pytest.param(["intro h"], TacticState(GOALS["intro"]), id="state"),
        pytest.param(["intro h", "exact h"], ProofFinished(), id="finished"),
        pytest.param(["intro h", "exact x"], LeanError("unknown identifier 'x'"), id="lean-error"),
        pytest.param(["intro h", "rename List α => xs"], LeanError(DROPPED), id="dropped-theorem-is-an-error"),
        pytest.param(
            ["intro h", "exact suffices h from p"], LeanError("expected term"), id="text-that-reads-on-is-an-error"
        ),
        pytest.param(
            ["intro h", "refine ?_\n· skip"],
            LeanError("unsolved goals\np : Prop\nh : p\n⊢ p"),
            id="nested-unsolved-goals-is-an-error",
        ),
        pytest.param(["nonsense"], LeanError("unknown tactic"), id="unknown-tactic"),
        pytest.param(["intro h", "simp"], LeanError(fake_lean.UNSCRIPTED), id="other-error"),
        pytest.param(["intro h", "exact sorry"], LeanError(SORRY_REJECTED), id="sorry-rejected"),
    ],
)
def test_each_result_kind(monkeypatch, tmp_path, repo, tactics, expected):
    activate(monkeypatch, tmp_path)
    with FileCheckBackend(timeout=20).open(repo, IMP_SELF) as session:
        assert _run(session, tactics) == expected


def test_state_handle_is_the_prefix_and_equal_goals_merge(monkeypatch, tmp_path, repo):
    activate(monkeypatch, tmp_path)
    with FileCheckBackend(timeout=20).open(repo, IMP_SELF) as session:
        a = session.run_tactic(session.initial_state, "intro h")
        b = session.run_tactic(session.initial_state, "intro hp")
        assert a.handle == ("intro h",) and b.handle == ("intro hp",)
        assert a == b and hash(a) == hash(b)


def test_several_goals_come_back_as_one_state(monkeypatch, tmp_path, repo):
    activate(monkeypatch, tmp_path)
    with FileCheckBackend(timeout=20).open(repo, AND_SWAP) as session:
        state = session.run_tactic(session.initial_state, "constructor")
        assert isinstance(state, TacticState) and state.num_goals == 2


def test_sorry_is_rejected_without_running_lean_and_results_are_cached(monkeypatch, tmp_path, repo):
    log = activate(monkeypatch, tmp_path)
    with FileCheckBackend(timeout=20).open(repo, IMP_SELF) as session:
        opened = len(log_lines(log))
        assert session.run_tactic(session.initial_state, "admit") == LeanError(SORRY_REJECTED)
        assert len(log_lines(log)) == opened
        session.run_tactic(session.initial_state, "intro h")
        session.run_tactic(session.initial_state, "intro h")
        assert len(log_lines(log)) == opened + 1


def test_users_file_and_repo_are_untouched(monkeypatch, tmp_path, repo):
    activate(monkeypatch, tmp_path)
    before = sorted(p.relative_to(repo) for p in repo.rglob("*"))
    with FileCheckBackend(timeout=20).open(repo, IMP_SELF) as session:
        _run(session, ["intro h", "exact h"])
        workdir = session._file.parent
    assert (repo / "Demo" / "Basic.lean").read_text(encoding="utf-8") == SOURCE
    assert sorted(p.relative_to(repo) for p in repo.rglob("*")) == before
    assert not workdir.exists()


def test_checked_file_is_cut_after_the_theorem_with_the_prefix_indented(monkeypatch, tmp_path, repo):
    """The theorem, then only its declaration probe."""
    activate(monkeypatch, tmp_path)
    with FileCheckBackend(timeout=20).open(repo, IMP_SELF) as session:
        session.run_tactic(session.initial_state, "intro h")
        checked = session._file.read_text(encoding="utf-8")
    probe = "example : True := (fun _ => trivial) @Demo.imp_self'"
    assert checked.endswith(f"(p : Prop) : p → p := by\n  intro h\n\n{probe}\n")
    assert checked.startswith("namespace Demo\n")
    assert "and_swap" not in checked


def test_timeout_kills_the_process_tree_and_is_a_result(monkeypatch, tmp_path, repo):
    log = activate(monkeypatch, tmp_path)
    with FileCheckBackend(timeout=1.5).open(repo, IMP_SELF) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        assert session.run_tactic(state, "spin") == TacticTimeout(1.5)
    assert live_members(log_lines(log)[-1]["pid"]) == []


def test_opening_is_not_cut_by_the_tactic_timeout(monkeypatch, tmp_path, repo):
    """Elaborating the file up to the theorem is not a tactic: a search that gives each
    tactic half a second still opens a theorem that takes longer to reach, and each check,
    which elaborates the file again, gets that time on top of its tactic's."""
    entry = SCRIPT["theorems"]["Demo.imp_self'"]
    steps = {**entry["steps"], "intro h": {"goals": GOALS["intro"], "sleep": 1.2}}
    slow = {**entry, "opening": {"goals": entry["goals"], "sleep": 1.5}, "steps": steps}
    activate(monkeypatch, tmp_path, {**SCRIPT, "theorems": {**SCRIPT["theorems"], "Demo.imp_self'": slow}})
    with FileCheckBackend(timeout=0.5).open(repo, IMP_SELF) as session:
        assert session.initial_state.pp == GOALS["start"]
        state = session.run_tactic(session.initial_state, "intro h")
        assert state == TacticState(GOALS["intro"])
        assert session.run_tactic(state, "spin") == TacticTimeout(0.5)


def test_errors_outside_the_theorem_are_a_fault(monkeypatch, tmp_path, repo):
    script = {**SCRIPT, "errors": [{"line": 1, "column": 0, "message": "unknown namespace"}]}
    activate(monkeypatch, tmp_path, script)
    with pytest.raises(FileCheckError, match="outside theorem Demo.imp_self'.*unknown namespace"):
        FileCheckBackend(timeout=20).open(repo, IMP_SELF)


def test_statement_that_does_not_elaborate_cannot_be_opened(monkeypatch, tmp_path, repo):
    script = {**SCRIPT, "errors": [{"line": 3, "column": 33, "message": "unknown identifier 'p'"}]}
    activate(monkeypatch, tmp_path, script)
    with pytest.raises(FileCheckError, match="cannot be opened.*unknown identifier 'p'"):
        FileCheckBackend(timeout=20).open(repo, IMP_SELF)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        pytest.param("garbage", "printed no error diagnostic.*PANIC", id="malformed-output"),
        pytest.param("crash", "killed by signal 11", id="crash"),
    ],
)
def test_unreadable_lean_is_a_clear_fault(monkeypatch, tmp_path, repo, mode, message):
    activate(monkeypatch, tmp_path, {**SCRIPT, "mode": mode})
    with pytest.raises(LeanRunError, match=message):
        FileCheckBackend(timeout=20).open(repo, IMP_SELF)


def test_lake_project_runs_lake_env_lean_in_the_project(monkeypatch, tmp_path, repo):
    log = activate(monkeypatch, tmp_path)
    (repo / "lakefile.toml").write_text('name = "demo"\n', encoding="utf-8")
    with FileCheckBackend(timeout=20).open(repo, IMP_SELF):
        pass
    run = log_lines(log)[-1]
    assert run["argv"][:3] == ["--lake", "env", "lean"]
    assert Path(run["cwd"]) == repo.resolve()


def test_missing_lean_says_how_to_install(monkeypatch, tmp_path, repo):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    with pytest.raises(LeanNotFoundError, match="elan"):
        FileCheckBackend(timeout=20).open(repo, IMP_SELF)


def test_closed_session_refuses_work(monkeypatch, tmp_path, repo):
    activate(monkeypatch, tmp_path)
    session = FileCheckBackend(timeout=20).open(repo, IMP_SELF)
    session.close()
    session.close()
    with pytest.raises(SessionClosedError, match="closed"):
        session.run_tactic(session.initial_state, "intro h")


REAL_SOURCE = """\
theorem imp_self' (p : Prop) : p → p := by
  sorry
"""


@pytest.mark.lean
def test_real_lean_goals_errors_and_finish(tmp_path):
    (tmp_path / "Real.lean").write_text(REAL_SOURCE, encoding="utf-8")
    theorem = fake_lean.theorem_record(REAL_SOURCE, "imp_self'", "Real.lean")
    with FileCheckBackend(timeout=120).open(tmp_path, theorem) as session:
        assert session.initial_state.pp == "p : Prop\n⊢ p → p"
        state = session.run_tactic(session.initial_state, "intro h")
        assert state == TacticState("p : Prop\nh : p\n⊢ p")
        assert isinstance(session.run_tactic(state, "exact h"), ProofFinished)
        error = session.run_tactic(state, "exact x")
        assert isinstance(error, LeanError) and "x" in error.message


def test_theorem_without_a_proof_start_is_refused_before_running(monkeypatch, tmp_path, repo):
    import dataclasses

    from lean_env.proofs.text import ProofTextError

    log = activate(monkeypatch, tmp_path)
    theorem = dataclasses.replace(IMP_SELF, proof_start=None)
    with pytest.raises(ProofTextError, match="no known proof start"):
        FileCheckBackend(timeout=20).open(repo, theorem)
    assert log_lines(log) == []
