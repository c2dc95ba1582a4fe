"""Random small encoders, for differential tests and benchmarks.

It lives beside the tests (on their path through pytest's ``pythonpath``), and
bench/verify_scaling.py puts tests/ on its path to draw the same models: only tests and
benchmarks use it, so the ``verify`` package does not ship it.

Weights are drawn small so that values actually reach the interesting corners (ties in
attention, saturation, wrap-around, rounding of halves) on short words.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verify.model.spec import (
    Accept,
    Attention,
    EncoderSpec,
    FeedForward,
    Head,
    Layer,
    Mask,
    Overflow,
    Positional,
    PositionalKind,
    Readout,
    ReadoutPosition,
    Requant,
    Rounding,
    validate,
)


@dataclass(frozen=True, slots=True)
class SynthConfig:
    """The shape and semantics options of a random encoder."""

    vocab_size: int = 3
    d_model: int = 3
    layers: int = 1
    heads: int = 1
    head_dim: int = 2
    ffn_dim: int = 0  # 0 = no feed-forward
    width: int = 6
    weight_width: int = 4
    attention: Attention = Attention.UNIQUE_HARDMAX
    mask: Mask = Mask.NONE
    positional: PositionalKind = PositionalKind.NONE
    positional_rows: int = 3  # rows of the table / period
    rounding: Rounding = Rounding.FLOOR
    overflow: Overflow = Overflow.SATURATE
    readout: ReadoutPosition = ReadoutPosition.LAST
    accept: Accept = Accept.POSITIVE
    classes: int = 1
    residual: bool = True
    # Range of weights drawn (inclusive, symmetric); small keeps ties and saturation frequent.
    weight_range: int = 3


def _mat(rng: np.random.Generator, shape: tuple[int, ...], bound: int) -> np.ndarray:
    arr = rng.integers(-bound, bound + 1, size=shape, dtype=np.int64)
    arr.setflags(write=False)
    return arr


def _rq(rng: np.random.Generator) -> Requant:
    return Requant(int(rng.integers(1, 4)), int(rng.integers(0, 3)))


def random_spec(rng: np.random.Generator, config: SynthConfig = SynthConfig()) -> EncoderSpec:
    """A random, valid encoder of the given configuration."""
    c = config
    act = min((1 << (c.width - 1)) - 1, 2 * c.weight_range)
    wb = min((1 << (c.weight_width - 1)) - 1, c.weight_range)
    symbols = [chr(ord("a") + i) for i in range(c.vocab_size)]
    cls = None
    if c.readout is ReadoutPosition.CLS:
        cls = "<cls>"
        symbols.append(cls)
    d = c.d_model
    layers = []
    for _ in range(c.layers):
        heads = tuple(
            Head(
                wq=_mat(rng, (d, c.head_dim), wb),
                wk=_mat(rng, (d, c.head_dim), wb),
                wv=_mat(rng, (d, c.head_dim), wb),
                q_requant=_rq(rng),
                k_requant=_rq(rng),
                v_requant=_rq(rng),
            )
            for _ in range(c.heads)
        )
        ffn = None
        if c.ffn_dim:
            ffn = FeedForward(
                w1=_mat(rng, (d, c.ffn_dim), wb),
                b1=_mat(rng, (c.ffn_dim,), 2 * wb),
                w2=_mat(rng, (c.ffn_dim, d), wb),
                b2=_mat(rng, (d,), 2 * wb),
                requant1=_rq(rng),
                requant2=_rq(rng),
            )
        exp_table: tuple[int, ...] = ()
        if c.attention is Attention.SOFTMAX_TABLE:
            size = int(rng.integers(2, 6))
            exp_table = tuple(sorted((int(v) for v in rng.integers(0, 9, size=size)), reverse=True))
            exp_table = (max(exp_table[0], 1),) + exp_table[1:]
        layers.append(
            Layer(
                heads=heads,
                wo=_mat(rng, (c.heads * c.head_dim, d), wb),
                attention=c.attention,
                mask=c.mask,
                residual=c.residual,
                o_requant=_rq(rng),
                ffn=ffn,
                exp_table=exp_table,
                score_shift=int(rng.integers(0, 2)) if exp_table else 0,
            )
        )
    positional = Positional()
    if c.positional is not PositionalKind.NONE:
        positional = Positional(c.positional, _mat(rng, (c.positional_rows, d), act))
    classes = 1 if c.accept is Accept.POSITIVE else c.classes
    spec = EncoderSpec(
        vocab=tuple(symbols),
        d_model=d,
        width=c.width,
        weight_width=c.weight_width,
        rounding=c.rounding,
        overflow=c.overflow,
        embedding=_mat(rng, (len(symbols), d), act),
        positional=positional,
        layers=tuple(layers),
        readout=Readout(
            weight=_mat(rng, (d, classes), wb),
            bias=_mat(rng, (classes,), 2 * wb),
            position=c.readout,
            accept=c.accept,
            accept_class=int(rng.integers(0, classes)),
            cls_token=cls,
        ),
    )
    return validate(spec)
