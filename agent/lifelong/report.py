"""A lifelong run's report: the JSON payload (what ``run --json`` prints, too), the
Markdown sections for people, and the plots of the metrics matrix."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.proving.recheck import Recheck
from agent.reports.files import Cell, plot_heatmap, plot_matrix
from agent.reports.tables import (
    METRICS,
    SHOWN,
    attempts_table,
    audit_summary,
    curriculum_text,
    outcomes_text,
    short_commit,
    training_payload,
    training_text,
)

if TYPE_CHECKING:
    from agent.lifelong.results import LifelongResult
    from retrieval.index import RecallScores
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
        "premise_index": None if result.index is None else result.index.to_json(),
        "proving": None
        if proving is None
        else {
            "attempts": [a.to_json() for a in proving.attempts],
            "targets": proving.targets,
            "skipped_sorries": proving.skipped,
            "rechecked": {location: [r.to_json() for r in results] for location, results in proving.rechecked.items()},
            "toolchain_bumps": proving.bumps,
            "builds": {location: dataclasses.asdict(build) for location, build in proving.builds.items()},
            "exercises": {
                location: [{"path": path, "theorem": theorem, "why": why} for path, theorem, why in found]
                for location, found in proving.exercises.items()
            },
            **proving.written.to_json(),
        },
        "proving_skipped": result.proving_skipped,
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
    """The recall@10 and MRR matrices as line plots, one line per repository, and as heat
    maps, each with the untrained encoder's row and every repository's score before its
    step; none without training or without matplotlib."""
    if training is None or not training.rows:
        return []
    steps = ["(untrained)", *(f"{Path(r.repo).name or r.repo} @ {short_commit(r.commit)}" for r in training.rows)]
    images = []
    for metric in SHOWN:
        matrix, before = _evaluations(training, METRICS[metric])
        stem = f"{name}-{metric.replace('@', '')}"
        drawn = [
            (f"{metric} on each repository after each step", plot_matrix, directory / f"{stem}.png"),
            (f"{metric} as a heat map (rows: after each step)", plot_heatmap, directory / f"{stem}-heatmap.png"),
        ]
        for heading, plot, path in drawn:
            if plot(path, steps=steps, repos=training.repos, matrix=matrix, metric=metric, before=before):
                images.append((heading, path))
    return images


def _evaluations(
    training: ProgressiveReport, metric: Callable[[RecallScores], float]
) -> tuple[list[list[float | None]], set[Cell]]:
    """The matrix with a row for the encoder before the first step, and each repository's
    score before its own step in the row of the step before (a repository trained again at a
    newer commit keeps its score there); and which cells those are."""
    after = training.matrix(metric)
    rows: list[list[float | None]] = [[None] * len(training.repos), *after]
    before: set[Cell] = set()
    for t, (step, column) in enumerate(zip(training.rows, training.score_matrix(metric).trained, strict=True)):
        if rows[t][column] is None and step.before is not None and step.before.examples:
            rows[t][column] = metric(step.before)
            before.add((t, column))
    return rows, before


def _training_section(result: LifelongResult) -> str:
    if result.training is None:
        return "not asked (--no-train)"
    lines = [training_text(result.training), f"retriever saved to {result.retriever_dir}"]
    if result.embeddings is not None:
        lines.append(result.embeddings.text())
    if result.index is not None:
        lines.append(result.index.text())
    return "\n".join(lines)


def _proving_section(result: LifelongResult) -> str:
    proving = result.proving
    if proving is None:
        return result.proving_skipped or f"not asked (--no-prove): {result.sorries} sorry theorem(s) left"
    proved = sum(a.proved for a in proving.attempts)
    carried = sum(a.carried for a in proving.attempts)
    summary = (
        f"{proved} of {len(proving.attempts)} attempted proved and checked by Lean "
        f"({proving.targets} sorry theorem(s) targeted"
        + (f"; {carried} proof(s) carried over from an earlier commit, checked again" if carried else "")
        + ")"
    )
    left_alone = [
        f"{count} sorry theorem(s) of {location} left alone (skip globs), not attempted"
        for location, count in proving.skipped.items()
    ]
    for location, found in proving.exercises.items():
        left_alone.append(
            f"{len(found)} sorry theorem(s) of {location} left alone as exercises (--include-exercises proves them):"
        )
        left_alone += [f"  {path}:{theorem}: exercise: {why}" for path, theorem, why in found]
    for location, build in proving.builds.items():
        left_alone.append(
            f"{location}: {build.text()}"
            + ("" if build.usable else "; its sorries were not attempted (a build failure is no proof failure)")
        )
    for location, results in proving.rechecked.items():
        verdicts = Counter(r.verdict.value for r in results)
        bump, commit = proving.bumps.get(location), results[0].found.stored.commit
        left_alone.append(
            f"rechecked {len(results)} found proof(s) carried over to {location} at {commit[:12]}"
            + (f" (its toolchain changed: {bump})" if bump else "")
            + ": "
            + ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items()))
        )
        left_alone += [
            f"  {r.found.stored.theorem.path}:{r.found.stored.theorem.full_name}: broke at "
            f"{r.found.stored.commit[:12]} ({r.why}); a target again"
            for r in results
            if r.verdict is Recheck.BROKE
        ]
    written = proving.written
    patches = [f"proofs of {location} as a patch: {path}" for location, path in written.patches.items()]
    branches = [
        f"proofs of {location} on branch {b.branch} ({b.commit[:12]}, on {b.onto} at {b.base[:12]}) of the clone "
        f"{b.clone}"
        + (
            ""
            if location in written.pull_requests
            else f"; to open a pull request: git -C {b.clone} push <your fork> {b.branch}"
        )
        for location, b in written.branches.items()
    ]
    pulls = [
        f"pull request of {location}: {pr.url}" + (" (open already)" if pr.existed else "")
        for location, pr in written.pull_requests.items()
    ]
    stale = [
        f"stale, not written back: {p.theorem} of {location} ({p.reason})"
        for location, proofs in written.stale.items()
        for p in proofs
    ]
    failed = [f"the proofs of {location} could not be written back: {why}" for location, why in written.failed.items()]
    retried = [
        f"earlier tries of the write-back of {location} failed (the run was resumed): {'; '.join(why)}"
        for location, why in written.retried.items()
    ]
    table = [attempts_table(proving.attempts)] if proving.attempts else []
    lines = [
        *table,
        summary,
        *left_alone,
        *audit_summary(proving.attempts),
        *patches,
        *branches,
        *pulls,
        *written.closed,
        *stale,
        *retried,
        *failed,
    ]
    return "\n".join(lines)
