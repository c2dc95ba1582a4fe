"""The words a query ranges over: constraints, per-position solver variables, symmetry breaking.

A word of length n is n bit-vector variables ``w_i`` holding *codes* (indices into the
model's word alphabet), each constrained to the symbols its position allows. The
symmetry-breaking constraints keep, of every class of words with provably the same
output(s), at least one word (:mod:`verify.queries.completeness` gives the arguments).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from pysmt.environment import Environment
from pysmt.fnode import FNode
from pysmt.typing import BVType

from verify.errors import VerifyInputError, WitnessMismatchError
from verify.model.spec import EncoderSpec, ReadoutPosition
from verify.queries.completeness import class_period, padding_position, permutable_positions
from verify.smt.bitvec import Builder
from verify.smt.encoding import PositionInput


@dataclass(frozen=True, slots=True)
class WordConstraints:
    """Which words a query ranges over."""

    alphabet: tuple[str, ...] | None = None  # allowed symbols (None: the whole word alphabet)
    prefix: tuple[str, ...] = ()  # fixed first symbols
    suffix: tuple[str, ...] = ()  # fixed last symbols


class WordSpace:
    """Symbols, their codes (index into ``alphabet``) and the per-position variables."""

    def __init__(self, spec: EncoderSpec, constraints: WordConstraints) -> None:
        word_alphabet = spec.word_alphabet
        allowed = constraints.alphabet if constraints.alphabet is not None else word_alphabet
        # Symbol -> code, made once (a vocabulary may hold hundreds of thousands).
        self._codes = {symbol: code for code, symbol in enumerate(word_alphabet)}
        for s in (*allowed, *constraints.prefix, *constraints.suffix):
            if s not in self._codes:
                shown = list(word_alphabet) if len(word_alphabet) <= 50 else f"of {len(word_alphabet)} symbols"
                raise VerifyInputError(f"symbol {s!r} is not in the model's word alphabet {shown}")
        if not allowed:
            raise VerifyInputError("the alphabet restriction leaves no symbol")
        self.alphabet = word_alphabet  # codes index this tuple
        self._token_ids: dict[EncoderSpec, np.ndarray] = {}  # spec (hashed by identity) -> token id of each code
        # id(domain tuple) -> (the tuple, its codes): lengths and positions share domain tuples
        self._domain_cache: dict[int, tuple[tuple[str, ...], list[int]]] = {}
        self.allowed = tuple(dict.fromkeys(allowed))
        self._allowed_set = frozenset(self.allowed)
        self.constraints = constraints
        self.code_width = max(1, (len(word_alphabet) - 1).bit_length())

    def domains(self, n: int) -> list[tuple[str, ...]] | None:
        """Allowed symbols per position for length ``n``; None if no word of length n qualifies.

        Positions that no prefix or suffix fixes share one tuple (``allowed``): a vocabulary may
        hold hundreds of thousands of symbols, and what is made per domain is made once."""
        c = self.constraints
        if len(c.prefix) > n or len(c.suffix) > n:
            return None
        doms = []
        for i in range(n):
            fixed = set()
            if i < len(c.prefix):
                fixed.add(c.prefix[i])
            if i >= n - len(c.suffix):
                fixed.add(c.suffix[i - (n - len(c.suffix))])
            if len(fixed) > 1 or (fixed and not fixed <= self._allowed_set):
                return None
            doms.append((fixed.pop(),) if fixed else self.allowed)
        return doms

    def code(self, symbol: str) -> int:
        return self._codes[symbol]

    def code_domains(self, domains: Sequence[tuple[str, ...]]) -> list[list[int]]:
        return [self._domain_codes(dom) for dom in domains]

    def token_ids(self, spec: EncoderSpec) -> np.ndarray:
        """The token id in ``spec`` of every code (V,)."""
        table = self._token_ids.get(spec)
        if table is None:  # once per spec: the pre-pass asks for every batch of words
            table = self._token_ids[spec] = np.asarray([spec.token_id(s) for s in self.alphabet], dtype=np.int64)
        return table

    def ids(self, spec: EncoderSpec, codes: np.ndarray) -> np.ndarray:
        """Token ids of ``spec`` for words given as codes (B, n)."""
        return self.token_ids(spec)[codes]

    def symbols(self, codes: Sequence[int]) -> tuple[str, ...]:
        return tuple(self.alphabet[c] for c in codes)

    def variables(self, env: Environment, n: int) -> list[FNode]:
        return [env.formula_manager.Symbol(f"w_{i}", BVType(self.code_width)) for i in range(n)]

    def domain_assertions(
        self, builder: Builder, variables: Sequence[FNode], domains: Sequence[tuple[str, ...]]
    ) -> list[FNode]:
        """Each variable holds a code of its position's domain (one comparison per run of codes,
        made under ``builder``'s deadline)."""
        return [builder.is_one_of(v, self._domain_codes(dom)) for v, dom in zip(variables, domains, strict=True)]

    def _domain_codes(self, domain: tuple[str, ...]) -> list[int]:
        """The codes of ``domain``; positions share their domain tuples, so each is made once."""
        codes = self._domain_cache.get(id(domain))
        if codes is None or codes[0] is not domain:
            codes = self._domain_cache[id(domain)] = (domain, [self._codes[s] for s in domain])
        return codes[1]

    def inputs(
        self, spec: EncoderSpec, variables: Sequence[FNode], domains: Sequence[tuple[str, ...]]
    ) -> list[PositionInput]:
        """The encoder's input positions (the CLS symbol first when the readout uses one)."""
        token_ids = self.token_ids(spec)
        choices: dict[int, tuple[tuple[int, int], ...]] = {}  # id(domain) -> (code, token id) pairs
        inputs = []
        for v, dom in zip(variables, domains, strict=True):
            if id(dom) not in choices:
                codes = self._domain_codes(dom)
                choices[id(dom)] = tuple(zip(codes, token_ids[codes].tolist(), strict=True))
            inputs.append(PositionInput(v, choices[id(dom)]))
        if spec.readout.position is ReadoutPosition.CLS:
            inputs.insert(0, PositionInput(None, ((0, spec.token_id(spec.readout.cls_token or "")),)))
        return inputs

    def decode(self, model: dict[str, int], variables: Sequence[FNode]) -> tuple[str, ...]:
        word = []
        for v in variables:
            code = model[v.symbol_name()]
            if not 0 <= code < len(self.alphabet):
                raise WitnessMismatchError(f"the solver chose code {code} for {v.symbol_name()}, outside the alphabet")
            word.append(self.alphabet[code])
        return tuple(word)


def cubes(domains: Sequence[tuple[str, ...]], count: int) -> list[list[tuple[str, ...]]]:
    """At least ``count`` (where the words allow) sets of per-position domains that split the
    words over ``domains`` between them: the first positions' domains cut into parts, every
    later position left whole (cube and conquer: each cube is a smaller question of its own)."""
    split = [list(domains)]
    for i, domain in enumerate(domains):
        if len(split) >= count:
            break
        parts = min(len(domain), -(-count // len(split)))
        size = -(-len(domain) // parts)
        pieces = [domain[k : k + size] for k in range(0, len(domain), size)]
        split = [[*cube[:i], piece, *cube[i + 1 :]] for cube in split for piece in pieces]
    return split


@dataclass(frozen=True, slots=True)
class Reduction:
    """A sound restriction of a query to canonical words: every word has a canonical one with
    the same output(s) under every encoder of the query.

    * ``sorted``: the symbols at ``positions`` (:func:`~verify.queries.completeness.permutable_positions`)
      are in code order.
    * ``first_occurrence``: after the first repeated symbol, every symbol is the one at
      ``pad`` (:func:`~verify.queries.completeness.padding_position`).
    * ``least_repeat`` (unique hardmax, no mask, periodic positions of period ``period``):
      a position whose class ``(symbol, i mod period)`` occurred before holds the least
      symbol of the classes of its residue seen before it (except the last position when
      ``keep_last``). Sound: by :mod:`verify.queries.completeness` every output is a function of
      the classes in first-occurrence order (and the last position's class for a ``last``
      readout); replacing a repeated class by another one already seen at the same
      residue changes neither that order nor, for any later position, the set of classes
      seen before it (so the least symbol stays the same and the rewriting, left to right,
      is well defined). Unlike ``first_occurrence`` it keeps every first occurrence in
      place, because with ``period > 1`` a word need not pad to its own length.
    """

    kind: str  # "sorted" | "first_occurrence" | "least_repeat"
    positions: tuple[int, ...] = ()  # sorted: the permutable positions
    pad: int = 0  # first_occurrence: the position whose symbol pads (0 or -1)
    period: int = 1  # least_repeat: the classes' period
    keep_last: bool = False  # least_repeat: the last position is read out, so it stays as it is


def reduction(specs: Sequence[EncoderSpec], domains: Sequence[tuple[str, ...]]) -> Reduction | None:
    """The reduction that applies to a query over words with these per-position ``domains``, if any.

    Both kinds need every affected position to allow the same symbols (no prefix or suffix
    that fixes one of them), and all encoders of the query to agree on the reduction.
    """
    n = len(domains)
    ranges = [permutable_positions(s, n) for s in specs]
    if all(r is not None for r in ranges) and len(set(ranges)) == 1:
        positions = tuple(ranges[0])  # type: ignore[arg-type]
        if len({domains[i] for i in positions}) <= 1:
            return Reduction("sorted", positions=positions)
    if len(set(domains)) != 1:
        return None
    pads = {padding_position(s) for s in specs}
    if len(pads) == 1 and None not in pads:
        return Reduction("first_occurrence", pad=pads.pop())  # type: ignore[arg-type]
    period = class_period(specs)
    if period is None:
        return None
    keep_last = any(s.readout.position is ReadoutPosition.LAST for s in specs)
    return Reduction("least_repeat", period=period, keep_last=keep_last)


def symmetry_breaking(env: Environment, found: Reduction | None, variables: Sequence[FNode]) -> list[FNode]:
    """The reduction as constraints on the word variables (none without one)."""
    if found is None:
        return []
    m = env.formula_manager
    if found.kind == "sorted":
        positions = found.positions
        return [m.BVULE(variables[i], variables[j]) for i, j in zip(positions, positions[1:], strict=False)]
    if found.kind == "least_repeat":
        return _least_repeat(env, found, variables)
    pad = variables[found.pad]
    constraints = []
    for i in range(1, len(variables)):
        repeated = m.Or([m.Equals(variables[i], variables[j]) for j in range(i)])
        constraints.append(m.Implies(repeated, m.And([m.Equals(v, pad) for v in variables[i:]])))
    return constraints


def _least_repeat(env: Environment, found: Reduction, variables: Sequence[FNode]) -> list[FNode]:
    """``w_i`` equal to an earlier ``w_j`` of its residue implies ``w_i`` = the least of them."""
    m = env.formula_manager
    n = len(variables)
    constraints = []
    least: dict[int, FNode] = {}  # residue -> the least symbol at that residue so far
    for i, v in enumerate(variables):
        r = i % found.period
        if r in least and not (found.keep_last and i == n - 1):
            earlier = variables[r : i : found.period]
            repeated = m.Or([m.Equals(v, u) for u in earlier])
            constraints.append(m.Implies(repeated, m.Equals(v, least[r])))
        least[r] = v if r not in least else m.Ite(m.BVULT(v, least[r]), v, least[r])
    return constraints


def canonical_words(found: Reduction, domains: Sequence[Sequence[int]]) -> Iterator[tuple[int, ...]]:
    """Every word (as codes; position ``i`` from ``domains[i]``) that satisfies a ``sorted``
    reduction: the words the solver keeps under :func:`symmetry_breaking`, which the pre-pass
    runs all of when there are few. (The class of ``first_occurrence`` is reduced further, by
    :func:`verify.queries.signatures.signature_words`.)"""
    if found.kind != "sorted":
        raise ValueError(f"canonical words are listed for sorted reductions only, not {found.kind!r}")
    n = len(domains)
    positions = set(found.positions)
    shared = sorted(domains[found.positions[0]]) if found.positions else []
    others = [i for i in range(n) if i not in positions]
    for multiset in itertools.combinations_with_replacement(shared, len(found.positions)):
        for rest in itertools.product(*(domains[i] for i in others)):
            word = [0] * n
            for i, c in zip(found.positions, multiset, strict=True):
                word[i] = c
            for i, c in zip(others, rest, strict=True):
                word[i] = c
            yield tuple(word)
