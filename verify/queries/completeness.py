"""A length bound that makes trSAT over *all* lengths decidable for one class of encoders.

The class
---------
Every head of every layer uses ``unique_hardmax`` (leftmost tie-breaking), there is no
mask, the positional encoding is none or periodic (period ``p``; none is ``p = 1``), and
the query fixes no prefix or suffix (an alphabet restriction is fine). Residual
connections, feed-forward layers, any widths, rounding and overflow modes are allowed.

The argument
------------
Call ``c_i = (w_i, i mod p)`` the *class* of position ``i`` (positions count over the whole
sequence, a CLS symbol included), and write ``F(w)`` for the sequence of distinct classes
of ``w`` in the order of their first occurrence. Claim: for every layer ``l`` there is a
function ``G_l`` with ``x^l_i = G_l(c_i, F(w))`` for every position ``i``.

* ``l = 0``: ``x^0_i = ovf(emb[w_i] + pos[i mod p])`` (or ``emb[w_i]``), a function of ``c_i``.
* ``l -> l + 1``: by induction, the score ``s_ij = q(x^l_i) . k(x^l_j)`` is ``S(c_i, c_j,
  F)``, so which positions ``j`` reach the maximum depends only on their class: they are
  the positions of a class in ``A = argmax_c S(c_i, c, F)``, ``c`` ranging over ``F`` (no
  mask: every position is visible). The leftmost of them is the first occurrence of the
  class of ``A`` that comes first in ``F``; call it ``c*``, a function of ``(c_i, F)``. The
  head outputs ``v(G_l(c*, F))``. Output projection, residual, feed-forward and every
  rounding and overflow act per position, so ``x^{l+1}_i`` is again a function of
  ``(c_i, F)``.

The readout reads position 0 (``first``: its class is ``F_1``; ``cls``: the CLS class) or
the last position. So the output is a function of ``F(w)``, plus the class of the last
position for ``last``.

Shortening. Take positions ``j`` and ``j + p`` such that ``j .. j+p-1`` are all word
positions that are *not* first occurrences of their class and, for ``last``, ``j + p``
is still a position. Cutting ``j .. j+p-1`` shifts every later position by ``p``, so every
remaining position keeps its class and their order; ``F`` is unchanged (only repeats were
cut) and so is the class of the last position: the output is unchanged. Repeating the cut,
every run of non-first positions between two first occurrences shrinks below ``p``, and
the run after the last first occurrence below ``p`` (``first``/``cls``: it can simply be
dropped, which changes nothing before it) or to at most ``p`` (``last``). With ``K =
|alphabet| * p`` word classes, at most ``K`` first occurrences and ``K - 1`` runs between
them, a word of any length has a word with the same output of length at most::

    B = K*p - p + 1   (first, cls)        B = K*p + 1   (last)

(``p = 1``: ``|alphabet|`` and ``|alphabet| + 1``, the first-occurrence word itself). So if
some word of any length makes the encoder output a label, one of length <= ``B`` does:
checking lengths ``1..B`` decides trSAT for all lengths. For a pair of encoders (equiv)
the same holds with ``p`` the least common multiple of their periods, since both outputs
are functions of the classes modulo it.

With ``p = 1`` a short witness also *pads* to every longer length (repeat its first or last
symbol: ``F`` and the readout are unchanged), so an exact length beyond ``B`` is answered
from ``1..B``. With ``p > 1`` padding may need classes the word lacks, so exact lengths
beyond ``B`` are answered at the asked length (by :mod:`verify.queries.signatures` when its words are
few, else by the solver).

Where it fails: average hardmax and table softmax output means weighted by how *often*
each symbol occurs; a causal mask makes position ``i`` see only the classes of its prefix;
a table positional encoding makes ``x^0_i`` depend on the absolute position. For those no
bound is claimed and answers say "unknown beyond n".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from verify.model.spec import Attention, EncoderSpec, Mask, PositionalKind, ReadoutPosition


@dataclass(frozen=True, slots=True)
class LengthBound:
    """Whether lengths ``1..bound`` decide a question for all lengths, and why (not)."""

    bound: int | None  # None: no bound is known for this encoder/query
    reason: str  # one sentence: the class membership, or what breaks the argument
    # Every shorter witness pads to any longer length (period 1), so an exact length beyond
    # the bound is answered from 1..bound.
    pads: bool = False


def length_bound(spec: EncoderSpec, *, alphabet_size: int, fixes_affixes: bool = False) -> LengthBound:
    """The length bound of :mod:`verify.queries.completeness` for ``spec``, or why there is none."""
    return joint_bound([spec], alphabet_size=alphabet_size, fixes_affixes=fixes_affixes)


def _outside_class(specs: Sequence[EncoderSpec]) -> str | None:
    """Why some encoder is outside the class of the argument above (None: all are inside)."""
    for spec in specs:
        for li, layer in enumerate(spec.layers):
            if layer.attention is not Attention.UNIQUE_HARDMAX:
                return (
                    f"layer {li} uses {layer.attention.value} attention, "
                    "whose output depends on how often symbols occur"
                )
            if layer.mask is not Mask.NONE:
                return f"layer {li} has a {layer.mask.value} mask, so a position sees only its prefix"
        if spec.positional.kind is PositionalKind.TABLE:
            return "the table positional encoding makes vectors depend on absolute positions"
    return None


def class_period(specs: Sequence[EncoderSpec]) -> int | None:
    """The period ``p`` whose classes ``(symbol, position mod p)`` all of ``specs`` compute on
    (the lcm of their periods), or None when some encoder is outside the class."""
    if _outside_class(specs) is not None:
        return None
    return math.lcm(*(_period(spec) for spec in specs))


def joint_bound(specs: Sequence[EncoderSpec], *, alphabet_size: int, fixes_affixes: bool = False) -> LengthBound:
    """The bound for a question about encoders all run on the same word (e.g. equiv)."""
    outside = _outside_class(specs)
    if outside is not None:
        return LengthBound(None, outside)
    if fixes_affixes:
        return LengthBound(None, "a fixed prefix or suffix is outside the first-occurrence argument")
    period = math.lcm(*(_period(spec) for spec in specs))
    last = any(spec.readout.position is ReadoutPosition.LAST for spec in specs)
    classes = alphabet_size * period
    bound = classes * period + 1 if last else classes * period - period + 1
    if period == 1:
        last_symbol = " and the last symbol" if last else ""
        why = f"no positional encoding, no mask: the output depends only on the order of first occurrences{last_symbol}"
    else:
        why = (
            f"periodic positions (period {period}), no mask: the output depends only on the order in which "
            f"(symbol, position mod {period}) pairs first occur{' and the last pair' if last else ''}, "
            f"and repeated blocks of {period} positions can be cut"
        )
    return LengthBound(
        bound, f"unique-hardmax heads, {why}, so lengths 1..{bound} decide all lengths", pads=period == 1
    )


def _period(spec: EncoderSpec) -> int:
    if spec.positional.kind is PositionalKind.PERIODIC:
        assert spec.positional.table is not None
        return int(spec.positional.table.shape[0])
    return 1


def first_occurrence_word(word: Sequence[str], *, keep_last: bool) -> tuple[str, ...]:
    """``sigma(word)``, followed by the last symbol when ``keep_last`` and it is not already last."""
    seen: list[str] = []
    for s in word:
        if s not in seen:
            seen.append(s)
    if keep_last and word and seen[-1] != word[-1]:
        seen.append(word[-1])
    return tuple(seen)


def permutable_positions(spec: EncoderSpec, length: int) -> range | None:
    """Word positions whose symbols may be permuted without changing the output, or None.

    With only averaging heads (average hardmax, table softmax: both sum over keys, in any
    order), no mask and no positional encoding, every layer is permutation-equivariant and
    the readout position sees a permutation-invariant summary of the others. So the
    output is unchanged by permuting all word positions except the one read out (the
    first or last; with a CLS readout, the CLS symbol is not a word position). Queries
    use this to add the symmetry-breaking constraint "those symbols are sorted": sound,
    because every witness has a sorted permutation that is also a witness. Unique hardmax
    breaks ties by position, so it is excluded.
    """
    if spec.positional.kind is not PositionalKind.NONE:
        return None
    if any(layer.attention is Attention.UNIQUE_HARDMAX or layer.mask is not Mask.NONE for layer in spec.layers):
        return None
    position = spec.readout.position
    if position is ReadoutPosition.FIRST:
        return range(1, length)
    if position is ReadoutPosition.LAST:
        return range(0, length - 1)
    return range(0, length)


def padding_position(spec: EncoderSpec) -> int | None:
    """For the class above without positions: which symbol canonical words repeat (0: the
    first, -1: the last).

    By the argument above the output depends only on ``sigma(w)`` (and ``w_n`` when the
    readout is ``last``). So every word of length n has a *canonical* partner of the same
    length and output: ``sigma(w)`` padded with copies of ``w_1`` (``first``/``cls``), or
    with copies of ``w_n`` (``last``). Queries of exact lengths use this as a sound
    symmetry-breaking constraint: once a symbol repeats, every later symbol is the padding
    symbol. None outside the class.
    """
    if not length_bound(spec, alphabet_size=1).pads:
        return None
    return -1 if spec.readout.position is ReadoutPosition.LAST else 0
