"""The model spec file format: round trips, named arrays in an .npz, and errors that name the field."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from verify_synth import SynthConfig, random_spec

from verify.errors import VerifyInputError
from verify.model.interpreter import run_batch
from verify.model.spec import (
    Attention,
    PositionalKind,
    ReadoutPosition,
    SpecError,
    load_spec,
    save_spec,
    spec_from_dict,
)


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


def test_a_spec_file_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = save_spec(random_spec(np.random.default_rng(3), SynthConfig()), tmp_path / "m.json")
    path.write_text("\ufeff" + path.read_text(encoding="utf-8"), encoding="utf-8")
    assert load_spec(path).to_json_dict() == load_spec(save_spec(load_spec(path), tmp_path / "n.json")).to_json_dict()


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


@pytest.mark.parametrize(
    "mutate, message",
    [
        pytest.param(
            _set("layers.0.resdual", False),
            "field layers[0]: unknown key 'resdual' (did you mean 'residual'?)",
            id="typo",
        ),
        pytest.param(_set("widht", 8), "field (top level): unknown key 'widht' (did you mean 'width'?)", id="top-typo"),
        pytest.param(_set("layers.0.heads.0.wv_requant", {}), "field layers[0].heads[0]: unknown key", id="head-key"),
        pytest.param(_set("layers.0.o_requant", {"mult": 2}), "field layers[0].o_requant: unknown key", id="rq-key"),
        pytest.param(_set("readout.bias_", [0]), "field readout: unknown key 'bias_'", id="readout-key"),
        pytest.param(_set("positional", {"kind": "none", "period": 2}), "field positional: unknown key", id="pos-key"),
        pytest.param(_set("embedding.0.0", True), "field embedding: entries must be integers, got true", id="bool"),
        pytest.param(_set("embedding.0.0", 1.0), "field embedding: entries must be integers, got 1.0", id="float"),
        pytest.param(_set("embedding.0.0", 2**70), "entry 1180591620717411303424 is beyond the 64-bit", id="int64"),
        pytest.param(_set("embedding.0", [1, 2]), "field embedding: not a rectangular array", id="ragged"),
        pytest.param(_set("embedding", [1, 2]), "field embedding: expected a 2-dimensional array", id="flat"),
        pytest.param(_set("readout.cls_token", 3), "field readout.cls_token: must be a symbol", id="cls-not-str"),
        pytest.param(_set("layers.0.heads.0", [1]), "field layers[0].heads[0]: must be a JSON object", id="head-list"),
    ],
)
def test_the_format_is_strict(mutate, message: str) -> None:
    """Unknown keys, booleans or floats as weights and numbers beyond int64 are refused, never
    read as something else."""
    data = _spec_dict()
    mutate(data)
    with pytest.raises(SpecError) as info:
        spec_from_dict(data)
    assert message in str(info.value)


def test_npz_arrays_need_an_integer_dtype(tmp_path: Path) -> None:
    data = _spec_dict()
    embedding = np.array(data["embedding"])
    data.update(npz="w.npz", embedding="emb")
    for dtype in (bool, np.float64):
        np.savez(tmp_path / "w.npz", emb=embedding.astype(dtype))
        (tmp_path / "m.json").write_text(json.dumps(data))
        with pytest.raises(SpecError, match=f"field embedding: entries must be integers, got dtype {np.dtype(dtype)}"):
            load_spec(tmp_path / "m.json")


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
        pytest.param(b"\xff\xfe{}", r"is not UTF-8 text \(byte 0: invalid start byte\)", id="not-utf8"),
        pytest.param("[" * 100_000 + "]" * 100_000, "nests JSON arrays or objects too deeply", id="deep"),
        pytest.param('{"width": ' + "9" * 5000 + "}", "is not valid JSON", id="huge-number"),
    ],
)
def test_unreadable_files_give_one_clear_error(tmp_path: Path, content: str | bytes, message: str) -> None:
    path = tmp_path / "m.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
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
