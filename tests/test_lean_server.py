"""The file check through Lean's language server (lean_env/lean/server.py): the verdicts of
the one-shot file check, one server per session whose edits start at the theorem, timeouts
and crashes, the LSP's positions, and several servers checking candidates at once; against
the fake ``lean --server``
(tests/fakes/fake_lean.py), and against the 2021 Lean 4 where LEANAGENT_TEST_OLD_LEAN
names its bin directory."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes import barrier_lean
from filecheck_cases import AND_SWAP, IMP_SELF, SCRIPT, activate, demo_repo, live_members, log_lines
from hypothesis import given
from hypothesis import strategies as st

from agent.cli.main import build_parser
from agent.cli.options import proving_config
from lean_env.interactive.filecheck import FileCheckBackend, ServerCheckBackend
from lean_env.interactive.interface import LeanError, ProofFinished, TacticState, TacticTimeout
from lean_env.interactive.probe import DROPPED
from lean_env.lean.runner import LeanRunError
from lean_env.lean.server import ServerRunner, _common_prefix, _common_suffix, _lsp_position, _position
from lean_env.records import Position
from lean_env.trace.source import extract_file


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return demo_repo(tmp_path)


def _events(log: Path) -> list[dict]:
    """What the fake server saw, in order (the runs of `lean FILE` are left out)."""
    return [line["server"] | {"pid": line["pid"]} for line in log_lines(log) if "server" in line]


SEQUENCES = [
    ["intro h"],
    ["intro h", "exact h"],
    ["intro h", "exact x"],
    ["intro h", "refine ?_\n· skip"],
    ["nonsense"],
    ["intro h", "simp"],
    ["intro h", "exact sorry"],
    ["intro h", "rename List α => xs"],
]


def _walk(session, tactics: list[str]):
    state, result = session.initial_state, None
    for tactic in tactics:
        result = session.run_tactic(state, tactic)
        if isinstance(result, TacticState):
            state = result
    return result


def test_the_server_gives_the_verdicts_of_the_file_check(monkeypatch, tmp_path, repo) -> None:
    activate(monkeypatch, tmp_path)
    with FileCheckBackend(timeout=20).open(repo, IMP_SELF) as session:
        expected = [_walk(session, tactics) for tactics in SEQUENCES]
        batched = list(session.run_tactics(session.initial_state, ["intro h", "nonsense", "intro hp", "simp"]))
    with _servers(1, timeout=20).open(repo, IMP_SELF) as session:
        assert session.initial_state.pp == "p : Prop\n⊢ p → p"
        assert [_walk(session, tactics) for tactics in SEQUENCES] == expected
        assert list(session.run_tactics(session.initial_state, ["intro h", "nonsense", "intro hp", "simp"])) == batched
    assert {type(e) for e in expected} == {TacticState, ProofFinished, LeanError}
    with _servers(1, timeout=20).open(repo, AND_SWAP) as session:
        state = session.run_tactic(session.initial_state, "constructor")
        assert isinstance(state, TacticState) and state.num_goals == 2


def test_one_server_per_session_whose_edits_start_at_the_theorem(monkeypatch, tmp_path, repo) -> None:
    log = activate(monkeypatch, tmp_path)
    with _servers(1, timeout=20).open(repo, IMP_SELF) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        session.run_tactic(state, "exact h")
        list(session.run_tactics(session.initial_state, ["intro hp", "nonsense", "simp"]))
    events = _events(log)
    assert [e["initialize"] for e in events if "initialize" in e] == [{"editDelay": 0}]
    assert len({e["pid"] for e in events}) == 1, "one server answers every check of the session"
    assert sum("open" in e for e in events) == 1
    changes = [e["change"] for e in events if "change" in e]
    assert changes and min(changes) >= IMP_SELF.start.line - 1, "an edit never reaches the text before the theorem"
    assert [e["elaborate"] for e in events if "elaborate" in e] == list(range(1, len(changes) + 2))


def test_a_timeout_kills_the_server_and_the_next_check_starts_another(monkeypatch, tmp_path, repo) -> None:
    log = activate(monkeypatch, tmp_path)
    with _servers(1, timeout=1.5).open(repo, IMP_SELF) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        assert session.run_tactic(state, "spin") == TacticTimeout(1.5)
        first = _events(log)[0]["pid"]
        assert live_members(first) == [], "the server's whole process group was killed"
        assert session.run_tactic(state, "exact h") == ProofFinished()
    servers = [e["pid"] for e in _events(log) if "initialize" in e]
    assert len(servers) == 2 and servers[0] == first


def test_the_next_session_on_the_file_is_checked_by_the_same_server_and_closing_the_backend_stops_it(
    monkeypatch, tmp_path, repo
) -> None:
    """The server that elaborated one theorem's file checks the next theorem of that file:
    an edit from the first theorem on, not a new document elaborated from the start."""
    log = activate(monkeypatch, tmp_path)
    backend = _servers(1, timeout=20)
    with backend.open(repo, IMP_SELF) as session:
        assert _walk(session, ["intro h", "exact h"]) == ProofFinished()
    server = _events(log)[0]["pid"]
    assert live_members(server) != [], "a session leaves its server to the next one"
    with backend.open(repo, AND_SWAP) as session:
        state = session.run_tactic(session.initial_state, "constructor")
        assert isinstance(state, TacticState) and state.num_goals == 2
    events = _events(log)
    assert {e["pid"] for e in events} == {server} and sum("open" in e for e in events) == 1
    changes = [e["change"] for e in events if "change" in e]
    assert min(changes) >= IMP_SELF.start.line - 1, "an edit never reaches the text before the first theorem"
    backend.close()
    backend.close()
    assert live_members(server) == []


def test_a_session_closed_with_a_check_in_flight_leaves_a_fresh_server_to_the_next(monkeypatch, tmp_path, repo) -> None:
    """A kept server must be idle: one still checking a candidate when its session closes is
    stopped, and the next session on the file starts its own. The barrier fake answers
    `intro h` only once the other server checks `spin`, which hangs: in flight at the close."""
    script = json.loads(json.dumps(SCRIPT))
    script["theorems"]["Demo.imp_self'"]["steps"]["spin"] = {"hang": True}
    log = tmp_path / "lean.log"
    barrier_lean.activate(monkeypatch, tmp_path / "bin", script, parties=2, log=log)
    backend = _servers(2, timeout=30)
    try:
        with backend.open(repo, IMP_SELF) as session:
            assert isinstance(next(session.run_tactics(session.initial_state, ["intro h", "spin"])), TacticState)
        first = {e["pid"] for e in _events(log) if "initialize" in e}
        assert len(first) == 2 and all(live_members(pid) == [] for pid in first), "the server checking `spin` stopped"
        with backend.open(repo, IMP_SELF) as session:
            assert session.initial_state.pp == "p : Prop\n⊢ p → p"
        assert {e["pid"] for e in _events(log) if "initialize" in e} - first, "the next session starts new servers"
    finally:
        backend.close()


def test_a_server_that_dies_leaves_the_checks_to_lean_file(monkeypatch, tmp_path, repo, caplog) -> None:
    log = activate(monkeypatch, tmp_path, {**SCRIPT, "server": "crash"})
    with _servers(1, timeout=20).open(repo, IMP_SELF) as session:
        assert session.initial_state.pp == "p : Prop\n⊢ p → p"
        assert _walk(session, ["intro h", "exact h"]) == ProofFinished()
    assert "Lean's server failed (the Lean server exited" in caplog.text
    runs = [json.loads(line)["argv"] for line in log.read_text().splitlines() if "argv" in line]
    assert runs[0] == ["--server"] and all(argv[-1].endswith("Basic.lean") for argv in runs[1:]) and len(runs) == 4


def test_a_lean_that_dies_is_a_clear_fault_through_the_server_too(monkeypatch, tmp_path, repo) -> None:
    activate(monkeypatch, tmp_path, {**SCRIPT, "mode": "crash"})
    with pytest.raises(LeanRunError, match="killed by signal 11"):
        _servers(1, timeout=20).open(repo, IMP_SELF)


def test_a_lake_project_serves_through_lake_env(monkeypatch, tmp_path, repo) -> None:
    log = activate(monkeypatch, tmp_path)
    (repo / "lakefile.toml").write_text('name = "demo"\n', encoding="utf-8")
    with _servers(1, timeout=20).open(repo, IMP_SELF):
        pass
    started = [json.loads(line) for line in log.read_text().splitlines() if "argv" in line][0]
    assert started["argv"] == ["--lake", "env", "lean", "--server"]
    assert Path(started["cwd"]) == repo.resolve()


def _servers(n: int, *, timeout: float = 20) -> ServerCheckBackend:
    """A backend of ``n`` servers a file, closed after the test (:func:`_close_servers`)."""
    backend = ServerCheckBackend(timeout=timeout, runner_factory=functools.partial(ServerRunner.for_project, workers=n))
    _made.append(backend)
    return backend


_made: list[ServerCheckBackend] = []


@pytest.fixture(autouse=True)
def _close_servers() -> Iterator[None]:
    """Every backend :func:`_servers` made is closed after its test: the servers it keeps for
    the next session stopped, their directories removed."""
    yield
    while _made:
        _made.pop().close()


CANDIDATES = ["intro h", "nonsense", "intro hp", "simp", "intro h"]


def test_two_servers_give_the_verdicts_of_one(monkeypatch, tmp_path, repo) -> None:
    log = activate(monkeypatch, tmp_path)
    one = _servers(1)
    with one.open(repo, IMP_SELF) as session:
        expected = [_walk(session, tactics) for tactics in SEQUENCES]
        batched = list(session.run_tactics(session.initial_state, CANDIDATES))
    one.close()
    log.unlink()
    with _servers(2).open(repo, IMP_SELF) as session:
        assert [_walk(session, tactics) for tactics in SEQUENCES] == expected
        assert list(session.run_tactics(session.initial_state, CANDIDATES)) == batched
        state = batched[0]
        assert isinstance(state, TacticState)
        assert list(session.run_tactics(state, ["exact x", "exact h"])) == [
            LeanError("unknown identifier 'x'"),
            ProofFinished(),
        ]
    events = _events(log)
    servers = {e["pid"] for e in events if "initialize" in e}
    assert len(servers) == 2
    assert all(sum("open" in e and e["pid"] == pid for e in events) == 1 for pid in servers), "each opens the file once"
    # That both check candidates at once is test_the_next_candidate_is_checked_while_the_first_is's (a
    # barrier): here which server a candidate goes to is the machine's timing.


def test_the_next_candidate_is_checked_while_the_first_is(monkeypatch, tmp_path, repo) -> None:
    """Each fake server answers its candidate only once both servers are elaborating one (a
    barrier, tests/fakes/barrier_lean.py): the second candidate must be sent before the first
    is answered, however slowly either server starts."""
    log = tmp_path / "lean.log"
    barrier_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT, parties=2, log=log)
    with _servers(2).open(repo, IMP_SELF) as session:
        outcomes = list(session.run_tactics(session.initial_state, ["intro h", "intro hp"]))
    assert [type(o) for o in outcomes] == [TacticState, TacticState]
    events = _events(log)
    assert not [e for e in events if "barrier" in e], "a server waited for a second candidate that never came"
    # Version 1 is each server's first text, the empty proof; the candidates come after.
    checks = [e for e in events if e.get("elaborate", e.get("answered", 0)) >= 2]
    assert ["elaborate" in e for e in checks] == [True, True, False, False], "both elaborate before either answers"
    assert len({e["pid"] for e in checks[:2]}) == 2 and {e["pid"] for e in checks[2:]} == {e["pid"] for e in checks[:2]}


def test_a_check_in_flight_is_kept_for_its_reading_and_stopped_at_close(monkeypatch, tmp_path, repo) -> None:
    log = activate(monkeypatch, tmp_path)
    session = _servers(2, timeout=30).open(repo, IMP_SELF)
    state = session.run_tactic(session.initial_state, "intro h")
    outcomes = session.run_tactics(state, ["exact h", "spin"])
    assert next(outcomes) == ProofFinished()  # read first, while the other server runs `spin`
    servers = {e["pid"] for e in _events(log) if "initialize" in e}
    assert len(servers) == 2 and all(live_members(pid) != [] for pid in servers)
    session.close()
    assert all(live_members(pid) == [] for pid in servers), "closing stops the server still checking"


def test_a_timeout_on_one_server_leaves_the_others_verdicts(monkeypatch, tmp_path, repo) -> None:
    log = activate(monkeypatch, tmp_path)
    with _servers(2, timeout=1.5).open(repo, IMP_SELF) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        outcomes = list(session.run_tactics(state, ["spin", "exact x", "exact h"]))
        assert outcomes == [TacticTimeout(1.5), LeanError("unknown identifier 'x'"), ProofFinished()]
        assert isinstance(session.run_tactic(state, "simp"), LeanError)
    assert len([e for e in _events(log) if "initialize" in e]) == 3, "the server that timed out was replaced"


def test_servers_that_die_leave_their_checks_to_lean_file(monkeypatch, tmp_path, repo, caplog) -> None:
    activate(monkeypatch, tmp_path, {**SCRIPT, "server": "crash"})
    with _servers(2).open(repo, IMP_SELF) as session:
        assert session.initial_state.pp == "p : Prop\n⊢ p → p"
        outcomes = list(session.run_tactics(session.initial_state, CANDIDATES))
    assert [type(o) for o in outcomes] == [TacticState, LeanError, TacticState, LeanError, TacticState]
    assert caplog.text.count("Lean's server failed") == 1


def test_the_lean_servers_option_reaches_the_server_backend(monkeypatch, tmp_path, repo) -> None:
    activate(monkeypatch, tmp_path)
    args = build_parser().parse_args(["prove", "--proof-backend", "server", "--lean-servers", "3"])
    config = proving_config(args)
    backend = config.backend_opener(tmp_path / "data")(repo)
    assert isinstance(backend, ServerCheckBackend)
    with backend.runner_factory(repo) as runner:
        assert isinstance(runner, ServerRunner) and runner.workers == 3


@pytest.mark.parametrize(
    "line, offset, lsp",
    [
        pytest.param("theorem t : p := by", 8, 8, id="ascii"),
        pytest.param("(h : α → β) ⊢ γ", 14, 14, id="plane-0: one unit each"),
        pytest.param("(x : 𝔽) (y : 𝔽) : x = y", 14, 16, id="astral: two units each"),
    ],
)
def test_positions_are_utf16_on_the_wire_and_codepoints_here(line: str, offset: int, lsp: int) -> None:
    text = f"-- first line\n{line}\n"
    assert _lsp_position(text, len("-- first line\n") + offset) == {"line": 1, "character": lsp}
    assert _position(text.split("\n"), {"line": 1, "character": lsp}) == Position(2, offset + 1)


@given(st.text("ab𝔽\n", max_size=12), st.text("ab𝔽\n", max_size=12), st.text("ab𝔽\n", max_size=12))
def test_an_edit_is_the_span_between_the_common_prefix_and_suffix(head: str, old_middle: str, tail: str) -> None:
    old, new = head + old_middle + tail, head + tail[::-1] + tail
    start = _common_prefix(old, new)
    end = _common_suffix(old, new, limit=min(len(old), len(new)) - start)
    assert old[:start] == new[:start] and old[len(old) - end :] == new[len(new) - end :]
    assert old[:start] + new[start : len(new) - end] + old[len(old) - end :] == new
    assert start == len(os.path.commonprefix([old, new]))


OLD_LEAN = os.environ.get("LEANAGENT_TEST_OLD_LEAN")
OLD_SOURCE = """\
theorem helper (a b : Nat) (h : a = b) : b = a := h.symm

theorem target (α : Type) (a b : Nat) (h : a = b) (𝔽 : α) : b + 0 = a := by
  skip
"""
OLD_TACTICS = [
    "exact h.symm",
    "rw [h]",
    "simp",
    "intro x",
    "nonsense",
    "exact helper a b h",
    "cases h",
    "decide",
    "rename List β => xs",  # β is unbound: no error, and no theorem (Lean drops it)
]


@pytest.mark.skipif(not OLD_LEAN, reason="LEANAGENT_TEST_OLD_LEAN does not name the 2021 Lean's bin directory")
@pytest.mark.parametrize("servers", [1, 2])
def test_on_the_2021_lean_the_server_gives_the_verdicts_of_lean_file(tmp_path: Path, monkeypatch, servers) -> None:
    monkeypatch.setenv("PATH", f"{OLD_LEAN}{os.pathsep}{os.environ.get('PATH', '')}")
    (tmp_path / "Old.lean").write_text(OLD_SOURCE, encoding="utf-8")
    theorem = next(t for t in extract_file(OLD_SOURCE, path="Old.lean").theorems if t.full_name == "target")
    with FileCheckBackend(timeout=60).open(tmp_path, theorem) as session:
        goals = session.initial_state.pp
        expected = [session.run_tactic(session.initial_state, t) for t in OLD_TACTICS]
        after = session.run_tactic(expected[1], "rfl") if isinstance(expected[1], TacticState) else None
    helper = next(t for t in extract_file(OLD_SOURCE, path="Old.lean").theorems if t.full_name == "helper")
    backend = _servers(servers, timeout=60)
    try:
        with backend.open(tmp_path, helper) as session:
            assert session.run_tactic(session.initial_state, "exact h.symm") == ProofFinished()
        # The servers that checked `helper` check `target`: the file edited from `helper` on.
        with backend.open(tmp_path, theorem) as session:
            assert session.initial_state.pp == goals
            assert list(session.run_tactics(session.initial_state, list(reversed(OLD_TACTICS)))) == expected[::-1]
            assert [session.run_tactic(session.initial_state, t) for t in OLD_TACTICS] == expected
            if after is not None:
                assert session.run_tactic(expected[1], "rfl") == after
    finally:
        backend.close()
    assert {type(o) for o in expected} >= {TacticState, LeanError, ProofFinished}
    assert expected[-1] == LeanError(DROPPED)
