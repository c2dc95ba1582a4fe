"""One word per *signature*: an exact reduction of the words of one length, for the class of
:mod:`verify.queries.completeness` (every head unique hardmax, no mask, no or periodic positions).

The completeness bound shortens words; this reduction keeps the length (exact lengths, fixed
prefixes and suffixes, alphabet restrictions) and instead finds, among the words of one
length, few that stand for all the others.

The argument
------------
Write ``c_i = (w_i, i mod p)`` for the class of word position ``i``. By the induction of
:mod:`verify.queries.completeness`, a position's vector after every layer is a function of its class
and of the word's classes in order of first occurrence; the *order* enters only where a
head's maximal score is reached by several classes whose values differ, since the leftmost
maximum (the class that occurs first) then decides. Fix a set ``T`` of classes and call the
*signature* of a word: its set of classes, the order in which the classes of ``T`` first
occur in it, and the symbols its encoders read out (the first symbol for a ``first``
readout, the last for ``last``).

Claim. Let ``r`` be a word such that, in every head of every layer of every encoder of the
question, whenever the maximal scores of a query are reached by positions carrying different
values, the classes of those positions are all in ``T``. Then every word ``w`` with the
signature of ``r`` makes every encoder compute exactly what it computes on ``r``.

Proof, by induction on layers: "the vector at a position is the same function of its class in
``w`` as in ``r``". Layer 0 depends on the class alone. Step: the scores of a query class
against each class of the (common) class set are then the same in both words, so the same
classes ``A`` reach the maximum. If they all carry one value, both heads output it. If not,
this happens in ``r`` too, so ``A`` lies in ``T``; the winner, the class of ``A`` that
occurs first, is the same in both words, whose orders on ``T`` agree. Projections,
residuals, feed-forward layers, rounding and overflow act per position. The readouts read
the same class in both (the same symbol at the same position). A CLS symbol is always
position 0: a class of its own that wins every tie it is part of, whatever the order, so it
needs no place in ``T`` and a tie it wins needs none either. (With a CLS symbol, word
position ``i`` is sequence position ``i + 1``; classes are still numbered by the word
position, ``(w_i, i mod p)``, a relabelling of ``(w_i, (i + 1) mod p)`` that changes nothing.)

The search
----------
A dynamic program over positions keeps one word per signature of the prefix read so far
(class set, order on ``T``, first symbol), so that at the end there is one representative
per signature of the whole length. Starting from ``T = {}``, the representatives are run
through the interpreter; if every tie with different values stays inside ``T``, the claim
holds for each of them and they stand for every word of the length. Otherwise ``T`` grows
by the classes that tied and the program runs again; ``T`` only grows, so this ends. When
the signatures outnumber a limit the reduction gives up and the caller falls back on the
solver.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from verify.model import interpreter as ref
from verify.model.spec import EncoderSpec, ReadoutPosition
from verify.queries.completeness import class_period
from verify.queries.words import WordSpace

# Caps batch * positions^2 * value width in the tie analysis (its (B, n, n, e) comparison).
_MAX_CELLS = 1 << 22
_CLS_CLASS = -1  # the CLS position's class: always first, never in T


def signature_words(
    specs: Sequence[EncoderSpec],
    words: WordSpace,
    domains: Sequence[Sequence[int]],
    *,
    limit: int,
    deadline: float | None = None,
) -> np.ndarray | None:
    """Codes (W, n) of words over ``domains`` (codes per position) such that every word over
    ``domains`` has one among them on which every encoder of ``specs`` computes the same.

    None when an encoder is outside the class, when more than ``limit`` words would be needed,
    or past ``deadline`` (:func:`time.perf_counter`).
    """
    period = class_period(specs)
    # Every symbol of the first position is a class set of its own: more than `limit` of them
    # need more than `limit` words (a vocabulary of 500k symbols would make 500k-bit masks first).
    if period is None or not domains or len(domains[0]) > limit:
        return None
    positions = {spec.readout.position for spec in specs}
    ordered: frozenset[int] = frozenset()
    # A word's tied classes do not depend on T, and a refined search keeps most earlier
    # representatives: analyse each word once.
    known: dict[bytes, set[int]] = {}
    while True:
        representatives = _representatives(
            domains,
            period,
            ordered,
            keep_first=ReadoutPosition.FIRST in positions,
            keep_last=ReadoutPosition.LAST in positions,
            limit=limit,
            deadline=deadline,
        )
        if representatives is None:
            return None
        fresh = np.array([row.tobytes() not in known for row in representatives], dtype=bool)
        if fresh.any():
            new_words = representatives[fresh]
            classes = new_words * period + np.arange(len(domains)) % period  # (W, n)
            per_word: list[set[int]] = [set() for _ in new_words]
            for spec in specs:
                for row, found in zip(per_word, _tied_classes(spec, words.ids(spec, new_words), classes), strict=True):
                    row |= found
            known.update(zip((row.tobytes() for row in new_words), per_word, strict=True))
        tied = set().union(*(known[row.tobytes()] for row in representatives))
        if tied <= ordered:
            return representatives
        ordered = ordered | tied


def _representatives(
    domains: Sequence[Sequence[int]],
    period: int,
    ordered: frozenset[int],
    *,
    keep_first: bool,
    keep_last: bool,
    limit: int,
    deadline: float | None = None,
) -> np.ndarray | None:
    """One word (codes) per signature of the words over ``domains``, or None past ``limit`` or
    ``deadline`` (looked at once per prefix state).

    A signature prefix is (class set as a bit mask, first occurrences of ``ordered`` classes in
    order, first symbol or -1); the last symbol joins the key at the last position.
    """
    n = len(domains)
    states: dict[tuple[int, tuple[int, ...], int, int], tuple[int, ...]] = {(0, (), -1, -1): ()}
    for i, domain in enumerate(domains):
        step: dict[tuple[int, tuple[int, ...], int, int], tuple[int, ...]] = {}
        closing = keep_last and i == n - 1
        for (seen, order, first, _), word in states.items():
            if deadline is not None and time.perf_counter() > deadline:
                return None
            for code in domain:
                cls = code * period + i % period
                bit = 1 << cls
                key = (
                    seen | bit,
                    order + (cls,) if cls in ordered and not seen & bit else order,
                    code if keep_first and i == 0 else first,
                    code if closing else -1,
                )
                if key not in step:
                    step[key] = (*word, code)
                    if len(step) > limit:  # at once: a vocabulary of 200k symbols makes 200k masks
                        return None
        states = step
    return np.array(list(states.values()), dtype=np.int64).reshape(len(states), n)


def _tied_classes(spec: EncoderSpec, word_ids: np.ndarray, classes: np.ndarray) -> list[set[int]]:
    """Per word of ``word_ids`` (W, n): the classes of positions that reach a query's maximal
    score together with a position of a different value, in some head of some layer of ``spec``."""
    ids = ref.sequence_ids(spec, word_ids)
    has_cls = ids.shape[1] > classes.shape[1]
    if has_cls:
        classes = np.concatenate([np.full((len(classes), 1), _CLS_CLASS), classes], axis=1)
    m = ids.shape[1]
    width = max(h.wv.shape[1] for layer in spec.layers for h in layer.heads)
    batch = max(1, _MAX_CELLS // (m * m * width))
    tied: list[set[int]] = [set() for _ in range(len(ids))]
    for start in range(0, len(ids), batch):
        chunk, chunk_classes = ids[start : start + batch], classes[start : start + batch]
        stream = ref.forward(spec, chunk)
        for layer, x in zip(spec.layers, stream, strict=False):  # stream[l] is layer l's input
            for head in layer.heads:
                scores, v = ref.head_scores(head, x, spec)  # (B, m, m), (B, m, e)
                top = scores == scores.max(axis=2, keepdims=True)  # (B, m, m): maximal keys per query
                chosen = np.take_along_axis(v, np.argmax(scores, axis=2)[:, :, None], axis=1)  # (B, m, e)
                differs = (v[:, None, :, :] != chosen[:, :, None, :]).any(axis=3)  # (B, m, m)
                ambiguous = (top & differs).any(axis=2)  # (B, m): queries whose winner depends on the order
                if has_cls:
                    ambiguous &= ~top[:, :, 0]  # the CLS position is leftmost: it wins whatever the order
                involved = top & ambiguous[:, :, None]  # (B, m, m)
                for b, _, j in zip(*np.nonzero(involved), strict=True):
                    tied[start + b].add(int(chunk_classes[b, j]))
    return tied
