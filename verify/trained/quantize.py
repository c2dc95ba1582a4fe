"""Post-training quantization of a trained :class:`~verify.trained.training.TinyEncoder` into a spec.

Symmetric, per-tensor, calibrated on data:

* every weight matrix gets its own scale ``s_W = (2**(weight_width-1) - 1) / max|W|``;
* every activation the spec requantizes gets a scale from the largest magnitude it takes
  on the calibration words: the residual stream ``x`` (one scale for the whole stream,
  since residual additions need equal scales), each head's queries and keys, each layer's
  values (shared by its heads so that ``wo`` sees one scale), each feed-forward hidden layer;
* a requantization from accumulator scale ``s_in`` to ``s_out`` is ``multiplier / 2**shift
  ~= s_out / s_in`` with ``multiplier_bits`` bits of precision;
* biases live at accumulator scale, so they are rounded at ``s_in`` and lose nothing more;
* ``softmax_table`` layers get an exp table: integer scores are at scale ``u = s_q * s_k``,
  so a score gap ``g`` stands for ``exp(-g / u)``; ``score_shift`` groups gaps into buckets
  of ``2**shift`` so that the table reaches zero within ``exp_table_size`` entries, and
  each entry is ``exp`` at its bucket's centre scaled to ``2**exp_bits - 1``.

The quantized model is then the exact integer function that :mod:`verify.model.interpreter`
defines; :func:`measure_gap` compares it with the float model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from verify.errors import VerifyInputError
from verify.model import interpreter
from verify.model.spec import (
    Accept,
    Attention,
    EncoderSpec,
    FeedForward,
    Head,
    Layer,
    Overflow,
    Positional,
    Readout,
    ReadoutPosition,
    Requant,
    Rounding,
    validate,
)
from verify.trained.tasks import Dataset
from verify.trained.training import CLS_SYMBOL, TinyEncoder, encode_words, predict

# A calibrated magnitude below this is treated as this, so that a dead activation (all
# zeros) still gets a finite scale.
_TINY = 1e-6


@dataclass(frozen=True, slots=True)
class QuantConfig:
    """How to quantize; every field ends up in, or shapes, the spec."""

    # Signed bits of activations (embeddings, stream, q/k/v, hidden units).
    width: int = 8
    # Signed bits of weights.
    weight_width: int = 8
    # Rounding of requantizations and attention means; half_up is unbiased enough and cheap.
    rounding: Rounding = Rounding.HALF_UP
    # Saturation keeps an outlier from flipping sign (wrap-around would).
    overflow: Overflow = Overflow.SATURATE
    # Precision of requantization multipliers (relative error ~ 2**-bits).
    multiplier_bits: int = 12
    # softmax_table: at most this many table entries (the SMT encoding looks them up);
    # None = 2**(width-2), so the exp resolution grows with the activation width ...
    exp_table_size: int | None = None
    # ... each an integer up to 2**exp_bits - 1 (None = width).
    exp_bits: int | None = None
    # Calibrated ranges are widened by this factor: inputs longer than the calibration words
    # (or other unseen words) may reach a little further.
    headroom: float = 1.05


def quantize(model: TinyEncoder, calibration: Sequence[str], config: QuantConfig = QuantConfig()) -> EncoderSpec:
    """The integer spec of ``model``, with activation ranges calibrated on ``calibration`` words."""
    if not calibration:
        raise VerifyInputError("quantization needs at least one calibration word")
    for name in ("width", "weight_width", "exp_bits"):
        value = getattr(config, name)
        if value is not None and not 2 <= value <= 31:
            raise VerifyInputError(f"--{name.replace('_', '-')} must be in 2..31, got {value}")
    c = model.config
    ranges = _calibrate(model, calibration)
    amax = (1 << (config.width - 1)) - 1
    wmax = (1 << (config.weight_width - 1)) - 1

    def act_scale(name: str) -> float:
        return amax / max(ranges[name] * config.headroom, _TINY)

    def weights(w: torch.Tensor) -> tuple[np.ndarray, float]:
        arr = w.detach().double().numpy()
        scale = wmax / max(float(np.abs(arr).max()), _TINY)
        return np.clip(np.rint(arr * scale), -wmax, wmax).astype(np.int64), scale

    def requant(ratio: float) -> Requant:
        return _requant(ratio, config.multiplier_bits)

    s_x = act_scale("x")
    embedding = _round_clip(model.embedding, s_x, amax)
    positional = Positional()
    if model.positional is not None:
        positional = Positional(c.positional, _round_clip(model.positional, s_x, amax))
    layers = []
    for li in range(c.layers):
        s_v = act_scale(f"{li}.v")
        heads = []
        score_scales = []
        for h in range(c.heads):
            wq, sq_w = weights(model.wq[li][h])
            wk, sk_w = weights(model.wk[li][h])
            wv, sv_w = weights(model.wv[li][h])
            s_q, s_k = act_scale(f"{li}.q.{h}"), act_scale(f"{li}.k.{h}")
            score_scales.append(s_q * s_k)
            heads.append(
                Head(
                    wq=wq,
                    wk=wk,
                    wv=wv,
                    q_requant=requant(s_q / (s_x * sq_w)),
                    k_requant=requant(s_k / (s_x * sk_w)),
                    v_requant=requant(s_v / (s_x * sv_w)),
                )
            )
        wo, so_w = weights(model.wo[li])
        ffn = None
        if c.ffn_dim:
            w1, s1_w = weights(model.w1[li])
            w2, s2_w = weights(model.w2[li])
            s_h = act_scale(f"{li}.h")
            ffn = FeedForward(
                w1=w1,
                b1=_round(model.b1[li], s_x * s1_w),
                w2=w2,
                b2=_round(model.b2[li], s_h * s2_w),
                requant1=requant(s_h / (s_x * s1_w)),
                requant2=requant(s_x / (s_h * s2_w)),
            )
        exp_table: tuple[int, ...] = ()
        score_shift = 0
        if c.attention is Attention.SOFTMAX_TABLE:
            # One table per layer: heads share it, so it is built for the finest score scale.
            exp_table, score_shift = _exp_table(min(score_scales), config)
        layers.append(
            Layer(
                heads=tuple(heads),
                wo=wo,
                attention=c.attention,
                mask=c.mask,
                residual=True,
                o_requant=requant(s_x / (s_v * so_w)),
                ffn=ffn,
                exp_table=exp_table,
                score_shift=score_shift,
            )
        )
    readout_w, sr_w = weights(model.readout_weight)
    readout = Readout(
        weight=readout_w,
        bias=_round(model.readout_bias, s_x * sr_w),
        position=c.readout,
        accept=Accept.POSITIVE,
        cls_token=CLS_SYMBOL if c.readout is ReadoutPosition.CLS else None,
    )
    spec = EncoderSpec(
        vocab=c.vocab,
        d_model=c.d_model,
        width=config.width,
        weight_width=config.weight_width,
        rounding=config.rounding,
        overflow=config.overflow,
        embedding=embedding,
        positional=positional,
        layers=tuple(layers),
        readout=readout,
    )
    return validate(spec)


def _calibrate(model: TinyEncoder, words: Sequence[str]) -> dict[str, float]:
    """Largest magnitude of every calibrated activation over the real (unpadded) positions.

    Per-head queries/keys are keyed ``"{layer}.q.{head}"``; values are pooled over heads;
    hidden units count only their positive part (ReLU discards the rest)."""
    ranges: dict[str, float] = {}

    def record(name: str, value: torch.Tensor, valid: torch.Tensor) -> None:
        layer, _, kind = name.partition(".")
        if kind in ("q", "k"):
            # value: (B, n, H, k); one range per head.
            for h in range(value.shape[2]):
                _merge(ranges, f"{name}.{h}", value[:, :, h][valid].abs())
            return
        if kind == "h":
            value = value.clamp(min=0)
        if kind in ("o", "f"):
            # Both are requantized onto the stream's scale and saturate there.
            name = "x"
        _merge(ranges, name, value[valid].abs())

    with torch.no_grad():
        for start in range(0, len(words), 1024):
            ids, lengths = encode_words(model.config, words[start : start + 1024])
            model(ids, lengths, trace=record)
        # Embedding and positional rows are stored at the stream's scale before they are added.
        for table in (model.embedding, model.positional):
            if table is not None:
                _merge(ranges, "x", table.abs().flatten())
    return ranges


def _merge(ranges: dict[str, float], name: str, magnitudes: torch.Tensor) -> None:
    top = float(magnitudes.max()) if magnitudes.numel() else 0.0
    ranges[name] = max(ranges.get(name, 0.0), top)


def _round(t: torch.Tensor, scale: float) -> np.ndarray:
    return np.rint(t.detach().double().numpy() * scale).astype(np.int64)


def _round_clip(t: torch.Tensor, scale: float, bound: int) -> np.ndarray:
    return np.clip(_round(t, scale), -bound, bound)


def _requant(ratio: float, bits: int) -> Requant:
    """``multiplier / 2**shift`` closest to ``ratio`` with a ``bits``-bit multiplier."""
    if not ratio > 0 or not math.isfinite(ratio):
        raise VerifyInputError(f"cannot requantize by the ratio {ratio}; the model has a degenerate scale")
    shift = min(max(bits - 1 - math.floor(math.log2(ratio)), 0), 62)
    multiplier = min(max(round(ratio * 2**shift), 1), 2**31 - 1)
    return Requant(multiplier=multiplier, shift=shift)


def _exp_table(score_scale: float, config: QuantConfig) -> tuple[tuple[int, ...], int]:
    """The exp table and score shift for integer scores at ``score_scale`` per float unit.

    Entry ``i`` covers gaps ``i * 2**shift .. (i+1) * 2**shift - 1``; it is ``top *
    exp(-centre / score_scale)`` rounded, and the table ends with its first zero entry (the
    interpreter clamps larger gaps onto the last entry, so they weigh nothing)."""
    size = config.exp_table_size or min(1 << max(config.width - 2, 2), 4096)
    top = (1 << (config.exp_bits or config.width)) - 1
    # Beyond this float gap every weight rounds to zero.
    horizon = math.log(2 * top)
    shift = max(0, math.ceil(math.log2(max(horizon * score_scale / (size - 1), 1))))
    bucket = 1 << shift
    table = []
    for i in range(size):
        centre = i * bucket + (bucket - 1) / 2
        table.append(int(round(top * math.exp(-centre / score_scale))))
        if table[-1] == 0:
            break
    if table[0] == 0:
        table[0] = 1
    return tuple(table), shift


# --- measuring the quantization gap --------------------------------------------------------------


def predict_quantized(spec: EncoderSpec, words: Sequence[str]) -> np.ndarray:
    """0/1 decisions of the quantized model on ``words``, through the reference interpreter."""
    out = np.zeros(len(words), dtype=np.int64)
    by_length: dict[int, list[int]] = {}
    for i, w in enumerate(words):
        by_length.setdefault(len(w), []).append(i)
    for indices in by_length.values():
        ids = np.asarray([[spec.token_id(s) for s in words[i]] for i in indices], dtype=np.int64)
        out[indices] = interpreter.run_batch(spec, ids).labels
    return out


@dataclass(frozen=True, slots=True)
class GapRow:
    """Float versus quantized accuracy on one evaluation set."""

    name: str  # e.g. "exhaustive len<=8"
    words: int
    float_accuracy: float
    quantized_accuracy: float
    # Fraction of words on which the two models decide the same way.
    agreement: float

    @property
    def gap(self) -> float:
        """Accuracy lost by quantization (negative if quantization happened to help)."""
        return self.float_accuracy - self.quantized_accuracy


def measure_gap(model: TinyEncoder, spec: EncoderSpec, name: str, data: Dataset) -> GapRow:
    """Accuracy of the float model and of its quantized spec on ``data``, and their agreement."""
    labels = np.asarray(data.labels)
    floats = predict(model, data.words)
    ints = predict_quantized(spec, data.words)
    return GapRow(
        name=name,
        words=len(data),
        float_accuracy=float(np.mean(floats == labels)),
        quantized_accuracy=float(np.mean(ints == labels)),
        agreement=float(np.mean(floats == ints)),
    )
