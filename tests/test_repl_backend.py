"""ReplBackend end to end against the fake REPL: outcomes, restarts, crashes, pooling."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from builders import target
from fakes.repl_support import fake_command, read_log, write_script

from lean_env.errors import LeanNotFoundError
from lean_env.interactive.interface import (
    LeanError,
    ProofBackend,
    ProofFinished,
    ProofSession,
    TacticState,
    TacticTimeout,
)
from lean_env.interactive.repl.backend import ReplBackend, ReplStateHandle
from lean_env.interactive.repl.errors import ReplOpenError, ReplProtocolError
from lean_env.interactive.repl.find import describe_repl
from lean_env.interactive.repl.pool import PoolKey, Recycling, ReplCrashed, ReplPool, ReplReply, ReplTimedOut
from lean_env.interactive.repl.protocol import (
    CommandRequest,
    CommandResponse,
    ReplPos,
    TacticRequest,
)
from lean_env.interactive.repl.theorem_text import theorem_command
from lean_env.lean import budget
from lean_env.proofs.theorem_source import TheoremSourceError
from lean_env.records import Position
from lean_env.syntax.header import split_header

G_ADD = "n : Nat\n⊢ n + 0 = n"
G_AND = "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q"
G_LEFT, G_RIGHT = "case left\np q : Prop\nhp : p\nhq : q\n⊢ p", "case right\np q : Prop\nhp : p\nhq : q\n⊢ q"
G_TRUE = "⊢ True"

SCRIPT = {
    "theorems": {"add_zero'": G_ADD, "and_both": G_AND, "triv": G_TRUE, "other": G_TRUE},
    "tactics": {
        G_ADD: {
            "simp": {"goals": []},
            "skip": {"goals": [G_ADD]},
            "exact rfl'": {"error": "type mismatch\n  rfl'"},
            "exat": {"lean_error": "<input>:1:1: unknown tactic"},
            "sorry": {"status": "Incomplete: contains sorry"},
            "refine ?_": {"status": "Incomplete: contains metavariable(s)"},
            "decide": {"status": "Error: kernel type check failed: (kernel) deep recursion"},
            "loop": {"hang": True},
            "boom": {"crash": True},
            "garbage": {"malformed": True},
        },
        G_AND: {"constructor": {"goals": [G_LEFT, G_RIGHT]}},
        f"{G_LEFT}\n\n{G_RIGHT}": {"exact hp": {"goals": [G_RIGHT]}, "loop": {"hang": True}},
        G_RIGHT: {"exact hq": {"goals": []}},
        G_TRUE: {"trivial": {"goals": []}},
    },
    "command_errors": {"bad_statement": "unknown identifier 'bad_statement'"},
}

FILE_A = """\
/- Copyright: tests -/
import Mathlib.Logic.Basic
import Mathlib.Data.Nat.Defs

namespace Demo

/-- Adding zero. -/
theorem add_zero' (n : Nat) : n + 0 = n := by
  simp

theorem and_both (p q : Prop) (hp : p) (hq : q) : p ∧ q := by
  sorry

theorem triv : True := trivial

end Demo
"""
FILE_B = "import Lean\n\ntheorem other : True := by\n  trivial\n"
FILE_C = "import Mathlib.Logic.Basic\nimport Mathlib.Data.Nat.Defs\n\ntheorem triv : True := by sorry\n"
FILE_BAD = "import Lean\n\ntheorem broken : bad_statement := by\n  trivial\n"


# The targets the stand-in REPL's files hold (TRIV_A without a proof start, read from its statement).
ADD, AND, TRIV_A, OTHER, TRIV_C, BROKEN = (
    target(f"Demo.{name}", path=path, line=line, proof_start=proof_start, **extra)
    for name, path, line, proof_start, extra in [
        ("add_zero'", "A.lean", 7, Position(8, 43), {}),
        ("and_both", "A.lean", 11, Position(11, 59), {}),
        ("triv", "A.lean", 14, None, {"statement": "theorem triv : True :="}),
        ("other", "B.lean", 3, Position(3, 23), {}),
        ("triv", "C.lean", 4, Position(4, 23), {}),
        ("broken", "BAD.lean", 3, Position(3, 33), {}),
    ]
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    for name, text in {"A.lean": FILE_A, "B.lean": FILE_B, "C.lean": FILE_C, "BAD.lean": FILE_BAD}.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "requests.log"


def make_backend(tmp_path: Path, log: Path, *, max_processes: int = 2) -> ReplBackend:
    script = write_script(tmp_path, SCRIPT)
    return ReplBackend.create(
        launcher=lambda project_dir: fake_command(project_dir, script, log=log),
        max_processes=max_processes,
        memory_limit_mb=None,
        tactic_timeout=1.0,
        command_timeout=5.0,
        header_timeout=5.0,
    )


@pytest.fixture
def backend(tmp_path: Path, log: Path):
    with make_backend(tmp_path, log) as b:
        yield b


def header_loads(log: Path) -> list[int]:
    """The pids of processes that loaded an import header (a command without env)."""
    return [e["pid"] for e in read_log(log) if "request" in e and "cmd" in e["request"] and "env" not in e["request"]]


def test_backend_satisfies_the_protocols(backend: ReplBackend, project: Path) -> None:
    assert isinstance(backend, ProofBackend)
    with backend.open(project, ADD) as session:
        assert isinstance(session, ProofSession)
        assert session.initial_state == TacticState(G_ADD)
        assert session.initial_state.handle == ReplStateHandle(0, 1, ())


@pytest.mark.parametrize(
    ("tactic", "expected"),
    [
        pytest.param("skip", TacticState(G_ADD), id="state"),
        pytest.param("simp", ProofFinished(), id="finished"),
        pytest.param("exact rfl'", LeanError("type mismatch\n  rfl'"), id="error-message"),
        pytest.param("exat", LeanError("<input>:1:1: unknown tactic"), id="lean-error-response"),
        pytest.param("nonsense", LeanError("<input>:1:1: unknown tactic"), id="unknown-tactic"),
        pytest.param(
            "decide", LeanError("Error: kernel type check failed: (kernel) deep recursion"), id="kernel-error"
        ),
        pytest.param("loop", TacticTimeout(1.0), id="timeout"),
    ],
)
def test_every_outcome_kind(backend: ReplBackend, project: Path, tactic: str, expected: object) -> None:
    with backend.open(project, ADD) as session:
        assert session.run_tactic(session.initial_state, tactic) == expected


@pytest.mark.parametrize("tactic", [pytest.param("sorry", id="sorry"), pytest.param("refine ?_", id="mvars")])
def test_closed_goals_that_are_not_a_proof_are_errors(backend: ReplBackend, project: Path, tactic: str) -> None:
    with backend.open(project, ADD) as session:
        assert isinstance(session.run_tactic(session.initial_state, tactic), LeanError)


def test_multi_goal_proof_to_the_end(backend: ReplBackend, project: Path) -> None:
    with backend.open(project, AND) as session:
        both = session.run_tactic(session.initial_state, "constructor")
        assert isinstance(both, TacticState) and both.num_goals == 2
        right = session.run_tactic(both, "exact hp")
        assert right == TacticState(G_RIGHT)
        assert session.run_tactic(right, "exact hq") == ProofFinished()


def test_timeout_restarts_and_old_states_are_replayed(backend: ReplBackend, project: Path, log: Path) -> None:
    with backend.open(project, AND) as session:
        both = session.run_tactic(session.initial_state, "constructor")
        assert isinstance(both, TacticState)
        assert session.run_tactic(both, "loop") == TacticTimeout(1.0)
        assert [type(i) for i in session.incidents] == [ReplTimedOut]
        # `both` lived in the killed process: it is rebuilt on the new one, then used.
        right = session.run_tactic(both, "exact hp")
        assert right == TacticState(G_RIGHT)
        assert isinstance(right.handle, ReplStateHandle) and right.handle.incarnation == 2
        assert session.run_tactic(right, "exact hq") == ProofFinished()
    assert backend.pool.stats.started == 2 and backend.pool.stats.timeouts == 1
    pids = header_loads(log)
    assert len(pids) == 2 and pids[0] != pids[1]
    replayed = [e["request"].get("tactic") for e in read_log(log) if e["pid"] == pids[1]]
    assert replayed[-3:] == ["constructor", "exact hp", "exact hq"]


def test_the_attempts_time_budget_cuts_a_tactic_and_spares_the_process(
    tmp_path: Path, project: Path, log: Path
) -> None:
    """A tactic that hangs past what is left of the attempt's budget is cut there (its
    process killed, as for its own timeout); once the budget is spent no request of the
    theorem's is sent. The import header, loaded once for every theorem that shares it, is
    not the attempt's: the next process loads it whatever the budget."""
    script = write_script(tmp_path, SCRIPT)
    backend = ReplBackend.create(
        launcher=lambda project_dir: fake_command(project_dir, script, log=log),
        memory_limit_mb=None,
        tactic_timeout=60.0,
        command_timeout=5.0,
        header_timeout=5.0,
    )
    with backend, backend.open(project, ADD) as session:
        assert session.initial_state == TacticState(G_ADD)
        with budget.time_budget(1.0):
            started = time.monotonic()
            cut = session.run_tactic(session.initial_state, "loop")
            assert isinstance(cut, TacticTimeout) and cut.seconds <= 1.0
            assert time.monotonic() - started < 1.0 + 2.0  # the kill, on a loaded machine
        with budget.time_budget(1e-9):
            time.sleep(1e-3)
            assert session.run_tactic(session.initial_state, "simp") == TacticTimeout(0.0)
        assert len(read_log(log)) - len(header_loads(log)) == 2  # opening, `loop`
        assert session.run_tactic(session.initial_state, "simp") == ProofFinished()
    assert backend.pool.stats.timeouts == 1 and backend.pool.stats.started == 2


@pytest.mark.parametrize(
    "recycling, memory",
    [
        pytest.param(Recycling(max_uses=2, max_memory_mb=None), {}, id="after-two-requests"),
        pytest.param(Recycling(max_uses=None, max_memory_mb=100), {1: 500.0}, id="past-its-memory"),
    ],
)
def test_a_process_is_replaced_between_requests_and_its_states_replayed(
    tmp_path: Path, project: Path, log: Path, recycling: Recycling, memory: dict[int, float]
) -> None:
    """After its uses, or past its memory (the first process here), the REPL is replaced by a
    fresh one before the next request; a state of the old one is replayed on the new one and
    every answer is what one process gives."""
    script = write_script(tmp_path, SCRIPT)
    starts: list[int] = []

    def resident(pid: int) -> float:
        starts.append(pid) if pid not in starts else None
        return memory.get(starts.index(pid) + 1, 10.0)

    backend = ReplBackend.create(
        launcher=lambda project_dir: fake_command(project_dir, script, log=log),
        memory_limit_mb=None,
        tactic_timeout=1.0,
        recycling=recycling,
    )
    backend.pool.resident_mb = resident
    with backend, backend.open(project, AND) as session:
        both = session.run_tactic(session.initial_state, "constructor")
        right = session.run_tactic(both, "exact hp")
        assert right == TacticState(G_RIGHT)
        assert session.run_tactic(right, "exact hq") == ProofFinished()
        assert isinstance(right.handle, ReplStateHandle) and right.handle.incarnation >= 2
    assert backend.pool.stats.recycled >= 1 and backend.pool.stats.crashes == 0
    pids = header_loads(log)
    assert len(pids) == backend.pool.stats.started >= 2 and len(set(pids)) == len(pids)


def test_recycling_limits_are_positive_or_none() -> None:
    with pytest.raises(ValueError, match="max_uses is a positive number or none"):
        Recycling(max_uses=0)


def test_a_replay_that_times_out_is_a_timeout_not_a_fault(tmp_path: Path, project: Path) -> None:
    marker = tmp_path / "constructor-hangs-from-now-on"
    both = f"{G_LEFT}\n\n{G_RIGHT}"
    tactics = {
        G_AND: {"constructor": {"goals": [G_LEFT, G_RIGHT], "hang_when": str(marker)}},
        both: {"loop": {"hang": True}, "exact hp": {"goals": [G_RIGHT]}},
    }
    script = write_script(tmp_path, {**SCRIPT, "tactics": tactics})
    with (
        ReplBackend.create(
            launcher=lambda d: fake_command(d, script), memory_limit_mb=None, tactic_timeout=1.0
        ) as backend,
        backend.open(project, AND) as session,
    ):
        state = session.run_tactic(session.initial_state, "constructor")
        assert isinstance(state, TacticState)
        assert session.run_tactic(state, "loop") == TacticTimeout(1.0)  # kills the process
        marker.touch()
        # `state` must be rebuilt by replaying `constructor`, which now hangs.
        assert session.run_tactic(state, "exact hp") == TacticTimeout(1.0)
        assert [type(i) for i in session.incidents] == [ReplTimedOut, ReplTimedOut]
        marker.unlink()
        assert session.run_tactic(state, "exact hp") == TacticState(G_RIGHT)


def test_crash_is_recorded_and_the_next_theorem_works(backend: ReplBackend, project: Path) -> None:
    with backend.open(project, ADD) as session:
        result = session.run_tactic(session.initial_state, "boom")
        assert isinstance(result, LeanError) and "crashing on request" in result.message
        crashes = [i for i in session.incidents if isinstance(i, ReplCrashed)]
        assert len(crashes) == 2  # the attempt and its retry on a fresh process
        assert crashes[0].returncode == 3 and crashes[0].request.to_wire()["tactic"] == "boom"
        assert session.run_tactic(session.initial_state, "simp") == ProofFinished()
    assert backend.pool.incidents == crashes
    with backend.open(project, TRIV_A) as session:
        assert session.run_tactic(session.initial_state, "trivial") == ProofFinished()


def test_states_of_another_session_or_backend_are_refused(backend: ReplBackend, project: Path) -> None:
    with backend.open(project, ADD) as add, backend.open(project, TRIV_C) as triv:
        for foreign in (triv.initial_state, TacticState(G_ADD, handle=("skip",))):
            with pytest.raises(ValueError, match="not a state of this REPL session"):
                add.run_tactic(foreign, "simp")
        assert add.run_tactic(add.initial_state, "simp") == ProofFinished()


def test_malformed_output_raises_a_protocol_error(backend: ReplBackend, project: Path) -> None:
    with backend.open(project, ADD) as session:
        with pytest.raises(ReplProtocolError, match="this is not json"):
            session.run_tactic(session.initial_state, "garbage")
        assert session.run_tactic(session.initial_state, "simp") == ProofFinished()


def test_one_process_per_import_header(backend: ReplBackend, project: Path, log: Path) -> None:
    for theorem in (ADD, AND, TRIV_A, TRIV_C):  # C.lean has A.lean's imports
        with backend.open(project, theorem) as session:
            assert isinstance(session.run_tactic(session.initial_state, "nonsense"), LeanError)
    assert backend.pool.stats.started == 1 and len(header_loads(log)) == 1
    with backend.open(project, OTHER) as session:
        assert session.run_tactic(session.initial_state, "trivial") == ProofFinished()
    assert backend.pool.stats.started == 2
    assert [k.header for k in backend.pool.keys()] == [
        "import Mathlib.Logic.Basic\nimport Mathlib.Data.Nat.Defs",
        "import Lean",
    ]


def test_least_recently_used_process_is_evicted(tmp_path: Path, project: Path, log: Path) -> None:
    (project / "D.lean").write_text("import Std\n\ntheorem triv : True := by sorry\n")
    triv_d = target("Demo.triv", path="D.lean", line=3, proof_start=Position(3, 23))
    with make_backend(tmp_path, log, max_processes=2) as backend:
        kept = backend.open(project, ADD)
        backend.open(project, OTHER).close()
        backend.open(project, TRIV_C).close()  # A's header again: now most recently used
        backend.open(project, triv_d).close()  # evicts B's process, the least recently used
        assert [k.header for k in backend.pool.keys()] == [
            "import Mathlib.Logic.Basic\nimport Mathlib.Data.Nat.Defs",
            "import Std",
        ]
        assert backend.pool.stats.evicted == 1 and backend.pool.stats.started == 3
        assert kept.run_tactic(kept.initial_state, "simp") == ProofFinished()  # A used last
        backend.open(project, OTHER).close()  # evicts Std's process
        backend.open(project, triv_d).close()  # evicts A's process, where `kept` lives
        assert backend.pool.stats.evicted == 3 and backend.pool.stats.started == 5
        # `kept` lost its process to eviction; it is re-opened on a new one.
        assert kept.run_tactic(kept.initial_state, "skip") == TacticState(G_ADD)
        assert backend.pool.stats.started == 6


def test_evicting_a_busy_process_does_not_deadlock(tmp_path: Path, project: Path) -> None:
    script = write_script(tmp_path, {**SCRIPT, "tactics": {G_TRUE: {"slow_boom": {"delay": 0.5, "crash": True}}}})
    pool = ReplPool(lambda d: fake_command(d, script), max_size=1, memory_limit_mb=None, header_timeout=5)
    with pool:
        busy = pool.get(PoolKey(project, "import Lean"))
        opened = busy.run(CommandRequest(cmd="theorem triv : True := by sorry", env=busy.header_env), timeout=5)
        assert isinstance(opened, ReplReply) and isinstance(opened.response, CommandResponse)
        state = opened.response.sorries[0].proof_state
        assert state is not None
        outcomes: list[object] = []
        worker = threading.Thread(
            target=lambda: outcomes.append(busy.run(TacticRequest("slow_boom", state), timeout=5)),
            daemon=True,  # a deadlock must fail the test, not hang the test run
        )
        worker.start()
        time.sleep(0.2)  # the worker now holds the busy slot, waiting for its answer
        evictor = threading.Thread(target=lambda: pool.get(PoolKey(project, "import Std")), daemon=True)
        evictor.start()
        evictor.join(10)
        worker.join(10)
        assert not evictor.is_alive() and not worker.is_alive(), "eviction deadlocked"
    assert [type(o) for o in outcomes] == [ReplCrashed] and pool.stats.evicted == 1
    assert pool.incidents == outcomes


def test_open_faults(backend: ReplBackend, project: Path) -> None:
    with pytest.raises(ReplOpenError, match="bad_statement"):
        backend.open(project, BROKEN)
    with pytest.raises(TheoremSourceError, match="Missing.lean"):
        backend.open(project, target("Demo.gone", path="Missing.lean", proof_start=Position(1, 5)))
    with pytest.raises(TheoremSourceError):
        backend.open(project, target("Demo.far", path="B.lean", line=40, proof_start=Position(40, 5)))


def test_theorem_command_text() -> None:
    header = split_header(FILE_A)
    assert header.text == "import Mathlib.Logic.Basic\nimport Mathlib.Data.Nat.Defs"
    command = theorem_command(FILE_A, ADD)
    assert command.cmd.endswith("/-- Adding zero. -/\ntheorem add_zero' (n : Nat) : n + 0 = n := by sorry")
    assert "import" not in command.cmd and "namespace Demo" in command.cmd
    assert command.line_offset == 2  # command line 1 is file line 3
    assert command.statement_start == ReplPos(line=5, column=0)  # file line 7
    assert command.sorry_pos.line == 6 and command.cmd.splitlines()[5][command.sorry_pos.column :] == "sorry"
    from_statement = theorem_command(FILE_A, TRIV_A)
    assert from_statement.cmd.endswith("theorem triv : True := by sorry")


def test_no_repl_anywhere_is_one_clear_error(tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("LEANAGENT_REPL", raising=False)
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    with ReplBackend.create(cache_dir=tmp_path / "cache") as backend:
        with pytest.raises(LeanNotFoundError, match="no Lean REPL found.*git clone"):
            backend.open(project, ADD)


@pytest.mark.lean
def test_real_repl_proves_a_small_theorem(tmp_path: Path) -> None:
    status = describe_repl(tmp_path, environ={})
    if not status.found:
        pytest.skip(status.detail)
    (tmp_path / "Small.lean").write_text("theorem small (p q : Prop) (hp : p) (hq : q) : p ∧ q := by\n  sorry\n")
    small = target("small", path="Small.lean", end=Position(2, 8), proof_start=Position(1, 56))
    with ReplBackend.create(tactic_timeout=60, command_timeout=120) as backend:
        with backend.open(tmp_path, small) as session:
            assert session.initial_state.pp.endswith("⊢ p ∧ q")
            both = session.run_tactic(session.initial_state, "constructor")
            assert isinstance(both, TacticState) and both.num_goals == 2
            assert isinstance(session.run_tactic(both, "exact hq"), LeanError)
            left = session.run_tactic(both, "exact hp")
            assert isinstance(left, TacticState)
            assert session.run_tactic(left, "exact hq") == ProofFinished()
            assert isinstance(session.run_tactic(session.initial_state, "sorry"), LeanError)
