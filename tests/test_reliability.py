"""Regression probes of a hostile user, at the level the user meets them: the ``leanagent``
process. Each probe once ended in a traceback, a hang or a wrong exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from db_cases import lean_project

from lean_env.repos import lean_sources


def leanagent(*args: str, data: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "--data-dir", str(data), *args],
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


def test_ingest_of_special_files_records_problems_and_does_not_hang(special_files_project: Path, tmp_path: Path) -> None:
    done = leanagent("ingest", str(special_files_project), "--backend", "source", "--json", data=tmp_path / "data", timeout=60)
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(done.stdout)
    # Basic.lean and its symlinked alias are read (the same 4 theorems twice).
    assert outcome["status"] == "added" and outcome["files"] == 2 and outcome["theorems"] == 8
    again = leanagent("ingest", str(special_files_project), "--backend", "source", "--json", data=tmp_path / "data", timeout=60)
    assert json.loads(again.stdout)[0]["status"] == "unchanged"  # the content hash is stable
    from curriculum.store import Store

    with Store.open(f"sqlite:///{tmp_path / 'data' / 'leanagent.db'}") as store:
        (trace,) = store.latest_traces()
    assert sorted(p.path for p in trace.problems) == ["Demo/Dangling.lean", "Demo/Dir.lean", "Demo/Fifo.lean", "Demo/Loop.lean"]
    assert all(p.reason.startswith("skipped: ") for p in trace.problems)
