"""Proof states as the tactic suggester reads them: the local names (hypotheses and
variables, with their types) and the target, from a traced goal or from a theorem's
statement, and the renaming of a neighbour's tactic to another goal's local names.

Two sources, one shape (:class:`GoalView`):

* a goal as Lean prints it (``n m : Nat\\nh : n ≤ m\\n⊢ m ≤ n + m``): one line per
  hypothesis group, continuation lines indented, the target after ``⊢``; of several goals
  (separated by blank lines) the first, which a tactic works on;
* a statement as source extraction keeps it (``theorem foo (n m : Nat) (h : n ≤ m) : m ≤ n
  + m``): its binders are the locals, the type after them the target. Section
  ``variable``\\ s are not in the statement, so they are not locals there.

Renaming (:func:`rename_tactic`) maps the neighbour's locals to the goal's: first by
aligning the two targets token by token (a local facing a local in equal surroundings is
the same role: ``n + 0 = n`` against ``m + 0 = m`` maps ``n`` to ``m``), then the
hypotheses whose types have the same shape, then a name both have, then the remaining ones
by binder position (a tactic naming a local left without a counterpart is no candidate).
Only whole identifiers are renamed, and a dotted one by its head
(``h.symm``, ``n.succ``); ``Nat.le_refl`` is no local and stays.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from lean_env.interactive.interface import hypotheses_and_target
from lean_env.syntax.lexer import IDENT, IDENT_RE

# Identifiers (dotted, with Lean's characters), numbers, runs of operator symbols, any
# other single character. Whitespace separates and is dropped.
# The type of a local that is a type itself (or a universe of propositions).
UNIVERSE_RE = re.compile(r"^\s*(?:Prop|Type|Sort)\b")
_TOKEN_RE = re.compile(rf"{IDENT}|\d+(?:\.\d+)?|[-+*/<>=!&|^%~:;$@]+|\S")
_IDENT_RE = re.compile(IDENT)
_DECL_HEAD_RE = re.compile(r"^\s*(?:theorem|lemma)\s+(?:«[^»]*»|[^\s({\[⦃:]+)")
_OPEN = {"(": ")", "{": "}", "[": "]", "⦃": "⦄", "⟨": "⟩"}
_CLOSE = set(_OPEN.values())
# What stands for a local in an abstracted token sequence.
LOCAL = "·"


@dataclass(frozen=True, slots=True)
class Local:
    """A hypothesis or variable: its name ("" for an anonymous instance binder) and type
    ("" when not written)."""

    name: str
    type: str


@dataclass(frozen=True, slots=True)
class GoalView:
    """The locals (in binder order) and the target of a proof state."""

    locals: tuple[Local, ...]
    target: str

    @property
    def names(self) -> frozenset[str]:
        return _names(self.locals)


@lru_cache(maxsize=65536)
def _names(locals_: tuple[Local, ...]) -> frozenset[str]:
    return frozenset(local.name for local in locals_ if local.name)


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """Lean-ish tokens of ``text``: identifiers whole (``Nat.add_comm``), symbols grouped."""
    return tuple(_TOKEN_RE.findall(text))


@lru_cache(maxsize=65536)
def goal_view(pp: str) -> GoalView:
    """The first goal of Lean's pretty-printed state ``pp``."""
    first = re.split(r"\n\s*\n", pp.strip(), maxsplit=1)[0]
    hypotheses, target = hypotheses_and_target(first)
    return GoalView(tuple(Local(name, type_) for name, type_ in hypotheses), target)


@lru_cache(maxsize=65536)
def statement_view(statement: str) -> GoalView:
    """The binders and the type of a ``theorem``/``lemma`` statement (without ``:=``)."""
    text = _DECL_HEAD_RE.sub("", statement, count=1)
    locals_: list[Local] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in _OPEN:
            end = _matching(text, i)
            locals_ += _binder_group(text[i + 1 : end].strip("{}⦃⦄ "))
            i = end + 1
        elif char == ":":
            return GoalView(tuple(locals_), " ".join(text[i + 1 :].split()))
        else:  # a bare binder name
            match = _IDENT_RE.match(text, i)
            if not match:
                break
            locals_.append(Local(match.group(), ""))
            i = match.end()
    return GoalView(tuple(locals_), "")


def _matching(text: str, start: int) -> int:
    """The index of the bracket closing the one at ``start`` (the end of text if none)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in _OPEN:
            depth += 1
        elif text[i] in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def _binder_group(inside: str) -> list[Local]:
    """``n m : Nat`` -> two locals; ``DecidableEq α`` (an instance, no name) -> one anonymous."""
    names, colon, type_ = inside.partition(" : ")
    if not colon:
        names, colon, type_ = inside.partition(":")
    type_ = " ".join(type_.split())
    if not colon:
        return [Local("", " ".join(inside.split()))]
    parts = names.split()
    if not all(_IDENT_RE.fullmatch(p) or p == "_" for p in parts):
        return [Local("", " ".join(inside.split()))]
    return [Local(name, type_) for name in parts]


@lru_cache(maxsize=65536)
def abstracted(text: str, names: frozenset[str]) -> tuple[str, ...]:
    """The tokens of ``text`` with every local (a name of ``names``, or a dotted name whose
    head is one) replaced by :data:`LOCAL`: what stays when locals are renamed."""
    return tuple(LOCAL if _local_head(t, names) else t for t in tokens(text))


def _local_head(token: str, names: frozenset[str]) -> str | None:
    if token in names:
        return token
    head = token.split(".", 1)[0]
    return head if head != token and head in names else None


@lru_cache(maxsize=4096)  # the steps of one neighbour theorem share its statement
def _name_map(source: GoalView, target: GoalView) -> dict[str, str]:
    """Which local of ``target`` each local of ``source`` stands for (see the module docstring)."""
    src, tgt = source.names, target.names
    if not src:
        return {}
    votes: defaultdict[tuple[str, str], float] = defaultdict(float)
    _align(source.target, target.target, src, tgt, votes, weight=2.0)
    tgt_shapes = [(t, abstracted(t.type, tgt)) for t in target.locals if t.name]
    for s in source.locals:
        if not s.name:
            continue
        shape = abstracted(s.type, src)
        for t, other in tgt_shapes:
            if shape == other:
                votes[(s.name, t.name)] += 1.0
                _align(s.type, t.type, src, tgt, votes, weight=0.5)
            if s.name == t.name:
                votes[(s.name, t.name)] += 0.1
    mapping: dict[str, str] = {}
    taken: set[str] = set()
    for (a, b), _ in sorted(votes.items(), key=lambda item: -item[1]):  # stable: ties keep first-seen order
        if a not in mapping and b not in taken:
            mapping[a] = b
            taken.add(b)
    # The rest by binder position, among the locals neither side has placed yet.
    rest = [t.name for t in target.locals if t.name and t.name not in taken]
    for s in source.locals:
        if s.name and s.name not in mapping and rest:
            mapping[s.name] = rest.pop(0)
    return mapping


def _align(
    a: str,
    b: str,
    src: frozenset[str],
    tgt: frozenset[str],
    votes: defaultdict[tuple[str, str], float],
    *,
    weight: float,
) -> None:
    """Vote for the local pairs that face each other where ``a`` and ``b`` agree."""
    a_tokens, b_tokens = tokens(a), tokens(b)
    a_abs, b_abs = abstracted(a, src), abstracted(b, tgt)
    if a_abs == b_abs:  # the common case of a close neighbour: no need to search for blocks
        pairs: Sequence[tuple[int, int, int]] = [(0, 0, len(a_abs))]
    else:
        pairs = SequenceMatcher(None, a_abs, b_abs, autojunk=False).get_matching_blocks()
    for i, j, size in pairs:
        for k in range(size):
            if a_abs[i + k] == LOCAL:
                x, y = _local_head(a_tokens[i + k], src), _local_head(b_tokens[j + k], tgt)
                if x and y:
                    votes[(x, y)] += weight


def rename_tactic(tactic: str, source: GoalView, target: GoalView) -> str | None:
    """``tactic``, written for the state ``source``, with its locals renamed to
    ``target``'s; None when it names a local that ``target`` has no counterpart for (Lean
    would only say the name is unknown). A field of a local (``G.mul_assoc``) whose
    counterpart is a type (``α : Type``, the carrier of an instance argument: the
    structure-style and class-style ways of stating algebra) becomes the field's own name,
    which the class exports (``mul_assoc``)."""
    used = {head for t in tokens(tactic) if (head := _local_head(t, source.names))}
    if not used:
        return tactic  # it names no local (`omega`, `simp [foo]`): nothing to rename
    full = _name_map(source, target)
    if any(name not in full and name not in target.names for name in used):
        return None
    mapping = {a: b for a, b in full.items() if a != b}
    types = {local.name for local in target.locals if local.name and UNIVERSE_RE.match(local.type)}
    if not mapping and not types.intersection(used):
        return tactic

    def rename(match: re.Match[str]) -> str:
        token = match.group()
        head, dot, rest = token.partition(".")
        if token in mapping:
            return mapping[token]
        if dot and mapping.get(head, head) in types and head in used:
            return rest
        return f"{mapping[head]}{dot}{rest}" if dot and head in mapping else token

    # Not after a dot or inside a longer name: `(f x).n` is a field, not the local `n`.
    return IDENT_RE.sub(rename, tactic)
