"""Interval analysis: sound integer bounds for every value the encoding builds.

The encoding carries an :class:`Interval` beside every bit-vector term. The bounds choose
the narrowest two's complement width that holds the value exactly (so bit-vector
arithmetic equals integer arithmetic), drop comparisons whose outcome is already decided
(a saturation that cannot trigger, a score that cannot win) and replace neurons whose
interval is a single point by constants. Every transfer function is the interpreter's own
operation applied to the end points, which is sound because those operations are monotone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from verify.model.interpreter import div_round, overflow
from verify.model.spec import Overflow, Rounding


@dataclass(frozen=True, slots=True)
class Interval:
    """The closed integer interval ``[lo, hi]``."""

    lo: int
    hi: int

    def __post_init__(self) -> None:
        assert self.lo <= self.hi, f"empty interval [{self.lo}, {self.hi}]"

    @classmethod
    def point(cls, value: int) -> Interval:
        return cls(value, value)

    @classmethod
    def hull(cls, intervals: Iterable[Interval]) -> Interval:
        items = list(intervals)
        return cls(min(i.lo for i in items), max(i.hi for i in items))

    @classmethod
    def signed(cls, width: int) -> Interval:
        """Every value of a signed ``width``-bit integer."""
        return cls(-(1 << (width - 1)), (1 << (width - 1)) - 1)

    @property
    def is_point(self) -> bool:
        return self.lo == self.hi

    @property
    def magnitude(self) -> int:
        return max(abs(self.lo), abs(self.hi))

    def __add__(self, other: Interval) -> Interval:
        return Interval(self.lo + other.lo, self.hi + other.hi)

    def __neg__(self) -> Interval:
        return Interval(-self.hi, -self.lo)

    def __sub__(self, other: Interval) -> Interval:
        return self + (-other)

    def __mul__(self, other: Interval) -> Interval:
        corners = [self.lo * other.lo, self.lo * other.hi, self.hi * other.lo, self.hi * other.hi]
        return Interval(min(corners), max(corners))

    def scale(self, c: int) -> Interval:
        return Interval(min(self.lo * c, self.hi * c), max(self.lo * c, self.hi * c))

    def contains(self, other: Interval) -> bool:
        return self.lo <= other.lo and other.hi <= self.hi

    def intersect(self, other: Interval) -> Interval:
        return Interval(max(self.lo, other.lo), min(self.hi, other.hi))


def signed_bits(iv: Interval) -> int:
    """The fewest two's complement bits that hold every value of ``iv`` (at least 1)."""
    bits = 1
    while not Interval.signed(bits).contains(iv):
        bits += 1
    return bits


def _apply(fn, iv: Interval) -> Interval:  # type: ignore[no-untyped-def]
    ends = fn(np.array([iv.lo, iv.hi], dtype=object))
    return Interval(int(ends[0]), int(ends[1]))


def div_round_interval(iv: Interval, den: int, rounding: Rounding) -> Interval:
    """Bounds of ``div(x, den)`` for ``x`` in ``iv`` and a constant ``den > 0`` (monotone)."""
    return _apply(lambda a: div_round(a, den, rounding), iv)


def overflow_interval(iv: Interval, width: int, mode: Overflow) -> Interval:
    """Bounds after overflow handling: a clamp for saturation; wrap-around is monotone only
    when nothing wraps, else the whole range."""
    full = Interval.signed(width)
    if full.contains(iv):
        return iv
    if mode is Overflow.SATURATE:
        return _apply(lambda a: overflow(a, width, mode), iv)
    return full


def quotient_interval(num: Interval, den: Interval, rounding: Rounding) -> Interval:
    """Bounds of ``div(n, d)`` over ``n`` in ``num`` and ``d`` in ``den`` (``den.lo > 0``)."""
    assert den.lo > 0, "divisors are positive"
    corners = [
        div_round(np.array([n], dtype=object), d, rounding)[0] for n in (num.lo, num.hi) for d in (den.lo, den.hi)
    ]
    return Interval(int(min(corners)), int(max(corners)))
