"""A lifelong run's report: the JSON payload (what ``run --json`` prints, too), the
Markdown sections for people, and the plots of the metrics matrix."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.render import (
    attempts_table,
    curriculum_text,
    outcomes_text,
    short_commit,
    training_payload,
    training_text,
)
from agent.report import plot_matrix

if TYPE_CHECKING:
    from agent.lifelong import LifelongResult
    from retrieval.progressive import ProgressiveReport

NO_PLOTS = "not drawn: they need matplotlib (pip install 'leanagent[plots]')"


def report_payload(result: LifelongResult) -> dict[str, Any]:
    """The run for machines (the report's JSON; ``run --json`` adds the report's paths)."""
    training, proving = result.training, result.proving
    return {
        "run": result.run_id,
        "resumed": result.resumed,
        "ingest": [dataclasses.asdict(o) for o in result.ingest],
        "curriculum": result.curriculum.as_dict(),
        "training": None if training is None else {"model": str(result.retriever_dir), **training_payload(training)},
        "embeddings": None if result.embeddings is None else result.embeddings.to_json(),
        "proving": None
        if proving is None
        else {
            "attempts": [a.to_json() for a in proving.attempts],
            "targets": proving.targets,
            "patches": proving.patches,
        },
    }


def report_sections(result: LifelongResult) -> list[tuple[str, str]]:
    """The run for people: (heading, plain text) in report order."""
    sections = [
        ("Ingest", outcomes_text(result.ingest)),
        ("Curriculum", curriculum_text(result.curriculum)),
        ("Retriever training", _training_section(result)),
        ("Proving", _proving_section(result)),
    ]
    if result.training is not None and not result.plots:
        sections.append(("Plots", NO_PLOTS))
    return sections


def draw_plots(training: ProgressiveReport | None, directory: Path, name: str) -> list[tuple[str, Path]]:
    """The recall@10 and MRR matrices as line plots, one line per repository; none without
    training or without matplotlib."""
    if training is None or not training.rows:
        return []
    steps = [f"{Path(r.repo).name or r.repo} @ {short_commit(r.commit)}" for r in training.rows]
    images = []
    for metric, pick in (("recall@10", lambda s: s.recall[10]), ("MRR", lambda s: s.mrr)):
        path = plot_matrix(
            directory / f"{name}-{metric.replace('@', '')}.png",
            steps=steps,
            repos=training.repos,
            matrix=training.matrix(pick),
            metric=metric,
        )
        if path is not None:
            images.append((f"{metric} on each repository after each step", path))
    return images


def _training_section(result: LifelongResult) -> str:
    if result.training is None:
        return "not asked (--no-train)"
    lines = [training_text(result.training), f"retriever saved to {result.retriever_dir}"]
    if result.embeddings is not None:
        lines.append(result.embeddings.text())
    return "\n".join(lines)


def _proving_section(result: LifelongResult) -> str:
    proving = result.proving
    if proving is None:
        return f"not asked: give --generator NAME|DIR to search proofs of the {result.sorries} sorry theorem(s)"
    proved = sum(a.proved for a in proving.attempts)
    summary = (
        f"{proved} of {len(proving.attempts)} attempted proved and checked by Lean "
        f"({proving.targets} sorry theorem(s) in all)"
    )
    patches = [f"proofs of {location} as a patch: {path}" for location, path in proving.patches.items()]
    return "\n".join(([attempts_table(proving.attempts)] if proving.attempts else []) + [summary, *patches])
