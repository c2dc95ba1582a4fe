"""A tiny PyTorch encoder with exactly the structure of :class:`~verify.model.spec.EncoderSpec`, and its training.

The float model is the spec with real numbers in place of integers, so that quantizing it
(:mod:`verify.trained.quantize`) changes only the arithmetic, never the architecture:

* ``x_i = emb[t_i] + pos[i]`` (positional: none, a table, or a periodic table);
* per layer, per head ``q = x @ wq``, ``k = x @ wk``, ``v = x @ wv`` (no biases), scores
  ``q_i . k_j`` (no 1/sqrt(d) factor: it is absorbed into the weights), an optional causal
  mask, then the spec's attention kind; ``x = x + concat(heads) @ wo``;
* an optional ReLU feed-forward ``x = x + relu(x @ w1 + b1) @ w2 + b2``;
* a linear readout on the first / last / CLS position; accept iff the score is > 0.

No layer norm, no dropout: the spec has neither. Attention at *evaluation* is always the
spec's kind: a real softmax for ``softmax_table`` (the quantized table approximates
``exp``), and true hard attention for the hardmax kinds (leftmost maximum, or the mean over
all maximal positions). Training a hardmax model uses a softmax whose temperature is
annealed towards zero, then, for the last part of training, the hard forward pass with the
softmax's gradient (straight-through), so the weights are tuned for the function that is
quantized and verified.

The loss is binary cross-entropy plus a small penalty on the mean squared residual stream:
the quantized stream shares one integer scale across all layers (residual additions need
it), and without the penalty the last layer's outputs grow tens of times larger than the
embeddings, leaving the first layer only a few integer levels (contains-ab at 8 bits: 83%
quantized accuracy without it, 100% with it, same float accuracy).

Training is seeded and deterministic and sized for one CPU thread: a few thousand steps of
batch 64-128 on 16-dimensional models take seconds.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn

from verify.errors import VerifyInputError
from verify.model.spec import Attention, Mask, PositionalKind, ReadoutPosition
from verify.trained.tasks import Dataset, FormalLanguage, sample_dataset

log = logging.getLogger(__name__)

# The CLS symbol appended to the vocabulary when the readout is at a CLS position.
CLS_SYMBOL = "<cls>"


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """The architecture; every field has a counterpart in the quantized spec."""

    # Word symbols, one character each (token id = index); CLS_SYMBOL is added after them.
    alphabet: str
    # Width of the residual stream; 16 is plenty for these languages and quick to verify.
    d_model: int = 16
    # Encoder layers (attention + optional feed-forward each).
    layers: int = 2
    # Heads per layer and their query/key and value widths.
    heads: int = 1
    head_dim: int = 8
    # Hidden width of the ReLU feed-forward; 0 = no feed-forward block.
    ffn_dim: int = 32
    # The spec's attention kind; decides the float attention at evaluation (see module doc).
    attention: Attention = Attention.SOFTMAX_TABLE
    # Causal masks let position i see only j <= i (useful with a last-position readout).
    mask: Mask = Mask.NONE
    positional: PositionalKind = PositionalKind.TABLE
    # Rows of the positional table (the longest sequence, CLS included) or the period.
    positions: int = 17
    readout: ReadoutPosition = ReadoutPosition.CLS

    @property
    def vocab(self) -> tuple[str, ...]:
        """The spec vocabulary: the alphabet's symbols, then the CLS symbol if one is read."""
        cls = (CLS_SYMBOL,) if self.readout is ReadoutPosition.CLS else ()
        return tuple(self.alphabet) + cls

    @property
    def max_word_length(self) -> int | None:
        """The longest word a positional table covers; None when lengths are unbounded."""
        if self.positional is not PositionalKind.TABLE:
            return None
        return self.positions - (self.readout is ReadoutPosition.CLS)


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """How long and on what data to train."""

    # Optimizer steps; a few hundred to a few thousand keep training in seconds.
    steps: int = 1500
    batch_size: int = 128
    # Adam's learning rate, decayed by a cosine to a tenth of it.
    lr: float = 1e-2
    # Size of the balanced training sample and its word lengths.
    train_size: int = 4000
    min_len: int = 1
    max_len: int = 12
    seed: int = 0
    # Hardmax kinds only: softmax temperature at the start and at the end of annealing ...
    temperature_start: float = 1.0
    temperature_end: float = 0.05
    # ... and the fraction of final steps run with the hard forward pass (straight-through).
    hard_fraction: float = 0.3
    # Weight of the mean squared residual stream in the loss. Without it the last layer
    # grows without bound (the loss rewards ever larger margins), and the one integer
    # scale the residual stream must share then leaves too few levels for the first layer.
    stream_penalty: float = 1e-3


@dataclass(frozen=True, slots=True)
class Recipe:
    """A tested architecture and training budget for one task."""

    model: ModelConfig
    train: TrainConfig


@dataclass(frozen=True, slots=True)
class TrainResult:
    """A trained model with what it took to train it."""

    model: TinyEncoder
    config: ModelConfig
    train: TrainConfig
    seconds: float
    final_loss: float
    # Accuracy (hard attention) on the training sample; the caller measures held-out sets.
    train_accuracy: float
    losses: tuple[float, ...] = field(repr=False, default=())


def recipe(task: FormalLanguage, *, attention: Attention | None = None) -> Recipe:
    """The architecture and budget that train ``task`` well in seconds (see the docs' table).

    ``attention`` overrides the tested kind (softmax_table for every task) to compare kinds."""
    base = ModelConfig(alphabet=task.alphabet)
    train = TrainConfig()
    if task.name == "majority":
        # Counting needs one uniform average: one layer, no positions, read at CLS; a 4-wide
        # stream keeps the SMT encoding small.
        model = replace(base, layers=1, d_model=4, head_dim=2, positional=PositionalKind.NONE, positions=1, ffn_dim=0)
        train = replace(train, steps=600)
    elif task.name == "contains-ab":
        # Two layers: one to see an earlier a, one to find such a b; narrow for the verifier.
        model = replace(base, d_model=8, head_dim=4, ffn_dim=16)
    elif task.name == "dyck":
        model = replace(base, mask=Mask.CAUSAL, readout=ReadoutPosition.LAST, positions=16)
        train = replace(train, steps=2500, max_len=16)
    elif task.name == "parity":
        # "Parity up to a length": a period-2 positional encoding (even/odd positions) read
        # at CLS learns it within seconds; a table with a causal mask stays near chance.
        model = replace(base, positional=PositionalKind.PERIODIC, positions=2, ffn_dim=64)
        train = replace(train, steps=3000, max_len=8)
    else:
        raise VerifyInputError(f"no training recipe for task {task.name!r}")
    if attention is not None:
        model = replace(model, attention=attention)
    return Recipe(model, train)


class TinyEncoder(nn.Module):
    """The float encoder; parameter shapes are the spec's (row vectors, ``x @ w``)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        c = config
        if c.positional is not PositionalKind.NONE and c.positions < 1:
            raise VerifyInputError(f"a {c.positional.value} positional encoding needs positions >= 1")
        self.config = c
        d, k, h = c.d_model, c.head_dim, c.heads
        self.embedding = nn.Parameter(torch.randn(len(c.vocab), d) * 0.5)  # (V, d)
        self.positional = (
            nn.Parameter(torch.randn(c.positions, d) * 0.5)  # (P, d)
            if c.positional is not PositionalKind.NONE
            else None
        )
        scale = 1 / math.sqrt(d)
        self.wq = nn.ParameterList(nn.Parameter(torch.randn(h, d, k) * scale) for _ in range(c.layers))
        self.wk = nn.ParameterList(nn.Parameter(torch.randn(h, d, k) * scale) for _ in range(c.layers))
        self.wv = nn.ParameterList(nn.Parameter(torch.randn(h, d, k) * scale) for _ in range(c.layers))
        self.wo = nn.ParameterList(nn.Parameter(torch.randn(h * k, d) / math.sqrt(h * k)) for _ in range(c.layers))
        f = c.ffn_dim
        blocks = c.layers if f else 0  # ffn_dim 0: no feed-forward parameters at all
        self.w1 = nn.ParameterList(nn.Parameter(torch.randn(d, f) * scale) for _ in range(blocks))
        self.b1 = nn.ParameterList(nn.Parameter(torch.zeros(f)) for _ in range(blocks))
        self.w2 = nn.ParameterList(nn.Parameter(torch.randn(f, d) / math.sqrt(max(f, 1))) for _ in range(blocks))
        self.b2 = nn.ParameterList(nn.Parameter(torch.zeros(d)) for _ in range(blocks))
        self.readout_weight = nn.Parameter(torch.randn(d, 1) * scale)  # (d, 1)
        self.readout_bias = nn.Parameter(torch.zeros(1))

    def forward(
        self,
        ids: torch.Tensor,
        lengths: torch.Tensor,
        *,
        temperature: float | None = None,
        trace: Callable[[str, torch.Tensor, torch.Tensor], None] | None = None,
    ) -> torch.Tensor:
        """Readout scores (B,) for padded sequences ``ids`` (B, n) of true ``lengths`` (B,).

        ``temperature`` (hardmax kinds, training only) replaces the hard attention by a
        softmax at that temperature; None is the spec's attention. ``trace(name, value,
        valid)`` sees every intermediate the quantizer calibrates (still attached to the
        graph: training penalises the stream's size through it), with a mask of the
        positions that are real (not padding)."""
        c = self.config
        B, n = ids.shape
        valid = torch.arange(n)[None, :] < lengths[:, None]  # (B, n)
        x = self.embedding[ids]  # (B, n, d)
        if self.positional is not None:
            table_rows = self.positional.shape[0]
            if c.positional is PositionalKind.TABLE and n > table_rows:
                raise VerifyInputError(f"a sequence of {n} positions exceeds the positional table ({table_rows} rows)")
            rows = torch.arange(n) % table_rows
            x = x + self.positional[rows][None]
        _emit(trace, "x", x, valid)
        allowed = valid[:, None, :].expand(B, n, n)  # (B, n, n): query i may see key j
        if c.mask is Mask.CAUSAL:
            allowed = allowed & torch.tril(torch.ones(n, n, dtype=torch.bool))[None]
        for li in range(c.layers):
            q = torch.einsum("bnd,hdk->bhnk", x, self.wq[li])  # (B, H, n, k)
            k = torch.einsum("bnd,hdk->bhnk", x, self.wk[li])
            v = torch.einsum("bnd,hdk->bhnk", x, self.wv[li])
            for name, t in (("q", q), ("k", k), ("v", v)):
                _emit(trace, f"{li}.{name}", t.transpose(1, 2), valid)
            scores = q @ k.transpose(-1, -2)  # (B, H, n, n)
            weights = _attention_weights(scores, allowed[:, None], c.attention, temperature)
            heads = (weights @ v).transpose(1, 2).reshape(B, n, -1)  # (B, n, H*k)
            o = heads @ self.wo[li]  # (B, n, d)
            _emit(trace, f"{li}.o", o, valid)
            x = x + o
            _emit(trace, "x", x, valid)
            if c.ffn_dim:
                pre = x @ self.w1[li] + self.b1[li]  # (B, n, f)
                _emit(trace, f"{li}.h", pre, valid)
                f = torch.relu(pre) @ self.w2[li] + self.b2[li]  # (B, n, d)
                _emit(trace, f"{li}.f", f, valid)
                x = x + f
                _emit(trace, "x", x, valid)
        at = lengths - 1 if c.readout is ReadoutPosition.LAST else torch.zeros_like(lengths)
        final = x[torch.arange(B), at]  # (B, d)
        return (final @ self.readout_weight + self.readout_bias).squeeze(-1)  # (B,)


def _emit(
    trace: Callable[[str, torch.Tensor, torch.Tensor], None] | None,
    name: str,
    value: torch.Tensor,
    valid: torch.Tensor,
) -> None:
    if trace is not None:
        trace(name, value, valid)


def _attention_weights(
    scores: torch.Tensor, allowed: torch.Tensor, kind: Attention, temperature: float | None
) -> torch.Tensor:
    """Attention weights (B, H, n, n) of the spec's kind, or a tempered softmax for training."""
    masked = scores.masked_fill(~allowed, float("-inf"))
    if kind is Attention.SOFTMAX_TABLE:
        return torch.softmax(masked, dim=-1)
    if temperature is not None:
        return torch.softmax(masked / temperature, dim=-1)
    if kind is Attention.UNIQUE_HARDMAX:
        # argmax returns the first maximum: the spec's leftmost tie-breaking.
        hard = nn.functional.one_hot(masked.argmax(dim=-1), scores.shape[-1]).to(scores.dtype)
    else:
        best = masked.amax(dim=-1, keepdim=True)
        ties = (masked == best) & allowed
        hard = ties.to(scores.dtype) / ties.sum(dim=-1, keepdim=True)
    # Straight-through: the hard weights forward, the softmax's gradient backward.
    soft = torch.softmax(masked, dim=-1)
    return hard + soft - soft.detach()


def encode_words(config: ModelConfig, words: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded token ids (B, n) and lengths (B,), with the CLS id first when the readout is CLS."""
    prefix = [len(config.alphabet)] if config.readout is ReadoutPosition.CLS else []
    rows = [prefix + [config.alphabet.index(s) for s in w] for w in words]
    n = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), n, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return ids, torch.tensor([len(r) for r in rows], dtype=torch.long)


def predict(model: TinyEncoder, words: Sequence[str], *, batch_size: int = 1024) -> np.ndarray:
    """0/1 decisions (accept iff score > 0) of the float model with the spec's attention."""
    out = []
    with torch.no_grad():
        for start in range(0, len(words), batch_size):
            ids, lengths = encode_words(model.config, words[start : start + batch_size])
            out.append((model(ids, lengths) > 0).to(torch.int64).numpy())
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def accuracy(model: TinyEncoder, data: Dataset) -> float:
    """Fraction of ``data`` the float model labels correctly."""
    return float(np.mean(predict(model, data.words) == np.asarray(data.labels)))


def train(
    task: FormalLanguage,
    model_config: ModelConfig,
    train_config: TrainConfig,
    *,
    progress: Callable[[int, float], None] | None = None,
) -> TrainResult:
    """Train a fresh :class:`TinyEncoder` on a balanced sample of ``task``; seeded and deterministic.

    ``progress(step, loss)`` is called after every step (the CLI drives a progress bar)."""
    if train_config.steps < 1 or train_config.batch_size < 1:
        raise VerifyInputError(
            f"training needs steps >= 1 and batch_size >= 1, got {train_config.steps} and {train_config.batch_size}"
        )
    limit = model_config.max_word_length
    if limit is not None and train_config.max_len > limit:
        raise VerifyInputError(
            f"training words up to length {train_config.max_len} do not fit the positional "
            f"table ({limit} word positions); raise positions or lower max_len"
        )
    if set(task.alphabet) != set(model_config.alphabet):
        raise VerifyInputError(f"model alphabet {model_config.alphabet!r} is not task {task.name!r}'s")
    torch.manual_seed(train_config.seed)
    generator = torch.Generator().manual_seed(train_config.seed)
    data = sample_dataset(
        task,
        size=train_config.train_size,
        min_len=train_config.min_len,
        max_len=train_config.max_len,
        seed=train_config.seed,
    )
    ids, lengths = encode_words(model_config, data.words)
    labels = torch.tensor(data.labels, dtype=torch.float32)
    model = TinyEncoder(model_config)
    optimizer = torch.optim.Adam(model.parameters(), lr=train_config.lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=train_config.steps, eta_min=train_config.lr / 10
    )
    hardmax = model_config.attention is not Attention.SOFTMAX_TABLE
    hard_from = int(train_config.steps * (1 - train_config.hard_fraction))
    losses = []
    streams: list[torch.Tensor] = []

    def keep_stream(name: str, value: torch.Tensor, valid: torch.Tensor) -> None:
        if name == "x":
            streams.append(value[valid].pow(2).mean())

    started = time.perf_counter()
    model.train()
    for step in range(train_config.steps):
        batch = torch.randint(0, len(data), (train_config.batch_size,), generator=generator)
        temperature = None
        if hardmax and step < hard_from:
            frac = step / max(hard_from - 1, 1)
            temperature = (
                train_config.temperature_start * (train_config.temperature_end / train_config.temperature_start) ** frac
            )
        n = int(lengths[batch].max())
        streams.clear()
        scores = model(ids[batch, :n], lengths[batch], temperature=temperature, trace=keep_stream)
        loss = nn.functional.binary_cross_entropy_with_logits(scores, labels[batch])
        loss = loss + train_config.stream_penalty * torch.stack(streams).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(step, losses[-1])
    model.eval()
    seconds = time.perf_counter() - started
    result = TrainResult(
        model=model,
        config=model_config,
        train=train_config,
        seconds=seconds,
        final_loss=float(np.mean(losses[-20:])) if losses else float("nan"),
        train_accuracy=accuracy(model, data),
        losses=tuple(losses),
    )
    log.info(
        "trained %s in %.1fs: loss %.3f, train accuracy %.3f",
        task.name,
        seconds,
        result.final_loss,
        result.train_accuracy,
    )
    return result
