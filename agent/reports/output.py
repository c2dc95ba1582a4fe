"""How commands show results: JSON for machines, plain text for people.

Commands build one JSON-serialisable payload and one human rendering; nothing else in the
code base prints to stdout. Output that cannot be written ends the command as the Unix tools
end: a reader that went away (``leanagent db stats | head -1``) quietly
(:class:`OutputClosed`), a full disk behind a redirection with one line
(:class:`OutputError`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

from lean_env.errors import BackendError
from lean_env.files import unwritable


class OutputClosed(Exception):
    """Whoever read the output stopped reading (a closed pipe): nothing to say, and no one
    to say it to. Not a fault: the CLI ends quietly."""


class OutputError(BackendError):
    """The output cannot be written (a full disk behind ``> file``)."""


def emit(payload: Any, human: str, *, as_json: bool, stream: TextIO | None = None) -> None:
    """Print ``payload`` as indented JSON when ``as_json``, else the ``human`` text; flushed,
    so that output that cannot be written raises here (see the module docs), not at exit."""
    out = stream or sys.stdout
    with writing():
        if as_json:
            json.dump(payload, out, indent=2, sort_keys=False, default=str)
            out.write("\n")
        else:
            out.write(human if human.endswith("\n") else human + "\n")
        out.flush()


@contextmanager
def writing() -> Iterator[None]:
    """Writes to the output in the block: a closed pipe raises :class:`OutputClosed`, any
    other failure :class:`OutputError` (a full disk: :class:`~lean_env.errors.DiskFullError`)."""
    try:
        yield
    except BrokenPipeError as error:
        raise OutputClosed from error
    except OSError as error:
        raise unwritable("cannot write the standard output", error, fix=OutputError) from error


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain, aligned text table (right-aligned numbers, left-aligned text)."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in rows) and rows for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-2 or abs(value) >= 1e4 else f"{value:.3f}"
    return str(value)
