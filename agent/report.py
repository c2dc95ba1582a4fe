"""Run reports on disk: the JSON payload for machines and a Markdown page for people."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lean_env.errors import UserInputError


def check_directory(directory: Path, what: str) -> None:
    """Create ``directory`` if needed; one that cannot be is the user's to fix (``what`` names
    it in the message)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserInputError(f"cannot keep {what} in {directory}: {error.strerror or error}") from error


def write_report(
    directory: Path, name: str, payload: Any, *, title: str, sections: Sequence[tuple[str, str]]
) -> tuple[Path, Path]:
    """Write ``name.json`` (``payload``) and ``name.md`` (``title``, then each section's
    plain-text body under its heading) into ``directory``; each file appears whole or not at all."""
    markdown = "\n\n".join([f"# {title}", *(f"## {heading}\n\n```\n{body}\n```" for heading, body in sections)]) + "\n"
    written = []
    for suffix, text in ((".json", json.dumps(payload, indent=2, default=str) + "\n"), (".md", markdown)):
        path = directory / f"{name}{suffix}"
        partial = path.with_name(path.name + ".partial")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            partial.write_text(text, encoding="utf-8")
            os.replace(partial, path)
        except OSError as error:
            raise UserInputError(f"cannot write the report {path}: {error.strerror or error}") from error
        written.append(path)
    return written[0], written[1]
