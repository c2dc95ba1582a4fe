"""Turning a theorem of a file into the two REPL commands that open it.

A Lean file is an import header (``import``/``prelude``/``module`` lines, only at the top)
followed by commands. The REPL can load imports only in a fresh environment, and loading
them is the slow part (Mathlib: seconds to minutes), so the header is sent once per
process, and each theorem is sent on top of that environment as one command: the file's
text from the end of the header up to the theorem, then the theorem's statement with
``:= by sorry``. The `sorry`'s proof state is the theorem's initial goal.

Positions in REPL answers are relative to the command; :attr:`TheoremCommand.line_offset`
maps them back to the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lean_env.interactive.repl.protocol import ReplPos
from lean_env.proofs.text import ProofTextError, offset_of
from lean_env.proofs.theorem_source import TheoremSourceError
from lean_env.records import Position, Theorem

# The header's tokens: whitespace and comments (block comments nest; handled below), then
# `prelude`, `module` and imports (with the module system's modifiers, several modules).
_SPACE_RE = re.compile(r"(?:\s+|--[^\n]*)+")
_HEADER_CMD_RE = re.compile(
    r"(?:prelude|module)(?![\w.'])|(?:(?:public|private|meta)\s+)*import(?:\s+all)?"
    r"(?:[ \t]+(?!(?:import|public|private|meta)\b)[^\s/-][^\s]*)+"
)
# What we put where the proof was: the `sorry` whose proof state we take.
SORRY_PROOF = "by sorry"


@dataclass(frozen=True, slots=True)
class ImportHeader:
    """The import lines of a file (comments dropped) and where the file's body starts."""

    text: str  # the header command sent to a fresh REPL environment; the pool's key
    body_start: int  # string offset just after the header's last line


@dataclass(frozen=True, slots=True)
class TheoremCommand:
    """What the REPL is sent to open one theorem."""

    header: ImportHeader
    cmd: str  # file body up to the theorem, its statement, `:= by sorry`
    statement_start: ReplPos  # where the theorem begins, in command coordinates
    sorry_pos: ReplPos  # where our `sorry` is, in command coordinates
    line_offset: int  # file line = command line + line_offset


def split_header(text: str) -> ImportHeader:
    """The import header of a Lean file: its leading ``prelude``/``module``/``import``
    commands, with the comments around them dropped."""
    commands: list[str] = []
    pos = body_start = 0
    while True:
        pos = _skip_space(text, pos)
        m = _HEADER_CMD_RE.match(text, pos)
        if m is None:
            return ImportHeader(text="\n".join(commands), body_start=body_start)
        commands.append(" ".join(m.group().split()))
        pos = body_start = m.end()


def _skip_space(text: str, pos: int) -> int:
    """The offset after the whitespace and comments (nested ``/- -/`` included) at ``pos``."""
    while True:
        m = _SPACE_RE.match(text, pos)
        if m:
            pos = m.end()
        if not text.startswith("/-", pos):
            return pos
        depth = 0
        while True:
            opening, closing = text.find("/-", pos), text.find("-/", pos)
            if closing < 0:
                return len(text)  # unterminated: Lean fails on it; nothing follows to read
            if 0 <= opening < closing:
                depth, pos = depth + 1, opening + 2
            else:
                depth, pos = depth - 1, closing + 2
                if depth == 0:
                    break


def theorem_command(text: str, theorem: Theorem) -> TheoremCommand:
    """The REPL command that elaborates ``theorem``'s file up to it, with ``:= by sorry``.

    The statement is the file's own text from the theorem's start to its ``:=`` when the
    source gave ``proof_start``, else ``theorem.statement``.
    """
    header = split_header(text)
    start = _offset(text, theorem, theorem.start)
    if start < header.body_start:
        raise TheoremSourceError(
            f"theorem {theorem.full_name} starts at {theorem.start}, inside the import header of {theorem.path}"
        )
    if theorem.proof_start is not None:
        statement = text[start : _offset(text, theorem, theorem.proof_start)]
    else:
        statement = theorem.statement
    statement = statement.rstrip().removesuffix(":=").rstrip()
    if not statement:
        raise TheoremSourceError(f"theorem {theorem.full_name} in {theorem.path} has no statement")
    prefix = text[header.body_start : start]
    cmd = f"{prefix}{statement} := {SORRY_PROOF}"
    return TheoremCommand(
        header=header,
        cmd=cmd,
        statement_start=_repl_pos(cmd, len(prefix)),
        sorry_pos=_repl_pos(cmd, len(cmd) - len("sorry")),
        line_offset=text.count("\n", 0, header.body_start),
    )


def _offset(text: str, theorem: Theorem, position: Position) -> int:
    try:
        return offset_of(text, position)
    except ProofTextError as e:  # the file is not the one the theorem was read from
        raise TheoremSourceError(
            f"theorem {theorem.full_name}: position {position.line}:{position.column} is not in {theorem.path} ({e})"
        ) from e


def _repl_pos(text: str, offset: int) -> ReplPos:
    """The REPL's position (1-based line, 0-based column) of ``offset`` in ``text``."""
    return ReplPos(line=text.count("\n", 0, offset) + 1, column=offset - (text.rfind("\n", 0, offset) + 1))
