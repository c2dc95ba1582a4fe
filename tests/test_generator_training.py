"""Tactic generator training: examples from traced goals of proven theorems, the loss is the
tactic's own (checked against log-probabilities summed by hand), a tiny model learns its
examples, and ``leanagent generator train`` end to end on a LeanDojo Benchmark 4 directory."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from fakes.tiny_generator import tiny_gpt2, tiny_t5

from agent.cli.main import EXIT_USAGE, main
from agent.generators.model import HFTacticGenerator
from agent.generators.training import (
    GeneratorTrainConfig,
    TacticExample,
    evaluate_generator,
    tactic_examples,
    tactic_loss,
    train_generator,
)
from lean_env.benchmark.read import read_benchmark

torch.set_num_threads(1)

FIXTURE = Path(__file__).parent / "fixtures" / "benchmark4"
EXAMPLES = [
    TacticExample("r", "t1", "⊢ p ∧ q → q ∧ p", "intro h"),
    TacticExample("r", "t2", "n : Nat\n⊢ n + 0 = n", "simp"),
]


def test_examples_are_the_traced_goals_of_proven_theorems_with_retrieved_premises() -> None:
    [trace] = read_benchmark(FIXTURE)
    asked: list[tuple[str, str]] = []

    class Premises:
        def premises_for(self, location: str, theorem):
            def retrieve(goal: str) -> list[tuple[str, str]]:
                asked.append((theorem.full_name, goal))
                return [("P.for", f"theorem for : {theorem.full_name}")]

            return retrieve

    examples = tactic_examples([trace], premises=Premises())
    # the sorry theorem's `sorry` step is left out; the term-mode theorem has no steps
    assert [(e.theorem, e.tactic) for e in examples] == [
        ("DemoArith.add_comm'", "rw [Nat.add_comm]"),
        ("DemoArith.double_comm", "rw [double_eq]"),
        ("DemoArith.double_comm", "exact add_comm' n n"),
        ("DemoArith.add_zero'", "simp [Nat.add_zero, Nat.add_zero]"),
    ]
    assert examples[1].state == "n : Nat\n⊢ double n = n + n" and examples[1].premises == (
        ("P.for", "theorem for : DemoArith.double_comm"),
    )
    assert asked == [(e.theorem, e.state) for e in examples]


def _hand_nll(generator: HFTacticGenerator, example: TacticExample) -> tuple[float, int]:
    """The tactic's negative log-likelihood summed over its tokens, and their number."""
    tok, model = generator.tokenizer, generator.model
    with torch.no_grad():
        if generator.decoder_only:
            context = tok(example.state + "\n<tactic>", add_special_tokens=False)["input_ids"]
            target = tok(example.tactic + "\n", add_special_tokens=False)["input_ids"]
            logp = torch.log_softmax(model(torch.tensor([context + target])).logits[0], -1)
            return -sum(logp[len(context) + i - 1, t].item() for i, t in enumerate(target)), len(target)
        inputs = tok(example.state, return_tensors="pt")
        labels = tok(example.tactic, return_tensors="pt")["input_ids"]
        logp = torch.log_softmax(model(**inputs, labels=labels).logits[0], -1)
        return -sum(logp[i, t].item() for i, t in enumerate(labels[0])), labels.shape[1]


@pytest.mark.parametrize("make", [tiny_t5, tiny_gpt2], ids=["t5", "gpt2"])
def test_the_loss_is_the_mean_negative_log_likelihood_of_the_tactic_tokens(make) -> None:
    generator = make(0)
    with torch.no_grad():
        loss = tactic_loss(generator, EXAMPLES).item()
    sums = [_hand_nll(generator, e) for e in EXAMPLES]
    assert loss == pytest.approx(sum(s for s, _ in sums) / sum(n for _, n in sums), rel=1e-4)


@pytest.mark.parametrize("make", [tiny_t5, tiny_gpt2], ids=["t5", "gpt2"])
def test_training_learns_the_examples_and_leaves_out_tactics_too_long_to_write(make) -> None:
    generator = make(0)
    too_long = TacticExample("r", "t3", "⊢ True", "x" * 100)
    before = evaluate_generator(generator, EXAMPLES)
    report = train_generator(
        generator, [*EXAMPLES, too_long], GeneratorTrainConfig(epochs=80, batch_size=2, learning_rate=5e-3)
    )
    after = evaluate_generator(generator, EXAMPLES)
    assert (report.examples, report.left_out, report.batches) == (2, 1, 80)
    assert not generator.model.training
    assert after.mean_loss < before.mean_loss / 10 and after.exact_top1 == 1.0 and before.exact_top1 == 0.0
    assert math.isfinite(report.mean_loss)


def test_generator_train_on_a_benchmark_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny_t5(0).save(tmp_path / "tiny")
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", "--benchmark", str(FIXTURE)]) == 0
    capsys.readouterr()
    code = main(
        [
            *data,
            "generator",
            "train",
            "--model",
            str(tmp_path / "tiny"),
            "--epochs",
            "40",
            "--lr",
            "5e-3",
            "--batch-size",
            "4",
            "--test-fraction",
            "0.3",
            "--json",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["train"]["examples"] + payload["held_out"]["examples"] == 4 and payload["train"]["batches"] > 0
    loaded = HFTacticGenerator.load(payload["model"])
    assert loaded.generate("n : Nat\n⊢ n + 0 = n", n=2)  # a loadable, working generator


def test_a_database_without_goal_states_is_a_user_error(tmp_path: Path, examples_dir: Path, capsys) -> None:
    tiny_t5(0).save(tmp_path / "tiny")
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", str(examples_dir / "demo-logic"), "--tracer", "source"]) == 0
    capsys.readouterr()
    assert main([*data, "generator", "train", "--model", str(tmp_path / "tiny")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no traced tactics with goal states" in err


# Tactics of different token counts, all short enough for the tiny generators.
UNEVEN = [
    TacticExample("r", "t1", "⊢ p ∧ q → q ∧ p", "intro h"),
    TacticExample("r", "t2", "n : Nat\n⊢ n + 0 = n", "simp [Nat.add_zero]"),
    TacticExample("r", "t3", "⊢ True", "trivial"),
]


@pytest.mark.parametrize("make", [tiny_t5, tiny_gpt2], ids=["t5", "gpt2"])
def test_the_held_out_loss_does_not_depend_on_the_batch_size(make) -> None:
    """evaluate_generator's mean token loss is a property of the model and the examples: the
    same for batch sizes 1, 2 and 3 (and equal to the loss of the whole set in one batch)."""
    generator = make(0)
    with torch.no_grad():
        whole = tactic_loss(generator, UNEVEN).item()
    losses = [evaluate_generator(generator, UNEVEN, batch_size=size).mean_loss for size in (1, 2, 3)]
    assert losses == pytest.approx([whole] * 3, rel=1e-5)


def test_a_decoder_only_generator_does_not_train_on_tactics_it_cannot_write() -> None:
    """A decoder-only generator's tactic ends at its first newline (generate cuts there), so a
    multi-line traced tactic can never be generated whole: it is left out of training like a
    too-long one, not counted as a learnable example whose exact match is always 0."""
    generator = tiny_gpt2(0)
    multi_line = TacticExample("r", "t", "p : Prop\n⊢ p → p", "intro h\nexact h")
    report = train_generator(generator, [multi_line], GeneratorTrainConfig(epochs=1, batch_size=1))
    assert (report.examples, report.left_out) == (0, 1)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_learning_rate_that_is_not_a_finite_number_is_a_user_error(tmp_path, capsys, value) -> None:
    """``generator train --lr nan|inf``: exit 2 with one line, nothing trained or saved."""
    tiny_t5(0).save(tmp_path / "tiny")
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "ingest", "--benchmark", str(FIXTURE)]) == 0
    capsys.readouterr()
    code = main(
        [*data, "generator", "train", "--model", str(tmp_path / "tiny"), "--out", str(tmp_path / "out"), "--lr", value]
    )
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and len(err.strip().splitlines()) == 1 and "--lr" in err, err
    assert not (tmp_path / "out").exists()
