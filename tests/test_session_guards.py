"""The guards every backend's session shares (lean_env/interactive/session.py), one table run
against each backend that runs here with its stand-in: the file check and the server check
(fake ``lean``), the REPL (fake REPL) and LeanDojo (fake ``Dojo``; skipped without lean-dojo)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import fake_lean
from fakes.repl_support import fake_command, write_script

from lean_env.interactive.dojo import DojoBackend
from lean_env.interactive.filecheck import FileCheckBackend, ServerCheckBackend
from lean_env.interactive.interface import (
    LeanError,
    ProofBackend,
    SessionClosedError,
    TacticResult,
    TacticState,
)
from lean_env.interactive.repl.backend import ReplBackend
from lean_env.interactive.session import SORRY_REJECTED, GuardedSession

SOURCE = "theorem imp_self' (p : Prop) : p → p := by\n  sorry\n"
START = "p : Prop\n⊢ p → p"
THEOREM = fake_lean.theorem_record(SOURCE, "imp_self'", "Demo.lean")


def _file_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: type[FileCheckBackend]) -> ProofBackend:
    fake_lean.activate(monkeypatch, tmp_path / "bin", {"theorems": {"imp_self'": {"goals": START}}})
    return backend(timeout=20)


def _repl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProofBackend:
    script = write_script(tmp_path, {"theorems": {"imp_self'": START}})
    return ReplBackend.create(
        launcher=lambda project_dir: fake_command(project_dir, script),
        memory_limit_mb=None,
        tactic_timeout=1.0,
        command_timeout=5.0,
        header_timeout=5.0,
    )


def _dojo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProofBackend:
    pytest.importorskip("lean_dojo")
    fake_dojo = pytest.importorskip("fakes.fake_dojo")
    return DojoBackend(repo_factory=str, dojo_class=fake_dojo.dojo_class(start=START, table={}))


BACKENDS = [
    pytest.param(lambda t, m: _file_check(t, m, FileCheckBackend), id="file"),
    pytest.param(lambda t, m: _file_check(t, m, ServerCheckBackend), id="server"),
    pytest.param(_repl, id="repl"),
    pytest.param(_dojo, id="dojo", marks=pytest.mark.dojo),
]


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProofBackend]:
    make: Callable[[Path, pytest.MonkeyPatch], ProofBackend] = request.param
    made = make(tmp_path, monkeypatch)
    yield made
    made.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / THEOREM.path).write_text(SOURCE, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "tactic",
    [
        pytest.param("sorry", id="sorry"),
        pytest.param("exact sorry", id="exact-sorry"),
        pytest.param("admit", id="admit"),
        pytest.param("intro h\n  sorry", id="sorry-on-a-later-line"),
    ],
)
def test_a_tactic_that_gives_up_is_one_error_without_running(backend: ProofBackend, repo: Path, tactic: str) -> None:
    with backend.open(repo, THEOREM) as session:
        assert session.run_tactic(session.initial_state, tactic) == LeanError(SORRY_REJECTED)


def test_a_closed_session_refuses_tactics_and_closing_twice_is_nothing(backend: ProofBackend, repo: Path) -> None:
    session = backend.open(repo, THEOREM)
    initial = session.initial_state
    session.close()
    session.close()
    assert session.initial_state == initial  # the goal stays readable
    for tactic in ("intro h", "sorry"):  # the guard comes before the sorry rule
        with pytest.raises(SessionClosedError, match=f"session on {THEOREM.full_name} is closed"):
            session.run_tactic(initial, tactic)


@pytest.mark.parametrize(
    "handle",
    [
        pytest.param(None, id="no-handle"),
        pytest.param(object(), id="another-backend's"),
        pytest.param(42, id="a-number"),
    ],
)
def test_a_state_of_another_backend_is_refused(backend: ProofBackend, repo: Path, handle: object) -> None:
    with backend.open(repo, THEOREM) as session:
        for tactic in ("intro h", "sorry"):  # the guard comes before the sorry rule
            with pytest.raises(ValueError, match=f"not a state of this .* session \\({THEOREM.full_name}\\)"):
                session.run_tactic(TacticState(START, handle=handle), tactic)


@pytest.mark.parametrize(
    "make", [p for p in BACKENDS if p.id in ("repl", "dojo")]
)  # a file-check state is its tactic prefix, which names no session
def test_a_state_of_another_session_is_refused(make: Any, tmp_path: Path, monkeypatch, repo: Path) -> None:
    backend = make(tmp_path, monkeypatch)
    try:
        with backend.open(repo, THEOREM) as one, backend.open(repo, THEOREM) as other:
            with pytest.raises(ValueError, match="not a state of this"):
                one.run_tactic(other.initial_state, "intro h")
    finally:
        backend.close()


class _Stub(GuardedSession[str]):
    """The base class alone: a session whose start can fail, recording what reaches it."""

    kind = "stub"

    def __init__(self, *, fail: bool = False) -> None:
        super().__init__(THEOREM)
        self.fail, self.ran, self.closes = fail, [], 0

    def _start(self) -> TacticState:
        if self.fail:
            raise RuntimeError("cannot start")
        return TacticState(START, handle="mine")

    def _handle(self, handle: object) -> str | None:
        return handle if handle == "mine" else None

    def _run_tactic(self, state: TacticState, handle: str, tactic: str) -> TacticResult:
        self.ran.append(tactic)
        return LeanError("ran")

    def _close(self) -> None:
        self.closes += 1


def test_a_session_not_started_refuses_work() -> None:
    session = _Stub()
    with pytest.raises(SessionClosedError, match="was not started"):
        _ = session.initial_state
    with pytest.raises(SessionClosedError, match="was not started"):
        session.run_tactic(TacticState(START, handle="mine"), "intro h")
    assert session.ran == []


def test_a_session_that_fails_to_start_is_closed_once() -> None:
    session = _Stub(fail=True)
    with pytest.raises(RuntimeError, match="cannot start"):
        session.start()
    session.close()
    assert session.closes == 1


def test_the_backend_runs_only_what_the_guards_let_through() -> None:
    with _Stub() as session:
        session.start()
        assert session.run_tactic(session.initial_state, "sorry") == LeanError(SORRY_REJECTED)
        assert session.run_tactic(session.initial_state, "intro h") == LeanError("ran")
        assert session.ran == ["intro h"]
    assert session.closes == 1
