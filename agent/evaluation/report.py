"""An evaluation's report: the text for people (tables of Pass@1 per repository and per
curriculum bucket, the theorems), and the plot of Pass@1 against the time budget."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agent.evaluation.evaluate import CONFIDENCE, EvaluationResult, PassRate, budget_marks, repository_name
from agent.reports.files import new_figure, save_figure
from agent.reports.output import table


def summary_text(result: EvaluationResult) -> str:
    """Pass@1 overall, per repository, per bucket, and against the budget."""
    level = f"{100 * CONFIDENCE:g}%"
    lines = [
        f"Pass@1 {result.overall.text()} ({level} Wilson interval), run {result.run_id}"
        + (" (resumed)" if result.resumed else ""),
        "outcomes: " + ", ".join(f"{n} {o}" for o, n in result.outcomes().items() if n),
        "",
        _rates_table("repository", {repository_name(k): v for k, v in result.by_repository.items()}),
        "",
        _rates_table("bucket", result.by_bucket),
        "",
        table(
            ["budget (s)", "Pass@1"],
            [[f"{t:g}", f"{100 * result.pass_at(t):.1f}%"] for t in budget_marks(result.time_limit)],
        ),
        *([] if result.index is None else ["", result.index.text()]),
    ]
    return "\n".join(lines)


def theorems_table(result: EvaluationResult) -> str:
    return table(
        ["file", "theorem", "outcome", "seconds", "expansions", "lean s", "proof"],
        [
            [
                a.path,
                a.theorem,
                a.outcome.value,
                round(a.seconds, 2),
                a.expansions,
                "-" if a.lean_seconds is None else round(a.lean_seconds, 2),
                " ".join((a.proof or "").split()) if a.proved else "",
            ]
            for a in result.attempts
        ],
    )


def _rates_table(heading: str, rates: Mapping[str, PassRate]) -> str:
    rows = [
        [name, rate.proved, rate.total, f"{100 * rate.rate:.1f}%", f"{100 * rate.low:.1f}-{100 * rate.high:.1f}%"]
        for name, rate in rates.items()
    ]
    return table([heading, "proved", "total", "Pass@1", "interval"], rows)


def plot_budget_curve(result: EvaluationResult, path: Path) -> Path | None:
    """Pass@1 against the time budget (the cumulative share proved by t seconds), as a PNG
    at ``path``; None when matplotlib is not installed."""
    drawn = new_figure(6.0, 3.6)
    if drawn is None:
        return None
    axes = drawn.subplots()
    points = result.curve()
    times = [0.0, *(t for t, _ in points), result.time_limit]
    shares = [0.0, *(s for _, s in points), points[-1][1] if points else 0.0]
    axes.step(times, [100 * s for s in shares], where="post")
    axes.set_xscale("symlog", linthresh=1.0)
    axes.set_xlim(0, max(result.time_limit, times[-1]))
    axes.set_ylim(0, 100)
    axes.set_xlabel("time budget per theorem (s): opening, search, final check")
    axes.set_ylabel("Pass@1 (%)")
    axes.set_title(f"{len(result.attempts)} theorems, run {result.run_id}", fontsize=9)
    axes.grid(alpha=0.3)
    return save_figure(drawn, path)
