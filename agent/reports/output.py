"""How commands show results: JSON for machines, plain text for people.

Commands build one JSON-serialisable payload and one human rendering; nothing else in the
code base prints to stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO


def emit(payload: Any, human: str, *, as_json: bool, stream: TextIO | None = None) -> None:
    """Print ``payload`` as indented JSON when ``as_json``, else the ``human`` text."""
    out = stream or sys.stdout
    if as_json:
        json.dump(payload, out, indent=2, sort_keys=False, default=str)
        out.write("\n")
    else:
        out.write(human if human.endswith("\n") else human + "\n")


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
