"""One REPL process against the fake REPL: requests, timeouts, crashes, bad output, memory."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from fakes.repl_support import fake_command, pid_running, read_log, write_script

from lean_env.interactive.repl.errors import (
    ReplCrashError,
    ReplProtocolError,
    ReplStartError,
    ReplTimeoutError,
)
from lean_env.interactive.repl.process import ProcessState, ReplCommand, ReplProcess
from lean_env.interactive.repl.protocol import (
    CommandRequest,
    CommandResponse,
    ProofStepResponse,
    TacticRequest,
)

GOAL = "⊢ True"
SCRIPT = {
    "theorems": {"t": GOAL},
    "tactics": {
        GOAL: {
            "trivial": {"goals": []},
            "hang": {"hang": True, "child": True},
            "crash": {"crash": True},
            "garbage": {"malformed": True},
            "big": {"memory_mb": 768},
        }
    },
}


@pytest.fixture
def repl(tmp_path: Path):
    log = tmp_path / "requests.log"
    command = fake_command(tmp_path, write_script(tmp_path, SCRIPT), log=log)
    with ReplProcess.start(command, memory_limit_mb=None) as process:
        yield process


def open_theorem(repl: ReplProcess) -> int:
    answer = repl.request(CommandRequest(cmd="theorem t : True := by sorry"), timeout=5)
    assert isinstance(answer, CommandResponse)
    (sorry,) = answer.sorries
    assert sorry.goal == GOAL and sorry.proof_state is not None
    return sorry.proof_state


def test_command_then_tactic(repl: ReplProcess) -> None:
    state = open_theorem(repl)
    answer = repl.request(TacticRequest(tactic="trivial", proof_state=state), timeout=5)
    assert isinstance(answer, ProofStepResponse)
    assert answer.goals == () and answer.proof_status == "Completed"


def test_timeout_kills_the_whole_tree(repl: ReplProcess, tmp_path: Path) -> None:
    state = open_theorem(repl)
    started = time.monotonic()
    with pytest.raises(ReplTimeoutError) as info:
        repl.request(TacticRequest(tactic="hang", proof_state=state), timeout=1.0)
    assert 1.0 <= time.monotonic() - started < 8
    assert info.value.seconds == 1.0 and "killed" in str(info.value)
    assert not repl.alive and repl.state is ProcessState.DEAD
    children = [e["child"] for e in read_log(tmp_path / "requests.log") if "child" in e]
    assert len(children) == 1
    deadline = time.monotonic() + 5
    while pid_running(children[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_running(children[0]), "the hung REPL's own child must be killed too"
    with pytest.raises(ReplCrashError):  # dead process detected before writing
        repl.request(TacticRequest(tactic="trivial", proof_state=state), timeout=1.0)


def test_crash_reports_exit_code_and_stderr(repl: ReplProcess) -> None:
    state = open_theorem(repl)
    with pytest.raises(ReplCrashError) as info:
        repl.request(TacticRequest(tactic="crash", proof_state=state), timeout=5)
    assert info.value.returncode == 3
    assert "crashing on request" in info.value.stderr_tail
    assert "crashing on request" in str(info.value)


def test_malformed_output_raises_with_raw_text_and_kills(repl: ReplProcess) -> None:
    state = open_theorem(repl)
    with pytest.raises(ReplProtocolError) as info:
        repl.request(TacticRequest(tactic="garbage", proof_state=state), timeout=5)
    assert info.value.raw == "{this is not json"
    assert "this is not json" in str(info.value)
    assert not repl.alive, "after a desync the pipe cannot be trusted"


def test_memory_cap_ends_a_greedy_process(tmp_path: Path) -> None:
    command = fake_command(tmp_path, write_script(tmp_path, SCRIPT))
    with ReplProcess.start(command, memory_limit_mb=256) as capped:
        state = open_theorem(capped)
        with pytest.raises(ReplCrashError) as info:
            capped.request(TacticRequest(tactic="big", proof_state=state), timeout=10)
    assert "MemoryError" in info.value.stderr_tail


def test_dead_process_is_detected_before_the_request(tmp_path: Path) -> None:
    command = ReplCommand(argv=(sys.executable, "-c", "import sys; sys.exit(7)"), cwd=tmp_path)
    with ReplProcess.start(command, memory_limit_mb=None) as process:
        deadline = time.monotonic() + 5
        while process.alive and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(ReplCrashError) as info:
            process.request(CommandRequest(cmd=""), timeout=1)
    assert info.value.returncode == 7 and "before the request" in str(info.value)


def test_missing_program_is_a_start_error(tmp_path: Path) -> None:
    with pytest.raises(ReplStartError, match="no-such-repl"):
        ReplProcess.start(ReplCommand(argv=(str(tmp_path / "no-such-repl"),), cwd=tmp_path))


def test_close_is_idempotent_and_final(repl: ReplProcess) -> None:
    open_theorem(repl)
    pid = repl.pid
    repl.close()
    repl.close()
    assert repl.state is ProcessState.CLOSED and pid is not None and not pid_running(pid)
    with pytest.raises(ReplCrashError, match="closed"):
        repl.request(CommandRequest(cmd=""), timeout=1)
    with pytest.raises(ValueError, match="positive timeout"):
        repl.request(CommandRequest(cmd=""), timeout=0)
