"""Where models run: ``--device`` resolved against what torch sees (CUDA faked: no GPU here),
bfloat16 autocast and float32 handled by the encoder, the generator and their training (run
for real on the CPU, which has bfloat16 autocast too), and embedding batches sized by tokens."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from fakes.tiny_encoder import tiny_encoder
from fakes.tiny_generator import tiny_t5

from agent.cli.main import EXIT_USAGE, main
from agent.generators.training import TacticExample, tactic_loss
from retrieval.devices import CUDA_BATCH_TOKENS, DeviceError, Placement, placement

torch.set_num_threads(1)


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch):
    """Fake CUDA devices: ``gpus(n, capability)`` makes torch see ``n`` of that capability."""

    def see(count: int, capability: tuple[int, int] = (8, 0)) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None: capability)

    return see


@pytest.mark.parametrize(
    ("spec", "count", "capability", "device", "dtype"),
    [
        pytest.param("auto", 0, (8, 0), "cpu", torch.float32, id="auto-without-cuda-is-the-cpu"),
        pytest.param("auto", 2, (8, 0), "cuda:0", torch.bfloat16, id="auto-is-the-first-gpu"),
        pytest.param("cpu", 1, (9, 0), "cpu", torch.float32, id="cpu-even-with-a-gpu"),
        pytest.param("cuda", 1, (8, 6), "cuda:0", torch.bfloat16, id="ampere-runs-bfloat16"),
        pytest.param("cuda:1", 2, (7, 5), "cuda:1", torch.float32, id="turing-runs-float32"),
    ],
)
def test_a_device_is_placed(gpus, spec: str, count: int, capability, device: str, dtype: torch.dtype) -> None:
    gpus(count, capability)
    where = placement(spec)
    assert (str(where.device), where.dtype) == (device, dtype)
    assert (where.batch_tokens == CUDA_BATCH_TOKENS) == device.startswith("cuda")


@pytest.mark.parametrize(
    ("spec", "count", "message"),
    [
        pytest.param("cuda", 0, "torch sees no CUDA device", id="no-cuda"),
        pytest.param("cuda:2", 2, "has 2 CUDA device(s), cuda:0 to cuda:1", id="no-such-gpu"),
        pytest.param("gpu", 1, "must be auto, cpu, cuda or cuda:N", id="not-a-device"),
        pytest.param("cuda:x", 1, "must be auto, cpu, cuda or cuda:N", id="not-a-number"),
    ],
)
def test_a_device_that_is_not_there_is_the_users_error(gpus, spec: str, count: int, message: str) -> None:
    gpus(count)
    with pytest.raises(DeviceError, match=re.escape(message)):
        placement(spec)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["retrieval", "search", "⊢ p", "--device", "gpu"], "must be auto, cpu, cuda", id="parsing"),
        pytest.param(["prove", "--generator", "g", "--device", "tpu"], "must be auto, cpu, cuda", id="prove-parsing"),
    ],
)
def test_a_bad_device_is_one_line_and_exit_2(argv: list[str], message: str, tmp_path, capsys) -> None:
    assert main(["--data-dir", str(tmp_path), *argv]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


BF16_CPU = Placement(torch.device("cpu"), torch.bfloat16)


def test_the_encoder_embeds_in_bfloat16_and_answers_in_float32() -> None:
    texts = ["theorem <a>A.p</a> : a = a", "⊢ b", "def <a>A.f</a> : Nat := 1"]
    exact = tiny_encoder(0).encode(texts)
    encoder = tiny_encoder(0)
    encoder.placement = BF16_CPU
    half = encoder.encode(texts)
    assert half.dtype == np.float32 and np.allclose(np.linalg.norm(half, axis=1), 1.0, atol=1e-5)
    assert np.abs(half - exact).max() < 0.05  # bfloat16 keeps ~3 significant digits
    assert all(p.dtype == torch.float32 for p in encoder.model.parameters())  # mixed precision: weights stay
    loss = encoder.embed(texts).sum()
    loss.backward()  # gradients flow through autocast
    assert all(p.grad is None or p.grad.dtype == torch.float32 for p in encoder.model.parameters())


def test_the_generator_generates_and_trains_under_bfloat16_autocast() -> None:
    generator = tiny_t5(0)
    generator.placement = BF16_CPU
    candidates = generator.generate("⊢ p", n=2)
    assert len(candidates) == 2 and all(c.logprob <= 0 for c in candidates)
    loss = tactic_loss(generator, [TacticExample("", "", "⊢ p", "trivial")])
    assert torch.isfinite(loss)
    loss.backward()


def test_embedding_batches_hold_a_token_budget_longest_first() -> None:
    encoder = tiny_encoder(0)
    exact = encoder.encode(["a"] * 3 + ["one two three four five six seven"])  # one batch of all four
    encoder.placement = Placement(torch.device("cpu"), torch.float32, batch_tokens=20)
    sizes: list[int] = []
    budgeted = encoder.encode(["a"] * 3 + ["one two three four five six seven"], progress=sizes.append)
    # The long text (9 tokens with [CLS] and [SEP]) first, 2 of a budget of 20; then the three short ones.
    assert sizes == [2, 2]
    assert np.allclose(budgeted, exact, atol=1e-5)
