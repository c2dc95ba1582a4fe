"""Regression probes of a hostile user, at the level the user meets them: the ``leanagent``
process. Each probe once ended in a traceback, a hang or a wrong exit code."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from projects import lean_project

from lean_env.repos import lean_sources


def leanagent(*args: str, data: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "--data-dir", str(data), *args],
        capture_output=True, text=True, timeout=timeout, env=env, check=False,
    )  # fmt: skip


@pytest.fixture
def special_files_project(tmp_path: Path) -> Path:
    """A Lake project whose .lean files include every kind of file that is no source."""
    root = lean_project(tmp_path / "proj")
    (root / "Demo" / "Dangling.lean").symlink_to(root / "Demo" / "Missing.lean")
    (root / "Demo" / "Loop.lean").symlink_to(root / "Demo" / "Loop.lean")
    os.mkfifo(root / "Demo" / "Fifo.lean")
    (root / "Demo" / "Dir.lean").mkdir()
    (root / "Demo" / "Alias.lean").symlink_to(root / "Demo" / "Basic.lean")
    return root


def test_special_files_are_skipped_with_a_reason_and_never_opened(special_files_project: Path) -> None:
    sources = lean_sources(special_files_project)
    assert sources.paths == ("Demo/Alias.lean", "Demo/Basic.lean", "lakefile.lean")
    assert dict(sources.skipped) == {
        "Demo/Dangling.lean": "a dangling symlink (its target does not exist)",
        "Demo/Dir.lean": "a directory, not a file",
        "Demo/Fifo.lean": "not a regular file (a FIFO, socket or device)",
        "Demo/Loop.lean": "a symlink loop",
    }


def test_ingest_of_special_files_records_problems_and_does_not_hang(
    special_files_project: Path, tmp_path: Path
) -> None:
    done = leanagent(
        "ingest", str(special_files_project), "--tracer", "source", "--json", data=tmp_path / "data", timeout=60
    )
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(done.stdout)
    # Basic.lean and its symlinked alias are read (the same 4 theorems twice).
    assert outcome["status"] == "added" and outcome["files"] == 2 and outcome["theorems"] == 8
    again = leanagent(
        "ingest", str(special_files_project), "--tracer", "source", "--json", data=tmp_path / "data", timeout=60
    )
    assert json.loads(again.stdout)[0]["status"] == "unchanged"  # the content hash is stable
    from curriculum.store import Store

    with Store.open(f"sqlite:///{tmp_path / 'data' / 'leanagent.db'}") as store:
        (trace,) = store.latest_traces()
    assert sorted(p.path for p in trace.problems) == [
        "Demo/Dangling.lean",
        "Demo/Dir.lean",
        "Demo/Fifo.lean",
        "Demo/Loop.lean",
    ]
    assert all(p.reason.startswith("skipped: ") for p in trace.problems)


def test_a_repos_file_names_a_path_with_spaces_by_quoting(tmp_path: Path) -> None:
    from lean_env.records import RepoSpec
    from lean_env.repos import parse_repos_file

    repos = tmp_path / "repos.txt"
    repos.write_text("\"my repo\" main  # quoted\n'other repo'\n", encoding="utf-8")
    assert parse_repos_file(repos) == [
        RepoSpec(str(tmp_path / "my repo"), "main"),
        RepoSpec(str(tmp_path / "other repo")),
    ]


def test_an_unclosed_quote_in_a_repos_file_is_one_line_exit_2(tmp_path: Path) -> None:
    repos = tmp_path / "repos.txt"
    repos.write_text('"my repo\n', encoding="utf-8")
    done = leanagent("ingest", "--repos", str(repos), data=tmp_path / "data")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "repos.txt:1: No closing quotation" in done.stderr


@pytest.mark.parametrize("command", ["ingest", "run"])
def test_a_nul_byte_in_a_repos_file_is_one_line_naming_the_line(tmp_path: Path, command: str) -> None:
    repos = tmp_path / "nul.txt"
    repos.write_bytes(b"# a file that is not text\nfoo\0bar\n")
    done = leanagent(*(["ingest", "--repos"] if command == "ingest" else ["run"]), str(repos), data=tmp_path / "data")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{repos}:2: a NUL byte" in done.stderr


# Paths longer than Linux allows (4096 bytes in all, 255 a name), each refused in one line
# that shows only the start of the path.
LONG_NAME = "n" * 300


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["ingest", "/tmp/" + "a" * 5000], "the path is too long for the file system", id="ingest-5000"),
        pytest.param(["run", "{repos}"], "repos.txt:1: a line of 1000000 characters", id="run-1-mb-line"),
        pytest.param(
            ["--db", f"sqlite:////tmp/{LONG_NAME}.db", "db", "stats"],
            f"the database sqlite:////tmp/{LONG_NAME[:65]}... (318 characters): the path is too long",
            id="db-300",
        ),
        pytest.param(["--data-dir", f"/tmp/{LONG_NAME}", "db", "stats"], "File name too long", id="data-dir-300"),
    ],
)
def test_an_overlong_path_is_one_short_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    repos = tmp_path / "repos.txt"
    repos.write_text("x" * 1_000_000 + "\n", encoding="utf-8")
    done = leanagent(*(a.format(repos=repos) for a in args), data=tmp_path / "data")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[:2000]
    assert message in done.stderr and len(done.stderr) < 400, done.stderr[:2000]


def test_with_json_an_error_is_also_a_json_object_on_stdout(tmp_path: Path) -> None:
    done = leanagent("ingest", str(tmp_path / "no-such-repo"), "--json", data=tmp_path / "data")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    payload = json.loads(done.stdout)
    assert payload["exit"] == 2 and payload["error"] in done.stderr


def _without_torch(tmp_path: Path, *args: str, data: Path) -> subprocess.CompletedProcess[str]:
    """``leanagent ARGS`` where ``import torch`` fails: what it says shows whether it got that far."""
    poison = tmp_path / "poison"
    poison.mkdir(exist_ok=True)
    (poison / "torch.py").write_text("raise ImportError('torch was imported')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(poison), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "--data-dir", str(data), *args],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(
            ["run", "r.txt", "--workers", "0"], "argument --workers: must be at least 1, got 0", id="run-workers-0"
        ),
        pytest.param(
            ["run", "r.txt", "--premises", "-1"], "argument --premises: must be at least 1, got -1", id="run-premises"
        ),
        pytest.param(
            ["run", "r.txt", "--time-limit", "-1"],
            "argument --time-limit: must be a positive number of seconds, got -1",
            id="run-time-limit",
        ),
        pytest.param(
            ["prove", "--generator", "g", "--tactic-timeout", "inf"],
            "must be a positive number of seconds, got inf",
            id="prove-inf",
        ),
        pytest.param(
            ["retrieval", "search", "goal", "-k", "0"], "argument -k: must be at least 1, got 0", id="search-k-0"
        ),
        pytest.param(
            ["retrieval", "train", "--lr", "nan"],
            "argument --lr: must be a positive number, got nan",
            id="train-lr-nan",
        ),
        pytest.param(
            ["retrieval", "eval", "--test-fraction", "1"], "must be between 0 and 1, got 1", id="eval-fraction"
        ),
        pytest.param(
            ["retrieval", "eval", "--recall-target", "1.5"],
            "argument --recall-target: must be between 0 and 1, got 1.5",
            id="eval-recall-target",
        ),
        pytest.param(
            ["generator", "train", "--model", "m", "--epochs", "x"],
            "must be a whole number, got 'x'",
            id="generator-epochs",
        ),
    ],
)
def test_bad_option_values_are_refused_before_any_work(tmp_path: Path, args: list[str], message: str) -> None:
    """Refused while parsing: a ``torch`` that cannot be imported shows that nothing heavy
    (a model, a database) was touched first."""
    done = _without_torch(tmp_path, *args, data=tmp_path / "data")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr and "torch" not in done.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
def test_a_model_path_that_is_a_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"weights")
    lean_project(tmp_path / "proj")
    data = tmp_path / "data"
    assert leanagent("ingest", str(tmp_path / "proj"), "--tracer", "source", data=data).returncode == 0
    done = leanagent("retrieval", "eval", "--model", str(tmp_path / "model.bin"), data=data)
    assert done.returncode == 2 and "it is a file; a model is a directory" in done.stderr, done.stderr


def test_doctor_without_lean_exits_2_like_every_missing_toolchain(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {**os.environ, "PATH": str(bin_dir), "ELAN_HOME": str(tmp_path / "no-elan")}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "env", "doctor", "--project", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lean = json.loads(done.stdout)["tools"][0]
    assert (lean["name"], lean["found"], lean["path"]) == ("lean", False, None) and "elan" in lean["detail"]


# The console script, started as the entry point a user's `leanagent` runs.
ENTRY = [sys.executable, "-c", "from agent.cli.entry import run; run()"]


# From 0.3 s on the interpreter has started ours (before that, Python itself starts: a
# signal there ends the bare process, as it would any Python program). SIGTERM, as cron's
# timeout, systemd and container schedulers stop a job, ends it as Ctrl-C does, but for the
# word and the code.
@pytest.mark.parametrize("delay", [0.3, 1.0, 3.0])
@pytest.mark.parametrize(
    "signum, code, word",
    [
        pytest.param(signal.SIGINT, 130, "interrupted", id="ctrl-c"),
        pytest.param(signal.SIGTERM, 143, "terminated (SIGTERM)", id="sigterm"),
    ],
)
def test_ctrl_c_or_sigterm_at_any_moment_is_one_line_and_exit_130_or_143(
    tmp_path: Path, delay: float, signum: int, code: int, word: str
) -> None:
    import time

    (tmp_path / "repos.txt").write_text(f"{lean_project(tmp_path / 'proj')}\n", encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [*ENTRY, "--data-dir", str(tmp_path / "data"), "run", str(tmp_path / "repos.txt"), "--tracer", "source"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    time.sleep(delay)
    process.send_signal(signum)
    out, err = process.communicate(timeout=120)
    assert process.returncode == code, err
    assert err.count("\n") == 1 and err.startswith(f"leanagent: {word}") and "Traceback" not in err, err


# A command's main thread with an interrupt's handler installed as `main` installs it, where
# the interrupt is raised inside a weakref callback (as it was once inside an import lock's,
# and that run finished with exit 0); the command then works on for up to 5 s.
SWALLOWED = """
import signal, sys, time, weakref
from agent.cli.signals import Terminated, raise_terminated, redeliver_swallowed_interrupts
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, raise_terminated)
redeliver_swallowed_interrupts()
class Thing: pass
thing = Thing()
def callback(ref):
    raise {kind}
ref = weakref.ref(thing, callback)
try:
    del thing
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.001)
except Terminated:
    sys.exit(143)
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize(("kind", "code"), [("KeyboardInterrupt", 130), ("Terminated", 143)])
def test_an_interrupt_swallowed_in_a_callback_still_ends_the_command(kind: str, code: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWED.format(kind=kind)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == code and "Exception ignored" not in done.stderr, done.stderr


def test_sigterm_keeps_the_finished_work_and_the_run_resumes(tmp_path: Path, repos_file: Path) -> None:
    """SIGTERM once the repository is stored (the log says so: the handshake), while the run
    goes on to train: the repository stays stored, and the next run resumes run 1."""
    data = tmp_path / "data"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [*ENTRY, "--data-dir", str(data), "-v", "run", str(repos_file), "--tracer", "source", "--no-prove"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    said = []
    for line in process.stderr:
        said.append(line)
        if line.startswith("INFO curriculum.store: stored "):
            process.send_signal(signal.SIGTERM)
            break
    out, err = process.communicate(timeout=120)
    said.append(err)
    assert process.returncode == 143, "".join(said)
    ours = [line for line in "".join(said).splitlines() if line.startswith("leanagent:")]
    assert ours == ["leanagent: terminated (SIGTERM); finished work is saved, re-run to resume"], "".join(said)
    assert "Traceback" not in "".join(said)
    done = leanagent("run", str(repos_file), "--tracer", "source", "--no-prove", "--json", data=data)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert (payload["run"], payload["resumed"]) == (1, True)
    assert [o["status"] for o in payload["ingest"]] == ["unchanged"]


def test_ctrl_c_after_the_command_finished_leaves_its_exit_code(tmp_path: Path) -> None:
    code = (
        "import os, signal, sys\nfrom agent.cli.main import main\n"
        f"code = main(['--data-dir', {str(tmp_path / 'data')!r}, 'db', 'stats', '--json'], standalone=True)\n"
        "os.kill(os.getpid(), signal.SIGINT)\nsys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)["repositories"] == 0


# A job that holds the data directory's lock (and, with the run of `leanagent run repos.txt
# --tracer source --no-train` marked running in the database) until its stdin closes.
HOLDER = """
import sys
from pathlib import Path
from agent.workspace.joblock import job_lock
from agent.lifelong.job import LifelongOptions
from agent.workspace.settings import Settings
from agent.workspace.data import open_store
from curriculum.runs import tracked_run
from lean_env.trace.choice import TracerChoice

settings = Settings.resolve(data_dir=Path(sys.argv[1]), db_url=sys.argv[3] if len(sys.argv) > 3 else None)
options = LifelongOptions(Path(sys.argv[2]), tracer=TracerChoice.SOURCE, training=None)
with job_lock(settings, "holder"), open_store(settings) as store, tracked_run(store, options.identity()):
    print("holding", flush=True)
    sys.stdin.read()
"""


def _hold(data: Path, repos: Path, *db: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data), str(repos), *db],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "holding\n", holder.stderr
    return holder


@pytest.fixture
def repos_file(tmp_path: Path) -> Path:
    repos = tmp_path / "repos.txt"
    repos.write_text(f"{lean_project(tmp_path / 'proj')}\n", encoding="utf-8")
    return repos


RUN = ("run", "--tracer", "source", "--no-train", "--no-prove", "--json")


@pytest.mark.slow
def test_a_second_job_on_a_data_dir_in_use_exits_2_naming_the_holder(tmp_path: Path, repos_file: Path) -> None:
    data = tmp_path / "data"
    holder = _hold(data, repos_file)
    try:
        done = leanagent(RUN[0], str(repos_file), *RUN[1:], data=data)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"is in use by leanagent holder (pid {holder.pid} on " in done.stderr and "--wait" in done.stderr
        assert json.loads(done.stdout)["exit"] == 2
    finally:
        holder.communicate("", timeout=30)
    # The holder ended (its run finished): the next job runs, as run 2.
    done = leanagent(RUN[0], str(repos_file), *RUN[1:], data=data)
    assert done.returncode == 0, done.stderr
    assert (json.loads(done.stdout)["run"], json.loads(done.stdout)["resumed"]) == (2, False)


def test_a_second_run_is_refused_before_it_imports_and_loads(tmp_path: Path, repos_file: Path) -> None:
    """``run`` imports torch and loads for seconds before it takes its locks: it asks the
    data directory's first (and lets go), so that a torch that cannot be imported is never
    reached: refused in the time Python takes to start."""
    data = tmp_path / "data"
    holder = _hold(data, repos_file)
    try:
        done = _without_torch(tmp_path, "run", str(repos_file), "--tracer", "source", data=data)
    finally:
        holder.communicate("", timeout=30)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"is in use by leanagent holder (pid {holder.pid} on " in done.stderr and "torch" not in done.stderr


@pytest.mark.slow
def test_with_wait_a_second_job_says_what_it_waits_for_and_runs_once_the_first_ends(
    tmp_path: Path, repos_file: Path
) -> None:
    import threading

    data = tmp_path / "data"
    holder = _hold(data, repos_file)
    waiter = subprocess.Popen(
        [sys.executable, "-m", "agent.cli.main", "--data-dir", str(data), RUN[0], str(repos_file), *RUN[1:], "--wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Should it never say so, the holder ends anyway, and the assertion below fails.
    deadline = threading.Timer(120, lambda: holder.stdin and holder.stdin.close())
    deadline.start()
    assert waiter.stderr is not None
    said = next((line for line in waiter.stderr if "waiting for" in line), "")
    assert waiter.poll() is None  # still waiting for the lock
    holder.communicate("", timeout=30)
    deadline.cancel()
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    assert json.loads(out)["run"] == 2
    assert said.startswith("leanagent: waiting for the data directory"), said
    assert f"in use by leanagent holder (pid {holder.pid} on " in said
    assert "waiting for" not in err  # said once (the next line comes after a minute)


@pytest.mark.slow
def test_a_killed_holder_is_taken_over_and_its_run_resumed(tmp_path: Path, repos_file: Path) -> None:
    """The lock dies with its holder: the run it left marked running is known to be dead,
    and the next job resumes it under its id."""
    data = tmp_path / "data"
    holder = _hold(data, repos_file)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    done = leanagent(RUN[0], str(repos_file), *RUN[1:], data=data)
    assert done.returncode == 0, done.stderr
    assert (json.loads(done.stdout)["run"], json.loads(done.stdout)["resumed"]) == (1, True)


@pytest.mark.slow
def test_two_data_dirs_on_one_database_take_turns(tmp_path: Path, repos_file: Path, db_url: str) -> None:
    """The database has a lock of its own (a file lock beside a SQLite file elsewhere, an
    advisory lock on PostgreSQL): a job in another data directory is refused too."""
    holder = _hold(tmp_path / "a", repos_file, db_url)
    try:
        done = leanagent("--db", db_url, RUN[0], str(repos_file), *RUN[1:], data=tmp_path / "b")
    finally:
        holder.communicate("", timeout=30)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "the database" in done.stderr and f"is in use by leanagent holder (pid {holder.pid} on " in done.stderr


@pytest.mark.slow
def test_a_job_naming_another_data_dirs_database_waits_its_turn(tmp_path: Path, repos_file: Path) -> None:
    holder = _hold(tmp_path / "a", repos_file)  # its database is a/leanagent.db
    try:
        db = f"sqlite:///{tmp_path / 'a' / 'leanagent.db'}"
        done = leanagent("--db", db, RUN[0], str(repos_file), *RUN[1:], data=tmp_path / "b")
    finally:
        holder.communicate("", timeout=30)
    assert done.returncode == 2 and "the database" in done.stderr and "is in use by leanagent holder" in done.stderr


# ---- output that cannot be written -----------------------------------------------------


def _written_to(stdout: int, *args: str, data: Path) -> subprocess.CompletedProcess[str]:
    """``leanagent ARGS`` with its stdout on the file descriptor ``stdout``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [*ENTRY, "--data-dir", str(data), *args],
        stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip


@pytest.fixture
def verify_model(tmp_path: Path) -> Path:
    import numpy as np
    from verify_synth import SynthConfig, random_spec

    from verify.model.spec import save_spec

    return save_spec(random_spec(np.random.default_rng(3), SynthConfig()), tmp_path / "m.json")


@pytest.mark.parametrize(
    "args, code, line",
    [
        pytest.param(
            ["db", "stats", "--json"],
            1,
            "leanagent: error: cannot write the standard output: No space left on device\n",
            id="stats-json",
        ),
        pytest.param(
            ["db", "stats"],
            1,
            "leanagent: error: cannot write the standard output: No space left on device\n",
            id="stats",
        ),
        # The error's own JSON object cannot be written either: its line on stderr says it.
        pytest.param(
            ["ingest", "{data}/no-such-repo", "--json"], 2, "does not exist or is not a directory\n", id="error"
        ),
    ],
)
def test_output_onto_a_full_disk_is_one_line(tmp_path: Path, args: list[str], code: int, line: str) -> None:
    data = tmp_path / "data"
    with open("/dev/full", "wb") as full:
        done = _written_to(full.fileno(), *(a.format(data=data) for a in args), data=data)
    assert done.returncode == code and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.endswith(line), done.stderr


@pytest.mark.parametrize(
    "args, code",
    [
        pytest.param(["db", "stats"], 141, id="stats"),
        pytest.param(["db", "stats", "--json"], 141, id="stats-json"),
        pytest.param(["verify", "trsat", "{model}", "--max-len", "2", "--json"], 141, id="trsat-json"),
        # An error keeps its code and its line on stderr; only its JSON copy is lost.
        pytest.param(["ingest", "{data}/no-such-repo", "--json"], 2, id="error-json"),
    ],
)
def test_a_reader_that_went_away_ends_the_command_quietly(
    tmp_path: Path, verify_model: Path, args: list[str], code: int
) -> None:
    """As ``leanagent ... | true`` does, deterministically: the pipe's reading end is closed
    before the command starts. Like a Unix tool that SIGPIPE ends: nothing said (but
    progress), exit 141."""
    data = tmp_path / "data"
    read, write = os.pipe()
    os.close(read)
    try:
        done = _written_to(write, *(a.format(data=data, model=verify_model) for a in args), data=data)
    finally:
        os.close(write)
    assert done.returncode == code, done.stderr
    said = [line for line in done.stderr.splitlines() if not line.startswith("verify: length")]  # progress
    assert len(said) == (0 if code == 141 else 1), done.stderr


# ---- a full disk, a read-only one ---------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``mount`` for the block (``options``: ``size=20m``, ``ro``); the
    test is skipped where it cannot be mounted (not root). tests/test_retrieval_train.py and
    the /dev/full tests above fail writes without a mount, and run everywhere."""
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root can): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _fill(disk: Path) -> Path:
    """A file that takes every free block of ``disk``."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as file:
        with contextlib.suppress(OSError):
            while True:
                file.write(b"\0" * 4096)
    return filler


def test_a_full_disk_while_the_learner_is_saved_is_one_line_exit_1_and_the_rerun_resumes(
    tmp_path: Path, repos_file: Path
) -> None:
    """The learner (90 MB: the bundled MiniLM) does not fit the 20 MB the database and the
    report do: one line naming the file, exit 1; given room, the run resumes and ends."""
    run = ("run", str(repos_file), "--tracer", "source", "--no-prove", "--json")
    with _tmpfs(tmp_path / "disk", "size=20m") as disk:
        done = leanagent(*run, data=disk)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        learner = re.search(r"^leanagent: error: cannot write the learner (\S+): No space left on device$", done.stderr)
        assert learner and Path(learner[1]).parent == disk / "learner", done.stderr
        assert list((disk / "learner").iterdir()) == []  # no partial file left behind
        subprocess.run(["mount", "-o", "remount,size=400m", str(disk)], check=True)
        done = leanagent(*run, data=disk)
        assert done.returncode == 0, done.stderr
        assert (json.loads(done.stdout)["run"], json.loads(done.stdout)["resumed"]) == (1, True)
        assert Path(learner[1]).is_file()


def test_ingest_onto_a_full_disk_is_exit_1_and_the_database_stays_as_it_was(tmp_path: Path) -> None:
    first, second = lean_project(tmp_path / "first"), lean_project(tmp_path / "second")
    ingest = ("ingest", "--tracer", "source", "--json")
    with _tmpfs(tmp_path / "disk", "size=1m") as disk:
        assert leanagent(*ingest, str(first), data=disk).returncode == 0
        filler = _fill(disk)
        done = leanagent(*ingest, str(second), data=disk)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "database or disk is full" in done.stderr or "no space left on the disk" in done.stderr, done.stderr
        filler.unlink()
        stats = leanagent("db", "stats", "--json", data=disk)
        assert json.loads(stats.stdout)["repositories"] == 1, stats.stderr
        assert leanagent(*ingest, str(second), data=disk).returncode == 0


def test_ingest_into_a_read_only_directory_says_where_and_why(tmp_path: Path) -> None:
    project = lean_project(tmp_path / "proj")
    with _tmpfs(tmp_path / "disk", "ro") as disk:
        done = leanagent("ingest", str(project), "--tracer", "source", data=disk)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.endswith(f"unable to open database file; {disk} cannot be written (Read-only file system)\n"), (
        done.stderr
    )
