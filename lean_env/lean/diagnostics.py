"""Lean's command-line diagnostics, parsed from what ``lean FILE`` prints.

Lean renders each message with ``mkErrorStringWithPos`` (``Lean/Message.lean``)::

    FILE:LINE:COL: error: MESSAGE
    FILE:LINE:COL-ENDLINE:ENDCOL: warning: MESSAGE          (with -DprintMessageEndPos=true)
    FILE:LINE:COL: error(lean.unknownIdentifier): MESSAGE   (named errors, newer Lean)
    FILE:LINE:COL: info: MESSAGE                             (info with a position)

``LINE`` is 1-based and ``COL`` is 0-based (counted in codepoints); we convert to the
project's 1-based :class:`~lean_env.records.Position`. A message may span several lines:
everything up to the next header belongs to it (``unsolved goals`` errors carry the
pretty-printed goals in those lines). ``lean FILE`` prints info messages (``#eval``
results, ``#print axioms``) without any header: only warnings and errors get one, the
``info:`` form above is what other tools print. Text before the first header is therefore
not a diagnostic and is returned separately, and such text after a diagnostic cannot be told
apart from the diagnostic's own continuation lines (a limit of the text format, not of this
parser; the final check finds its ``#print axioms`` message by its shape).

The ``declaration uses 'sorry'`` warning is quoted with ``'sorry'`` up to Lean 4.2x and
with backquotes in later versions; both are recognised.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from lean_env.records import Position

_HEADER_RE = re.compile(
    r"^(?P<path>.*?):(?P<line>\d+):(?P<col>\d+)(?:-(?P<end_line>\d+):(?P<end_col>\d+))?: "
    r"(?P<severity>error|warning|info|information)(?:\((?P<name>[^()\s]+)\))?:(?: |$)(?P<first>.*)$"
)
_SORRY_RE = re.compile(r"^declaration uses ['`]sorry['`]")
_UNSOLVED = "unsolved goals"
# Lean's parse errors (one line: "expected term", "unexpected token 'at'; expected ..."),
# not the elaborator's "expected type must not contain free or meta variables\n  a = b".
_PARSE_ERROR_RE = re.compile(r"(?:unexpected|expected) (?!type )[^\n]*")


class Severity(enum.StrEnum):
    """How serious a Lean message is."""

    ERROR = "error"  # the file does not compile
    WARNING = "warning"  # compiles, but something is off (`sorry`, linters)
    INFO = "info"  # output of `#eval`, `#check`, traces


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One message of ``lean FILE``; ``start``/``end`` are 1-based, ``end`` only when printed."""

    path: str
    start: Position
    severity: Severity
    message: str
    end: Position | None = None
    # Lean's name of the error (``lean.unknownIdentifier``), printed by newer versions only.
    name: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    @property
    def is_sorry_warning(self) -> bool:
        """True for Lean's ``declaration uses 'sorry'`` warning."""
        return self.severity is Severity.WARNING and bool(_SORRY_RE.match(self.message))

    @property
    def is_parse_error(self) -> bool:
        """True for an error of Lean's parser rather than its elaborator."""
        return self.is_error and bool(_PARSE_ERROR_RE.fullmatch(self.message))

    @property
    def unsolved_goals(self) -> str | None:
        """The pretty-printed goals of an ``unsolved goals`` error, else None."""
        if not self.is_error:
            return None
        head, _, body = self.message.partition("\n")
        return body.strip("\n") if head.strip() == _UNSOLVED else None

    def render(self) -> str:
        """The diagnostic as Lean prints it (0-based column), for messages and logs."""
        return f"{self.path}:{self.start.line}:{self.start.column - 1}: {self.severity}: {self.message}"


@dataclass(frozen=True, slots=True)
class ParsedOutput:
    """Everything ``lean FILE`` printed: the diagnostics, and any text before the first one."""

    diagnostics: tuple[Diagnostic, ...]
    preamble: str = ""

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.is_error)


def parse_diagnostics(output: str, *, path: str | None = None) -> ParsedOutput:
    """Split Lean's output into diagnostics.

    With ``path``, only headers naming that file start a diagnostic: a message body that
    happens to contain ``x:1:2: error:`` then stays inside its message.
    """
    diagnostics: list[Diagnostic] = []
    preamble: list[str] = []
    header: re.Match[str] | None = None
    body: list[str] = []
    for line in output.splitlines():
        match = _HEADER_RE.match(line)
        if match and (path is None or match["path"] == path):
            if header is not None:
                diagnostics.append(_diagnostic(header, body))
            header, body = match, [match["first"]]
        elif header is None:
            preamble.append(line)
        else:
            body.append(line)
    if header is not None:
        diagnostics.append(_diagnostic(header, body))
    return ParsedOutput(tuple(diagnostics), "\n".join(preamble).strip("\n"))


def _diagnostic(header: re.Match[str], body: list[str]) -> Diagnostic:
    severity = header["severity"]
    end = (
        Position(max(1, int(header["end_line"])), int(header["end_col"]) + 1)
        if header["end_line"] is not None
        else None
    )
    return Diagnostic(
        path=header["path"],
        # Lean's columns are 0-based; ours are 1-based. Line 0 never occurs, but a bad
        # header must not crash the parse.
        start=Position(max(1, int(header["line"])), int(header["col"]) + 1),
        severity=Severity.INFO if severity == "information" else Severity(severity),
        message="\n".join(body).strip("\n"),
        end=end,
        name=header["name"],
    )
