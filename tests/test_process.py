"""The process helper (lean_env.process) against small Python programs: what a run prints,
the tail of a child's stderr, a timeout or an interrupt that kills the program and the
grandchild it started, and a close that may come twice."""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.repl_support import pid_running

from lean_env import process
from lean_env.process import Child, kill_group, run, tail

# A program that starts a grandchild (`sleep`), prints its pid (and writes it to the file
# its argument names) and sleeps: what a hanging `lake` that started a `lean` looks like.
WITH_GRANDCHILD = (
    "import pathlib, subprocess, sys, time\n"
    "grandchild = subprocess.Popen(['sleep', '60'])\n"
    "pathlib.Path(sys.argv[1]).write_text(str(grandchild.pid))\n"
    "print(grandchild.pid, flush=True)\n"
    "time.sleep(60)\n"
)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def gone(pid: int, within: float = 5.0) -> bool:
    """Whether ``pid`` is gone (or a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while pid_running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not pid_running(pid)


def test_a_run_returns_what_the_program_printed_and_its_exit_code(tmp_path: Path) -> None:
    code = (
        "import os, sys\n"
        "print(os.getcwd(), sorted(set(os.environ) - {'LC_CTYPE'}))\n"  # Python may set LC_CTYPE
        "print(sys.stdin.read().upper())\n"
        "print('oops', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    done = run(python(code), cwd=tmp_path, timeout=30, input=b"hello", env={"MARK": "1"})
    assert done.returncode == 3 and not done.timed_out
    assert done.stdout.decode().splitlines() == [f"{tmp_path} ['MARK']", "HELLO"]
    assert done.stderr == b"oops\n"
    assert done.argv == tuple(python(code)) and 0 < done.seconds < 30


def test_merged_stderr_comes_in_stdout_and_text_reads_as_subprocess_does(tmp_path: Path) -> None:
    code = (
        "import sys; sys.stdout.buffer.write(b'a\\r\\nb\\rc\\xff\\n'); sys.stdout.flush(); sys.stderr.write('err\\n')"
    )
    done = run(python(code), timeout=30, merge_stderr=True)
    assert done.returncode == 0 and done.stderr == b""
    assert process.text(done.stdout) == "a\nb\nc\ufffd\nerr\n"


def test_a_timeout_kills_the_program_and_its_grandchild_and_keeps_what_it_printed(tmp_path: Path) -> None:
    started = time.monotonic()
    done = run([*python(WITH_GRANDCHILD), str(tmp_path / "pid")], timeout=1.5)
    assert done.timed_out and done.returncode is None
    assert 1.5 <= done.seconds < 1.5 + process.REAP_SECONDS
    assert time.monotonic() - started < 1.5 + process.REAP_SECONDS
    assert gone(int(done.stdout)), "the grandchild must die with its group"


def test_an_interrupt_kills_the_group_before_it_propagates(tmp_path: Path) -> None:
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.5)  # Ctrl-C, 1.5 s into the run
        with pytest.raises(KeyboardInterrupt):
            run([*python(WITH_GRANDCHILD), str(tmp_path / "pid")], timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert gone(int((tmp_path / "pid").read_text())), "the grandchild must die with its group"


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan], ids=["zero", "negative", "infinite", "nan"])
def test_a_run_needs_a_finite_positive_timeout(timeout: float) -> None:
    with pytest.raises(ValueError, match="finite positive timeout"):
        run(python("pass"), timeout=timeout)


def test_a_program_that_cannot_start_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run([str(tmp_path / "no-such-program")], timeout=5)
    with pytest.raises(FileNotFoundError):
        Child.spawn([str(tmp_path / "no-such-program")], cwd=tmp_path)


@pytest.fixture
def child(tmp_path: Path) -> Iterator[Child]:
    """A child that echoes each line of its stdin upper-cased and writes 3000 characters
    to stderr first."""
    code = (
        "import sys\n"
        "sys.stderr.write('x' * 2990 + 'the end\\n'); sys.stderr.flush()\n"
        "for line in sys.stdin:\n"
        "    print(line.strip().upper(), flush=True)\n"
    )
    with Child.spawn(python(code), cwd=tmp_path) as spawned:
        yield spawned


def test_a_child_answers_over_its_pipes_and_keeps_the_tail_of_its_stderr(child: Child) -> None:
    child.stdin.write(b"hello\n")
    child.stdin.flush()
    assert child.stdout.readline() == b"HELLO\n"
    assert child.alive and child.returncode is None
    assert child.stderr_tail(20) == "...xxxxxxxxxxxxxthe end"
    assert child.stderr_tail() == tail("x" * 2990 + "the end")
    assert len(child.stderr_tail()) == process.TAIL_CHARS + 3


def test_closing_a_child_kills_its_group_and_may_come_twice(tmp_path: Path) -> None:
    spawned = Child.spawn([*python(WITH_GRANDCHILD), str(tmp_path / "pid")], cwd=tmp_path)
    grandchild = int(spawned.stdout.readline())
    spawned.close()
    assert not spawned.alive and spawned.returncode == -signal.SIGKILL
    assert gone(grandchild), "the grandchild must die with its group"
    assert spawned.stderr_tail() == ""
    spawned.close()  # nothing left to do, and no error
    assert spawned.stdin.closed and spawned.stdout.closed


def test_a_child_that_exited_is_seen_dead_and_its_exit_code_kept(tmp_path: Path) -> None:
    with Child.spawn(python("import sys; sys.stderr.write('bye'); sys.exit(7)"), cwd=tmp_path) as spawned:
        assert spawned.stdout.read() == b""  # EOF: it exited
        spawned.kill()  # reaps it; no group is left to kill
        assert not spawned.alive and spawned.returncode == 7
        assert spawned.stderr_tail() == "bye"


def test_kill_group_says_whether_there_was_a_group_to_kill(tmp_path: Path) -> None:
    with Child.spawn(python("import time; time.sleep(60)"), cwd=tmp_path) as spawned:
        assert kill_group(spawned.pid)
        spawned.kill()
        assert spawned.returncode == -signal.SIGKILL
    in_our_group = subprocess.Popen(["sleep", "60"])  # leads no group of its own
    try:
        assert not kill_group(in_our_group.pid)
        assert in_our_group.poll() is None
    finally:
        in_our_group.kill()
        in_our_group.wait()
