"""A length bound that makes trSAT over *all* lengths decidable for one class of encoders.

The class
---------
Every head of every layer uses ``unique_hardmax`` (leftmost tie-breaking), there is no
positional encoding, no mask, and the query fixes no prefix or suffix (an alphabet
restriction is fine). Residual connections, feed-forward layers, any widths, rounding and
overflow modes are allowed.

The argument
------------
Write ``sigma(w)`` for the sequence of distinct symbols of ``w`` in the order of their first
occurrence. Claim: for every layer ``l`` there is a function ``F_l`` with ``x^l_i =
F_l(w_i, sigma(w))`` for every position ``i`` (with a CLS symbol, ``w`` includes it).

* ``l = 0``: ``x^0_i = emb[w_i]`` (no positional term).
* ``l -> l + 1``: by induction, the score ``s_ij = q(x^l_i) . k(x^l_j)`` is ``S(w_i, w_j,
  sigma)``, so which positions ``j`` reach the maximum depends only on their symbol:
  they are the positions holding a symbol of ``A = argmax_a S(w_i, a, sigma)``, ``a``
  ranging over ``sigma`` (no mask: every position is visible). The leftmost of them is
  the first occurrence of the symbol of ``A`` that comes first in ``sigma``; call it
  ``a*``, a function of ``(w_i, sigma)``. The head outputs ``v(x^l_j*) = v(F_l(a*, sigma))``.
  Output projection, residual, feed-forward and every rounding and overflow act per
  position, so ``x^{l+1}_i`` is again a function of ``(w_i, sigma)``.

The readout reads position 0 (``first``: ``w_1 = sigma_1``; ``cls``: the CLS symbol) or the
last position (``w_n``). So the output is a function of ``sigma(w)``, plus ``w_n`` for
``last``. Now ``w' = sigma(w)`` (``first``/``cls``) or ``w' = sigma(w) w_n`` (``last``) has
``sigma(w') = sigma(w)``, the same first and last symbol, hence the same output, and
length at most ``|alphabet|`` (``+1`` for ``last``). So if some word of any length makes
the encoder output a label, one of length <= that bound does: checking lengths
``1..bound`` decides trSAT for all lengths. The same holds for a pair of encoders (equiv),
with the larger bound.

Where it fails: average hardmax and table softmax output means weighted by how *often*
each symbol occurs; a causal mask makes position ``i`` see only ``sigma`` of its prefix; a
positional encoding makes ``x^0_i`` depend on ``i``. For those no bound is claimed and
answers say "unknown beyond n".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verify.spec import Attention, EncoderSpec, Mask, PositionalKind, ReadoutPosition


@dataclass(frozen=True, slots=True)
class LengthBound:
    """Whether lengths ``1..bound`` decide a question for all lengths, and why (not)."""

    bound: int | None  # None: no bound is known for this encoder/query
    reason: str  # one sentence: the class membership, or what breaks the argument


def length_bound(spec: EncoderSpec, *, alphabet_size: int, fixes_affixes: bool = False) -> LengthBound:
    """The length bound of :mod:`verify.completeness` for ``spec``, or why there is none."""
    for li, layer in enumerate(spec.layers):
        if layer.attention is not Attention.UNIQUE_HARDMAX:
            return LengthBound(None, f"layer {li} uses {layer.attention.value} attention, whose output depends on how often symbols occur")
        if layer.mask is not Mask.NONE:
            return LengthBound(None, f"layer {li} has a {layer.mask.value} mask, so a position sees only its prefix")
    if spec.positional.kind is not PositionalKind.NONE:
        return LengthBound(None, f"the {spec.positional.kind.value} positional encoding makes vectors depend on positions")
    if fixes_affixes:
        return LengthBound(None, "a fixed prefix or suffix is outside the first-occurrence argument")
    last = spec.readout.position is ReadoutPosition.LAST
    bound = alphabet_size + (1 if last else 0)
    return LengthBound(
        bound,
        "unique-hardmax heads, no positional encoding, no mask: the output depends only on the order of "
        f"first occurrences{' and the last symbol' if last else ''}, so lengths 1..{bound} decide all lengths",
    )


def joint_bound(bounds: Sequence[LengthBound]) -> LengthBound:
    """The bound for a question about several encoders on the same word (e.g. equiv)."""
    for b in bounds:
        if b.bound is None:
            return b
    return LengthBound(max(b.bound for b in bounds if b.bound is not None), bounds[0].reason)


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
    """For the class above: which symbol canonical words repeat (0: the first, -1: the last).

    By the argument above the output depends only on ``sigma(w)`` (and ``w_n`` when the
    readout is ``last``). So every word of length n has a *canonical* partner of the same
    length and output: ``sigma(w)`` padded with copies of ``w_1`` (``first``/``cls``), or
    with copies of ``w_n`` (``last``). Queries of exact lengths use this as a sound
    symmetry-breaking constraint: once a symbol repeats, every later symbol is the padding
    symbol. None outside the class.
    """
    if length_bound(spec, alphabet_size=1).bound is None:
        return None
    return -1 if spec.readout.position is ReadoutPosition.LAST else 0
