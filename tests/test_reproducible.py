"""Reproducible training, where a user meets it: the ``leanagent run`` process. A run killed
before, during and between its steps and started again ends with the same learner file,
report and saved encoder as a run never stopped (another process, so another random seed
of torch's own); two checkouts of the same repositories at other paths learn the same
weights and scores."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from fakes.tiny_encoder import tiny_encoder
from projects import lemma_project

from agent.lifelong.job import LifelongJob, LifelongOptions, RetrieverTraining
from agent.workspace.settings import Settings
from lean_env.trace.choice import TracerChoice
from retrieval.train_config import TrainConfig

torch.set_num_threads(1)

# Enough epochs of the tiny encoder that a step lasts long enough to be killed inside it.
TRAINING = ("--tracer", "source", "--epochs", "10", "--batch-size", "4", "--test-fraction", "0.5")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two tiny projects in a repos file, and a tiny encoder's directory."""
    root = tmp_path_factory.mktemp("reproducible")
    for name in ("alpha", "beta"):
        lemma_project(root / name, name, 6)
    (root / "repos.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    tiny_encoder(0).save(root / "encoder")
    return root / "repos.txt", root / "encoder"


def _start(data: Path, repos: Path, encoder: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "agent.cli.main", "-v", "--data-dir", str(data), "run", str(repos)]
    return subprocess.Popen(
        [*command, "--model", str(encoder), *TRAINING, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def _kill_on(process: subprocess.Popen[str], needle: str) -> None:
    """SIGKILL ``process`` as soon as its log shows a line containing ``needle``."""
    assert process.stderr is not None
    for line in process.stderr:
        if needle in line:
            process.send_signal(signal.SIGKILL)
            break
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL, f"the run ended before {needle!r} was logged"


def _finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return json.loads(out)


def _comparable(report: dict[str, Any], data: Path) -> dict[str, Any]:
    """A run's report without what says where it ran and how many sittings it took: the
    data directory in paths, whether it was resumed, how many steps earlier sittings took,
    the ingest status (a sitting after the kill finds the repositories stored) and how many
    premises this sitting embedded or found embedded by an earlier one."""
    text = json.dumps(report).replace(str(data), "DATA")
    same = json.loads(text)
    same.pop("resumed")
    same["training"].pop("steps_before_this_run")
    same.pop("embeddings")
    for outcome in same["ingest"]:
        outcome.pop("status")
    return same


def _only(directory: Path) -> Path:
    (path,) = directory.iterdir()
    return path


# Where the kills land, in the order one run goes through them: each sitting is killed at
# the next point and the last one runs to the end.
KILLS = [
    "step 1: training on",  # after the ingest, inside the first step, before the first checkpoint
    "step 1: learner saved",  # between the steps
    "step 2: training on",  # inside the last step
]


@pytest.mark.slow
def test_a_run_killed_anywhere_and_resumed_ends_as_a_run_never_stopped(tmp_path: Path, workspace) -> None:
    repos, encoder = workspace
    whole_data, killed_data = tmp_path / "whole", tmp_path / "killed"
    whole = _finish(_start(whole_data, repos, encoder))
    for needle in KILLS:
        _kill_on(_start(killed_data, repos, encoder), needle)
    resumed = _finish(_start(killed_data, repos, encoder))

    assert resumed["resumed"] and resumed["training"]["steps_before_this_run"] >= 1
    assert _comparable(resumed, killed_data) == _comparable(whole, whole_data)
    assert _only(killed_data / "learner").read_bytes() == _only(whole_data / "learner").read_bytes()
    weights = Path("retriever") / "model.safetensors"
    assert (killed_data / weights).read_bytes() == (whole_data / weights).read_bytes()
    reports = Path("reports") / "run-1.json"
    assert _comparable(json.loads((killed_data / reports).read_text()), killed_data) == _comparable(
        json.loads((whole_data / reports).read_text()), whole_data
    )


def test_copies_at_other_paths_learn_the_same_weights_and_scores(tmp_path: Path, workspace) -> None:
    """The split hashes a repository's identity (a local project's directory name), and
    nothing else of the training reads where a project is checked out."""
    repos, encoder = workspace
    results, learners = [], []
    for place in (tmp_path / "here", tmp_path / "there" / "deeper"):
        for name in ("alpha", "beta"):
            shutil.copytree(repos.parent / name, place / name)
        (place / "repos.txt").write_text("alpha\nbeta\n", encoding="utf-8")
        training = RetrieverTraining(str(encoder), TrainConfig(epochs=3, batch_size=4), test_fraction=0.5)
        options = LifelongOptions(place / "repos.txt", tracer=TracerChoice.SOURCE, training=training)
        result = LifelongJob(Settings.resolve(data_dir=place / "data"), options).run()
        assert result.training is not None
        results.append(result.training)
        learners.append(torch.load(_only(place / "data" / "learner"), weights_only=True)["encoder"])
    here, there = results
    assert [Path(r).name for r in here.repos] == [Path(r).name for r in there.repos] == ["alpha", "beta"]
    assert here.matrix(lambda s: s.mrr) == there.matrix(lambda s: s.mrr)
    assert [(r.train_examples, r.step) for r in here.rows] == [(r.train_examples, r.step) for r in there.rows]
    assert all(torch.equal(value, learners[1][name]) for name, value in learners[0].items())
