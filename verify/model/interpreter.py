"""The reference semantics of an :class:`~verify.model.spec.EncoderSpec`, in plain integer arithmetic.

This module is THE definition of what an encoder computes; the SMT encoding must agree
with it bit for bit, and every SAT witness is replayed through it. All arithmetic is exact
(numpy ``int64`` when a static bound shows nothing can overflow, Python integers
otherwise); only the operations below lose information.

Notation: ``w`` = ``spec.width``; ``ovf(y)`` brings ``y`` into signed ``w`` bits by
``spec.overflow`` (saturate: clamp; wrap: two's complement modulo ``2**w``);
``div(a, b)`` for ``b > 0`` is ``a / b`` rounded by ``spec.rounding`` (floor; half_up =
``floor(a/b + 1/2)``; half_even = nearest, ties to even); ``rq(y, (m, s)) = ovf(div(y * m,
2**s))``.

For a word ``t_1 .. t_n`` (with the CLS symbol prepended at position 0 when the readout is
``cls``; positions count from 0 over the whole sequence):

1. ``x_i = emb[t_i]`` with no positional encoding, else ``ovf(emb[t_i] + pos[i])`` where
   ``pos[i]`` is row ``i`` of the table (``table`` kind; longer inputs are rejected) or
   row ``i mod p`` (``periodic``).
2. Each layer, each head: ``q_i = rq(x_i @ wq)``, ``k_i = rq(x_i @ wk)``, ``v_i = rq(x_i @
   wv)``; scores ``s_ij = q_i . k_j`` exactly (no rounding) over allowed ``j`` (all, or
   ``j <= i`` with a causal mask). Head output ``a_i``:

   * unique_hardmax: ``v_j`` at the leftmost ``j`` with maximal ``s_ij``;
   * average_hardmax: ``div(sum of v_j over maximal j, count of maximal j)``;
   * softmax_table: ``g_j = exp_table[min((max_j s_ij - s_ij) >> score_shift, T - 1)]``,
     ``a_i = div(sum g_j * v_j, sum g_j)`` (componentwise; ``exp_table[0] > 0``).

   ``o_i = rq(concat_h a_i @ wo)``; ``x_i = ovf(x_i + o_i)`` with a residual, else ``o_i``.
3. Feed-forward (if any): ``h_i = relu(rq1(x_i @ w1 + b1))``, ``f_i = rq2(h_i @ w2 + b2)``;
   ``x_i = ovf(x_i + f_i)`` with a residual, else ``f_i``.
4. Readout at position 0 (``first``, ``cls``) or ``n - 1`` (``last``, the last position of
   the whole sequence): scores ``x @ weight + bias`` (exact). ``positive``: accept iff
   ``score > 0``, label ``1``/``0``. ``argmax``: label = leftmost maximal score, accept iff
   label == ``accept_class``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verify.errors import VerifyInputError
from verify.model.spec import (
    Accept,
    Attention,
    EncoderSpec,
    Head,
    Layer,
    Mask,
    Overflow,
    PositionalKind,
    ReadoutPosition,
    Requant,
    Rounding,
)

# Intermediate values stay below this many bits for int64 to be exact (with headroom).
_INT64_SAFE_BITS = 61


@dataclass(frozen=True, slots=True)
class EncoderOutput:
    """What the encoder outputs for one word."""

    scores: tuple[int, ...]  # readout scores, one per class
    label: int  # the class (argmax) or 1/0 (positive)
    accepted: bool


@dataclass(frozen=True, slots=True, eq=False)
class BatchOutput:
    """Outputs for a batch of words of one length."""

    scores: np.ndarray  # (B, C)
    labels: np.ndarray  # (B,)
    accepted: np.ndarray  # (B,) bool

    def item(self, b: int) -> EncoderOutput:
        return EncoderOutput(tuple(int(s) for s in self.scores[b]), int(self.labels[b]), bool(self.accepted[b]))


# --- the scalar operations, shared with the interval analysis -------------------------------


def div_round(num: np.ndarray, den: np.ndarray | int, rounding: Rounding) -> np.ndarray:
    """``num / den`` rounded by ``rounding``, for ``den > 0`` (arrays broadcast)."""
    q = num // den
    if rounding is Rounding.FLOOR:
        return q
    twice_r = 2 * (num - q * den)
    if rounding is Rounding.HALF_UP:
        return q + (twice_r >= den)
    odd = (q % 2) == 1
    return q + ((twice_r > den) | ((twice_r == den) & odd))


def overflow(x: np.ndarray, width: int, mode: Overflow) -> np.ndarray:
    """Bring ``x`` into signed ``width`` bits by saturation or two's complement wrap-around."""
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if mode is Overflow.SATURATE:
        return np.minimum(np.maximum(x, lo), hi)
    return (x - lo) % (1 << width) + lo


def requantize(acc: np.ndarray, rq: Requant, spec: EncoderSpec) -> np.ndarray:
    """``ovf(div(acc * multiplier, 2**shift))``."""
    scaled = acc * rq.multiplier
    if rq.shift:
        scaled = div_round(scaled, 1 << rq.shift, spec.rounding)
    return overflow(scaled, spec.width, spec.overflow)


# --- input preparation ----------------------------------------------------------------------


def encode_word(spec: EncoderSpec, word: Sequence[str]) -> list[int]:
    """Token ids of a word (symbols from ``spec.word_alphabet``), without the CLS symbol."""
    alphabet = spec.word_alphabet
    ids = []
    for pos, symbol in enumerate(word):
        if symbol not in alphabet:
            raise VerifyInputError(f"word position {pos}: symbol {symbol!r} is not in the alphabet {list(alphabet)}")
        ids.append(spec.token_id(symbol))
    if not ids:
        raise VerifyInputError("the word is empty; words have length >= 1")
    return ids


def max_word_length(spec: EncoderSpec) -> int | None:
    """The longest word a ``table`` positional encoding covers, or None when unbounded."""
    if spec.positional.kind is not PositionalKind.TABLE:
        return None
    assert spec.positional.table is not None
    return spec.positional.table.shape[0] - (spec.readout.position is ReadoutPosition.CLS)


def positional_rows(spec: EncoderSpec, length: int) -> np.ndarray | None:
    """The (length, d) positional contribution of a sequence, or None without one."""
    pos = spec.positional
    if pos.kind is PositionalKind.NONE:
        return None
    assert pos.table is not None
    if pos.kind is PositionalKind.TABLE:
        if length > pos.table.shape[0]:
            raise VerifyInputError(
                f"a sequence of {length} positions exceeds the positional table ({pos.table.shape[0]} rows)"
            )
        return pos.table[:length]
    return pos.table[np.arange(length) % pos.table.shape[0]]


def _bits(value: int) -> int:
    return max(int(value), 1).bit_length()


def static_value_bits(spec: EncoderSpec, length: int) -> int:
    """A cheap static over-approximation of the bits any intermediate value needs."""
    a, ww = spec.width, spec.weight_width
    mults = [1]
    fans = [spec.d_model]
    score_bits = 0
    for layer in spec.layers:
        for h in layer.heads:
            mults += [h.q_requant.multiplier, h.k_requant.multiplier, h.v_requant.multiplier]
            score_bits = max(score_bits, 2 * a + _bits(h.wq.shape[1]))
        fans.append(layer.wo.shape[0])
        mults.append(layer.o_requant.multiplier)
        if layer.exp_table:
            score_bits = max(score_bits, _bits(max(layer.exp_table)) + a + _bits(length) + 1)
        if layer.ffn is not None:
            fans.append(layer.ffn.w1.shape[1])
            mults += [layer.ffn.requant1.multiplier, layer.ffn.requant2.multiplier]
    acc_bits = a + ww + 8 + _bits(max(fans)) + 1  # products, sum, bias (a + ww + 8 bits)
    readout_bits = a + ww + 8 + _bits(spec.d_model) + 1
    return max(acc_bits + _bits(max(mults)) + 2, score_bits + 2, readout_bits)


def _needs_python_ints(spec: EncoderSpec, length: int) -> bool:
    """True when some intermediate could exceed int64."""
    return static_value_bits(spec, length) > _INT64_SAFE_BITS


# --- the forward pass -----------------------------------------------------------------------


def head_scores(head: Head, x: np.ndarray, spec: EncoderSpec) -> tuple[np.ndarray, np.ndarray]:
    """One head's exact scores ``s_ij`` (B, n, n) and values ``v_j`` (B, n, e) on x (B, n, d)."""
    dtype = x.dtype
    q = requantize(x @ head.wq.astype(dtype), head.q_requant, spec)  # (B, n, k)
    k = requantize(x @ head.wk.astype(dtype), head.k_requant, spec)  # (B, n, k)
    v = requantize(x @ head.wv.astype(dtype), head.v_requant, spec)  # (B, n, e)
    return q @ np.swapaxes(k, 1, 2), v


def _attention(layer: Layer, x: np.ndarray, spec: EncoderSpec, dtype: type) -> np.ndarray:
    """Every head of one layer on x (B, n, d); returns the concatenated heads (B, n, H*e)."""
    n = x.shape[1]
    allowed = np.ones((n, n), dtype=bool) if layer.mask is Mask.NONE else np.tril(np.ones((n, n), dtype=bool))
    outs = []
    for head in layer.heads:
        scores, v = head_scores(head, x, spec)
        # A masked score is replaced by the row's minimum so it can never be the unique maximum
        # ahead of an allowed one; `allowed` then removes it from every sum.
        row_min = scores.min(axis=2, keepdims=True)
        masked = np.where(allowed, scores, row_min - 1)
        best = masked.max(axis=2, keepdims=True)  # (B, n, 1)
        if layer.attention is Attention.UNIQUE_HARDMAX:
            j = np.argmax(masked, axis=2)  # (B, n): numpy returns the first (leftmost) maximum
            outs.append(np.take_along_axis(v, j[:, :, None], axis=1))
            continue
        if layer.attention is Attention.AVERAGE_HARDMAX:
            weights = ((masked == best) & allowed).astype(dtype)  # (B, n, n)
        else:
            table: np.ndarray = np.asarray(layer.exp_table, dtype=dtype)
            gap = np.where(allowed, best - masked, 0) >> layer.score_shift
            gap = np.minimum(gap, len(layer.exp_table) - 1).astype(np.int64)
            weights = np.where(allowed, table[gap], 0).astype(dtype)
        num = weights @ v  # (B, n, e)
        den = weights.sum(axis=2, keepdims=True)  # (B, n, 1) > 0: the maximum has weight > 0
        outs.append(div_round(num, den, spec.rounding))
    return np.concatenate(outs, axis=2)


def forward(spec: EncoderSpec, ids: np.ndarray) -> list[np.ndarray]:
    """The residual stream after the input and after every layer, for ids (B, n) of whole sequences.

    ``ids`` already include the CLS symbol if the readout uses one. Returns L + 1 arrays (B, n, d).
    """
    ids = np.asarray(ids, dtype=np.int64)
    n = ids.shape[1]
    dtype: type = object if _needs_python_ints(spec, n) else np.int64
    x = spec.embedding[ids].astype(dtype)  # (B, n, d)
    pos = positional_rows(spec, n)
    if pos is not None:
        x = overflow(x + pos.astype(dtype)[None], spec.width, spec.overflow)
    stream = [x]
    for layer in spec.layers:
        heads = _attention(layer, x, spec, dtype)
        o = requantize(heads @ layer.wo.astype(dtype), layer.o_requant, spec)
        x = overflow(x + o, spec.width, spec.overflow) if layer.residual else o
        if layer.ffn is not None:
            f = layer.ffn
            h = np.maximum(requantize(x @ f.w1.astype(dtype) + f.b1.astype(dtype), f.requant1, spec), 0)
            out = requantize(h @ f.w2.astype(dtype) + f.b2.astype(dtype), f.requant2, spec)
            x = overflow(x + out, spec.width, spec.overflow) if layer.residual else out
        stream.append(x)
    return stream


def readout_index(spec: EncoderSpec, length: int) -> int:
    """The position (in the whole sequence of ``length`` positions) the readout reads."""
    return length - 1 if spec.readout.position is ReadoutPosition.LAST else 0


def decide(spec: EncoderSpec, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labels and acceptance from readout scores (B, C)."""
    ro = spec.readout
    if ro.accept is Accept.POSITIVE:
        accepted = scores[:, 0] > 0
        return accepted.astype(np.int64), accepted
    labels = np.argmax(scores, axis=1)  # leftmost maximum
    return labels.astype(np.int64), labels == ro.accept_class


def sequence_ids(spec: EncoderSpec, word_ids: np.ndarray) -> np.ndarray:
    """The whole sequences (B, n [+ 1]) the encoder sees for words given as token ids (B, n): the
    CLS symbol first when the readout uses one."""
    word_ids = np.asarray(word_ids, dtype=np.int64)
    if word_ids.ndim != 2 or word_ids.shape[1] < 1:
        raise VerifyInputError(f"expected a (batch, length >= 1) array of token ids, got shape {word_ids.shape}")
    if spec.readout.position is ReadoutPosition.CLS:
        cls = np.full((word_ids.shape[0], 1), spec.token_id(spec.readout.cls_token or ""), dtype=np.int64)
        word_ids = np.concatenate([cls, word_ids], axis=1)
    return word_ids


def run_batch(spec: EncoderSpec, word_ids: np.ndarray) -> BatchOutput:
    """Run a batch of words given as token ids (B, n), without the CLS symbol."""
    ids = sequence_ids(spec, word_ids)
    x = forward(spec, ids)[-1]
    at = x[:, readout_index(spec, ids.shape[1])]  # (B, d)
    ro = spec.readout
    scores = at @ ro.weight.astype(at.dtype) + ro.bias.astype(at.dtype)  # (B, C)
    labels, accepted = decide(spec, scores)
    return BatchOutput(scores, labels, accepted)


def run_ids(spec: EncoderSpec, ids: Sequence[int]) -> EncoderOutput:
    """Run one word given as token ids (no CLS symbol)."""
    return run_batch(spec, np.asarray([list(ids)], dtype=np.int64)).item(0)


def run(spec: EncoderSpec, word: Sequence[str]) -> EncoderOutput:
    """Run one word given as symbols (no CLS symbol): the reference answer."""
    return run_ids(spec, encode_word(spec, word))
