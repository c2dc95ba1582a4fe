"""The import header of a Lean file: its leading ``prelude``/``module``/``import`` commands.

The REPL loads a file's header once per process (:mod:`lean_env.interactive.repl.theorem_text`),
and the final check tells an error on the header (the checkout's imports, not the proof) from
one in the body (:mod:`lean_env.proofs.final_check`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The header's tokens: whitespace and comments (block comments nest; handled below), then
# `prelude`, `module` and imports (with the module system's modifiers, several modules).
_SPACE_RE = re.compile(r"(?:\s+|--[^\n]*)+")
_HEADER_CMD_RE = re.compile(
    r"(?:prelude|module)(?![\w.'])|(?:(?:public|private|meta)\s+)*import(?:\s+all)?"
    r"(?:[ \t]+(?!(?:import|public|private|meta)\b)[^\s/-][^\s]*)+"
)


@dataclass(frozen=True, slots=True)
class ImportHeader:
    """The import lines of a file (comments dropped) and where the file's body starts."""

    text: str  # the header command sent to a fresh REPL environment; the pool's key
    body_start: int  # string offset just after the header's last line


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
