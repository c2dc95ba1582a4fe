"""Results as people and machines read them: the text tables and JSON shapes that several
commands (and the lifelong job's report) share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent.reports.output import table
from lean_env.proofs.axioms import nonstandard
from lean_env.records import AttemptOutcome

if TYPE_CHECKING:
    from agent.proving.attempts import AttemptReport
    from curriculum.ingest import IngestOutcome
    from curriculum.ordering import Curriculum
    from retrieval.index import RecallScores
    from retrieval.lifelong_metrics import LifelongMetrics
    from retrieval.progressive import ProgressiveReport


def outcomes_text(outcomes: Sequence[IngestOutcome]) -> str:
    rows = [
        [
            o.location,
            short_commit(o.commit),
            o.status,
            o.backend,
            o.files,
            o.premises,
            o.theorems,
            o.sorries,
            o.carried_proofs,
        ]
        for o in outcomes
    ]
    added = sum(o.status == "added" for o in outcomes)
    summary = f"{plural(len(outcomes), 'repository', 'repositories')}: {added} added, {len(outcomes) - added} unchanged"
    remote = sum(o.status == "unchanged-remote" for o in outcomes)
    if remote:
        summary += f" ({remote} not even fetched: git ls-remote found the stored head, with nothing left to do)"
    carried = sum(o.carried_proofs for o in outcomes)
    if carried:
        summary += (
            f"; {plural(carried, 'found proof', 'found proofs')} carried over from an earlier version "
            "(the theorem still sorry with the same statement: proved_by_us, no target)"
        )
    return "\n".join(
        [
            table(
                [
                    "repository",
                    "commit",
                    "status",
                    "backend",
                    "files",
                    "premises",
                    "theorems",
                    "sorries",
                    "carried",
                ],
                rows,
            ),
            summary,
        ]
    )


def curriculum_text(order: Curriculum) -> str:
    if not order.repos:
        return "no repositories ingested yet"
    if order.thresholds is None:
        bounds = "no proved theorems, so no difficulty thresholds"
    else:
        bounds = (
            f"easy: S <= {order.thresholds.easy_max:g}, "
            f"medium: S <= {order.thresholds.medium_max:g}, "
            "hard: above (difficulty e^S, S = proof steps)"
        )
    rows = [
        [
            rank,
            r.location,
            short_commit(r.commit),
            r.easy,
            r.medium,
            r.hard,
            r.hard_no_proof,
            r.unknown,
            r.total,
        ]
        for rank, r in enumerate(order.repos, start=1)
    ]
    headers = [
        "#",
        "repository",
        "commit",
        "easy",
        "medium",
        "hard",
        "no proof",
        "unknown",
        "total",
    ]
    return "\n".join([f"curriculum order ({bounds})", table(headers, rows)])


def short_commit(commit: str) -> str:
    """A commit for tables: 12 hex digits of a SHA, the tag and 8 digits of a content hash."""
    if commit.startswith("content-"):
        return commit[:16]
    sha, dirty, _ = commit.partition("-dirty-")
    return sha[:12] + ("-dirty" if dirty else "")


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


METRICS = {
    "recall@1": lambda s: s.recall[1],
    "recall@10": lambda s: s.recall[10],
    "MRR": lambda s: s.mrr,
}


# The scores whose lifelong-learning metrics the text shows (the JSON has every one's).
SHOWN = ("recall@10", "MRR")


def training_payload(report: ProgressiveReport) -> dict[str, Any]:
    """The steps (with each repository's scores just before its step and by the starting
    encoder), metrics matrices and lifelong-learning metrics of a progressive run, for JSON."""
    return {
        "repositories": list(report.repos),
        "steps_before_this_run": report.picked_up,
        "steps": [
            {
                "repo": r.repo,
                "commit": r.commit,
                "train_examples": r.train_examples,
                "mean_loss": r.step.mean_loss,
                "mean_penalty": r.step.mean_penalty,
                "before": None if r.before is None else scores_dict(r.before),
                "untrained": None if r.untrained is None else scores_dict(r.untrained),
            }
            for r in report.rows
        ],
        "matrices": {name: report.matrix(metric) for name, metric in METRICS.items()},
        "metrics": {name: metrics_payload(report.metrics(metric)) for name, metric in METRICS.items()},
    }


def metrics_payload(metrics: LifelongMetrics) -> dict[str, dict[str, Any]]:
    """Each metric as ``{"value": number, "unit": ...}`` (``fraction``: of 1, as the scores
    are; ``ratio``: CFR), or ``{"value": null, "undefined": why}``."""
    from retrieval.lifelong_metrics import RATIOS, Undefined

    return {
        name: {"value": None, "undefined": value.reason}
        if isinstance(value, Undefined)
        else {"value": value, "unit": "ratio" if name in RATIOS else "fraction"}
        for name, value in metrics.named()
    }


def training_text(report: ProgressiveReport) -> str:
    """The recall@10 matrix (with each repository's score just before its step) and the
    lifelong-learning metrics of a progressive run, for people."""
    recall = METRICS["recall@10"]
    rows = [
        [
            f"after {r.repo} @ {short_commit(r.commit)}",
            r.train_examples,
            cell(None if r.before is None or not r.before.examples else recall(r.before)),
            *(cell(v) for v in values),
        ]
        for r, values in zip(report.rows, report.matrix(recall), strict=True)
    ]
    return "\n".join(
        [
            "recall@10 on each repository's held-out theorems after each step (and on the one trained, before it):",
            table(["step", "trained on", "before", *report.repos], rows),
            metrics_text(report),
            f"{len(report.rows) - report.picked_up} step(s) taken now, {report.picked_up} before",
        ]
    )


def metrics_text(report: ProgressiveReport) -> str:
    """A table of the lifelong-learning metrics of recall@10 and MRR; an undefined one is
    n/a, with why below the table."""
    from retrieval.lifelong_metrics import Undefined

    by_score = [dict(report.metrics(METRICS[name]).named()) for name in SHOWN]
    rows, reasons = [], []
    for metric in by_score[0]:
        values = [metrics[metric] for metrics in by_score]
        rows.append([metric, *("n/a" if isinstance(v, Undefined) else _points(metric, v) for v in values)])
        why = dict.fromkeys(v.reason for v in values if isinstance(v, Undefined))  # once when both agree
        if why:
            reasons.append(f"{metric} n/a: {'; '.join(why)}")
    title = "lifelong-learning metrics (docs/lifelong.md; percentage points, as LeanAgent prints them, CFR a ratio):"
    return "\n".join([title, table(["metric", *SHOWN], rows), *reasons])


def _points(metric: str, value: float) -> str:
    """A metric as the paper prints it: a score or a difference of scores x100, a ratio as is."""
    from retrieval.lifelong_metrics import RATIOS

    return f"{value:.3f}" if metric in RATIOS else f"{100 * value:.2f}"


def scores_dict(scores: RecallScores) -> dict[str, Any]:
    return {"examples": scores.examples, **{name: metric(scores) for name, metric in METRICS.items()}}


def cell(value: float | None) -> object:
    return "-" if value is None else round(value, 3)


def attempts_table(attempts: Sequence[AttemptReport]) -> str:
    return table(
        ["theorem", "file", "outcome", "tactics", "seconds", "detail"],
        [
            [a.theorem, a.path, a.outcome.value, "-" if a.tactics is None else a.tactics, round(a.seconds, 1), a.detail]
            for a in attempts
        ],
    )


def axioms_line(axioms: Sequence[str] | None, note: str = "") -> str:
    """What the axiom audit found, for people: the axioms, those beyond Lean's own marked."""
    if axioms is None:
        return f"axioms: not audited ({note or 'Lean printed none'})"
    if not axioms:
        return "axioms: none"
    beyond = nonstandard(axioms)
    return f"axioms: {', '.join(axioms)}" + (f" (non-standard: {', '.join(beyond)})" if beyond else "")


def audit_summary(attempts: Sequence[AttemptReport]) -> list[str]:
    """Lines on the vacuous proofs and the proofs using non-standard axioms, if any."""
    lines = []
    vacuous = [a.theorem for a in attempts if a.outcome is AttemptOutcome.VACUOUS]
    if vacuous:
        lines.append(
            f"{plural(len(vacuous), 'proof is', 'proofs are')} vacuous (the theorem depends on sorryAx: "
            f"a sorry in its statement or in what its proof uses), not written back: {', '.join(vacuous)}"
        )
    lines += [
        f"{a.theorem} uses non-standard axioms: {', '.join(a.nonstandard_axioms)}"
        for a in attempts
        if a.proved and a.nonstandard_axioms
    ]
    lines += [
        f"{a.theorem} restates {a.restates}, a lemma of its repository with the same statement "
        "(`run` writes it back only with --keep-restatements)"
        for a in attempts
        if a.restates
    ]
    return lines
