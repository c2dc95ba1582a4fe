"""Proof search on Ray workers gives the attempts the in-process search gives (the tiny
generator and the fake lean of the prove tests); skipped without Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prove_cases import demo_lake_repo, taught_generator

from agent.cli import main
from curriculum.store import Store

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'leanagent[ray]')")

SEARCH = ["--candidates", "2", "--max-expansions", "6", "--tactic-timeout", "20", "--check-timeout", "20"]


def _attempts(data: Path, generator: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, tuple[str, str | None]]:
    capsys.readouterr()
    assert main(["--data-dir", str(data), "prove", "--generator", str(generator), "--backend", "file",
                 *SEARCH, "--json", *extra]) == 0
    payload = json.loads(capsys.readouterr().out)
    return {a["theorem"]: (a["outcome"], a["proof"]) for a in payload["attempts"]}


def test_ray_workers_give_the_in_process_attempts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    repo = demo_lake_repo(tmp_path, monkeypatch)  # puts the fake lean on PATH: set before Ray starts its workers
    generator = taught_generator(tmp_path / "generator")
    here, there = tmp_path / "here", tmp_path / "there"
    for data in (here, there):
        assert main(["--data-dir", str(data), "ingest", str(repo), "--backend", "source"]) == 0

    in_process = _attempts(here, generator, capsys)

    def not_here(*args: object, **kwargs: object) -> None:
        raise AssertionError("--workers 2 proved in this process")

    monkeypatch.setattr("agent.scale.prove_here", not_here)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 1024**2)
    try:
        on_ray = _attempts(there, generator, capsys, "--workers", "2")
    finally:
        ray.shutdown()
    assert on_ray == in_process == {"Demo.imp_self'": ("proved", "by\n  intro h\n  exact h"), "Demo.two": ("failed", None)}
    with Store.open(f"sqlite:///{there / 'leanagent.db'}") as store:
        assert sorted(a.outcome.value for a in store.attempts()) == ["failed", "proved"]
