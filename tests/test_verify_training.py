"""From a trained model: tasks, training, post-training quantization, the gap, the CLI."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

from agent.cli.commands.verify.train_example import TASK_CHOICES, add_parser
from agent.workspace.settings import Settings
from verify.errors import VerifyInputError
from verify.model import interpreter
from verify.model.spec import Attention, Mask, PositionalKind, ReadoutPosition, load_spec, save_spec
from verify.trained.exact_models import exact_max_length, exact_model
from verify.trained.quantize import QuantConfig, measure_gap, predict_quantized, quantize
from verify.trained.tasks import (
    DYCK_MAX_DEPTH,
    all_words,
    get_task,
    sample_dataset,
    sample_words,
    task_names,
)
from verify.trained.training import ModelConfig, TrainConfig, accuracy, recipe, train

# Budgets for the tests: the recipes' architectures, fewer steps.
TEST_STEPS = {"majority": 300, "contains-ab": 800}
# Accuracy the float models must reach on every word of length <= 8 with those budgets.
FLOAT_ACCURACY = {"majority": 0.99, "contains-ab": 0.95}


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained() -> dict:
    """One trained model per task, shared by the tests of this module."""
    out = {}
    for name, steps in TEST_STEPS.items():
        task = get_task(name)
        chosen = recipe(task)
        out[name] = (task, train(task, chosen.model, replace(chosen.train, steps=steps)))
    return out


@pytest.fixture(scope="module")
def quantized(trained: dict) -> dict:
    """The 8-bit quantization of each trained model."""
    return {
        name: quantize(result.model, sample_dataset(task, size=300, max_len=12, seed=1).words, QuantConfig())
        for name, (task, result) in trained.items()
    }


# --- tasks -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "word", "member"),
    [
        pytest.param("majority", "aab", True, id="majority-more-a"),
        pytest.param("majority", "abab", False, id="majority-tie-rejected"),
        pytest.param("majority", "b", False, id="majority-single-b"),
        pytest.param("contains-ab", "bbab", True, id="contains-ab-inside"),
        pytest.param("contains-ab", "bbaa", False, id="contains-ab-b-then-a"),
        pytest.param("parity", "abba", False, id="parity-two-a"),
        pytest.param("parity", "bab", True, id="parity-one-a"),
        pytest.param("dyck", "(())()", True, id="dyck-depth-2"),
        pytest.param("dyck", "((()))", False, id="dyck-too-deep"),
        pytest.param("dyck", "())(", False, id="dyck-unbalanced-prefix"),
    ],
)
def test_task_labels(task: str, word: str, member: bool) -> None:
    assert get_task(task).label(word) == int(member)


def test_task_errors_are_user_errors() -> None:
    with pytest.raises(VerifyInputError, match="unknown task 'nope'"):
        get_task("nope")
    with pytest.raises(VerifyInputError, match="outside the alphabet"):
        get_task("majority").label("abc")
    with pytest.raises(VerifyInputError, match="min_len"):
        all_words(get_task("majority"), max_len=0)


@pytest.mark.parametrize("name", task_names())
def test_sampled_datasets_are_balanced_seeded_and_correctly_labelled(name: str) -> None:
    task = get_task(name)
    first = sample_dataset(task, size=400, max_len=20, seed=3)
    assert first == sample_dataset(task, size=400, max_len=20, seed=3)
    assert first != sample_dataset(task, size=400, max_len=20, seed=4)
    assert first.positive_rate == 0.5
    assert all(task.label(w) == y and 1 <= len(w) <= 20 for w, y in zip(first.words, first.labels))
    # Long non-members of "contains ab" (b^i a^j) are rare under uniform sampling; the
    # samplers still find them, and members of bounded Dyck at even lengths.
    long = sample_dataset(task, size=50, min_len=30, max_len=40, seed=0)
    assert long.positive_rate == 0.5


def test_exhaustive_words_count_and_bounded_dyck() -> None:
    dyck = all_words(get_task("dyck"), max_len=8)
    assert len(dyck) == 2 + 4 + 8 + 16 + 32 + 64 + 128 + 256
    members = {w for w, y in zip(dyck.words, dyck.labels) if y}
    # Balanced words of length <= 8 nested at most DYCK_MAX_DEPTH (=2) deep: 1 + 2 + 4 + 8.
    assert DYCK_MAX_DEPTH == 2 and len(members) == 15 and "(())(())" in members


def test_uniform_sample_is_seeded() -> None:
    task = get_task("parity")
    assert sample_words(task, size=30, min_len=5, max_len=9, seed=2) == sample_words(
        task, size=30, min_len=5, max_len=9, seed=2
    )


@pytest.mark.parametrize("name", ["majority", "contains-ab", "dyck"])
def test_exact_models_decide_their_language(name: str) -> None:
    task, spec = get_task(name), exact_model(name)
    assert spec is not None
    words = all_words(task, max_len=12)
    np.testing.assert_array_equal(predict_quantized(spec, words.words), np.asarray(words.labels))
    longer = sample_dataset(task, size=200, min_len=13, max_len=exact_max_length(name) or 40, seed=0)
    np.testing.assert_array_equal(predict_quantized(spec, longer.words), np.asarray(longer.labels))


def test_no_exact_model_for_parity() -> None:
    assert exact_model("parity") is None and exact_max_length("parity") is None


# --- training --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TEST_STEPS))
def test_training_reaches_the_stated_accuracy(trained: dict, name: str) -> None:
    task, result = trained[name]
    acc = accuracy(result.model, all_words(task, max_len=8))
    assert acc >= FLOAT_ACCURACY[name], f"{name}: float accuracy {acc:.3f} on all words of length <= 8"


def test_training_is_deterministic() -> None:
    task = get_task("majority")
    config = ModelConfig(alphabet="ab", layers=1, d_model=4, head_dim=2, ffn_dim=4)
    budget = TrainConfig(steps=20, train_size=200, batch_size=32, seed=7)
    a, b = train(task, config, budget), train(task, config, budget)
    for (name, pa), pb in zip(a.model.named_parameters(), b.model.parameters()):
        assert torch.equal(pa, pb), name
    assert a.losses == b.losses


@pytest.mark.parametrize(
    "attention",
    [pytest.param(Attention.UNIQUE_HARDMAX, id="unique"), pytest.param(Attention.AVERAGE_HARDMAX, id="average")],
)
def test_hardmax_models_quantize_to_their_own_kind(attention: Attention) -> None:
    """Hardmax kinds are evaluated with hard attention, as the spec defines it: quantized
    finely enough that no near-tie of scores flips, the spec decides exactly like the float
    model (ties, leftmost choice and averaging agree)."""
    task = get_task("majority")
    config = replace(recipe(task).model, attention=attention)
    result = train(task, config, TrainConfig(steps=60, train_size=300, seed=1))
    fine = QuantConfig(width=16, weight_width=16)
    spec = quantize(result.model, sample_dataset(task, size=200, max_len=12, seed=1).words, fine)
    assert all(layer.attention is attention and not layer.exp_table for layer in spec.layers)
    row = measure_gap(result.model, spec, "len<=6", all_words(task, max_len=6))
    assert row.agreement == 1.0


def test_training_rejects_words_longer_than_the_positional_table() -> None:
    task = get_task("contains-ab")
    with pytest.raises(VerifyInputError, match="positional"):
        train(task, ModelConfig(alphabet="ab", positions=5), TrainConfig(steps=1, max_len=12))


# --- quantization ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TEST_STEPS))
def test_quantized_batches_replay_word_by_word_through_the_interpreter(quantized: dict, name: str) -> None:
    task, spec = get_task(name), quantized[name]
    words = sample_words(task, size=40, min_len=1, max_len=12, seed=5).words
    batched = predict_quantized(spec, words)
    single = [int(interpreter.run(spec, list(w)).accepted) for w in words]
    assert batched.tolist() == single


@pytest.mark.parametrize(
    ("name", "max_gap"),
    [pytest.param("majority", 0.0, id="majority-lossless"), pytest.param("contains-ab", 0.05, id="contains-ab")],
)
def test_quantization_gap_is_small_at_8_bits(trained: dict, quantized: dict, name: str, max_gap: float) -> None:
    task, result = trained[name]
    row = measure_gap(result.model, quantized[name], "len<=8", all_words(task, max_len=8))
    assert row.gap <= max_gap
    assert row.agreement >= 1 - max_gap
    assert row.float_accuracy - row.quantized_accuracy == pytest.approx(row.gap)


def _own_integer_scores(spec, word: str) -> int:  # type: ignore[no-untyped-def]
    """The readout score of ``word``, computed from the spec's documented semantics in plain
    Python integers, one position at a time: an oracle independent of the interpreter."""
    lo, hi = -(1 << (spec.width - 1)), (1 << (spec.width - 1)) - 1

    def ovf(v: int) -> int:
        if spec.overflow.value == "saturate":
            return min(max(v, lo), hi)
        return (v - lo) % (1 << spec.width) + lo

    def div(a: int, b: int) -> int:
        if spec.rounding.value == "floor":
            return a // b
        if spec.rounding.value == "half_up":
            return (2 * a + b) // (2 * b)
        return round(Fraction(a, b))  # Python rounds halves to even

    def rq(acc: int, r) -> int:  # type: ignore[no-untyped-def]
        return ovf(div(acc * r.multiplier, 1 << r.shift))

    def matvec(v: list[int], w: np.ndarray) -> list[int]:
        return [sum(v[i] * int(w[i, j]) for i in range(len(v))) for j in range(w.shape[1])]

    cls = [spec.vocab.index(spec.readout.cls_token)] if spec.readout.cls_token else []
    ids = cls + [spec.vocab.index(s) for s in word]
    table = spec.positional.table
    xs = [
        [
            ovf(int(spec.embedding[t, c]) + (0 if table is None else int(table[i % len(table), c])))
            for c in range(spec.d_model)
        ]
        for i, t in enumerate(ids)
    ]
    for layer in spec.layers:
        outs: list[list[int]] = [[] for _ in xs]
        for head in layer.heads:
            q = [[rq(a, head.q_requant) for a in matvec(x, head.wq)] for x in xs]
            k = [[rq(a, head.k_requant) for a in matvec(x, head.wk)] for x in xs]
            v = [[rq(a, head.v_requant) for a in matvec(x, head.wv)] for x in xs]
            for i in range(len(xs)):
                seen = range(i + 1) if layer.mask.value == "causal" else range(len(xs))
                scores = {j: sum(a * b for a, b in zip(q[i], k[j])) for j in seen}
                best = max(scores.values())
                if layer.attention is Attention.UNIQUE_HARDMAX:
                    outs[i] += v[min(j for j in seen if scores[j] == best)]
                    continue
                if layer.attention is Attention.AVERAGE_HARDMAX:
                    g = {j: int(scores[j] == best) for j in seen}
                else:
                    t = layer.exp_table
                    g = {j: t[min((best - scores[j]) >> layer.score_shift, len(t) - 1)] for j in seen}
                total = sum(g.values())
                outs[i] += [div(sum(g[j] * v[j][c] for j in seen), total) for c in range(len(v[0]))]
        xs = [[ovf(a + rq(o, layer.o_requant)) for a, o in zip(x, matvec(out, layer.wo))] for x, out in zip(xs, outs)]
        if layer.ffn is not None:
            f = layer.ffn
            hs = [[max(rq(a + int(b), f.requant1), 0) for a, b in zip(matvec(x, f.w1), f.b1)] for x in xs]
            xs = [
                [ovf(a + rq(o + int(b), f.requant2)) for a, o, b in zip(x, matvec(h, f.w2), f.b2)]
                for x, h in zip(xs, hs)
            ]
    at = xs[-1] if spec.readout.position.value == "last" else xs[0]
    return matvec(at, spec.readout.weight)[0] + int(spec.readout.bias[0])


@pytest.mark.parametrize("name", sorted(TEST_STEPS))
def test_interpreter_agrees_with_an_own_integer_forward_pass(quantized: dict, name: str) -> None:
    spec = quantized[name]
    words = sample_words(get_task(name), size=25, min_len=1, max_len=12, seed=8).words
    for word in words:
        assert interpreter.run(spec, list(word)).scores == (_own_integer_scores(spec, word),), word


@pytest.mark.parametrize("attention", list(Attention), ids=lambda a: a.value)
def test_own_integer_forward_pass_on_causal_periodic_last_readout_models(attention: Attention) -> None:
    task = get_task("dyck")
    config = ModelConfig(
        alphabet="()",
        d_model=6,
        head_dim=3,
        heads=2,
        ffn_dim=8,
        attention=attention,
        mask=Mask.CAUSAL,
        positional=PositionalKind.PERIODIC,
        positions=3,
        readout=ReadoutPosition.LAST,
    )
    result = train(task, config, TrainConfig(steps=30, train_size=200, seed=2))
    spec = quantize(result.model, sample_dataset(task, size=100, max_len=12, seed=2).words, QuantConfig(width=6))
    for word in sample_words(task, size=15, min_len=1, max_len=10, seed=3).words:
        assert interpreter.run(spec, list(word)).scores == (_own_integer_scores(spec, word),), word


def test_quantized_widths_and_tables(quantized: dict) -> None:
    spec = quantized["contains-ab"]
    assert spec.width == 8 and spec.weight_width == 8
    assert int(np.abs(spec.embedding).max()) <= 127
    for layer in spec.layers:
        assert layer.attention is Attention.SOFTMAX_TABLE
        # The table decreases from its maximum to a final zero: far-away scores weigh nothing.
        assert list(layer.exp_table) == sorted(layer.exp_table, reverse=True)
        assert layer.exp_table[0] > 0 and layer.exp_table[-1] == 0


def test_fewer_bits_lose_accuracy(trained: dict) -> None:
    task, result = trained["contains-ab"]
    words = all_words(task, max_len=8)
    calibration = sample_dataset(task, size=300, max_len=12, seed=1).words
    gap = {
        bits: measure_gap(
            result.model, quantize(result.model, calibration, QuantConfig(width=bits, weight_width=bits)), "", words
        ).gap
        for bits in (4, 8)
    }
    assert gap[4] > gap[8] + 0.05


def test_spec_round_trips_through_save_and_load(tmp_path: Path, quantized: dict) -> None:
    spec = quantized["contains-ab"]
    loaded = load_spec(save_spec(spec, tmp_path / "model.json"))
    assert loaded.to_json_dict() == spec.to_json_dict()
    words = all_words(get_task("contains-ab"), max_len=7).words
    np.testing.assert_array_equal(predict_quantized(loaded, words), predict_quantized(spec, words))


def test_quantize_needs_calibration_words(trained: dict) -> None:
    with pytest.raises(VerifyInputError, match="calibration"):
        quantize(trained["majority"][1].model, [])


# --- the CLI -------------------------------------------------------------------------------------------


def _cli(argv: list[str], data_dir: Path) -> int:
    parser = argparse.ArgumentParser(prog="leanagent verify")
    add_parser(parser.add_subparsers(dest="verify_command"))
    args = parser.parse_args(argv)
    return args.handler(args, Settings.resolve(data_dir=data_dir, db_url="sqlite://"))


def test_cli_train_example_end_to_end_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "majority.json"
    argv = ["train-example", "majority", "--steps", "300", "--out", str(out), "--sample-size", "100"]
    code = _cli([*argv, "--verify-len", "3", "--json"], tmp_path)
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["task"] == "majority" and payload["spec_path"] == str(out)
    assert payload["model"]["attention"] == "softmax_table"
    rows = payload["evaluation"]
    assert [r["set"] for r in rows] == ["all words len<=10", "sampled len 11..12"]
    assert all(r["gap"] == pytest.approx(r["float_accuracy"] - r["quantized_accuracy"]) for r in rows)
    assert payload["quantization_gap"] == max(r["gap"] for r in rows)
    # The written spec is the one evaluated: its accuracy on all words <= 10 is the reported one.
    spec = load_spec(out)
    words = all_words(get_task("majority"), max_len=10)
    acc = float(np.mean(predict_quantized(spec, words.words) == np.asarray(words.labels)))
    assert acc == pytest.approx(rows[0]["quantized_accuracy"])
    v = payload["verification"]
    assert v["query"] == "equiv-exact" and v["max_len"] == 3
    # UNSAT must agree with exhaustive evaluation of the same spec; SAT must name a misclassified word.
    short = all_words(get_task("majority"), max_len=3)
    wrong = [w for w, p, y in zip(short.words, predict_quantized(spec, short.words), short.labels) if p != y]
    if v["verdict"] == "unsat":
        assert wrong == []
    else:
        assert v["verdict"] == "sat" and v["witness"] in wrong and v["model_accepts"] != v["in_language"]


def test_cli_human_output_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _cli(
        ["train-example", "majority", "--steps", "30", "--out", str(tmp_path / "m.json"), "--sample-size", "0"],
        tmp_path,
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "quantization gap:" in text and "all words len<=10" in text and "verification" not in text
    with pytest.raises(VerifyInputError, match="--steps"):
        _cli(["train-example", "majority", "--steps", "0"], tmp_path)
    with pytest.raises(SystemExit):
        _cli(["train-example", "no-such-task"], tmp_path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["contains-ab", "--verify-len", "17"], "positional", id="longer-than-the-table"),
        pytest.param(["majority", "--verify-len", "2", "--solver", "nope"], "unknown solver", id="unknown-solver"),
        pytest.param(
            ["majority", "--timeout", "0"], "argument --timeout: must be a positive number", id="zero-timeout"
        ),
        pytest.param(["majority", "--timeout", "nan"], "argument --timeout: must be a positive number", id="nan"),
        pytest.param(["majority", "--presearch", "-1"], "argument --presearch: must be at least 0", id="presearch"),
    ],
)
def test_cli_rejects_a_verification_that_cannot_run_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """Through the real command line: one line, exit 2, no model written (no training)."""
    from agent.cli import main as cli

    out = tmp_path / "m.json"
    code = cli.main(["--data-dir", str(tmp_path), "verify", "train-example", *argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_task_choices_match_the_tasks() -> None:
    assert TASK_CHOICES == task_names()


def test_leanagent_verify_has_train_example() -> None:
    from agent.cli.commands.verify.train_example import run_train_example_command
    from agent.cli.main import build_parser

    args = build_parser().parse_args(["verify", "train-example", "dyck", "--width", "6", "--json"])
    assert args.handler is run_train_example_command and args.task == "dyck" and args.width == 6
