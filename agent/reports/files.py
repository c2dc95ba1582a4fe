"""Run reports on disk: the JSON payload for machines, a Markdown page for people, and plots
of the metrics matrix (with matplotlib, the ``plots`` extra)."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lean_env.errors import UserInputError
from lean_env.files import save_atomically, write_text_atomically

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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
    keep_earlier: bool = False,
) -> tuple[Path, Path]:
    """Write ``name.json`` (``payload``) and ``name.md`` (``title``, each section's plain-text
    body under its heading, then the ``images``, each under its heading, by a path relative
    to ``directory``) into ``directory``; each file appears whole or not at all. With
    ``keep_earlier`` (a resumed run's report), a report of that name there already is kept
    as ``name.K.json`` and ``name.K.md`` (K = 1, 2, ...), which the new one names (its JSON
    under ``earlier_reports``, a payload that is an object): what it said is never lost."""
    json_path, markdown_path = directory / f"{name}.json", directory / f"{name}.md"
    earlier = _keep_earlier(directory, name) if keep_earlier else []
    if earlier and isinstance(payload, dict):
        payload = {**payload, "earlier_reports": [str(path) for path in earlier]}
    parts = [f"# {title}", *(f"## {heading}\n\n```\n{body}\n```" for heading, body in sections)]
    parts += [f"## {heading}\n\n![{heading}]({image.relative_to(directory).as_posix()})" for heading, image in images]
    if earlier:
        kept = ", ".join(f"[{path.name}]({path.name})" for path in earlier if path.suffix == ".md")
        parts.append(f"## Earlier reports of this run\n\nWritten before it was resumed: {kept}")
    markdown = "\n\n".join(parts) + "\n"
    write_text_atomically(json_path, json.dumps(payload, indent=2, default=str) + "\n")
    write_text_atomically(markdown_path, markdown)
    return json_path, markdown_path


def _keep_earlier(directory: Path, name: str) -> list[Path]:
    """Keep the report ``name`` in ``directory`` (its JSON and Markdown, where they are) as
    ``name.K.*``, K the first number free; with those kept before, oldest first."""
    kept = sorted(
        (p for p in directory.glob(f"{name}.*.*") if p.suffixes[0][1:].isdigit()),
        key=lambda p: (int(p.suffixes[0][1:]), p.suffix),
    )
    current = [p for p in (directory / f"{name}.json", directory / f"{name}.md") if p.is_file()]
    if current:
        number = 1 + max((int(p.suffixes[0][1:]) for p in kept), default=0)
        for path in current:
            target = directory / f"{name}.{number}{path.suffix}"
            path.replace(target)
            kept.append(target)
    return kept


Cell = tuple[int, int]  # (row, column) of a matrix


def plot_matrix(
    path: Path,
    *,
    steps: Sequence[str],
    repos: Sequence[str],
    matrix: Sequence[Sequence[float | None]],
    metric: str,
    before: Collection[Cell] = (),
) -> Path | None:
    """A line per repository: ``metric`` at each evaluation (``matrix[row][repo]``, None where
    not scored; the cells in ``before`` are scores before the repository's step, drawn
    hollow), saved as a PNG at ``path``; None when matplotlib is not installed."""
    figure = new_figure(1.1 * len(steps) + 2, 3.6)
    if figure is None:
        return None
    axes = figure.subplots()
    for j, repo in enumerate(repos):
        # row -> score, for the rows that scored it (bound to a name so that the type is float, not None)
        scores = {i: v for i, row in enumerate(matrix) if (v := row[j]) is not None}
        (line,) = axes.plot(list(scores), list(scores.values()), marker="o", label=Path(repo).name or repo)
        hollow = [i for i in scores if (i, j) in before]
        axes.plot(hollow, [scores[i] for i in hollow], "o", color="white", markeredgecolor=line.get_color())
    axes.set_xticks(range(len(steps)), steps, rotation=25, ha="right", fontsize=8)
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("after the step on (hollow: the repository's score before its own step)")
    axes.set_ylabel(metric)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    return save_figure(figure, path)


def plot_heatmap(
    path: Path,
    *,
    steps: Sequence[str],
    repos: Sequence[str],
    matrix: Sequence[Sequence[float | None]],
    metric: str,
    before: Collection[Cell] = (),
) -> Path | None:
    """``matrix`` as a heat map (rows: evaluations, columns: repositories), each cell with its
    value (the ``before`` cells in italics, blank where not scored), saved as a PNG at
    ``path``; None when matplotlib is not installed."""
    figure = new_figure(0.9 * len(repos) + 5, 0.45 * len(steps) + 2.4)  # the step names take ~3 inches
    if figure is None:
        return None
    axes = figure.subplots()
    values = [[math.nan if v is None else v for v in row] for row in matrix]
    image = axes.imshow(values, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if value is not None:
                style = "italic" if (i, j) in before else "normal"
                colour = "black" if value > 0.6 else "white"
                axes.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color=colour, style=style)
    axes.set_xticks(range(len(repos)), [Path(r).name or r for r in repos], rotation=25, ha="right", fontsize=8)
    axes.set_yticks(range(len(steps)), steps, fontsize=8)
    axes.set_xlabel("repository (italics: before its own step)")
    axes.set_ylabel("after the step on")
    figure.colorbar(image, ax=axes, label=metric)
    return save_figure(figure, path)


def new_figure(width: float, height: float) -> Figure | None:
    """A figure of (at least 4) inches; None without matplotlib."""
    try:
        from matplotlib.figure import Figure  # the object API: no global pyplot state, no display
    except ImportError:
        return None
    return Figure(figsize=(max(4.0, width), height))


def save_figure(figure: Figure, path: Path) -> Path:
    figure.tight_layout()
    save_atomically(path, lambda partial: figure.savefig(partial, dpi=100))
    return path
