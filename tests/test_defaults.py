"""One default per value: every proof backend cuts a tactic at the same default, and the data
directory keeps the names of the data directories already on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.proving.theorem import ProvingConfig
from agent.workspace.settings import Settings
from lean_env.data_layout import DataLayout
from lean_env.interactive.dojo import DojoBackend
from lean_env.interactive.filecheck import FileCheckBackend, ServerCheckBackend
from lean_env.interactive.interface import TACTIC_TIMEOUT
from lean_env.interactive.repl.backend import ReplBackend


def _repl_timeout() -> float:
    with ReplBackend.create() as backend:  # starts no process before a theorem is opened
        return backend.tactic_timeout


@pytest.mark.parametrize(
    "timeout",
    [
        pytest.param(lambda: FileCheckBackend().timeout, id="file"),
        pytest.param(lambda: ServerCheckBackend().timeout, id="server"),
        pytest.param(_repl_timeout, id="repl"),
        pytest.param(lambda: DojoBackend().timeout, id="dojo"),
        pytest.param(lambda: ProvingConfig().tactic_timeout, id="proving"),
    ],
)
def test_every_backend_cuts_a_tactic_at_the_same_default(timeout) -> None:
    assert timeout() == TACTIC_TIMEOUT


# The names data directories on disk hold their contents under: a changed name would lose them.
NAMES = {
    "database": "leanagent.db",
    "lock": "leanagent.lock",
    "cache": "cache",
    "builds": "builds",
    "repl": "repl",
    "lean_dojo": "lean_dojo",
    "embeddings": "embeddings",
    "retriever": "retriever",
    "learner": "learner",
    "checkpoints": "checkpoints",
    "reports": "reports",
    "generator": "generator",
    "verify": "verify",
}


@pytest.mark.parametrize(("place", "name"), [pytest.param(p, n, id=p) for p, n in NAMES.items()])
def test_the_data_directory_keeps_its_names(tmp_path: Path, place: str, name: str) -> None:
    assert getattr(DataLayout(tmp_path), place) == tmp_path / name


def test_every_place_of_the_layout_has_its_name_above() -> None:
    assert {n for n in dir(DataLayout) if isinstance(getattr(DataLayout, n), property)} == set(NAMES)


def test_the_settings_own_the_layout_and_the_default_database_lies_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LEANAGENT_DB", raising=False)
    settings = Settings.resolve(data_dir=tmp_path)
    assert settings.layout == DataLayout(tmp_path)
    assert settings.db_url == f"sqlite:///{tmp_path / 'leanagent.db'}"
