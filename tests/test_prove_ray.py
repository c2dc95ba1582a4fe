"""Proof search on Ray workers gives the attempts the in-process search gives, for `prove`
and for `run` (whose workers load the retriever saved after each step); the tiny generator
and the fake lean of the prove tests. Skipped without Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.tiny_encoder import tiny_encoder
from prove_cases import demo_lake_repo, taught_generator

from agent.cli.main import EXIT_USAGE, main

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'leanagent[ray]')")
pytestmark = pytest.mark.ray

REPO_ROOT = Path(__file__).resolve().parents[1]
SEARCH = ["--candidates", "2", "--max-expansions", "6", "--tactic-timeout", "20", "--check-timeout", "20"]


@pytest.fixture(scope="module")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return taught_generator(tmp_path_factory.mktemp("models") / "generator")


def _attempts(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, tuple[str, str | None]]:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    attempts = payload["proving"]["attempts"] if "proving" in payload else payload["attempts"]
    return {a["theorem"]: (a["outcome"], a["proof"]) for a in attempts}


def test_ray_workers_give_the_in_process_attempts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    repo = demo_lake_repo(tmp_path, monkeypatch)  # puts the fake lean on PATH: set before Ray starts its workers
    (tmp_path / "repos.txt").write_text("repo\n", encoding="utf-8")
    generator = taught_generator(tmp_path / "generator")
    tiny_encoder(0).save(tmp_path / "encoder")

    def prove(data: Path, *extra: str) -> list[str]:
        assert main(["--data-dir", str(data), "ingest", str(repo), "--tracer", "source"]) == 0
        return [
            "--data-dir",
            str(data),
            "prove",
            "--generator",
            str(generator),
            "--proof-backend",
            "file",
            *SEARCH,
            *extra,
        ]

    def run(data: Path, *extra: str) -> list[str]:
        return [
            "--data-dir",
            str(data),
            "run",
            str(tmp_path / "repos.txt"),
            "--tracer",
            "source",
            "--model",
            str(tmp_path / "encoder"),
            "--batch-size",
            "2",
            "--generator",
            str(generator),
            "--proof-backend",
            "file",
            *SEARCH,
            *extra,
        ]

    expected = {"Demo.imp_self'": ("proved", "by\n  intro h\n  exact h"), "Demo.two": ("failed", None)}
    assert _attempts(capsys, prove(tmp_path / "prove-here")) == expected
    assert _attempts(capsys, run(tmp_path / "run-here")) == expected

    def not_here(*args: object, **kwargs: object) -> None:
        raise AssertionError("--workers 2 proved in this process")

    monkeypatch.setattr("agent.proving.scale.prove_here", not_here)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024**2)
    try:
        assert _attempts(capsys, prove(tmp_path / "prove-ray", "--workers", "2")) == expected
        assert _attempts(capsys, run(tmp_path / "run-ray", "--workers", "2")) == expected
    finally:
        ray.shutdown()


@pytest.fixture
def ray_session():
    """A Ray of two CPUs, started before the fake lean is put on PATH: its workers find no lean."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024**2)
    try:
        yield
    finally:
        ray.shutdown()


def _ingested_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    repo = demo_lake_repo(tmp_path, monkeypatch)
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", str(repo), "--tracer", "source"]) == 0
    return data


def test_a_bad_generator_on_ray_workers_is_a_one_line_user_error(ray_session, tmp_path, monkeypatch, capsys) -> None:
    """``prove --workers 2 --generator MISSING``: exit 2 and one line naming the generator, as
    in-process (where the model is loaded before the run starts)."""
    data = _ingested_demo(tmp_path, monkeypatch)
    capsys.readouterr()
    code = main(
        [*data, "prove", "--generator", str(tmp_path / "missing"), "--proof-backend", "file", *SEARCH, "--workers", "2"]
    )
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and len(err.strip().splitlines()) == 1 and "tactic generator" in err, err


def test_a_missing_lean_on_ray_workers_is_a_one_line_error(
    ray_session, tmp_path, monkeypatch, generator, capsys
) -> None:
    """The workers find no lean (Ray was started without it on PATH): exit 2 and one line that
    says how to install Lean, as in-process."""
    data = _ingested_demo(tmp_path, monkeypatch)
    capsys.readouterr()
    code = main([*data, "prove", "--generator", str(generator), "--proof-backend", "file", *SEARCH, "--workers", "2"])
    err = capsys.readouterr().err.strip()
    assert code == EXIT_USAGE and len(err.splitlines()) == 1 and "elan" in err, err[:600]


_MORE_WORKERS_THAN_CPUS = """\
import sys
import ray
from agent.cli.main import EXIT_USAGE, main
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024**2)
try:
    code = main(sys.argv[1:])
finally:
    ray.shutdown()
sys.exit(code)
"""


def test_more_workers_than_ray_cpus_does_not_hang(tmp_path, monkeypatch, generator) -> None:
    """``prove --workers 2`` on a Ray with one CPU (two sorries) ends within a minute: proved
    on the one worker Ray can place, or a one-line error; never waiting for ever."""
    data = _ingested_demo(tmp_path, monkeypatch)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests")]),
        "OMP_NUM_THREADS": "1",
    }
    argv = [
        sys.executable,
        "-c",
        _MORE_WORKERS_THAN_CPUS,
        *data,
        "prove",
        "--generator",
        str(generator),
        "--proof-backend",
        "file",
        *SEARCH,
        "--workers",
        "2",
    ]
    process = subprocess.Popen(
        argv, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # Ray's processes share the driver's fate
        process.communicate()
        pytest.fail("prove --workers 2 on one Ray CPU was still waiting after 60 s")
    assert process.returncode in (0, EXIT_USAGE), err.decode()[-800:]
