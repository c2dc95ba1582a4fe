"""Exact QF_BV encoding of an encoder run on a symbolic word of fixed length.

The encoding follows :mod:`verify.model.interpreter` operation by operation, so that it agrees
with it bit for bit. Each value is a :class:`~verify.smt.bitvec.Val` (a bit-vector term
with integer bounds, see :mod:`verify.smt.bitvec`), so every bit-vector operation computes
the exact integer.

What makes it small:

* **Tabulation.** Position ``i`` holds one of a few symbols, so everything in layer 1
  that depends on one position only (input vector, queries, keys, values) is computed
  by the interpreter for each candidate symbol and enters the formula as a choice among
  constant table rows; layer-1 scores ``q_i . k_j`` are a choice over symbol pairs.
* **Classes.** With no mask and no (or a periodic) positional encoding, every layer is
  computed once per symbol class instead of once per position (:class:`_ClassEncoder`).
* **Interval pruning.** Widths are minimal; neurons whose interval is a point become
  constants; comparisons and saturations whose outcome the intervals decide are dropped.
* **Balanced sums and tournaments** keep the term depth logarithmic.

Query-key products of layers >= 2 are exact bit-vector products, never a relaxation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pysmt.environment import Environment
from pysmt.fnode import FNode

from verify.model import interpreter as ref
from verify.model.spec import (
    Accept,
    Attention,
    EncoderSpec,
    Layer,
    Mask,
    PositionalKind,
    Requant,
    Rounding,
)
from verify.smt.bitvec import Builder, PositionInput, Val
from verify.smt.intervals import Interval

__all__ = ["Builder", "EncodedRun", "EncodingOptions", "PositionInput", "Val", "encode"]

# Layer-1 scores are tabulated over symbol pairs only up to this many candidate symbols;
# beyond it the V*V constant leaves cost more than the exact products they replace.
MAX_TABULATED_SCORE_SYMBOLS = 16


@dataclass(frozen=True, slots=True)
class EncodingOptions:
    """Switches for the encoding's optimisations (all on by default; off for ablations)."""

    # Layer 1 per (symbol, position) as constant table rows instead of symbolic arithmetic,
    # and (no mask, no positional table) every layer once per symbol class, not per position.
    tabulate: bool = True
    # Interval-chosen minimal widths, constant neurons folded, decided comparisons dropped.
    # Off: every value has one worst-case width and every clamp is emitted.
    prune: bool = True


# --- the encoder ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class EncodedRun:
    """The readout scores of an encoder on a symbolic word, with label predicates."""

    spec: EncoderSpec
    scores: tuple[Val, ...]
    builder: Builder

    def label_is(self, c: int) -> FNode:
        """The output label equals ``c`` (argmax: leftmost maximum; positive: 1 iff score > 0)."""
        b, m = self.builder, self.builder.mgr
        if self.spec.readout.accept is Accept.POSITIVE:
            positive = b.gt(self.scores[0], b.const(0))
            return positive if c == 1 else m.Not(positive) if c == 0 else m.FALSE()
        if not 0 <= c < len(self.scores):
            return m.FALSE()
        mine = self.scores[c]
        return m.And([b.gt(mine, s) for s in self.scores[:c]] + [b.ge(mine, s) for s in self.scores[c + 1 :]])

    def accepted(self) -> FNode:
        ro = self.spec.readout
        return self.label_is(1 if ro.accept is Accept.POSITIVE else ro.accept_class)

    def labels(self) -> tuple[int, ...]:
        """Every label this encoder can output."""
        return (0, 1) if self.spec.readout.accept is Accept.POSITIVE else tuple(range(len(self.scores)))


class _Encoder:
    """One encoding pass: the interpreter's forward pass over :class:`Val` vectors."""

    def __init__(
        self, spec: EncoderSpec, inputs: Sequence[PositionInput], b: Builder, options: EncodingOptions
    ) -> None:
        self.spec, self.inputs, self.b, self.options = spec, inputs, b, options
        self.n = len(inputs)

    def requant(
        self, vals: Sequence[Val], weights: np.ndarray, rq: Requant, bias: np.ndarray | None = None
    ) -> list[Val]:
        """``rq(vals @ weights + bias)`` column by column; the multiplier is folded into the weights."""
        s, b = self.spec, self.b
        out = []
        for c in range(weights.shape[1]):
            acc = b.lincomb(
                vals,
                [int(w) * rq.multiplier for w in weights[:, c]],
                0 if bias is None else int(bias[c]) * rq.multiplier,
            )
            out.append(b.overflow(b.div_pow2(acc, rq.shift, s.rounding), s.width, s.overflow))
        return out

    def table_rows(self) -> list[np.ndarray]:
        """Per position, the input vectors of every candidate symbol (rows in choice order)."""
        s = self.spec
        pos = ref.positional_rows(s, self.n)
        rows = []
        for i, inp in enumerate(self.inputs):
            x = s.embedding[[vid for _, vid in inp.choices]].astype(object)  # (Vi, d)
            if pos is not None:
                x = ref.overflow(x + pos[i].astype(object), s.width, s.overflow)
            rows.append(x)
        return rows

    def choose_rows(self, i: int, rows: np.ndarray) -> list[Val]:
        """The vector at position ``i`` as a choice among ``rows`` (one per candidate symbol)."""
        var, codes = self.inputs[i].var, [c for c, _ in self.inputs[i].choices]
        return [
            self.b.choose(var, [(code, self.b.const(int(r))) for code, r in zip(codes, rows[:, c])])
            for c in range(rows.shape[1])
        ]

    def run(self) -> EncodedRun:
        s, b = self.spec, self.b
        rows = self.table_rows()
        x = [self.choose_rows(i, rows[i]) for i in range(self.n)]
        readout = ref.readout_index(s, self.n)
        for li, layer in enumerate(s.layers):
            # the last layer matters only at the readout position
            wanted = [readout] if li == len(s.layers) - 1 else list(range(self.n))
            if li == 0 and self.options.tabulate:
                heads = self.tabulated_heads(layer, rows, wanted)
            else:
                heads = self.symbolic_heads(layer, x, wanted)
            updated = [self.after_attention(layer, x[i], h) for i, h in zip(wanted, heads)]
            x = updated if len(wanted) == self.n else [*x[:readout], updated[0], *x[readout + 1 :]]
        at = x[readout]
        ro = s.readout
        scores = tuple(
            b.lincomb(at, [int(w) for w in ro.weight[:, c]], int(ro.bias[c])) for c in range(ro.weight.shape[1])
        )
        return EncodedRun(s, scores, b)

    def after_attention(self, layer: Layer, x: list[Val], heads: list[Val]) -> list[Val]:
        """Output projection, residual, feed-forward and residual at one position."""
        s, b = self.spec, self.b
        o = self.requant(heads, layer.wo, layer.o_requant)
        x = [b.overflow(b.add(xi, oi), s.width, s.overflow) for xi, oi in zip(x, o)] if layer.residual else o
        if layer.ffn is None:
            return x
        f = layer.ffn
        h = [b.relu(v) for v in self.requant(x, f.w1, f.requant1, f.b1)]
        out = self.requant(h, f.w2, f.requant2, f.b2)
        return [b.overflow(b.add(xi, oi), s.width, s.overflow) for xi, oi in zip(x, out)] if layer.residual else out

    def allowed(self, layer: Layer, i: int) -> range:
        return range(self.n) if layer.mask is Mask.NONE else range(i + 1)

    def symbolic_heads(self, layer: Layer, x: list[list[Val]], wanted: list[int]) -> list[list[Val]]:
        """All heads of a layer from symbolic vectors; the concatenation at each wanted position."""
        b = self.b
        out: list[list[Val]] = [[] for _ in wanted]
        for head in layer.heads:
            k = [self.requant(xi, head.wk, head.k_requant) for xi in x]
            v = [self.requant(xi, head.wv, head.v_requant) for xi in x]
            for slot, i in enumerate(wanted):
                q = self.requant(x[i], head.wq, head.q_requant)
                js = self.allowed(layer, i)
                scores = [b.total([b.mul(qc, kc) for qc, kc in zip(q, k[j])]) for j in js]
                out[slot] += self.attend(layer, scores, [v[j] for j in js])
        return out

    def tabulated_heads(self, layer: Layer, rows: list[np.ndarray], wanted: list[int]) -> list[list[Val]]:
        """Layer-1 heads with queries, keys, values (and scores) tabulated per candidate symbol."""
        s, b = self.spec, self.b
        out: list[list[Val]] = [[] for _ in wanted]
        pair_scores = max(len(inp.choices) for inp in self.inputs) <= MAX_TABULATED_SCORE_SYMBOLS
        for head in layer.heads:
            tq = [ref.requantize(r @ head.wq.astype(object), head.q_requant, s) for r in rows]  # (Vi, k)
            tk = [ref.requantize(r @ head.wk.astype(object), head.k_requant, s) for r in rows]  # (Vi, k)
            tv = [ref.requantize(r @ head.wv.astype(object), head.v_requant, s) for r in rows]  # (Vi, e)
            q = {i: self.choose_rows(i, tq[i]) for i in wanted}
            k = [self.choose_rows(i, tk[i]) for i in range(self.n)]
            v = [self.choose_rows(i, tv[i]) for i in range(self.n)]
            for slot, i in enumerate(wanted):
                js = self.allowed(layer, i)
                if pair_scores:
                    scores = [self.pair_table(i, j, tq[i] @ tk[j].T) for j in js]
                else:
                    scores = [b.total([b.mul(qc, kc) for qc, kc in zip(q[i], k[j])]) for j in js]
                out[slot] += self.attend(layer, scores, [v[j] for j in js])
        return out

    def pair_table(self, i: int, j: int, table: np.ndarray) -> Val:
        """A value given by the symbols at positions i and j: table[a, b] for choices a, b."""
        b = self.b
        codes_i = [c for c, _ in self.inputs[i].choices]
        codes_j = [c for c, _ in self.inputs[j].choices]
        inner = [
            b.choose(self.inputs[j].var, [(cj, b.const(int(table[a, bj]))) for bj, cj in enumerate(codes_j)])
            for a in range(len(codes_i))
        ]
        return b.choose(self.inputs[i].var, list(zip(codes_i, inner)))

    def attend(self, layer: Layer, scores: list[Val], values: list[list[Val]]) -> list[Val]:
        """One head's output at one query position from its allowed scores and values."""
        s, b = self.spec, self.b
        if layer.attention is Attention.UNIQUE_HARDMAX:
            return self._leftmost_max(list(zip(scores, values)))[1]
        best = self._max(scores)
        dims = len(values[0])
        hull = [Interval.hull(v[c].iv for v in values) for c in range(dims)]
        if layer.attention is Attention.AVERAGE_HARDMAX:
            is_max = [b.eq(sc, best) for sc in scores]
            weights = [b.ite(t, b.const(1), b.const(0)) for t in is_max]
            count = b.refine(b.total(weights), Interval(1, len(scores)))
            sums = [b.total([b.ite(t, v[c], b.const(0)) for t, v in zip(is_max, values)]) for c in range(dims)]
            return [b.div(sums[c], count, s.rounding, hull[c]) for c in range(dims)]
        gaps = [b.refine(b.sub(best, sc), Interval(0, max(0, best.iv.hi - sc.iv.lo))) for sc in scores]
        weights = [b.lookup(b.div_pow2(g, layer.score_shift, Rounding.FLOOR), layer.exp_table) for g in gaps]
        den = b.total(weights)
        den = b.refine(den, Interval(layer.exp_table[0], max(den.iv.hi, layer.exp_table[0])))
        nums = [b.total([b.mul(g, v[c]) for g, v in zip(weights, values)]) for c in range(dims)]
        return [b.div(nums[c], den, s.rounding, hull[c]) for c in range(dims)]

    def _max(self, scores: list[Val]) -> Val:
        b = self.b
        while len(scores) > 1:
            scores = [
                b.ite(b.gt(scores[i + 1], scores[i]), scores[i + 1], scores[i]) if i + 1 < len(scores) else scores[i]
                for i in range(0, len(scores), 2)
            ]
        return scores[0]

    def _leftmost_max(self, items: list[tuple[Val, list[Val]]]) -> tuple[Val, list[Val]]:
        """A tournament in position order; the right side wins only if strictly greater."""
        b = self.b
        while len(items) > 1:
            nxt = []
            for i in range(0, len(items), 2):
                if i + 1 == len(items):
                    nxt.append(items[i])
                    continue
                (ls, lv), (rs, rv) = items[i], items[i + 1]
                right = b.gt(rs, ls)
                nxt.append((b.ite(right, rs, ls), [b.ite(right, r, le) for le, r in zip(lv, rv, strict=True)]))
            items = nxt
        return items[0]


class _ClassEncoder(_Encoder):
    """The encoder for models with no mask in any layer and no (or a periodic) positional encoding.

    Then a position's vector after every layer is a function of its *class* (its symbol and
    its position modulo the period) and of the word as a whole: layer 0 by tabulation, and
    each layer maps it on, since a query of class ``a`` sees the same keys and values
    whatever its position. So every layer is computed once per class, not per position:
    scores are ``V*V`` class-pair products instead of ``n*n``; unique hardmax runs one
    leftmost-max tournament over positions per query class; averaging heads sum over
    classes weighted by how many positions fall in each (``count_c``), an exact rewriting
    of the interpreter's sums over positions.
    """

    def run(self) -> EncodedRun:
        s, b = self.spec, self.b
        pos = s.positional
        self.period = pos.table.shape[0] if pos.kind is PositionalKind.PERIODIC and pos.table is not None else 1
        members: dict[tuple[int, int], list[Val]] = {}
        for j, inp in enumerate(self.inputs):
            for code, vid in inp.choices:
                members.setdefault((vid, j % self.period), []).append(self._indicator(inp, code))
        self.classes = sorted(members)
        self.counts = {c: b.total(members[c]) for c in self.classes}
        self.present = {c: b.gt(self.counts[c], b.const(0)) for c in self.classes}
        x = {c: [b.const(int(v)) for v in self._class_row(c)] for c in self.classes}
        readout = ref.readout_index(s, self.n)
        at_readout = [(vid, readout % self.period) for _, vid in self.inputs[readout].choices]
        for li, layer in enumerate(s.layers):
            # the last layer matters only for the classes the readout position can have
            wanted = at_readout if li == len(s.layers) - 1 else self.classes
            heads: dict[tuple[int, int], list[Val]] = {c: [] for c in wanted}
            for head in layer.heads:
                k = {c: self.requant(x[c], head.wk, head.k_requant) for c in self.classes}
                v = {c: self.requant(x[c], head.wv, head.v_requant) for c in self.classes}
                for a in wanted:
                    q = self.requant(x[a], head.wq, head.q_requant)
                    scores = {c: b.total([b.mul(qc, kc) for qc, kc in zip(q, k[c])]) for c in self.classes}
                    heads[a] += self._class_attend(layer, scores, v)
            x = {c: self.after_attention(layer, x[c], heads[c]) for c in wanted}
        inp = self.inputs[readout]
        at = [
            b.choose(inp.var, [(code, x[(vid, readout % self.period)][e]) for code, vid in inp.choices])
            for e in range(s.d_model)
        ]
        ro = s.readout
        # Not `scores`: in this method that name holds a head's attention scores (a dict per class).
        readout_scores = tuple(
            b.lincomb(at, [int(w) for w in ro.weight[:, c]], int(ro.bias[c])) for c in range(ro.weight.shape[1])
        )
        return EncodedRun(s, readout_scores, b)

    def _indicator(self, inp: PositionInput, code: int) -> Val:
        b = self.b
        if inp.var is None or len(inp.choices) == 1:
            return b.const(1)
        width = inp.var.symbol_type().width
        return b.ite(b.mgr.Equals(inp.var, b.mgr.BV(code, width)), b.const(1), b.const(0))

    def _class_row(self, c: tuple[int, int]) -> np.ndarray:
        s = self.spec
        x = s.embedding[c[0]].astype(object)
        if s.positional.table is not None:
            x = ref.overflow(x + s.positional.table[c[1]].astype(object), s.width, s.overflow)
        return x

    def _class_attend(
        self, layer: Layer, scores: dict[tuple[int, int], Val], v: dict[tuple[int, int], list[Val]]
    ) -> list[Val]:
        """One head's output for one query class, from its score against every key class."""
        s, b, m = self.spec, self.b, self.b.mgr
        if layer.attention is Attention.UNIQUE_HARDMAX:
            items = []
            for j, inp in enumerate(self.inputs):
                cls = [(code, (vid, j % self.period)) for code, vid in inp.choices]
                score = b.choose(inp.var, [(code, scores[c]) for code, c in cls])
                value = [b.choose(inp.var, [(code, v[c][e]) for code, c in cls]) for e in range(len(v[cls[0][1]]))]
                items.append((score, value))
            return self._leftmost_max(items)[1]
        classes = self.classes
        # the maximal score over the classes that occur (at least one does)
        best = [(self.present[c], scores[c]) for c in classes]
        while len(best) > 1:
            merged = []
            for i in range(0, len(best), 2):
                if i + 1 == len(best):
                    merged.append(best[i])
                    continue
                (pl, sl), (pr, sr) = best[i], best[i + 1]
                right = m.And(pr, m.Or(m.Not(pl), b.gt(sr, sl)))
                merged.append((m.Or(pl, pr), b.ite(right, sr, sl)))
            best = merged
        top = best[0][1]
        if layer.attention is Attention.AVERAGE_HARDMAX:
            chosen = [m.And(self.present[c], b.eq(scores[c], top)) for c in classes]
            weights = [b.ite(t, self.counts[c], b.const(0)) for t, c in zip(chosen, classes)]
            floor = 1
        else:
            weights = []
            for c in classes:
                gap = b.ite(self.present[c], b.sub(top, scores[c]), b.const(0))
                gap = b.refine(gap, Interval(0, max(0, gap.iv.hi)))
                g = b.lookup(b.div_pow2(gap, layer.score_shift, Rounding.FLOOR), layer.exp_table)
                weights.append(b.mul(self.counts[c], g))
            floor = layer.exp_table[0]
        den = b.total(weights)
        den = b.refine(den, Interval(floor, max(den.iv.hi, floor)))
        out = []
        for e in range(len(v[classes[0]])):
            hull = Interval.hull(v[c][e].iv for c in classes)
            num = b.total([b.mul(w, v[c][e]) for w, c in zip(weights, classes)])
            out.append(b.div(num, den, s.rounding, hull))
        return out


def classwise_applies(spec: EncoderSpec) -> bool:
    """Whether :class:`_ClassEncoder` applies: no mask anywhere, no or a periodic positional encoding."""
    return spec.positional.kind is not PositionalKind.TABLE and all(layer.mask is Mask.NONE for layer in spec.layers)


def encode(
    spec: EncoderSpec,
    inputs: Sequence[PositionInput],
    env: Environment,
    *,
    options: EncodingOptions = EncodingOptions(),
    deadline: float | None = None,
) -> EncodedRun:
    """Encode ``spec`` on the whole input sequence described by ``inputs`` (CLS included);
    past ``deadline`` (:func:`time.perf_counter`) raise :class:`~verify.smt.bitvec.OutOfTime`."""
    fixed = None if options.prune else ref.static_value_bits(spec, len(inputs)) + 4
    builder = Builder(env, prune=options.prune, fixed_width=fixed, deadline=deadline)
    kind = _ClassEncoder if options.tabulate and classwise_applies(spec) else _Encoder
    return kind(spec, inputs, builder, options).run()
