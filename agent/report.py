"""Run reports on disk: the JSON payload for machines, a Markdown page for people, and plots
of the metrics matrix (with matplotlib, the ``plots`` extra)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lean_env.errors import UserInputError
from lean_env.files import write_atomically


def check_directory(directory: Path, what: str) -> None:
    """Create ``directory`` if needed; one that cannot be is the user's to fix (``what`` names
    it in the message)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserInputError(f"cannot keep {what} in {directory}: {error.strerror or error}") from error


def write_report(
    directory: Path,
    name: str,
    payload: Any,
    *,
    title: str,
    sections: Sequence[tuple[str, str]],
    images: Sequence[tuple[str, Path]] = (),
) -> tuple[Path, Path]:
    """Write ``name.json`` (``payload``) and ``name.md`` (``title``, each section's plain-text
    body under its heading, then the ``images``, each under its heading, by a path relative
    to ``directory``) into ``directory``; each file appears whole or not at all."""
    parts = [f"# {title}", *(f"## {heading}\n\n```\n{body}\n```" for heading, body in sections)]
    parts += [f"## {heading}\n\n![{heading}]({image.relative_to(directory).as_posix()})" for heading, image in images]
    markdown = "\n\n".join(parts) + "\n"
    json_path, markdown_path = directory / f"{name}.json", directory / f"{name}.md"
    write_text_atomically(json_path, json.dumps(payload, indent=2, default=str) + "\n")
    write_text_atomically(markdown_path, markdown)
    return json_path, markdown_path


def write_text_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole, or is left as it was; failing is the user's to fix."""
    _write_atomically(path, lambda partial: partial.write_text(text, encoding="utf-8"))


def _write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    try:
        write_atomically(path, write)
    except OSError as error:
        raise UserInputError(f"cannot write {path}: {error.strerror or error}") from error


def plot_matrix(
    path: Path, *, steps: Sequence[str], repos: Sequence[str], matrix: Sequence[Sequence[float | None]], metric: str
) -> Path | None:
    """A line per repository: ``metric`` after each step (``matrix[step][repo]``, None where
    not scored), saved as a PNG at ``path``; None when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure  # the object API: no global pyplot state, no display
    except ImportError:
        return None
    figure = Figure(figsize=(max(4.0, 1.1 * len(steps) + 2), 3.6))
    axes = figure.subplots()
    for j, repo in enumerate(repos):
        scored = [i for i, row in enumerate(matrix) if row[j] is not None]
        axes.plot(scored, [matrix[i][j] for i in scored], marker="o", label=Path(repo).name or repo)
    axes.set_xticks(range(len(steps)), steps, rotation=25, ha="right", fontsize=8)
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("after the step on")
    axes.set_ylabel(metric)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    _write_atomically(path, lambda partial: figure.savefig(partial, dpi=100))
    return path
