"""Proof text surgery shared by the file check, the final check and write-back.

Positions are :class:`~lean_env.records.Position` values (1-based line and column, columns
counted in characters, as Lean counts codepoints). A theorem's proof spans
``Theorem.proof_start``..``Theorem.end`` (half-open); replacing that span with another proof
is the one edit every caller makes, so it lives here once.

A proof text is what follows ``:=``: a term (``rfl``) or a tactic block (``by`` followed by
tactics). Multi-line proofs are written with indentation relative to their first line
(``"by\\n  intro h\\n  exact h"``); :func:`splice_proof` re-indents them to the block around
the declaration.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lean_env.errors import LeanAgentError
from lean_env.records import Position, Theorem
from lean_env.syntax.lexer import mask

# `sorry` and `admit` close any goal without proof; a proof that uses them proves nothing.
_GIVE_UP_RE = re.compile(r"(?<![\w.'])(sorry|admit)(?![\w'!?])")
# Commands have no place in a proof: spliced into a file, Lean ends the proof at the first
# one and runs it as a command. `#exit` would hide the rest of the file, `axiom`/`theorem`
# would add or redefine declarations, `end`/`namespace` would change the scopes the rest of
# the file is read in. All of these are keyword tokens, so no identifier is spelled like them;
# `#`-words other than these command tokens are left alone (Mathlib writes `#s` for a card).
# (`open ... in` and `set_option ... in` are proof syntax too: allowed.)
_COMMAND_RE = re.compile(
    r"(?<![\w.'#])(#(?:exit|eval|exec|print|check|reduce|synth|guard_msgs|guard|where|lint)"
    r"(?![\w'!?])|(?:theorem|lemma|def|axiom|abbrev|instance|example|opaque|"
    r"structure|inductive|class|namespace|section|end|variable|universe|import|mutual|"
    r"attribute|macro|macro_rules|syntax|elab|elab_rules|notation|infix|infixl|infixr|"
    r"prefix|postfix|initialize|noncomputable|private|protected|deriving)(?![\w'!?]))"
)
# Lines that continue the tactic above even at its indentation: match alternatives, `<;>`.
_CONTINUATIONS = ("|", "<;>")
# Indentation of tactic blocks we write: two spaces per level, as Mathlib style.
INDENT = "  "


class ProofTextError(LeanAgentError):
    """A position or proof text that does not fit the file it is meant for. Positions come
    from our own reading of the file, so this is our failure (exit 1), not the user's input."""


def offset_of(text: str, position: Position) -> int:
    """The string index of ``position`` in ``text`` (a position just past the end is allowed)."""
    line_start = 0
    for _ in range(position.line - 1):
        newline = text.find("\n", line_start)
        if newline < 0:
            raise ProofTextError(f"line {position.line} is past the end of the file")
        line_start = newline + 1
    line_end = text.find("\n", line_start)
    line_len = (len(text) if line_end < 0 else line_end) - line_start
    if position.column - 1 > line_len:
        raise ProofTextError(
            f"column {position.column} is past the end of line {position.line} ({line_len} characters)"
        )
    return line_start + position.column - 1


def position_of(text: str, offset: int) -> Position:
    """The 1-based position of string index ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Position(line, column)


def _code(proof: str) -> str:
    """``proof`` with comments (nested ones too), strings and character literals blanked.

    When a comment or literal never closes, Lean rejects the text anyway; the raw text is
    returned then, so that nothing hides behind the unclosed part.
    """
    masked = mask(proof)
    return proof if masked.problems else masked.masked


def uses_sorry(proof: str) -> bool:
    """True when ``proof`` gives up with ``sorry`` or ``admit`` in its code (not in a
    comment or a string)."""
    return _GIVE_UP_RE.search(_code(proof)) is not None


def proof_problem(proof: str) -> str | None:
    """Why ``proof`` cannot count as a proof without running Lean, or None.

    It gives up (``sorry``/``admit``), or it carries a command (``#exit``, ``axiom``,
    ``theorem``, ``end``, ...) that would end the proof and change the file around it.
    The final check and the file check refuse such text before Lean sees it; Lean's own
    ``declaration uses 'sorry'`` warning remains the last word on `sorry`.
    """
    code = _code(proof)
    if _GIVE_UP_RE.search(code):
        return "the proof uses `sorry` or `admit`"
    command = _COMMAND_RE.search(code)
    if command:
        return f"the proof contains the command `{command.group()}`; a proof may not add commands"
    return None


def tactic_proof(tactics: Sequence[str]) -> str:
    """A ``by`` block running ``tactics`` in order, one per line, indented relative to ``by``.

    Continuation lines of a multi-line tactic keep their own indentation relative to the
    tactic's first line. An empty sequence gives ``by\\n  skip``: an empty ``by`` is a parse
    error in most Lean versions, while ``skip`` changes nothing and leaves every goal open.
    """
    steps = [t.strip("\n").lstrip(" ") for t in tactics if t.strip()] or ["skip"]
    lines = ["by"]
    for step in steps:
        lines.extend(INDENT + line if line.strip() else "" for line in step.split("\n"))
    return "\n".join(lines)


def split_tactics(proof: str) -> tuple[str, ...] | None:
    """The top-level tactics of a ``by`` block, or None for a term-mode proof.

    Only the layout ``by`` + newline + one tactic per line at a common indentation is split
    (continuation lines indented deeper, and ``| alt`` / ``<;>`` lines at the same
    indentation, stay with their tactic); ``by tac`` on one line gives that one tactic.
    This is the inverse of :func:`tactic_proof`.
    """
    body = proof.strip()
    if not re.match(r"by(\s|$)", body):
        return None
    rest = body[2:]
    if "\n" not in rest.strip("\n") and rest.strip():
        return (rest.strip(),)
    lines = [line for line in rest.split("\n") if line.strip()]
    if not lines:
        return ()
    base = min(len(line) - len(line.lstrip(" ")) for line in lines)
    tactics: list[list[str]] = []
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        if not tactics or (indent == base and not line.lstrip().startswith(_CONTINUATIONS)):
            tactics.append([line[base:]])
        else:
            tactics[-1].append(line[base:])
    return tuple("\n".join(t) for t in tactics)


def line_indent(text: str, position: Position) -> str:
    """The leading whitespace of the line ``position`` is on."""
    start = offset_of(text, Position(position.line, 1))
    end = text.find("\n", start)
    line = text[start : len(text) if end < 0 else end]
    return line[: len(line) - len(line.lstrip(" \t"))]


def proof_span(theorem: Theorem) -> tuple[Position, Position]:
    """``(proof_start, end)`` of a theorem, or a clear error when the source gave no start."""
    if theorem.proof_start is None:
        raise ProofTextError(
            f"theorem {theorem.full_name} in {theorem.path} has no known proof start "
            "(its source was not read), so its proof cannot be replaced"
        )
    return theorem.proof_start, theorem.end


def splice_proof(text: str, theorem: Theorem, proof: str) -> tuple[str, int]:
    """``text`` with the theorem's proof replaced by ``proof``; also the offset where it starts.

    ``proof_start`` is the proof's first token (after ``:=`` and its whitespace, as the
    source extractor records it); a start right after ``:=`` also works, and then one space
    is put in between. The proof's continuation lines are indented by the indentation of
    the line the proof starts on, so a proof written relative to column 0 lands inside a
    ``namespace`` or ``section`` block, or under a ``:=`` ending the line above, at the
    right depth. A proof by equations (``| pat => ...``, after no ``:=``) replaced by a term
    or a tactic block gets its ``:=``. The text before and after the span is kept byte for
    byte.
    """
    start, end = proof_span(theorem)
    begin, stop = offset_of(text, start), offset_of(text, end)
    if stop < begin:
        raise ProofTextError(f"theorem {theorem.full_name}: proof end {end} is before its start {start}")
    base = line_indent(text, start)
    lines = _normalize(proof.strip("\n")).split("\n")
    body = "\n".join([lines[0].strip()] + [base + line if line.strip() else "" for line in lines[1:]])
    gap = "" if begin > 0 and text[begin - 1].isspace() else " "
    if not body.startswith("|") and not text[:begin].rstrip().endswith(":="):
        # The proof replaced was equations (`| pat => ...`, no `:=` before them): a term or
        # tactic block needs its `:=`.
        gap += ":= "
    return text[:begin] + gap + body + text[stop:], begin + len(gap)


def _normalize(block: str) -> str:
    """A proof block with its first line stripped and its other lines indented under it.

    Continuation lines keep their indentation relative to the first line; a block written
    flush left (``by\\nsimp``) is shifted by one level so its tactics sit inside the ``by``.
    """
    lines = block.split("\n")
    rest = [line for line in lines[1:] if line.strip()]
    shift = INDENT if rest and min(len(line) - len(line.lstrip(" ")) for line in rest) == 0 else ""
    return "\n".join([lines[0].strip()] + [shift + line if line.strip() else "" for line in lines[1:]])
