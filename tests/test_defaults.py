"""One default per value: the command line's options default to the library's configs, every
proof backend cuts a tactic at the same default, and the data directory keeps the names of
the data directories already on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli import main as cli
from agent.cli.options import proving_config, train_config
from agent.evaluation.evaluate import Selection
from agent.lifelong.job import RetrieverTraining
from agent.proving.config import ProvingConfig
from agent.workspace.settings import Settings
from lean_env.data_layout import DataLayout
from lean_env.interactive.dojo import DojoBackend
from lean_env.interactive.filecheck import FileCheckBackend, ServerCheckBackend
from lean_env.interactive.interface import TACTIC_TIMEOUT
from lean_env.interactive.repl.backend import ReplBackend
from retrieval.progressive import Learner
from retrieval.split import TEST_FRACTION
from retrieval.train_config import TrainConfig


def _parsed(argv: list[str]):
    return cli.build_parser().parse_args(argv)


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["prove"], id="prove"),
        pytest.param(["evaluate"], id="evaluate"),
        pytest.param(["run", "repos.txt"], id="run"),
    ],
)
def test_the_prove_options_default_to_the_proving_config(argv: list[str]) -> None:
    assert proving_config(_parsed(argv)) == ProvingConfig()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["retrieval", "train"], id="retrieval-train"),
        pytest.param(["run", "repos.txt"], id="run"),
    ],
)
def test_the_train_options_default_to_the_train_config(argv: list[str]) -> None:
    args = _parsed(argv)
    assert train_config(args) == TrainConfig()
    assert args.test_fraction == TEST_FRACTION


def test_the_generator_options_default_to_its_train_config() -> None:
    from agent.generators.train_config import GeneratorTrainConfig

    args, config = _parsed(["generator", "train", "--model", "m"]), GeneratorTrainConfig()
    assert (args.epochs, args.batch_size, args.lr) == (config.epochs, config.batch_size, config.learning_rate)


@pytest.mark.parametrize(
    ("argv", "library"),
    [
        pytest.param(["retrieval", "eval"], Learner().test_fraction, id="retrieval-eval"),
        pytest.param(["evaluate"], Selection().test_fraction, id="evaluate"),
        pytest.param(["run", "repos.txt"], RetrieverTraining().test_fraction, id="run"),
    ],
)
def test_every_split_holds_out_the_same_share_by_default(argv: list[str], library: float) -> None:
    assert _parsed(argv).test_fraction == library == TEST_FRACTION


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
        pytest.param(lambda: ProvingConfig().tactic_seconds, id="proving"),
    ],
)
def test_every_backend_cuts_a_tactic_at_the_same_default(timeout) -> None:
    assert timeout() == TACTIC_TIMEOUT


@pytest.mark.parametrize(
    ("options", "seconds"),
    [
        pytest.param([], TACTIC_TIMEOUT, id="default-limit"),
        pytest.param(["--time-limit", "20"], 5.0, id="a-quarter-of-a-short-limit"),
        pytest.param(["--time-limit", "20", "--tactic-timeout", "8"], 8.0, id="set"),
    ],
)
def test_a_tactic_gets_a_quarter_of_the_time_limit_unless_set(options: list[str], seconds: float) -> None:
    config = proving_config(_parsed(["prove", *options]))
    assert config.tactic_seconds == seconds
    assert config.identity()["tactic_timeout"] == seconds


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
