"""The quantized transformer encoder spec: dataclasses, validation, and the JSON file format.

The integer *semantics* of a spec live in :mod:`verify.model.interpreter`; this module only says
what a well-formed spec is and how it is stored.

File format (``"format": "leanagent-verify-encoder/1"``)
--------------------------------------------------------
One JSON object. Every array (a list of lists of integers) is either written inline or
given as a string naming an array in the ``.npz`` file that the ``"npz"`` field points to
(relative to the JSON file). ``d`` is ``d_model``; all integers are exact.

.. code-block:: text

    {
      "format": "leanagent-verify-encoder/1",
      "npz": "weights.npz",                   optional; needed only if arrays are by name
      "vocab": ["a", "b", "<cls>"],           distinct symbols; token id = index
      "d_model": 4,
      "width": 8,                             activation width in bits (2..32), signed
      "weight_width": 8,                      weight width in bits (2..32), signed
      "rounding": "floor",                    floor | half_up | half_even
      "overflow": "saturate",                 saturate | wrap
      "embedding": [[...]],                   (V, d) activations
      "positional": {"kind": "none"}          or {"kind": "table", "table": (P, d)}
                                              or {"kind": "periodic", "table": (p, d)}
      "layers": [{
        "attention": "unique_hardmax",        unique_hardmax | average_hardmax | softmax_table
        "mask": "none",                       none | causal
        "residual": true,
        "exp_table": [64, 23, 8, 3, 1],       softmax_table only: weights, index 0 first
        "score_shift": 0,                     softmax_table only: index = (max - s) >> shift
        "heads": [{"wq": (d, k), "wk": (d, k), "wv": (d, e),
                   "q_requant": {"multiplier": 1, "shift": 0},
                   "k_requant": {...}, "v_requant": {...}}],
        "wo": (H*e, d), "o_requant": {...},
        "ffn": null or {"w1": (d, f), "b1": (f,), "requant1": {...},
                        "w2": (f, d), "b2": (d,), "requant2": {...}}
      }],
      "readout": {"position": "last",         first | last | cls
                  "cls_token": null,          the symbol prepended when position is cls
                  "weight": (d, C), "bias": (C,),
                  "accept": "positive",       positive (C = 1, accept iff score > 0)
                                              | argmax (accept iff leftmost argmax = class)
                  "accept_class": 0}
    }

Weights (``wq`` .. ``w2``, ``weight``) must fit ``weight_width`` signed bits; embeddings and
positional tables fit ``width`` bits; biases are accumulator-scale integers that must fit
``width + weight_width + 8`` bits. A requantization is ``y = round(x * multiplier /
2**shift)`` with ``1 <= multiplier < 2**31`` and ``0 <= shift <= 62``. Malformed specs raise
:class:`SpecError` naming the offending field, e.g. ``layers[0].heads[1].wk``.

The format is strict, because a mistake it let through would be verified as something else:
a key it does not know (``"resdual": false``) is an error, not ignored (the residual would
silently stay on); array entries are JSON integers (``true``, ``1.0`` and ``1.5`` are refused;
``.npz`` arrays need an integer dtype) within int64.
"""

from __future__ import annotations

import difflib
import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verify.errors import VerifyInputError

FORMAT = "leanagent-verify-encoder/1"
MIN_WIDTH, MAX_WIDTH = 2, 32
MAX_MULTIPLIER = 2**31 - 1
MAX_SHIFT = 62
MAX_EXP_TABLE = 4096
# Biases are added to accumulators, which are wider than activations by about this margin.
BIAS_EXTRA_BITS = 8
_INT64 = np.iinfo(np.int64)

# The keys each object of the file may have: anything else is refused (a misspelled key must
# not fall back on a default).
_KEYS = {
    "": ("format", "npz", "vocab", "d_model", "width", "weight_width", "rounding", "overflow", "embedding")
    + ("positional", "layers", "readout"),
    "positional": ("kind", "table"),
    "layer": ("attention", "mask", "residual", "exp_table", "score_shift", "heads", "wo", "o_requant", "ffn"),
    "head": ("wq", "wk", "wv", "q_requant", "k_requant", "v_requant"),
    "requant": ("multiplier", "shift"),
    "ffn": ("w1", "b1", "w2", "b2", "requant1", "requant2"),
    "readout": ("position", "cls_token", "weight", "bias", "accept", "accept_class"),
}


class SpecError(VerifyInputError):
    """A model spec that is malformed; the message names the offending field."""


class Rounding(enum.Enum):
    """How a division (requantization shift, attention average) rounds."""

    FLOOR = "floor"  # towards -infinity (an arithmetic right shift)
    HALF_UP = "half_up"  # to nearest, ties towards +infinity: floor(x + 1/2)
    HALF_EVEN = "half_even"  # to nearest, ties to the even neighbour


class Overflow(enum.Enum):
    """What happens when a value leaves the signed ``width``-bit range."""

    SATURATE = "saturate"  # clamp to [-2**(w-1), 2**(w-1) - 1]
    WRAP = "wrap"  # two's complement wrap-around modulo 2**w


class Attention(enum.Enum):
    """How a head turns scores into a mixture of values."""

    UNIQUE_HARDMAX = "unique_hardmax"  # value at the leftmost position of maximal score
    AVERAGE_HARDMAX = "average_hardmax"  # rounded mean of values at all maximal positions
    SOFTMAX_TABLE = "softmax_table"  # weights exp_table[min((max-s)>>shift, T-1)], rounded mean


class Mask(enum.Enum):
    """Which positions a query may attend to."""

    NONE = "none"  # every position
    CAUSAL = "causal"  # positions j <= i


class PositionalKind(enum.Enum):
    """How position i contributes to the input vector."""

    NONE = "none"  # no positional encoding
    TABLE = "table"  # row i of a table; words longer than the table are rejected
    PERIODIC = "periodic"  # row i mod p of a table with p rows


class ReadoutPosition(enum.Enum):
    """Which position's final vector the linear head reads."""

    FIRST = "first"
    LAST = "last"
    CLS = "cls"  # a CLS symbol prepended at position 0


class Accept(enum.Enum):
    """How the readout scores become accept/reject and a class label."""

    POSITIVE = "positive"  # one score; accept iff > 0; label 1 if accepted else 0
    ARGMAX = "argmax"  # label = leftmost argmax; accept iff label == accept_class


@dataclass(frozen=True, slots=True)
class Requant:
    """``y = round(x * multiplier / 2**shift)`` then overflow into ``width`` bits."""

    multiplier: int = 1
    shift: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class Head:
    """One attention head; matrices act on row vectors (``q = x @ wq``)."""

    wq: np.ndarray  # (d, k)
    wk: np.ndarray  # (d, k)
    wv: np.ndarray  # (d, e)
    q_requant: Requant = Requant()
    k_requant: Requant = Requant()
    v_requant: Requant = Requant()


@dataclass(frozen=True, slots=True, eq=False)
class FeedForward:
    """``relu(rq1(x @ w1 + b1)) @ w2 + b2``, requantized by ``requant2``."""

    w1: np.ndarray  # (d, f)
    b1: np.ndarray  # (f,)
    w2: np.ndarray  # (f, d)
    b2: np.ndarray  # (d,)
    requant1: Requant = Requant()
    requant2: Requant = Requant()


@dataclass(frozen=True, slots=True, eq=False)
class Layer:
    """Multi-head attention (plus residual), then an optional feed-forward (plus residual)."""

    heads: tuple[Head, ...]
    wo: np.ndarray  # (H*e, d): mixes the concatenated head outputs back to d
    attention: Attention = Attention.UNIQUE_HARDMAX
    mask: Mask = Mask.NONE
    residual: bool = True
    o_requant: Requant = Requant()
    ffn: FeedForward | None = None
    # softmax_table only: the integer "exp" weights, index 0 = the maximal score.
    exp_table: tuple[int, ...] = ()
    # softmax_table only: score gaps are shifted right by this before the table lookup.
    score_shift: int = 0


@dataclass(frozen=True, slots=True, eq=False)
class Positional:
    """A positional table (rows are activations) or none."""

    kind: PositionalKind = PositionalKind.NONE
    table: np.ndarray | None = None  # (P, d) for table/periodic, None for none


@dataclass(frozen=True, slots=True, eq=False)
class Readout:
    """The linear head on one position and how its scores decide acceptance."""

    weight: np.ndarray  # (d, C)
    bias: np.ndarray  # (C,)
    position: ReadoutPosition = ReadoutPosition.LAST
    accept: Accept = Accept.POSITIVE
    accept_class: int = 0
    cls_token: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class EncoderSpec:
    """A quantized transformer encoder: build it (numpy int arrays) then :func:`validate`, or :func:`load_spec`."""

    vocab: tuple[str, ...]
    d_model: int
    width: int
    weight_width: int
    rounding: Rounding
    overflow: Overflow
    embedding: np.ndarray  # (V, d)
    positional: Positional
    layers: tuple[Layer, ...]
    readout: Readout
    _ids: dict[str, int] = field(init=False, repr=False)  # set by __post_init__

    @property
    def word_alphabet(self) -> tuple[str, ...]:
        """Symbols a word may contain: the vocabulary minus the CLS symbol."""
        return tuple(s for s in self.vocab if s != self.readout.cls_token)

    def __post_init__(self) -> None:
        # Symbol -> index, made once: vocabularies run to hundreds of thousands of symbols,
        # where `vocab.index` per symbol made a length's pre-pass quadratic (minutes).
        object.__setattr__(self, "_ids", {symbol: i for i, symbol in enumerate(self.vocab)})

    def token_id(self, symbol: str) -> int:
        """The index of ``symbol`` in the vocabulary."""
        try:
            return self._ids[symbol]
        except KeyError:
            shown = list(self.vocab) if len(self.vocab) <= 50 else f"of {len(self.vocab)} symbols"
            raise VerifyInputError(f"symbol {symbol!r} is not in the vocabulary {shown}") from None

    def to_json_dict(self) -> dict[str, Any]:
        """The spec as a JSON-ready dict with every array inline."""
        return _spec_to_dict(self)


# --- validation ------------------------------------------------------------------------------


def _fail(field: str, why: str) -> SpecError:
    return SpecError(f"model spec field {field}: {why}")


def _json_entries(value: Any, field: str, ndim: int) -> None:
    """Check a JSON array before numpy sees it: numpy would read ``true`` as 1 and a number
    beyond int64 as an object, and say neither."""
    level = [value]
    for _ in range(ndim):
        if not all(isinstance(row, list) for row in level):
            raise _fail(field, f"expected a {ndim}-dimensional array of integers (nested lists)")
        level = [x for row in level for x in row]
    for x in level:
        if type(x) is not int:  # bool is a subclass of int, but true is not a weight
            raise _fail(field, f"entries must be integers, got {json.dumps(x)}")
        if not _INT64.min <= x <= _INT64.max:
            raise _fail(field, f"entry {x} is beyond the 64-bit integer range [{_INT64.min}, {_INT64.max}]")


def _array(value: Any, field: str, ndim: int) -> np.ndarray:
    """An array of the file (nested JSON lists, or a named ``.npz`` array) as read-only int64."""
    if isinstance(value, np.ndarray):
        arr = value
        if arr.size and not (np.issubdtype(arr.dtype, np.integer) and arr.dtype != bool):
            raise _fail(field, f"entries must be integers, got dtype {arr.dtype}")
        if arr.size and np.issubdtype(arr.dtype, np.unsignedinteger) and int(arr.max()) > _INT64.max:
            raise _fail(field, f"entry {int(arr.max())} is beyond the 64-bit integer range")
    else:
        _json_entries(value, field, ndim)
        try:
            arr = np.array(value, dtype=np.int64)
        except ValueError as e:
            raise _fail(field, "not a rectangular array: rows of different lengths") from e
    if arr.ndim != ndim:
        raise _fail(field, f"expected a {ndim}-dimensional array, got shape {arr.shape}")
    out = arr.astype(np.int64)
    out.setflags(write=False)
    return out


def _check_shape(arr: np.ndarray, shape: Sequence[int | None], field: str) -> None:
    for axis, want in enumerate(shape):
        if want is not None and arr.shape[axis] != want:
            raise _fail(field, f"shape {arr.shape} does not match the expected {tuple(shape)} (None = any)")


def _check_range(arr: np.ndarray, bits: int, field: str) -> None:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        raise _fail(
            field, f"entries must fit {bits} signed bits [{lo}, {hi}], got [{int(arr.min())}, {int(arr.max())}]"
        )


def _check_requant(rq: Requant, field: str) -> None:
    if not isinstance(rq.multiplier, int) or not 1 <= rq.multiplier <= MAX_MULTIPLIER:
        raise _fail(f"{field}.multiplier", f"must be an integer in [1, {MAX_MULTIPLIER}], got {rq.multiplier!r}")
    if not isinstance(rq.shift, int) or not 0 <= rq.shift <= MAX_SHIFT:
        raise _fail(f"{field}.shift", f"must be an integer in [0, {MAX_SHIFT}], got {rq.shift!r}")


def validate(spec: EncoderSpec) -> EncoderSpec:
    """Check shapes, ranges and option combinations; raise :class:`SpecError` on the first fault."""
    for name in ("width", "weight_width"):
        value = getattr(spec, name)
        if not isinstance(value, int) or not MIN_WIDTH <= value <= MAX_WIDTH:
            raise _fail(name, f"must be an integer in [{MIN_WIDTH}, {MAX_WIDTH}], got {value!r}")
    if not isinstance(spec.d_model, int) or spec.d_model < 1:
        raise _fail("d_model", f"must be a positive integer, got {spec.d_model!r}")
    if (
        not spec.vocab
        or len(set(spec.vocab)) != len(spec.vocab)
        or not all(isinstance(s, str) and s for s in spec.vocab)
    ):
        raise _fail("vocab", "must be a non-empty list of distinct non-empty strings")
    d, w, ww = spec.d_model, spec.width, spec.weight_width
    bias_bits = w + ww + BIAS_EXTRA_BITS
    _check_shape(spec.embedding, (len(spec.vocab), d), "embedding")
    _check_range(spec.embedding, w, "embedding")
    pos = spec.positional
    if pos.kind is PositionalKind.NONE:
        if pos.table is not None:
            raise _fail("positional.table", "must be absent when kind is none")
    else:
        if pos.table is None or pos.table.shape[0] < 1:
            raise _fail("positional.table", f"kind {pos.kind.value} needs a table with at least one row")
        _check_shape(pos.table, (None, d), "positional.table")
        _check_range(pos.table, w, "positional.table")
    for li, layer in enumerate(spec.layers):
        at = f"layers[{li}]"
        if not layer.heads:
            raise _fail(f"{at}.heads", "a layer needs at least one head")
        for hi, head in enumerate(layer.heads):
            hat = f"{at}.heads[{hi}]"
            _check_shape(head.wq, (d, None), f"{hat}.wq")
            _check_shape(head.wk, (d, head.wq.shape[1]), f"{hat}.wk")
            _check_shape(head.wv, (d, None), f"{hat}.wv")
            for name in ("wq", "wk", "wv"):
                _check_range(getattr(head, name), ww, f"{hat}.{name}")
            for name in ("q_requant", "k_requant", "v_requant"):
                _check_requant(getattr(head, name), f"{hat}.{name}")
        concat = sum(h.wv.shape[1] for h in layer.heads)
        _check_shape(layer.wo, (concat, d), f"{at}.wo")
        _check_range(layer.wo, ww, f"{at}.wo")
        _check_requant(layer.o_requant, f"{at}.o_requant")
        if layer.attention is Attention.SOFTMAX_TABLE:
            table = layer.exp_table
            if not 1 <= len(table) <= MAX_EXP_TABLE or not all(
                type(t) is int and 0 <= t <= MAX_MULTIPLIER for t in table
            ):
                raise _fail(f"{at}.exp_table", f"needs 1..{MAX_EXP_TABLE} integers in [0, {MAX_MULTIPLIER}]")
            if table[0] < 1:
                raise _fail(f"{at}.exp_table", "entry 0 (the maximal score's weight) must be positive")
            if not isinstance(layer.score_shift, int) or not 0 <= layer.score_shift <= MAX_SHIFT:
                raise _fail(f"{at}.score_shift", f"must be an integer in [0, {MAX_SHIFT}]")
        elif layer.exp_table:
            raise _fail(f"{at}.exp_table", f"only softmax_table attention uses it, not {layer.attention.value}")
        if layer.ffn is not None:
            f = layer.ffn
            _check_shape(f.w1, (d, None), f"{at}.ffn.w1")
            _check_shape(f.b1, (f.w1.shape[1],), f"{at}.ffn.b1")
            _check_shape(f.w2, (f.w1.shape[1], d), f"{at}.ffn.w2")
            _check_shape(f.b2, (d,), f"{at}.ffn.b2")
            _check_range(f.w1, ww, f"{at}.ffn.w1")
            _check_range(f.w2, ww, f"{at}.ffn.w2")
            _check_range(f.b1, bias_bits, f"{at}.ffn.b1")
            _check_range(f.b2, bias_bits, f"{at}.ffn.b2")
            _check_requant(f.requant1, f"{at}.ffn.requant1")
            _check_requant(f.requant2, f"{at}.ffn.requant2")
    ro = spec.readout
    _check_shape(ro.weight, (d, None), "readout.weight")
    if ro.weight.shape[1] < 1:
        raise _fail("readout.weight", "needs at least one output column")
    _check_range(ro.weight, ww, "readout.weight")
    if ro.accept is Accept.POSITIVE and ro.weight.shape[1] != 1:
        raise _fail("readout.weight", f"accept 'positive' needs exactly one column, got {ro.weight.shape[1]}")
    _check_shape(ro.bias, (ro.weight.shape[1],), "readout.bias")
    _check_range(ro.bias, bias_bits, "readout.bias")
    if ro.accept is Accept.ARGMAX and not 0 <= ro.accept_class < ro.weight.shape[1]:
        raise _fail("readout.accept_class", f"must be a class in [0, {ro.weight.shape[1] - 1}], got {ro.accept_class}")
    if ro.position is ReadoutPosition.CLS:
        if ro.cls_token not in spec.vocab:
            raise _fail(
                "readout.cls_token", f"position cls needs a cls_token from the vocabulary, got {ro.cls_token!r}"
            )
        if len(spec.vocab) < 2:
            raise _fail("vocab", "with a CLS token the vocabulary needs at least one other symbol")
    elif ro.cls_token is not None:
        raise _fail("readout.cls_token", f"only position cls uses it, not {ro.position.value}")
    return spec


# --- construction from plain data ------------------------------------------------------------


def _enum(cls: type[enum.Enum], value: Any, field: str) -> Any:
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(m.value for m in cls)  # type: ignore[attr-defined]
        raise _fail(field, f"unknown value {value!r} (allowed: {allowed})") from None


class _Reader:
    """Reads fields of the JSON object, resolving named arrays in the ``.npz``, with paths in errors."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._arrays = arrays

    def object(self, obj: Any, kind: str, field: str) -> Mapping[str, Any]:
        """``obj`` as a JSON object of ``kind`` (a key of ``_KEYS``), refusing keys it may not have."""
        if not isinstance(obj, Mapping):
            if not field:
                raise SpecError("model spec: the top level must be a JSON object")
            raise _fail(field, "must be a JSON object")
        allowed = _KEYS[kind]
        for key in obj:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
                raise _fail(field or "(top level)", f"unknown key {key!r}{hint}")
        return obj

    def get(self, obj: Any, key: str, field: str, default: Any = ...) -> Any:
        if not isinstance(obj, Mapping):
            raise _fail(field.rsplit(".", 1)[0] or field, "must be a JSON object")
        if key not in obj:
            if default is ...:
                raise _fail(field, "is missing")
            return default
        return obj[key]

    def array(self, obj: Any, key: str, field: str, ndim: int, default: Any = ...) -> np.ndarray:
        value = self.get(obj, key, field, default)
        if isinstance(value, str):
            if value not in self._arrays:
                raise _fail(field, f"names array {value!r}, which the npz file does not contain")
            value = self._arrays[value]
        return _array(value, field, ndim)

    def integer(self, obj: Any, key: str, field: str, default: Any = ...) -> int:
        value = self.get(obj, key, field, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(field, f"must be an integer, got {value!r}")
        return value

    def requant(self, obj: Any, key: str, field: str) -> Requant:
        value = self.get(obj, key, field, None)
        if value is None:
            return Requant()
        self.object(value, "requant", field)
        return Requant(
            self.integer(value, "multiplier", f"{field}.multiplier", 1),
            self.integer(value, "shift", f"{field}.shift", 0),
        )


def spec_from_dict(data: Mapping[str, Any], *, arrays: Mapping[str, np.ndarray] | None = None) -> EncoderSpec:
    """Build and validate a spec from the JSON object of the file format (arrays inline or named)."""
    r = _Reader(arrays or {})
    r.object(data, "", "")
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise _fail("format", f"expected {FORMAT!r}, got {fmt!r}")
    vocab = r.get(data, "vocab", "vocab")
    if not isinstance(vocab, list):
        raise _fail("vocab", "must be a list of strings")
    pos_obj = r.object(r.get(data, "positional", "positional", {"kind": "none"}), "positional", "positional")
    pos_kind = _enum(PositionalKind, r.get(pos_obj, "kind", "positional.kind"), "positional.kind")
    positional = Positional(
        pos_kind, None if pos_kind is PositionalKind.NONE else r.array(pos_obj, "table", "positional.table", 2)
    )
    layers_obj = r.get(data, "layers", "layers")
    if not isinstance(layers_obj, list):
        raise _fail("layers", "must be a list")
    layers = []
    for li, lo in enumerate(layers_obj):
        at = f"layers[{li}]"
        r.object(lo, "layer", at)
        heads_obj = r.get(lo, "heads", f"{at}.heads")
        if not isinstance(heads_obj, list):
            raise _fail(f"{at}.heads", "must be a list")
        heads = []
        for hi, ho in enumerate(heads_obj):
            hat = f"{at}.heads[{hi}]"
            r.object(ho, "head", hat)
            heads.append(
                Head(
                    wq=r.array(ho, "wq", f"{hat}.wq", 2),
                    wk=r.array(ho, "wk", f"{hat}.wk", 2),
                    wv=r.array(ho, "wv", f"{hat}.wv", 2),
                    q_requant=r.requant(ho, "q_requant", f"{hat}.q_requant"),
                    k_requant=r.requant(ho, "k_requant", f"{hat}.k_requant"),
                    v_requant=r.requant(ho, "v_requant", f"{hat}.v_requant"),
                )
            )
        ffn_obj = r.get(lo, "ffn", f"{at}.ffn", None)
        ffn = None
        if ffn_obj is not None:
            r.object(ffn_obj, "ffn", f"{at}.ffn")
            ffn = FeedForward(
                w1=r.array(ffn_obj, "w1", f"{at}.ffn.w1", 2),
                b1=r.array(ffn_obj, "b1", f"{at}.ffn.b1", 1),
                w2=r.array(ffn_obj, "w2", f"{at}.ffn.w2", 2),
                b2=r.array(ffn_obj, "b2", f"{at}.ffn.b2", 1),
                requant1=r.requant(ffn_obj, "requant1", f"{at}.ffn.requant1"),
                requant2=r.requant(ffn_obj, "requant2", f"{at}.ffn.requant2"),
            )
        exp_table = r.get(lo, "exp_table", f"{at}.exp_table", [])
        if not isinstance(exp_table, list):
            raise _fail(f"{at}.exp_table", "must be a list of integers")
        residual = r.get(lo, "residual", f"{at}.residual", True)
        if not isinstance(residual, bool):
            raise _fail(f"{at}.residual", f"must be true or false, got {residual!r}")
        layers.append(
            Layer(
                heads=tuple(heads),
                wo=r.array(lo, "wo", f"{at}.wo", 2),
                attention=_enum(Attention, r.get(lo, "attention", f"{at}.attention"), f"{at}.attention"),
                mask=_enum(Mask, r.get(lo, "mask", f"{at}.mask", "none"), f"{at}.mask"),
                residual=residual,
                o_requant=r.requant(lo, "o_requant", f"{at}.o_requant"),
                ffn=ffn,
                exp_table=tuple(exp_table),
                score_shift=r.integer(lo, "score_shift", f"{at}.score_shift", 0),
            )
        )
    ro = r.object(r.get(data, "readout", "readout"), "readout", "readout")
    cls_token = r.get(ro, "cls_token", "readout.cls_token", None)
    if cls_token is not None and not isinstance(cls_token, str):
        raise _fail("readout.cls_token", f"must be a symbol (a string) or null, got {cls_token!r}")
    readout = Readout(
        weight=r.array(ro, "weight", "readout.weight", 2),
        bias=r.array(ro, "bias", "readout.bias", 1),
        position=_enum(ReadoutPosition, r.get(ro, "position", "readout.position", "last"), "readout.position"),
        accept=_enum(Accept, r.get(ro, "accept", "readout.accept", "positive"), "readout.accept"),
        accept_class=r.integer(ro, "accept_class", "readout.accept_class", 0),
        cls_token=cls_token,
    )
    spec = EncoderSpec(
        vocab=tuple(vocab),
        d_model=r.integer(data, "d_model", "d_model"),
        width=r.integer(data, "width", "width"),
        weight_width=r.integer(data, "weight_width", "weight_width"),
        rounding=_enum(Rounding, r.get(data, "rounding", "rounding", "floor"), "rounding"),
        overflow=_enum(Overflow, r.get(data, "overflow", "overflow", "saturate"), "overflow"),
        embedding=r.array(data, "embedding", "embedding", 2),
        positional=positional,
        layers=tuple(layers),
        readout=readout,
    )
    return validate(spec)


def _requant_dict(rq: Requant) -> dict[str, int]:
    return {"multiplier": rq.multiplier, "shift": rq.shift}


def _spec_to_dict(spec: EncoderSpec) -> dict[str, Any]:
    layers = []
    for layer in spec.layers:
        lo: dict[str, Any] = {
            "attention": layer.attention.value,
            "mask": layer.mask.value,
            "residual": layer.residual,
            "heads": [
                {
                    "wq": h.wq.tolist(),
                    "wk": h.wk.tolist(),
                    "wv": h.wv.tolist(),
                    "q_requant": _requant_dict(h.q_requant),
                    "k_requant": _requant_dict(h.k_requant),
                    "v_requant": _requant_dict(h.v_requant),
                }
                for h in layer.heads
            ],
            "wo": layer.wo.tolist(),
            "o_requant": _requant_dict(layer.o_requant),
            "ffn": None
            if layer.ffn is None
            else {
                "w1": layer.ffn.w1.tolist(),
                "b1": layer.ffn.b1.tolist(),
                "w2": layer.ffn.w2.tolist(),
                "b2": layer.ffn.b2.tolist(),
                "requant1": _requant_dict(layer.ffn.requant1),
                "requant2": _requant_dict(layer.ffn.requant2),
            },
        }
        if layer.attention is Attention.SOFTMAX_TABLE:
            lo["exp_table"] = list(layer.exp_table)
            lo["score_shift"] = layer.score_shift
        layers.append(lo)
    pos: dict[str, Any] = {"kind": spec.positional.kind.value}
    if spec.positional.table is not None:
        pos["table"] = spec.positional.table.tolist()
    ro = spec.readout
    return {
        "format": FORMAT,
        "vocab": list(spec.vocab),
        "d_model": spec.d_model,
        "width": spec.width,
        "weight_width": spec.weight_width,
        "rounding": spec.rounding.value,
        "overflow": spec.overflow.value,
        "embedding": spec.embedding.tolist(),
        "positional": pos,
        "layers": layers,
        "readout": {
            "position": ro.position.value,
            "cls_token": ro.cls_token,
            "weight": ro.weight.tolist(),
            "bias": ro.bias.tolist(),
            "accept": ro.accept.value,
            "accept_class": ro.accept_class,
        },
    }


def load_spec(path: Path | str) -> EncoderSpec:
    """Read and validate a spec file; every fault is a :class:`SpecError` with the path."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise SpecError(f"cannot read model file {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise SpecError(f"model file {path} is not UTF-8 text (byte {e.start}: {e.reason})") from e
    try:
        data = json.loads(text)
    except RecursionError as e:
        raise SpecError(f"model file {path} nests JSON arrays or objects too deeply to read") from e
    except ValueError as e:  # JSONDecodeError, and integers with more digits than Python converts
        raise SpecError(f"model file {path} is not valid JSON: {e}") from e
    arrays: dict[str, np.ndarray] = {}
    if isinstance(data, Mapping) and data.get("npz") is not None:
        npz_path = path.parent / str(data["npz"])
        try:
            with np.load(npz_path, allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except (OSError, ValueError) as e:
            raise SpecError(f"model spec field npz: cannot read {npz_path}: {e}") from e
    try:
        return spec_from_dict(data, arrays=arrays)
    except SpecError as e:
        raise SpecError(f"{path}: {e}") from e


def save_spec(spec: EncoderSpec, path: Path | str) -> Path:
    """Validate ``spec`` and write it as one JSON file with inline arrays; returns the path."""
    validate(spec)
    path = Path(path)
    path.write_text(json.dumps(spec.to_json_dict(), indent=1) + "\n", encoding="utf-8")
    return path
