"""Bit-vector terms with integer bounds: the only place that builds pysmt terms for the encoding.

A :class:`Val` is a bit-vector term together with an :class:`~verify.smt.intervals.Interval`
that bounds its value; the term is kept at the narrowest two's complement width that
holds the interval, and every operation sign-extends its operands to the width of its
result's interval, so each bit-vector operation computes the exact integer. With
pruning off, every value instead lives at one fixed worst-case width (an ablation).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from pysmt.environment import Environment
from pysmt.fnode import FNode

from verify.model import interpreter as ref
from verify.model.spec import Overflow, Rounding
from verify.smt.intervals import (
    Interval,
    div_round_interval,
    overflow_interval,
    quotient_interval,
    signed_bits,
)


@dataclass(frozen=True, slots=True)
class Val:
    """A symbolic integer: ``term`` (None for a constant) of ``width`` bits, within ``iv``."""

    term: FNode | None
    iv: Interval
    width: int

    @property
    def const(self) -> int | None:
        return self.iv.lo if self.term is None else None


@dataclass(frozen=True, slots=True)
class PositionInput:
    """The symbolic input at one position: a code variable and the symbols it may choose."""

    # The word variable of this position (None when the position is fixed, e.g. the CLS symbol).
    var: FNode | None
    # (code, vocabulary id) pairs: the variable equals one of the codes; code -> symbol row.
    choices: tuple[tuple[int, int], ...]


# Values made between two looks at the clock: a look costs ~50 ns, a value ~10 us.
CHECK_EVERY = 256


def _runs(codes: Sequence[int]) -> list[tuple[int, int]]:
    """The runs of consecutive integers in sorted ``codes``, as (first, last) pairs."""
    runs: list[tuple[int, int]] = []
    for c in codes:
        if runs and c == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


class OutOfTime(Exception):  # noqa: N818 (a result of the query, not a fault: never escapes verify.queries.questions)
    """The encoding, or writing it out, passed its deadline; the query calls the length UNKNOWN."""


class Builder:
    """Makes :class:`Val` terms in one pysmt environment; the only place that builds terms."""

    def __init__(
        self, env: Environment, *, prune: bool = True, fixed_width: int | None = None, deadline: float | None = None
    ) -> None:
        self.mgr = env.formula_manager
        self.prune = prune
        # Without pruning every value lives at this one width (chosen from a static bound).
        self.fixed = None if prune else fixed_width
        assert prune or fixed_width, "without pruning a fixed width is needed"
        # When the encoding must stop (time.perf_counter), looked at every CHECK_EVERY values.
        self.deadline = deadline
        self._made = 0

    # -- basic values ----------------------------------------------------------------------

    def const(self, value: int) -> Val:
        self._tick()
        value = int(value)
        return Val(None, Interval.point(value), self.fixed or signed_bits(Interval.point(value)))

    def _tick(self) -> None:
        """Count a value made; past the deadline, raise :class:`OutOfTime`. Every value is
        made through :meth:`const` or :meth:`make`, so a long encoding (a vocabulary of
        hundreds of thousands of symbols) stops within one stride of its deadline."""
        self._made += 1
        if self.deadline is not None and self._made % CHECK_EVERY == 0 and time.perf_counter() > self.deadline:
            raise OutOfTime(f"the encoding passed its deadline after {self._made} values")

    def at(self, v: Val, width: int) -> FNode:
        """The term of ``v`` sign-extended to ``width`` bits."""
        if v.term is None:
            return self.mgr.SBV(v.iv.lo, width)
        assert width >= v.width, f"cannot shrink a {v.width}-bit value to {width} bits"
        return v.term if width == v.width else self.mgr.BVSExt(v.term, width - v.width)

    def make(self, term: FNode, iv: Interval, width: int) -> Val:
        """Wrap a term whose value is known to lie in ``iv``; narrow it when pruning."""
        self._tick()
        if self.fixed:
            assert signed_bits(iv) <= self.fixed, f"value range {iv} exceeds the fixed width {self.fixed}"
            return Val(term, iv, width)
        if iv.is_point:
            return self.const(iv.lo)
        bits = signed_bits(iv)
        if bits < width:
            term = self.mgr.BVExtract(term, 0, bits - 1)
            width = bits
        return Val(term, iv, width)

    def refine(self, v: Val, iv: Interval) -> Val:
        """``v`` with a tighter interval known from the semantics (e.g. a count is >= 1)."""
        if v.term is None:
            return v
        return self.make(v.term, v.iv.intersect(iv), v.width)

    def _width(self, iv: Interval, *operands: Val) -> int:
        if self.fixed:
            return self.fixed
        return max([signed_bits(iv)] + [o.width for o in operands])

    # -- arithmetic ------------------------------------------------------------------------

    def add(self, a: Val, b: Val) -> Val:
        iv = a.iv + b.iv
        if a.term is None and b.term is None:
            return self.const(iv.lo)
        if self.prune and a.const == 0:
            return b
        if self.prune and b.const == 0:
            return a
        w = self._width(iv, a, b)
        return self.make(self.mgr.BVAdd(self.at(a, w), self.at(b, w)), iv, w)

    def sub(self, a: Val, b: Val) -> Val:
        iv = a.iv - b.iv
        if a.term is None and b.term is None:
            return self.const(iv.lo)
        w = self._width(iv, a, b)
        return self.make(self.mgr.BVSub(self.at(a, w), self.at(b, w)), iv, w)

    def scale(self, v: Val, c: int) -> Val:
        c = int(c)
        iv = v.iv.scale(c)
        if v.term is None or c == 0:
            return self.const(iv.lo)
        if c == 1:
            return v
        w = self._width(iv, v, self.const(c))
        product = self.mgr.BVNeg(self.at(v, w)) if c == -1 else self.mgr.BVMul(self.at(v, w), self.mgr.SBV(c, w))
        return self.make(product, iv, w)

    def mul(self, a: Val, b: Val) -> Val:
        if a.term is None:
            return self.scale(b, a.iv.lo)
        if b.term is None:
            return self.scale(a, b.iv.lo)
        iv = a.iv * b.iv
        w = self._width(iv, a, b)
        return self.make(self.mgr.BVMul(self.at(a, w), self.at(b, w)), iv, w)

    def total(self, vals: Sequence[Val]) -> Val:
        """A balanced sum (constants folded first), exact at every node."""
        consts = sum(v.iv.lo for v in vals if v.term is None)
        terms = [v for v in vals if v.term is not None]
        if consts or not terms:
            terms.append(self.const(consts))
        while len(terms) > 1:
            terms = [
                self.add(terms[i], terms[i + 1]) if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)
            ]
        return terms[0]

    def lincomb(self, vals: Sequence[Val], coeffs: Sequence[int], bias: int = 0) -> Val:
        """``sum coeffs[j] * vals[j] + bias`` with constant integer coefficients."""
        return self.total([self.scale(v, c) for v, c in zip(vals, coeffs) if c] + [self.const(bias)])

    def div_pow2(self, v: Val, shift: int, rounding: Rounding) -> Val:
        """``div(v, 2**shift)``: an arithmetic shift plus the rounding bit(s)."""
        if shift == 0:
            return v
        iv = div_round_interval(v.iv, 1 << shift, rounding)
        if v.term is None:
            return self.const(iv.lo)
        m = self.mgr
        w = max(self._width(v.iv, v), shift + 2)
        t = self.at(v, w)
        q = m.BVAShr(t, m.BV(shift, w))
        if rounding is not Rounding.FLOOR:
            half = m.Equals(m.BVExtract(t, shift - 1, shift - 1), m.BV(1, 1))
            if rounding is Rounding.HALF_EVEN:
                odd = m.Equals(m.BVExtract(t, shift, shift), m.BV(1, 1))
                below = m.Not(m.Equals(m.BVExtract(t, 0, shift - 2), m.BV(0, shift - 1))) if shift >= 2 else m.FALSE()
                half = m.And(half, m.Or(below, odd))
            q = m.BVAdd(q, m.Ite(half, m.BV(1, w), m.BV(0, w)))
        if self.fixed and w > self.fixed:
            q, w = m.BVExtract(q, 0, self.fixed - 1), self.fixed
        return self.make(q, iv, w)

    def div(self, num: Val, den: Val, rounding: Rounding, bound: Interval) -> Val:
        """``div(num, den)`` for a symbolic ``den > 0`` whose exact ratio ``num / den`` lies in ``bound``.

        Attention means satisfy this with the hull of the averaged values. Then ``num -
        bound.lo * den >= 0``, so an unsigned division (cheaper for solvers than ``bvsdiv``)
        of the shifted numerator gives the quotient minus ``bound.lo``.
        """
        iv = quotient_interval(num.iv, den.iv, rounding).intersect(bound)
        if iv.is_point and self.prune:
            return self.const(iv.lo)
        m, lo = self.mgr, bound.lo
        shifted = self.sub(num, self.scale(den, lo))
        shifted = self.refine(shifted, Interval(0, max(0, shifted.iv.hi)))
        # one spare bit: 2 * remainder < 2 * den must not overflow
        w = self.fixed or max(shifted.width, den.width) + 1
        n, d = self.at(shifted, w), self.at(den, w)
        q = m.BVUDiv(n, d)
        if rounding is not Rounding.FLOOR:
            twice = m.BVAdd(m.BVURem(n, d), m.BVURem(n, d))
            if rounding is Rounding.HALF_UP:
                up = m.BVUGE(twice, d)
            else:
                # the final quotient q + lo is odd iff q's low bit differs from lo's
                odd = m.Equals(m.BVExtract(q, 0, 0), m.BV(1 - (lo & 1), 1))
                up = m.Or(m.BVUGT(twice, d), m.And(m.Equals(twice, d), odd))
            q = m.BVAdd(q, m.Ite(up, m.BV(1, w), m.BV(0, w)))
        return self.add(self.make(q, Interval(iv.lo - lo, iv.hi - lo), w), self.const(lo))

    def overflow(self, v: Val, width: int, mode: Overflow) -> Val:
        """Saturate or wrap ``v`` into signed ``width`` bits."""
        full = Interval.signed(width)
        iv = overflow_interval(v.iv, width, mode)
        if v.term is None:
            return self.const(int(ref.overflow(np.array([v.iv.lo], dtype=object), width, mode)[0]))
        if self.prune and full.contains(v.iv):
            return v
        m = self.mgr
        if mode is Overflow.SATURATE:
            w = self._width(v.iv, v)
            t = self.at(v, w)
            if not self.prune or v.iv.hi > full.hi:
                t = m.Ite(m.BVSGT(t, m.SBV(full.hi, w)), m.SBV(full.hi, w), t)
            if not self.prune or v.iv.lo < full.lo:
                t = m.Ite(m.BVSLT(t, m.SBV(full.lo, w)), m.SBV(full.lo, w), t)
            return self.make(t, iv, w)
        low = m.BVExtract(v.term, 0, width - 1) if v.width > width else v.term
        if self.fixed:
            low = m.BVSExt(low, self.fixed - min(width, v.width))
            return self.make(low, iv, self.fixed)
        return self.make(low, iv, min(width, v.width))

    def relu(self, v: Val) -> Val:
        if self.prune and v.iv.lo >= 0:
            return v
        iv = Interval(max(v.iv.lo, 0), max(v.iv.hi, 0))
        if v.term is None or (self.prune and v.iv.hi <= 0):
            return self.const(iv.lo)
        w = v.width
        return self.make(self.mgr.Ite(self.mgr.BVSLT(v.term, self.mgr.BV(0, w)), self.mgr.BV(0, w), v.term), iv, w)

    # -- comparisons and choices -----------------------------------------------------------

    def _cmp(self, a: Val, b: Val, op: Callable[[FNode, FNode], FNode]) -> FNode:
        w = max(a.width, b.width, self.fixed or 0)
        return op(self.at(a, w), self.at(b, w))

    def gt(self, a: Val, b: Val) -> FNode:
        if a.term is None and b.term is None or self.prune:
            if a.iv.lo > b.iv.hi:
                return self.mgr.TRUE()
            if a.iv.hi <= b.iv.lo:
                return self.mgr.FALSE()
        return self._cmp(a, b, self.mgr.BVSGT)

    def ge(self, a: Val, b: Val) -> FNode:
        return self.mgr.Not(self.gt(b, a))

    def eq(self, a: Val, b: Val) -> FNode:
        if a.term is None and b.term is None or self.prune:
            if a.iv.hi < b.iv.lo or b.iv.hi < a.iv.lo:
                return self.mgr.FALSE()
            if a.iv.is_point and b.iv.is_point:
                return self.mgr.TRUE()
        return self._cmp(a, b, self.mgr.Equals)

    def ite(self, cond: FNode, a: Val, b: Val) -> Val:
        if cond.is_true():
            return a
        if cond.is_false():
            return b
        if a.term is b.term and a.iv == b.iv:
            return a
        iv = Interval.hull([a.iv, b.iv])
        w = self._width(iv, a, b)
        return self.make(self.mgr.Ite(cond, self.at(a, w), self.at(b, w)), iv, w)

    def choose(self, var: FNode | None, options: Sequence[tuple[int, Val]]) -> Val:
        """The value of the option whose code ``var`` holds (``var`` is constrained to the codes)."""
        groups: dict[object, tuple[Val, list[int]]] = {}
        for code, val in options:
            key = ("c", val.iv.lo) if val.term is None else ("t", val.term, val.iv)
            groups.setdefault(key, (val, []))[1].append(code)
        ordered = sorted(groups.values(), key=lambda g: len(g[1]))
        result = ordered[-1][0]  # the largest group needs no condition
        if var is None:
            assert len(groups) == 1, "a fixed position has a single choice"
            return result
        for val, codes in ordered[:-1]:
            result = self.ite(self.is_one_of(var, codes), val, result)
        return result

    def is_one_of(self, var: FNode, codes: Sequence[int]) -> FNode:
        """``var`` equals one of ``codes``: one comparison per run of consecutive codes, so a
        column of a large vocabulary (hundreds of thousands of symbols) costs what its runs
        cost; the clock is looked at as every run is made."""
        m, width = self.mgr, var.symbol_type().width
        top = (1 << width) - 1
        terms = []
        for lo, hi in _runs(sorted(codes)):
            self._tick()
            if lo == hi:
                terms.append(m.Equals(var, m.BV(lo, width)))
            elif lo == 0 and hi == top:
                return m.TRUE()
            elif lo == 0:
                terms.append(m.BVULE(var, m.BV(hi, width)))
            elif hi == top:
                terms.append(m.BVUGE(var, m.BV(lo, width)))
            else:
                terms.append(m.And(m.BVUGE(var, m.BV(lo, width)), m.BVULE(var, m.BV(hi, width))))
        return m.Or(terms)

    def lookup(self, index: Val, table: Sequence[int]) -> Val:
        """``table[min(index, len(table) - 1)]`` for ``index >= 0``."""
        last = len(table) - 1
        result = self.const(table[last])
        for k in range(min(last - 1, index.iv.hi), max(index.iv.lo, 0) - 1, -1):
            result = self.ite(self.eq(index, self.const(k)), self.const(table[k]), result)
        return result
