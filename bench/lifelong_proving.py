"""Lifelong proving, measured as LeanAgent measures retrieval (issue 40, item 4): a curriculum
over real corpora treated as repositories, one step each; after each step, Pass@1 on the
held-out theorems of every repository learned so far and of the next one.

    python bench/lifelong_proving.py --lean-src GIT_DIR --lean-bin DIR
        [--repos control,core,run-dev,run-test] [--learners off,memory,full] [--sample N]
        [--time-limit S] [--work DIR] [--json OUT]

The repositories are the corpora of ``bench/evaluate_real.py`` (built by its functions): the
core-library copies ``control`` and ``core``, and ``tests/lean/run``'s two halves as two
repositories (``run-dev``, ``run-test``). They are ordered by the curriculum (``run``'s
order: difficulty e^S over the stored proofs). The held-out theorems of a repository are the
test side of the retriever's own split (``evaluate --split test``, fraction 0.2, seed 0; a
seeded ``--sample`` of it), so a trained retriever never saw them, and ``evaluate`` never
lets the suggester see their proofs nor the ranking their earlier attempts.

Learners (``--learners``):

* ``off``: no learning across repositories. Each repository is evaluated in a data
  directory holding it alone: the suggester remembers that repository's other proofs, the
  premises are the lexical ones, no ranking. Its score does not depend on the step, so its
  row is the same after every step; it is also every learner's baseline (FWT's "untrained").
* ``memory``: one data directory; step t ingests repository t beside the earlier ones. The
  suggester remembers every stored proof (the earlier repositories' too); lexical premises,
  no ranking.
* ``full``: ``memory``, with ``run``'s progressive retriever (one training step per
  repository, ``leanagent run`` as a library: :class:`agent.lifelong.job.LifelongJob`) giving
  the premises, and the tactic ranking learned from the attempts recorded so far (the earlier
  evaluations', never those at the evaluated theorems).

The next repository (R[t][t+1]) is evaluated in a copy of step t's data directory with it
ingested (its other proofs stored, as ``prove`` on a freshly ingested repository has them),
which is then deleted: nothing of it is learned before its own step.

The table gives each learner's Pass@1 matrix (rows: after step t; columns: repositories in
curriculum order; the cell right of the diagonal is the next repository) and the lifelong
metrics of :mod:`retrieval.lifelong_metrics` on it, in percentage points. Every cell is kept
in ``WORK/cells.json`` as it finishes, so an interrupted benchmark goes on where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluate_real import core_project, lean_version, run_halves  # noqa: E402

from agent.evaluation.evaluate import EvaluationResult, Selection, evaluate  # noqa: E402
from agent.lifelong.job import LifelongJob, LifelongOptions, RetrieverTraining  # noqa: E402
from agent.proving.config import ProvingConfig  # noqa: E402
from agent.reports.output import table  # noqa: E402
from agent.search.tree import SearchConfig  # noqa: E402
from agent.workspace.data import ingest_repositories, open_store  # noqa: E402
from agent.workspace.settings import Settings  # noqa: E402
from curriculum.ordering import curriculum_of  # noqa: E402
from lean_env.interactive.choice import ProofBackendChoice  # noqa: E402
from lean_env.records import RepoSpec  # noqa: E402
from lean_env.trace.choice import TracerChoice  # noqa: E402
from retrieval.lifelong_metrics import RATIOS, ScoreMatrix, Undefined, lifelong_metrics  # noqa: E402

LEARNERS = ("off", "memory", "full")
REPOSITORIES = ("control", "core", "run-dev", "run-test")


def projects(source: Path, work: Path, names: list[str]) -> dict[str, Path]:
    """The project directory of each repository named."""
    halves = {f"run-{h.name}": h.project for h in run_halves(source, work)}
    return {name: halves[name] if name in halves else core_project(source, work, name) for name in names}


def curriculum_order(found: dict[str, Path], work: Path) -> list[str]:
    """The repositories in the curriculum's order, read from a scratch database of them all."""
    settings = Settings.resolve(data_dir=work / "order", db_url=None)
    with open_store(settings) as store:
        ingest_repositories(store, [RepoSpec(str(p)) for p in found.values()], settings, TracerChoice.SOURCE)
        locations = [r.location for r in curriculum_of(store).repos]
    by_location = {RepoSpec(str(p)).location: name for name, p in found.items()}
    return [by_location[loc] for loc in locations if loc in by_location]


class Cells:
    """Pass@1 cells kept on disk as they finish: (learner, step, repository) -> result."""

    def __init__(self, path: Path, options: dict[str, object]) -> None:
        self.path, self.options = path, options
        kept = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        # Cells measured under other options stand for nothing asked now.
        self.cells: dict[str, dict] = kept.get("cells", {}) if kept.get("options") == options else {}

    def get(self, key: str, measure: Callable[[], dict]) -> dict:
        if key not in self.cells:
            self.cells[key] = measure()
            self.path.write_text(json.dumps({"options": self.options, "cells": self.cells}, indent=1), encoding="utf-8")
        return self.cells[key]


def cell(result: EvaluationResult, wall: float) -> dict:
    return {
        "pass_at_1": result.overall.rate,
        "proved": result.overall.proved,
        "total": result.overall.total,
        "max_seconds": round(max((a.seconds for a in result.attempts), default=0.0), 2),
        "expansions_per_proof": round(
            sum(a.expansions for a in result.attempts if a.proved) / max(1, result.overall.proved), 2
        ),
        "wall_seconds": round(wall, 1),
    }


def evaluate_in(
    data_dir: Path, project: Path, config: ProvingConfig, args: argparse.Namespace, *, retriever: bool
) -> dict:
    """Pass@1 on ``project``'s held-out theorems, proved with the data directory's memory
    (and its trained retriever when ``retriever``)."""
    settings = Settings.resolve(data_dir=data_dir, db_url=None)
    selection = Selection(repo=str(project), split_test=True, sample=args.sample, seed=args.seed)
    started = time.monotonic()
    with open_store(settings) as store:
        result = evaluate(
            store,
            selection,
            config,
            data_dir=data_dir,
            retriever=str(settings.layout.retriever) if retriever else None,
        )
    return cell(result, time.monotonic() - started)


def ingest(data_dir: Path, project: Path) -> None:
    settings = Settings.resolve(data_dir=data_dir, db_url=None)
    with open_store(settings) as store:
        ingest_repositories(store, [RepoSpec(str(project))], settings, TracerChoice.SOURCE)


def learn_step(learner: str, data_dir: Path, order: list[str], found: dict[str, Path], step: int) -> None:
    """Step ``step`` of ``learner``: its repository ingested (``full``: and the retriever's
    training step taken by ``run``)."""
    if learner == "memory":
        ingest(data_dir, found[order[step]])
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    repos = data_dir / f"repos-{step + 1}.txt"
    repos.write_text("".join(f"{found[name]}\n" for name in order[: step + 1]), encoding="utf-8")
    settings = Settings.resolve(data_dir=data_dir, db_url=None)
    options = LifelongOptions(repos, tracer=TracerChoice.SOURCE, training=RetrieverTraining(device="cpu"))
    LifelongJob(settings, options).run()


def run_learner(
    learner: str, order: list[str], found: dict[str, Path], cells: Cells, args: argparse.Namespace
) -> list[list[float | None]]:
    """The Pass@1 matrix of ``learner``: R[t][j] for j <= t + 1 (None beyond)."""
    n = len(order)
    config = proving_config(args, ranking=learner == "full")
    matrix: list[list[float | None]] = [[None] * n for _ in range(n)]
    if learner == "off":
        for j, name in enumerate(order):
            alone = args.work / "off" / name

            def measure(alone: Path = alone, name: str = name) -> dict:
                ingest(alone, found[name])
                return evaluate_in(alone, found[name], config, args, retriever=False)

            score = cells.get(f"off/{name}", measure)["pass_at_1"]
            for t in range(max(0, j - 1), n):
                matrix[t][j] = score
        return matrix
    data_dir = args.work / learner
    for t in range(n):
        done = [f"{learner}/{t}/{name}" in cells.cells for name in order[: min(t + 2, n)]]
        if not all(done):
            learn_step(learner, data_dir, order, found, t)
        for j in range(t + 1):
            key = f"{learner}/{t}/{order[j]}"
            matrix[t][j] = cells.get(
                key, lambda j=j: evaluate_in(data_dir, found[order[j]], config, args, retriever=learner == "full")
            )["pass_at_1"]
        if t + 1 < n:
            matrix[t][t + 1] = cells.get(
                f"{learner}/{t}/{order[t + 1]}",
                lambda t=t: next_repository(data_dir, found[order[t + 1]], config, args, learner),
            )["pass_at_1"]
    return matrix


def next_repository(
    data_dir: Path, project: Path, config: ProvingConfig, args: argparse.Namespace, learner: str
) -> dict:
    """The next repository's Pass@1 by the learner as step t left it: in a copy of its data
    directory with the repository ingested, deleted afterwards."""
    copy = data_dir.with_name(f"{data_dir.name}-next")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(data_dir, copy)
    try:
        ingest(copy, project)
        return evaluate_in(copy, project, config, args, retriever=learner == "full")
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def proving_config(args: argparse.Namespace, *, ranking: bool) -> ProvingConfig:
    return ProvingConfig(
        backend=ProofBackendChoice.SERVER,
        search=SearchConfig(
            num_candidates=args.candidates, max_expansions=args.max_expansions, time_limit=args.time_limit
        ),
        tactic_timeout=args.tactic_timeout,
        check_timeout=args.check_timeout,
        device="cpu",
        ranking=ranking,
    )


def metrics(matrix: list[list[float | None]], baseline: list[float | None]) -> list[tuple[str, float | Undefined]]:
    """The lifelong metrics of a Pass@1 matrix, in percentage points (ratios as they are):
    ``before[t]`` is R[t-1][t] (the next-repository cell), ``untrained`` the ``off`` scores."""
    n = len(matrix)
    # Only the learned part is the matrix the metrics read; the next-repository cell is `before`.
    learned = [[matrix[t][j] if j <= t else None for j in range(n)] for t in range(n)]
    before = [None, *(matrix[t - 1][t] for t in range(1, n))]
    values = lifelong_metrics(ScoreMatrix.square(learned, before=before, untrained=baseline)).named()
    return [(name, v if isinstance(v, Undefined) or name in RATIOS else 100 * v) for name, v in values]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lean-src", type=Path, required=True, help="the Lean 4 snapshot (git dir or work tree)")
    parser.add_argument("--lean-bin", type=Path, required=True, help="the bin directory of that Lean, built")
    parser.add_argument("--work", type=Path, default=Path("/tmp/leanagent-lifelong-proving"))
    parser.add_argument(
        "--repos", default=",".join(REPOSITORIES), help="comma-separated, of " + ", ".join(REPOSITORIES)
    )
    parser.add_argument("--learners", default=",".join(LEARNERS), help="comma-separated, of " + ", ".join(LEARNERS))
    parser.add_argument("--sample", type=int, default=12, help="held-out theorems per repository (default 12)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--max-expansions", type=int, default=30)
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument(
        "--tactic-timeout",
        type=float,
        default=None,
        help="seconds per tactic (default: the CLI's, from the time limit)",
    )
    parser.add_argument("--check-timeout", type=float, default=60.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    names, learners = args.repos.split(","), args.learners.split(",")
    if unknown := [n for n in names if n not in REPOSITORIES] + [x for x in learners if x not in LEARNERS]:
        parser.error(f"unknown: {', '.join(unknown)}")
    if "off" not in learners:
        learners.insert(0, "off")  # every learner's baseline

    os.environ["PATH"] = f"{args.lean_bin.resolve()}{os.pathsep}{os.environ.get('PATH', '')}"
    args.work.mkdir(parents=True, exist_ok=True)
    found = projects(args.lean_src, args.work, names)
    order = curriculum_order(found, args.work)
    options = {k: v for k, v in vars(args).items() if k not in ("json", "learners", "work", "lean_bin", "lean_src")}
    cells = Cells(args.work / "cells.json", {**options, "order": order})
    started = time.monotonic()
    matrices = {learner: run_learner(learner, order, found, cells, args) for learner in learners}
    baseline = [matrices["off"][len(order) - 1][j] for j in range(len(order))]

    print(
        f"{lean_version(args.lean_bin)}; server backend, {args.candidates} candidates, {args.max_expansions} "
        f"expansions, {args.time_limit:g} s limit; {args.sample} held-out theorems per repository "
        f"(the retriever's test split); curriculum order: {', '.join(order)}"
    )
    rows = [
        [learner, f"after {order[t]}", *("" if v is None else f"{100 * v:.0f}" for v in matrix[t])]
        for learner, matrix in matrices.items()
        for t in range(len(order))
    ]
    print(table(["learner", "step", *order], rows))
    named = {learner: metrics(matrix, baseline) for learner, matrix in matrices.items()}
    metric_names = [name for name, _ in next(iter(named.values()))]
    print(
        table(
            ["metric", *learners],
            [
                [
                    name,
                    *(
                        "-" if isinstance(v, Undefined) else f"{v:.2f}"
                        for v in (dict(named[x])[name] for x in learners)
                    ),
                ]
                for name in metric_names
            ],
        )
    )
    print(f"wall {time.monotonic() - started:.0f} s (cells kept in {cells.path} are not measured again)")
    if args.json:
        payload = {
            "lean": lean_version(args.lean_bin),
            "options": {**options, "order": order},
            "matrices": matrices,
            "metrics": {x: {n: None if isinstance(v, Undefined) else v for n, v in named[x]} for x in learners},
            "cells": cells.cells,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
