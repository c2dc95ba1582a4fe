"""The lexical layer of Lean syntax read as text: comments, strings, identifiers and positions.

Instead of a token stream, the lexer produces a *masked* copy of the file: every comment,
string literal and character literal is overwritten with spaces (newlines kept), so the copy
has the same length and the same line/column grid as the original. Everything downstream
(declaration headers, ``:=``, ``sorry``, identifiers) is then found by ``re`` over the masked
text, which keeps the Python-level work proportional to the number of comments and literals
rather than to the number of characters.

Lean's lexical rules followed here:

* ``--`` starts a line comment; ``/-`` starts a block comment that nests (``/- /- -/ -/``);
  ``/--`` (doc comment) and ``/-!`` (module doc) are block comments whose spans are kept,
  so that a declaration's span can start at its doc comment, as Lean's syntax range does.
* ``"..."`` strings with backslash escapes (they may span lines); ``r"..."``/``r#"..."#``
  raw strings; ``'c'`` character literals. A ``'`` right after an identifier character is a
  prime of that identifier (``h'``), never a character literal.
* Columns count codepoints, as Lean's ``Position.column`` does: a Python ``str`` index is a
  codepoint index, so ``column = offset - line_start + 1``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from lean_env.records import Position

# What starts a literal or a comment; everything else is left as it is. Two kinds are
# matched whole, in one step: a line comment (group `line`) and a block comment with no
# `/-` inside (group `block`; its body runs over anything but the start of `/-` or `-/`),
# which most comments are. A nested block comment matches only its `/-`, and the loop
# counts the nesting. (The groups come after a literal first character, which keeps the
# fast scan for candidate characters that a leading group would turn off.) A raw string
# (`r"..."`, `r#"..."#`) is recognised at its quote by looking back for the `r`: an `r`
# trigger would stop the scan at every letter r of the file.
_TRIGGER = re.compile(
    r"-(?P<line>-[^\n]*)"
    r"|/(?P<block>-[^/-]*+(?:(?:/(?!-)|-(?!/))[^/-]*+)*+-/)"
    r"""|/-|"|'"""
)
# Inside a block comment only the nesting delimiters matter.
_BLOCK_DELIM = re.compile(r"/-|-/")
_NEWLINE = re.compile("\n")
# A string body: anything but an unescaped quote; escapes may swallow a newline.
_STRING_END = re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL)
_CHAR_LITERAL = re.compile(r"'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|u\{[0-9a-fA-F]+\}|.))'")
# A `'` after one of these continues an identifier (`h'`, `x₁'`, `«a b»'`) rather than
# opening a character literal.
_PRIME_AFTER = re.compile(r"[\w'!?\u2080-\u209c\u1d62-\u1d6a\u2c7c\u2100-\u214f»]")
# A string that runs over a line starting with a declaration keyword was almost surely
# left unterminated: recovery ends it at its own line instead of swallowing the file.
_RUNAWAY_STRING = re.compile(r"\n(?:@\[|private |protected |theorem |lemma |def |namespace |end\b|section\b)")

# Identifier characters, after Lean's `isLetterLike` and `isSubScriptAlnum`: Python's `\w`
# covers letters, digits and `_` in every script; add the letter-like symbols block
# (ℕ, ℝ, ...) and the subscripts. `λ`, `Π` and `Σ` are tokens, never identifier starts.
# The ASCII letters and digits are listed too, though `\w` has them: `re` tests the
# characters below 256 of a set in one bitmap lookup before calling Unicode's `\w`, so
# the identifier scans go ~15% faster on the mostly ASCII text of proofs.
_ASCII_WORD = "A-Za-z0-9_"
_ID_START = r"(?:[A-Za-z_]|[^\W\dλΠΣ]|[\u2100-\u214f])"
_ID_REST = rf"[{_ASCII_WORD}\w'!?\u2080-\u209c\u1d62-\u1d6a\u2c7c\u2100-\u214f]*"
_ID_PART = rf"(?:«[^»\n]*»|{_ID_START}{_ID_REST})"
IDENT = rf"{_ID_PART}(?:\.{_ID_PART})*"
# An identifier occurrence in masked text: not the tail of a longer name or a field access
# (`.foo` is dot notation resolved by the expected type, which source reading cannot see).
# The pattern opens with one character set, the union of the three possible first
# characters (`«`, a letter or `_`, a letter-like symbol): `re` then skips to candidates in
# C; lookbehinds on that character then exclude digits and `λ`/`Π`/`Σ`, check that no
# identifier character precedes it, and pick the guillemet or the plain branch. Same
# matches as `(?:«...»|{_ID_START}{_ID_REST})` behind a "not after a name" check, and
# ~10% faster than that alternation (this scan is a tenth of extraction's time).
_NOT_AFTER_NAME = rf"(?<![{_ASCII_WORD}\w'!?.»\u2080-\u209c].)"
IDENT_RE = re.compile(
    rf"[{_ASCII_WORD}«\w\u2100-\u214f](?<![\dλΠΣ]){_NOT_AFTER_NAME}"
    rf"(?:(?<=«)[^»\n]*+»|(?<!«){_ID_REST}+)(?:\.{_ID_PART})*"
)
_PLAIN_PART = re.compile(rf"{_ID_START}{_ID_REST}")
# Keywords cannot be names, so a part spelled like one keeps its guillemets.
_KEYWORDS = frozenset(
    "at by do else end fun have if in let match show then theorem def where with from "
    "import open namespace section variable universe structure class inductive instance "
    "example abbrev axiom opaque mutual deriving calc suffices return for unless".split()
)


@dataclass(frozen=True, slots=True)
class LexProblem:
    """A literal or comment the lexer could not close; ``offset`` is where it opened."""

    offset: int
    reason: str


@dataclass(frozen=True, slots=True)
class MaskedText:
    """A file with comments and literals blanked out, and the facts needed to map back.

    ``doc_spans`` are the ``(start, end)`` offsets of ``/--``/``/-!`` comments, in order;
    ``comments`` those of every comment (a line comment's ends before its newline), in order.
    """

    text: str
    masked: str
    doc_spans: tuple[tuple[int, int], ...]
    comments: tuple[tuple[int, int], ...]
    problems: tuple[LexProblem, ...]
    line_starts: tuple[int, ...]

    def position(self, offset: int) -> Position:
        """The 1-based line and codepoint column of ``offset``."""
        # Called ~10,000 times per MB: one attribute lookup, and the line number straight
        # from `bisect_right` (the count of line starts at or before `offset`).
        starts = self.line_starts
        line = bisect_right(starts, offset)
        return Position(line, offset - starts[line - 1] + 1)

    def line_of(self, offset: int) -> int:
        return bisect_right(self.line_starts, offset)


# The byte-order mark some editors put first in a UTF-8 file.
BOM = "\ufeff"


def mask(text: str) -> MaskedText:
    """Blank out the comments and literals of ``text``; record those that never close."""
    pieces: list[str] = []
    docs: list[tuple[int, int]] = []
    comments: list[tuple[int, int]] = []
    problems: list[LexProblem] = []
    done = 0  # everything before `done` is already in `pieces`
    pos = 0
    size = len(text)
    while True:
        m = _TRIGGER.search(text, pos)
        if m is None:
            break
        start, end = m.span()
        token = m.lastgroup or m.group()
        if token == "line":
            comments.append((start, end))  # the match is the whole comment
        elif token in ("block", "/-"):
            if token == "/-":  # nested, or never closed
                end = _block_comment_end(text, start)
            if end < 0:
                problems.append(LexProblem(start, "unterminated block comment"))
                newline = text.find("\n", start)
                end = size if newline < 0 else newline
            elif text.startswith(("/--", "/-!"), start) and end - start > 4:
                docs.append((start, end))
            comments.append((start, end))
        elif token == "'":
            if start > 0 and _PRIME_AFTER.match(text, start - 1):
                pos = start + 1
                continue
            lit = _CHAR_LITERAL.match(text, start)
            if lit is None:  # a lone quote: a Lean token of its own (e.g. `f '`), not a literal
                pos = start + 1
                continue
            end = lit.end()
        else:  # a quote: it opens a raw string if an `r` (and `#`s) come right before it
            r = start - 1
            if r >= pos and text[r] == "#":  # step back over the hashes in C
                r = pos + len(text[pos:start].rstrip("#")) - 1
            # Not after an identifier character: in `for"` the r ends a name.
            if r >= pos and text[r] == "r" and not (r > 0 and _PRIME_AFTER.match(text, r - 1)):
                start, end = r, _raw_string_end(text, r, start, problems)
            else:
                end = _string_end(text, start, problems)
        pieces.append(text[done:start])
        if text.find("\n", start, end) < 0:
            pieces.append(" " * (end - start))
        else:
            # Blank line by line: `re.sub` of every non-newline character costs ~0.1 µs a
            # character, ten times this, and Mathlib's module docs run to kilobytes.
            pieces.append("\n".join([" " * len(line) for line in text[start:end].split("\n")]))
        done = pos = end
    pieces.append(text[done:])
    masked = "".join(pieces)
    if masked.startswith(BOM):  # an editor's byte-order mark: blank, as Lean skips it
        masked = " " + masked[1:]
    # Each line but the first starts just after a newline (`map` keeps the loop in C).
    starts = (0, *map(re.Match.end, _NEWLINE.finditer(text)))
    return MaskedText(
        text=text,
        masked=masked,
        doc_spans=tuple(docs),
        comments=tuple(comments),
        problems=tuple(problems),
        line_starts=starts,
    )


def _block_comment_end(text: str, start: int) -> int:
    """The offset just after the ``-/`` closing the comment opened at ``start``, or -1."""
    depth = 0
    pos = start
    while True:
        m = _BLOCK_DELIM.search(text, pos)
        if m is None:
            return -1
        if m.group() == "/-":
            depth += 1
            pos = m.end()
        else:
            depth -= 1
            pos = m.end()
            if depth == 0:
                return pos


def _raw_string_end(text: str, start: int, quote: int, problems: list[LexProblem]) -> int:
    """The offset just after the raw string opened at ``start`` (its quote at ``quote``);
    recovers at its line end."""
    closing = '"' + "#" * (quote - start - 1)
    close = text.find(closing, quote + 1)
    if close >= 0:
        return close + len(closing)
    problems.append(LexProblem(start, "unterminated raw string literal"))
    newline = text.find("\n", start)
    return len(text) if newline < 0 else newline


def _string_end(text: str, start: int, problems: list[LexProblem]) -> int:
    """The offset just after the string opened at ``start``; recovers at its line end."""
    m = _STRING_END.match(text, start + 1)
    if m is not None and not _RUNAWAY_STRING.search(text, start, m.end()):
        return m.end()
    problems.append(LexProblem(start, "unterminated string literal"))
    newline = text.find("\n", start)
    return len(text) if newline < 0 else newline


def normalize_name(name: str) -> str:
    """The canonical spelling of a Lean name: guillemets only where a part needs them.

    ``«Foo».bar`` and ``Foo.bar`` are the same name; ``«my thm»`` keeps its guillemets,
    as Lean prints it.
    """
    if "«" not in name:
        return name
    parts = []
    for part in split_name(name):
        inner = part[1:-1] if part.startswith("«") and part.endswith("»") else part
        plain = _PLAIN_PART.fullmatch(inner) is not None and inner not in _KEYWORDS
        parts.append(inner if plain else f"«{inner}»")
    return ".".join(parts)


def split_name(name: str) -> list[str]:
    """The parts of a dotted name, keeping dots inside ``«...»`` intact."""
    if "«" not in name:
        return name.split(".")
    parts: list[str] = []
    current: list[str] = []
    inside = False
    for char in name:
        if char == "«":
            inside = True
        elif char == "»":
            inside = False
        if char == "." and not inside:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def rstrip_end(text: str, start: int, end: int) -> int:
    """``end`` moved left past trailing whitespace (blanked comments count as whitespace)."""
    return start + len(text[start:end].rstrip())


_SPACE = re.compile(r"\s*")


def skip_space(text: str, pos: int, end: int) -> int:
    """``pos`` moved right past whitespace (blanked comments count as whitespace), at most to ``end``."""
    # `\s*` matches the empty string, so there is always a match; the cast says so to mypy.
    return cast("re.Match[str]", _SPACE.match(text, pos, end)).end()


# Lean's brackets, which the text-level readers (statements, batches) keep apart.
OPENING_BRACKETS, CLOSING_BRACKETS = "([{⟨⦃", ")]}⟩⦄"


def top_level_at(text: str, symbols: Sequence[str]) -> list[int]:
    """Where the characters ``symbols`` occur in ``text`` outside every bracket."""
    depth, found = 0, []
    for at, char in enumerate(text):
        if char in OPENING_BRACKETS:
            depth += 1
        elif char in CLOSING_BRACKETS:
            depth -= 1
        elif depth == 0 and char in symbols:
            found.append(at)
    return found
