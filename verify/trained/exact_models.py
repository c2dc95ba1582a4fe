"""Hand-built integer encoders that decide some task languages exactly.

They turn "does the trained, quantized model get the language right on every word of
length <= n?" into an equivalence query between two specs (:func:`verify.queries.questions.equiv`):
a distinguishing word is exactly a word the trained model misclassifies. Each construction
is small enough to check by hand, and the tests check it exhaustively against
:mod:`verify.trained.tasks` through the reference interpreter.

* majority -- one layer, no positions, a CLS readout; every score is 0, so average hardmax
  averages all positions: the CLS position reads ``floor(64 * (#a - #b) / (n + 1))``, which
  is positive iff ``#a > #b`` as long as ``n + 1 <= 64``.
* contains-ab -- two unique-hardmax layers. Layer 1 (causal) looks for an ``a`` at or before
  each position (the leftmost maximum of the score ``[symbol is a]``); its feed-forward marks
  a ``b`` that has one: ``relu(seen_a + is_b - 1)``. Layer 2 looks for any marked position.
  Exact for every length.
* dyck (depth <= D) -- readout at the last position. Layer 1 (causal, all scores 0) averages
  ``+-64`` per parenthesis over the prefix: ``a_i = floor(64 * depth_i / (i + 1))``, which
  is negative iff the depth is, zero iff it is, and ``>= floor(64 (D+1) / (i+1))`` (a
  positional threshold) iff the depth exceeds D, as long as ``i + 1 <= 64``. Its
  feed-forward turns these into 0/1 flags with pairs ``relu(y) - relu(y - 1)``: "bad
  prefix" and "depth not zero". Layer 2 looks for any bad prefix; the readout accepts iff
  there is none and the final depth is zero.
"""

from __future__ import annotations

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
    Rounding,
    validate,
)
from verify.trained.tasks import DYCK_MAX_DEPTH
from verify.trained.training import CLS_SYMBOL

# The majority construction's value scale: it is exact for words shorter than this.
MAJORITY_SCALE = 64
# The Dyck construction's prefix-average scale and its positional table's rows (<= scale).
DYCK_SCALE = 64
DYCK_POSITIONS = 32


def exact_model(task_name: str) -> EncoderSpec | None:
    """An exact encoder for the task, or None when there is no construction for it here."""
    builders = {"majority": _majority, "contains-ab": _contains_ab, "dyck": _dyck}
    build = builders.get(task_name)
    return None if build is None else validate(build())


def exact_max_length(task_name: str) -> int | None:
    """Words up to this length are decided exactly (None: every length, or no model)."""
    return {"majority": MAJORITY_SCALE - 1, "dyck": DYCK_POSITIONS}.get(task_name)


def _m(rows: list[list[int]] | list[int]) -> np.ndarray:
    return np.asarray(rows, dtype=np.int64)


def _majority() -> EncoderSpec:
    head = Head(wq=_m([[0]]), wk=_m([[0]]), wv=_m([[MAJORITY_SCALE]]))
    layer = Layer(heads=(head,), wo=_m([[1]]), attention=Attention.AVERAGE_HARDMAX, mask=Mask.NONE)
    return EncoderSpec(
        vocab=("a", "b", CLS_SYMBOL),
        d_model=1,
        width=16,
        weight_width=8,
        rounding=Rounding.FLOOR,
        overflow=Overflow.SATURATE,
        embedding=_m([[1], [-1], [0]]),  # +1 per a, -1 per b
        positional=Positional(),
        layers=(layer,),
        readout=Readout(
            weight=_m([[1]]),
            bias=_m([0]),
            position=ReadoutPosition.CLS,
            accept=Accept.POSITIVE,
            cls_token=CLS_SYMBOL,
        ),
    )


# contains-ab's stream dimensions.
_IS_A, _IS_B, _ONE, _SEEN_A, _MARK, _FOUND = range(6)


def _unit(dim: int, d: int = 6) -> np.ndarray:  # d = contains-ab's stream width
    col = np.zeros((d, 1), dtype=np.int64)
    col[dim, 0] = 1
    return col


def _contains_ab() -> EncoderSpec:
    d = 6
    find_a = Head(wq=_unit(_ONE), wk=_unit(_IS_A), wv=_unit(_IS_A))
    mark = FeedForward(
        w1=_unit(_SEEN_A) + _unit(_IS_B),
        b1=np.asarray([-1], dtype=np.int64),
        w2=_unit(_MARK).T.copy(),
        b2=np.zeros(d, dtype=np.int64),
    )
    layer1 = Layer(
        heads=(find_a,),
        wo=_unit(_SEEN_A).T.copy(),
        attention=Attention.UNIQUE_HARDMAX,
        mask=Mask.CAUSAL,
        ffn=mark,
    )
    find_mark = Head(wq=_unit(_ONE), wk=_unit(_MARK), wv=_unit(_MARK))
    layer2 = Layer(
        heads=(find_mark,),
        wo=_unit(_FOUND).T.copy(),
        attention=Attention.UNIQUE_HARDMAX,
        mask=Mask.NONE,
    )
    embedding = np.zeros((3, d), dtype=np.int64)
    embedding[0, [_IS_A, _ONE]] = 1  # a
    embedding[1, [_IS_B, _ONE]] = 1  # b
    embedding[2, _ONE] = 1  # CLS
    return EncoderSpec(
        vocab=("a", "b", CLS_SYMBOL),
        d_model=d,
        width=8,
        weight_width=8,
        rounding=Rounding.FLOOR,
        overflow=Overflow.SATURATE,
        embedding=embedding,
        positional=Positional(),
        layers=(layer1, layer2),
        readout=Readout(
            weight=2 * _unit(_FOUND),
            bias=np.asarray([-1], dtype=np.int64),
            position=ReadoutPosition.CLS,
            accept=Accept.POSITIVE,
            cls_token=CLS_SYMBOL,
        ),
    )


# dyck's stream dimensions.
_STEP, _D_ONE, _THRESHOLD, _AVG, _BAD, _ANY_BAD, _NONZERO = range(7)


def _dyck() -> EncoderSpec:
    d = 7

    def unit(dim: int) -> np.ndarray:
        return _unit(dim, d)

    prefix_mean = Head(
        wq=np.zeros((d, 1), dtype=np.int64), wk=np.zeros((d, 1), dtype=np.int64), wv=DYCK_SCALE * unit(_STEP)
    )
    # Hidden units, in pairs relu(y) - relu(y - 1) = [y >= 1] for integer y:
    # y = -avg (negative depth), y = avg - threshold + 1 (too deep), y = avg (positive depth).
    avg, thr, one = unit(_AVG), unit(_THRESHOLD), unit(_D_ONE)
    w1 = np.concatenate([-avg, -avg, avg - thr, avg - thr, avg, avg], axis=1)
    b1 = np.asarray([0, -1, 1, 0, 0, -1], dtype=np.int64)
    w2 = np.zeros((6, d), dtype=np.int64)
    w2[:, _BAD] = [1, -1, 1, -1, 0, 0]
    w2[:, _NONZERO] = [1, -1, 0, 0, 1, -1]
    flags = FeedForward(w1=w1, b1=b1, w2=w2, b2=np.zeros(d, dtype=np.int64))
    layer1 = Layer(
        heads=(prefix_mean,),
        wo=unit(_AVG).T.copy(),
        attention=Attention.AVERAGE_HARDMAX,
        mask=Mask.CAUSAL,
        ffn=flags,
    )
    find_bad = Head(wq=one, wk=unit(_BAD), wv=unit(_BAD))
    layer2 = Layer(heads=(find_bad,), wo=unit(_ANY_BAD).T.copy(), attention=Attention.UNIQUE_HARDMAX)
    embedding = np.zeros((2, d), dtype=np.int64)
    embedding[:, _D_ONE] = 1
    embedding[0, _STEP], embedding[1, _STEP] = 1, -1  # "(" then ")"
    table = np.zeros((DYCK_POSITIONS, d), dtype=np.int64)
    # At position i (prefix length i + 1) depth > D iff avg >= this threshold.
    table[:, _THRESHOLD] = [DYCK_SCALE * (DYCK_MAX_DEPTH + 1) // (i + 1) for i in range(DYCK_POSITIONS)]
    readout = -2 * unit(_ANY_BAD) - 2 * unit(_NONZERO)
    return EncoderSpec(
        vocab=("(", ")"),
        d_model=d,
        width=16,
        weight_width=8,
        rounding=Rounding.FLOOR,
        overflow=Overflow.SATURATE,
        embedding=embedding,
        positional=Positional(PositionalKind.TABLE, table),
        layers=(layer1, layer2),
        readout=Readout(weight=readout, bias=np.asarray([1], dtype=np.int64), position=ReadoutPosition.LAST),
    )
