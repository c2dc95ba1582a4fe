"""The retrieval commands end to end on the bundled example projects, with a tiny encoder
saved to a directory (the same loading path as any user model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from fakes.tiny_encoder import tiny_encoder

from agent.cli.main import EXIT_USAGE, main

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, examples_dir: Path) -> tuple[Path, Path]:
    """A data dir holding both example projects (source extraction), and a tiny model dir."""
    root = tmp_path_factory.mktemp("retrieval-cli")
    data = root / "data"
    repos = root / "repos.txt"
    repos.write_text(f"{examples_dir / 'demo-logic'}\n{examples_dir / 'demo-arith'}\n", encoding="utf-8")
    assert main(["--data-dir", str(data), "ingest", "--repos", str(repos), "--tracer", "source"]) == 0
    model = root / "tiny"
    tiny_encoder(0).save(model)
    return data, model


def _run(capsys: pytest.CaptureFixture[str], data: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--data-dir", str(data), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_train_reports_the_matrix_and_saves_a_loadable_encoder(workspace, capsys, tmp_path: Path) -> None:
    data, model = workspace
    out_dir = tmp_path / "trained"
    # The split hashes the repositories' names (demo-logic, demo-arith), not where they are
    # checked out, so a fixed seed splits alike everywhere; 0 leaves both examples on each side.
    seed = "0"
    code, out, _ = _run(
        capsys,
        data,
        "retrieval",
        "train",
        "--model",
        str(model),
        "--epochs",
        "2",
        "--batch-size",
        "4",
        "--test-fraction",
        "0.5",
        "--seed",
        seed,
        "--out",
        str(out_dir),
        "--json",
    )
    assert code == 0
    payload = json.loads(out)
    repos = payload["repositories"]
    assert len(repos) == 2 and {Path(r).name for r in repos} == {"demo-logic", "demo-arith"}
    matrix = payload["matrices"]["recall@10"]
    assert len(matrix) == 2 and matrix[0][1] is None  # the second repository is unseen after step 1
    assert all(v is not None for v in matrix[1])  # every repository has held-out examples
    assert all(0.0 <= v <= 1.0 for row in matrix for v in row if v is not None)
    assert [s["train_examples"] > 0 for s in payload["steps"]] == [True, True]
    assert set(payload["metrics"]) == {"recall@1", "recall@10", "MRR"}
    assert isinstance(payload["metrics"]["MRR"]["FM"]["value"], float)
    assert isinstance(payload["metrics"]["MRR"]["WP5"]["value"], float)  # defined from two steps
    assert (
        payload["metrics"]["MRR"]["WP5"]["unit"] == "fraction" and payload["metrics"]["MRR"]["CFR"]["unit"] == "ratio"
    )
    assert payload["embeddings"]["embedded"] > 0
    assert payload["premise_index"]["kind"] == "exact"  # a few premises: a scan is cheap
    code, out, _ = _run(
        capsys,
        data,
        "retrieval",
        "eval",
        "--model",
        str(out_dir),
        "--test-fraction",
        "0.5",
        "--seed",
        seed,
        "--recall-target",
        "0.95",
        "--json",
    )
    evaluated = json.loads(out)
    assert code == 0 and set(evaluated["repositories"]) == set(repos)
    assert evaluated["premise_index"] | {"why": None} == {
        "kind": "exact",
        "device": "cpu",
        "recall_at_10": 1.0,
        "recall_target": 0.95,
        "calibration_queries": 0,
        "calibrated_on": "",
        "served_recall_at_10": None,
        "served_queries": 0,
        "why": None,
        "lists": None,
        "probes": None,
        "rerank": None,
    }
    # The saved encoder is the last step's: its premises were embedded by that step's evaluation.
    code, out, _ = _run(capsys, data, "retrieval", "eval", "--model", str(out_dir), "--test-fraction", "0.5")
    assert code == 0 and "premises embedded: 0, reused from the embedding store: " in out
    assert not list((data / "checkpoints").glob("*"))  # removed once the encoder was saved


def test_an_unversioned_checkpoint_is_one_line_and_exit_2(workspace, capsys) -> None:
    """A checkpoint left by an older leanagent (pickled records) is refused, not trained over."""
    from retrieval.index import RecallScores
    from retrieval.progressive import ProgressRow
    from retrieval.train import StepReport

    data, model = workspace
    checkpoint = data / "checkpoints" / "retrieval-train.pt"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    row = ProgressRow("/r/a", "c0", 1, StepReport(1, 1, 0.5, 0.0), {"/r/a": RecallScores(1, {1: 1.0}, 1.0)})
    torch.save({"key": "(...)", "rows": [row]}, checkpoint)
    try:
        code, _, err = _run(capsys, data, "retrieval", "train", "--model", str(model), "--epochs", "1")
        assert code == EXIT_USAGE and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert "older leanagent" in err and str(checkpoint) in err and "delete it" in err
    finally:
        checkpoint.unlink()


def test_search_restricted_to_a_theorem_sees_only_accessible_premises(workspace, capsys) -> None:
    data, model = workspace
    code, out, _ = _run(
        capsys, data, "retrieval", "search", "p ∧ q → q ∧ p", "-k", "500", "--model", str(model), "--json"
    )
    assert code == 0
    everything = {hit["premise"] for hit in json.loads(out)}
    assert "DemoLogic.exists_of_forall" in everything
    assert any(name.startswith("DemoArith") for name in everything) and any(
        name.startswith("DemoLogic") for name in everything
    )
    code, out, _ = _run(
        capsys,
        data,
        "retrieval",
        "search",
        "p ∧ q → q ∧ p",
        "-k",
        "500",
        "--model",
        str(model),
        "--theorem",
        "DemoLogic.forall_swap_and",
        "--json",
    )
    assert code == 0
    hits = {hit["premise"]: hit for hit in json.loads(out)}
    # DemoLogic/Quantifiers.lean imports DemoLogic/Basic.lean; of its own premises only the
    # one declared before the theorem is accessible
    assert "DemoLogic.and_swap" in hits and "DemoLogic.forall_left" in hits
    assert "DemoLogic.exists_of_forall" not in hits and not any(name.startswith("DemoArith") for name in hits)
    hits = list(hits.values())
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert all(a["score"] >= b["score"] for a, b in zip(hits, hits[1:], strict=False))
    # Without --json, the table and the index's line: what kind it is, and the recall it measured.
    code, out, _ = _run(capsys, data, "retrieval", "search", "p ∧ q → q ∧ p", "--model", str(model))
    assert code == 0 and out.splitlines()[-1].startswith("premise index: exact on cpu (")


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(
            ["retrieval", "search", "goal", "--theorem", "No.such"], "no stored theorem", id="unknown-theorem"
        ),
        pytest.param(["retrieval", "eval", "--test-fraction", "1.5"], "--test-fraction", id="bad-fraction"),
        pytest.param(["retrieval", "train", "--epochs", "0"], "--epochs", id="bad-epochs"),
        pytest.param(["retrieval", "eval", "--model", "/no/such/model"], "no such directory", id="missing-model"),
        pytest.param(["retrieval", "search", "goal", "-k", "0"], "-k", id="bad-k"),
        pytest.param(["retrieval", "train", "--batch-size", "1"], "--batch-size", id="batch-of-one"),
        pytest.param(["retrieval", "train", "--out", "{data}/leanagent.db"], "is a file", id="out-is-a-file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(workspace, capsys, args: list[str], message: str) -> None:
    data, model = workspace
    if "--model" not in args:
        args = [*args, "--model", str(model)]
    args = [a.replace("{data}", str(data)) for a in args]
    code, _, err = _run(capsys, data, *args)
    assert code == EXIT_USAGE and message in err and "Traceback" not in err


def test_an_empty_database_is_a_user_error(tmp_path: Path, capsys) -> None:
    code, _, err = _run(capsys, tmp_path / "empty", "retrieval", "eval")
    assert code == EXIT_USAGE and "holds no repositories" in err


def test_a_corrupt_model_file_is_a_user_error(workspace, capsys, tmp_path: Path) -> None:
    data, model = workspace
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in model.iterdir():
        (broken / item.name).write_bytes(item.read_bytes())
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    code, _, err = _run(capsys, data, "retrieval", "eval", "--model", str(broken))
    assert code == EXIT_USAGE and "cannot load the encoder" in err and "Traceback" not in err
