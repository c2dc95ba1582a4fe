"""Proof search on Ray workers gives the attempts the in-process search gives, for `prove`
and for `run` (whose workers load the retriever saved after each step); the tiny generator
and the fake lean of the prove tests. Skipped without Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.tiny_encoder import tiny_encoder
from prove_cases import demo_lake_repo, taught_generator

from agent.cli import main

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'leanagent[ray]')")

SEARCH = ["--candidates", "2", "--max-expansions", "6", "--tactic-timeout", "20", "--check-timeout", "20"]


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
        assert main(["--data-dir", str(data), "ingest", str(repo), "--backend", "source"]) == 0
        return ["--data-dir", str(data), "prove", "--generator", str(generator), "--backend", "file", *SEARCH, *extra]

    def run(data: Path, *extra: str) -> list[str]:
        return ["--data-dir", str(data), "run", str(tmp_path / "repos.txt"), "--backend", "source", "--model", str(tmp_path / "encoder"),
                "--batch-size", "2", "--generator", str(generator), "--proof-backend", "file", *SEARCH, *extra]

    expected = {"Demo.imp_self'": ("proved", "by\n  intro h\n  exact h"), "Demo.two": ("failed", None)}
    assert _attempts(capsys, prove(tmp_path / "prove-here")) == expected
    assert _attempts(capsys, run(tmp_path / "run-here")) == expected

    def not_here(*args: object, **kwargs: object) -> None:
        raise AssertionError("--workers 2 proved in this process")

    monkeypatch.setattr("agent.scale.prove_here", not_here)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024**2)
    try:
        assert _attempts(capsys, prove(tmp_path / "prove-ray", "--workers", "2")) == expected
        assert _attempts(capsys, run(tmp_path / "run-ray", "--workers", "2")) == expected
    finally:
        ray.shutdown()
