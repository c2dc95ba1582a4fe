"""Top-level tactic steps of a ``by`` block, read from layout alone.

The rules (what LeanDojo would trace as the top-level tactics of the block's sequence):

* The first tactic after ``by`` fixes the block's column. Every later line whose first
  character sits at that column (or left of it) starts a new step; deeper-indented lines
  continue the step above them, so nested ``·`` bullets, ``have ... := by`` sub-proofs and
  ``calc`` chains belong to their parent step. A top-level ``·`` bullet is one step.
* Lines starting with ``|`` (``induction ... with`` alternatives, ``match`` arms), ``<;>``
  or a closing bracket continue the step above, wherever they sit.
* A block that is one bracketed sequence, ``by { t1; t2 }`` (the 2021 Lean's style), is
  the steps of the sequence: a step ``{`` and a step ``t2 }`` would be no tactics.
* ``t1; t2`` is two steps, ``t1 <;> t2`` is one. A ``;`` splits only at bracket depth 0 and
  only before anything that opens a nested tactic sequence: after ``by``, ``=>``, a bullet,
  ``try``, ``repeat``, ``all_goals``, ``any_goals``, ``focus``, ``first``, ``iterate``,
  ``on_goal``, ``case``, ``next`` the rest of the line belongs to that nested sequence,
  as Lean parses it.
"""

from __future__ import annotations

import functools
import re

from lean_env.syntax.lexer import rstrip_end, skip_space

# Words after which the rest of the step is a nested tactic sequence.
_NESTING_WORDS = "by try repeat all_goals any_goals focus first iterate on_goal case next".split()
# What the `;` splitter looks at: brackets, `<;>`, `;`, `=>` and the nesting words. Every
# alternative starts with a literal character (a word's "not inside a name" lookbehind
# comes after its first letter), so that `re` skips to candidates in C instead of trying
# the pattern at every offset.
_SPLIT_TOKENS = re.compile(
    "|".join(map(re.escape, [*"([{⟨⦃)]}⟩⦄", "<;>", ";", "=>"]))
    + "|"
    + "|".join(rf"{w[0]}(?<![\w'!?.]{w[0]}){w[1:]}(?![\w'!?])" for w in _NESTING_WORDS)
)
_OPEN = frozenset("([{⟨⦃")
_CLOSE = frozenset(")]}⟩⦄")
_BULLETS = ("·", ". ", ".\n")
_BRACKETS = re.compile("[([{⟨⦃)\\]}⟩⦄]")


def tactic_steps(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets of the top-level steps of the tactic block in
    ``masked[start:end]`` (the masked text right after ``by``), in order."""
    first = skip_space(masked, start, end)
    if first >= end:
        return []
    if masked[first] == "{" and (close := _closing(masked, first, end)) is not None:
        if skip_space(masked, close + 1, end) >= end:  # the block is `{ ... }`
            return tactic_steps(masked, first + 1, close)
    column = first - masked.rfind("\n", 0, first)  # 1-based: rfind gives the char before
    starts = [first]
    newline = masked.find("\n", first, end)
    if newline >= 0:
        starts += [m.end() for m in _step_start(column).finditer(masked, newline, end)]
    ends = starts[1:]
    ends.append(end)
    # `rstrip_end` spelled out: this runs once per step, and the call would cost as much.
    steps = [(s, s + len(masked[s:e].rstrip())) for s, e in zip(starts, ends, strict=True)]
    steps = [(s, e) for s, e in steps if e > s]  # a line break before a closing `}` starts none
    if masked.count(";", first, end) == masked.count("<;>", first, end):
        return steps  # no `;` but those of `<;>` (the common case): layout alone decides
    pieces: list[tuple[int, int]] = []
    for s, e in steps:
        if masked.find(";", s, e) < 0:  # most steps of such a block have none: no call
            pieces.append((s, e))
        else:
            pieces += _split_semicolons(masked, s, e)
    return pieces


def _closing(masked: str, opening: int, end: int) -> int | None:
    """Where the bracket at ``opening`` closes, before ``end`` (None: it does not)."""
    depth = 0
    for m in _BRACKETS.finditer(masked, opening, end):
        depth += 1 if m.group() in _OPEN else -1
        if depth == 0:
            return m.start()
    return None


@functools.lru_cache(maxsize=256)
def _step_start(column: int) -> re.Pattern[str]:
    """Lines whose first character sits at ``column`` or left of it and does not continue
    the step above (``|``, ``<;>``, a closing bracket); a match ends at that character.
    The literal newline lets `re` jump from line to line; the possessive indentation fails
    a deeper line once instead of once per shorter indentation."""
    return re.compile(rf"\n[ \t]{{0,{column - 1}}}+(?![\s|)\]}}⟩⦄]|<;>)")


def _split_semicolons(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split one layout step at its top-level ``;`` (see the module rules)."""
    if masked.startswith(_BULLETS, start):
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    depth = 0
    piece_start = start
    for m in _SPLIT_TOKENS.finditer(masked, start, end):
        token = m.group()
        if token in _OPEN:
            depth += 1
        elif token in _CLOSE:
            depth = max(0, depth - 1)
        elif depth:
            continue
        elif token == ";":
            piece_end = rstrip_end(masked, piece_start, m.start())
            if piece_end > piece_start:
                pieces.append((piece_start, piece_end))
            piece_start = skip_space(masked, m.end(), end)
        elif token != "<;>":  # a nested sequence takes the rest of the step
            break
    if piece_start < end:
        pieces.append((piece_start, end))
    return pieces
