"""The model spec file format: round trips, named arrays in an .npz, and errors that name the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from verify.errors import VerifyInputError
from verify.interpreter import run_batch
from verify.spec import (
    Attention,
    PositionalKind,
    ReadoutPosition,
    SpecError,
    load_spec,
    save_spec,
    spec_from_dict,
)
from verify.synth import SynthConfig, random_spec


def _spec_dict(**config: object) -> dict:
    spec = random_spec(np.random.default_rng(0), SynthConfig(**config))  # type: ignore[arg-type]
    return spec.to_json_dict()


def test_save_then_load_round_trips_every_field(tmp_path: Path) -> None:
    config = SynthConfig(
        attention=Attention.SOFTMAX_TABLE,
        ffn_dim=2,
        layers=2,
        positional=PositionalKind.PERIODIC,
        readout=ReadoutPosition.CLS,
    )
    spec = random_spec(np.random.default_rng(7), config)
    path = save_spec(spec, tmp_path / "m.json")
    again = load_spec(path)
    assert again.to_json_dict() == spec.to_json_dict()
    ids = np.array([[0, 1, 2, 1], [2, 2, 0, 1]])
    assert (run_batch(again, ids).scores == run_batch(spec, ids).scores).all()


def test_arrays_may_live_in_an_npz_beside_the_json(tmp_path: Path) -> None:
    data = _spec_dict(ffn_dim=2)
    np.savez(tmp_path / "w.npz", emb=np.array(data["embedding"]), w1=np.array(data["layers"][0]["ffn"]["w1"]))
    data["npz"] = "w.npz"
    expected = spec_from_dict(copy.deepcopy(data))
    data["embedding"] = "emb"
    data["layers"][0]["ffn"]["w1"] = "w1"
    (tmp_path / "m.json").write_text(json.dumps(data))
    loaded = load_spec(tmp_path / "m.json")
    assert loaded.to_json_dict() == expected.to_json_dict()


def _set(path: str, value: object):
    def mutate(data: dict) -> None:
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


@pytest.mark.parametrize(
    "mutate, field",
    [
        pytest.param(_set("layers.0.heads.0.wk", [[1, 2]]), "layers[0].heads[0].wk", id="shape-mismatch"),
        pytest.param(_set("layers.0.attention", "sparsemax"), "layers[0].attention", id="unknown-attention"),
        pytest.param(_set("width", 40), "width", id="width-out-of-range"),
        pytest.param(_set("weight_width", 1), "weight_width", id="weight-width-too-small"),
        pytest.param(_set("rounding", "stochastic"), "rounding", id="unknown-rounding"),
        pytest.param(_set("overflow", "trap"), "overflow", id="unknown-overflow"),
        pytest.param(_set("embedding", [[1000, 0, 0]] * 3), "embedding", id="embedding-exceeds-width"),
        pytest.param(_set("embedding", [[1, 0, 0]] * 2), "embedding", id="embedding-rows-not-vocab"),
        pytest.param(_set("layers.0.wo", [[1.5, 0, 0]] * 2), "layers[0].wo", id="non-integer-weight"),
        pytest.param(
            _set("layers.0.o_requant", {"multiplier": 0, "shift": 0}),
            "layers[0].o_requant.multiplier",
            id="zero-multiplier",
        ),
        pytest.param(
            _set("layers.0.o_requant", {"multiplier": 1, "shift": 99}), "layers[0].o_requant.shift", id="huge-shift"
        ),
        pytest.param(_set("readout.weight", [[1, 1]] * 3), "readout.weight", id="positive-needs-one-column"),
        pytest.param(_set("readout.position", "middle"), "readout.position", id="unknown-readout"),
        pytest.param(_set("readout.position", "cls"), "readout.cls_token", id="cls-without-token"),
        pytest.param(_set("layers.0.exp_table", [4, 2]), "layers[0].exp_table", id="exp-table-on-hardmax"),
        pytest.param(_set("positional", {"kind": "table"}), "positional.table", id="table-missing"),
        pytest.param(_set("vocab", ["a", "a", "b"]), "vocab", id="duplicate-symbols"),
        pytest.param(_set("format", "onnx"), "format", id="wrong-format"),
    ],
)
def test_malformed_spec_names_the_field(mutate, field: str) -> None:
    data = _spec_dict()
    mutate(data)
    with pytest.raises(SpecError) as info:
        spec_from_dict(data)
    assert f"field {field}:" in str(info.value)
    assert isinstance(info.value, VerifyInputError)


def test_softmax_table_needs_a_positive_first_entry() -> None:
    data = _spec_dict(attention=Attention.SOFTMAX_TABLE)
    data["layers"][0]["exp_table"] = [0, 1]
    with pytest.raises(SpecError, match=r"layers\[0\]\.exp_table"):
        spec_from_dict(data)


@pytest.mark.parametrize(
    "content, message",
    [
        pytest.param("{not json", "not valid JSON", id="bad-json"),
        pytest.param("[]", "top level must be a JSON object", id="not-an-object"),
        pytest.param('{"vocab": ["a"]}', "field layers: is missing", id="missing-field"),
    ],
)
def test_unreadable_files_give_one_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(content)
    with pytest.raises(SpecError, match=message):
        load_spec(path)


def test_missing_file_and_missing_npz(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read model file"):
        load_spec(tmp_path / "absent.json")
    data = _spec_dict()
    data["npz"] = "absent.npz"
    (tmp_path / "m.json").write_text(json.dumps(data))
    with pytest.raises(SpecError, match="field npz"):
        load_spec(tmp_path / "m.json")
