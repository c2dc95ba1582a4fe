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

from dataclasses import dataclass

from lean_env.interactive.repl.protocol import ReplPos
from lean_env.proofs.text import ProofTextError, offset_of
from lean_env.proofs.theorem_source import TheoremSourceError
from lean_env.records import Position, Theorem
from lean_env.syntax.header import ImportHeader, split_header

# What we put where the proof was: the `sorry` whose proof state we take.
SORRY_PROOF = "by sorry"


@dataclass(frozen=True, slots=True)
class TheoremCommand:
    """What the REPL is sent to open one theorem."""

    header: ImportHeader
    cmd: str  # file body up to the theorem, its statement, `:= by sorry`
    statement_start: ReplPos  # where the theorem begins, in command coordinates
    sorry_pos: ReplPos  # where our `sorry` is, in command coordinates
    line_offset: int  # file line = command line + line_offset


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
