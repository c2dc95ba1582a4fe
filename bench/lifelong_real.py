"""The lifelong job over real public Lean repositories: the metrics matrix and every
lifelong-learning metric, for plain fine-tuning, replay and EWC, over several seeds, and
EWC's weight swept.

    python bench/lifelong_real.py --sources DIR [--seeds 0 1 2] [--method M ...] [--ewc-sweep 1e6 1e8 1e12]
        [--repos NAME ...] [--test-fraction 0.2] [--retriever-len 256] [--train-len 256]
        [--work DIR] [--json OUT] [--quick]

Each repository of ``REPOSITORIES`` (or those ``--repos`` names) is taken at its pinned
commit from a git repository under ``--sources`` (``DIR/OWNER+NAME/repo``, a bare mirror,
or ``DIR/NAME``, a clone), or else cloned from
GitHub (needs the network), and extracted into ``--work``; the snapshots stay there, outside
this repository. ``--test-fraction`` is the share of each repository held out (the job's
0.2 by default; docs/lifelong.md measured with 0.5 on pfr and LeanAPAP).
Then ``leanagent run`` (the library's :class:`~agent.lifelong.job.LifelongJob`) goes over them
once per run: each method at each seed (the training's seed and the held-out split's), and
EWC at the first seed with each weight of ``--ewc-sweep``, starting from the bundled MiniLM
with the job's options (one epoch per repository, lr 2e-5, batch 16) but the input lengths
(256 tokens by default: CPU-friendly; the job's own are 2048 and 1024). Each run has its own
data directory and learner, and its result is kept in ``WORK/runs/NAME.json``: a run found
there (with the same repositories, test fraction and lengths) is not run again, so an
interrupted bench resumes, and two processes given disjoint ``--method``/``--seeds`` share
one ``--work`` (a last call with all of them prints the tables).

The tables: each metric of recall@10 and MRR per method, as the mean and standard deviation
over the seeds, and the score matrices so; recall@10 plasticity, stability, retention, FM, BWT
and EWC's weight; and each repository's held-out examples per seed. The JSON has every run's matrices, the scores before
each step and untrained, every metric, and the run reports. ``--quick``: the two smallest
repositories, one seed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.lifelong.job import LifelongJob, LifelongOptions, RetrieverTraining  # noqa: E402
from agent.lifelong.results import LifelongResult  # noqa: E402
from agent.reports.output import table  # noqa: E402
from agent.reports.tables import METRICS, SHOWN, metrics_payload  # noqa: E402
from agent.workspace.settings import Settings  # noqa: E402
from lean_env.trace.choice import TracerChoice  # noqa: E402
from retrieval.index import RecallScores  # noqa: E402
from retrieval.lifelong_metrics import RATIOS, ScoreMatrix, Undefined, lifelong_metrics  # noqa: E402
from retrieval.progressive import ProgressiveReport, ProgressRow  # noqa: E402
from retrieval.split import TEST_FRACTION  # noqa: E402
from retrieval.train_config import Consolidation, TrainConfig  # noqa: E402


@dataclass(frozen=True, slots=True)
class Pinned:
    owner: str
    name: str
    commit: str  # the snapshot measured

    @property
    def url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"


# Lean 4 projects without Mathlib of their own (batteries) and with it (the others: source
# extraction reads their own files; Mathlib's premises are not theirs, so only the uses of
# their own lemmas become examples), each with over a hundred held-out examples (test fraction
# 0.2, seed 0): batteries 186 (3,904 premises), pfr 125 (1,071), LeanAPAP 154 (924), carleson
# 355 (3,257), FLT 197 (3,890). Five: the fewest that give WF5 and WP5 a full window.
# (aesop had 4 held-out examples and mathematics_in_lean_source 14, with untrained recall
# near 1: columns without signal, replaced.)
REPOSITORIES = (
    Pinned("leanprover-community", "batteries", "45f65c8b8292f98a70a0eccb706f89bb3e69feab"),
    Pinned("teorth", "pfr", "01c9b666945eaf73b3f7d8b20ffe003f8640e630"),
    Pinned("YaelDillies", "LeanAPAP", "96325adf1d139b2adaa32d9839f096eec959480d"),
    Pinned("fpvandoorn", "carleson", "bd23c8ab61ecc9bd3a3a4eaa60284052f4bebcad"),
    Pinned("ImperialCollegeLondon", "FLT", "071d16bb51e87165b4f4b5466f14051344bf426b"),
)
QUICK = ("pfr", "LeanAPAP")

METHODS = {"none": Consolidation.NONE, "replay": Consolidation.REPLAY, "ewc": Consolidation.EWC}


def checkout(repo: Pinned, sources: Path | None, work: Path) -> Path:
    """``work/NAME`` holding ``repo`` at its pinned commit (extracted once)."""
    target = work / repo.name
    stamp = work / f".{repo.name}.commit"
    if target.is_dir() and stamp.is_file() and stamp.read_text().strip() == repo.commit:
        return target
    candidates = [] if sources is None else [sources / f"{repo.owner}+{repo.name}" / "repo", sources / repo.name]
    git_dir = next((c for c in candidates if c.exists()), None)
    if git_dir is None:
        git_dir = work / f".{repo.name}.git"
        if not git_dir.exists():
            subprocess.run(["git", "clone", "--bare", "--quiet", repo.url, str(git_dir)], check=True)
    elif (git_dir / ".git").exists():
        git_dir = git_dir / ".git"
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", repo.commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    stamp.write_text(repo.commit + "\n")
    return target


def value(v: float | Undefined) -> object:
    return "n/a" if isinstance(v, Undefined) else round(v, 2)


@dataclass(frozen=True, slots=True)
class Run:
    """One lifelong run of the bench."""

    method: str
    seed: int
    ewc_lambda: float

    @property
    def name(self) -> str:
        return f"{self.method}-seed{self.seed}" + (f"-lambda{self.ewc_lambda:g}" if self.method == "ewc" else "")


def plan(methods: list[str], seeds: list[int], sweep: list[float]) -> list[Run]:
    """Each method at each seed, then EWC at the first seed with each weight swept."""
    default = TrainConfig().ewc_lambda
    runs = [Run(m, s, default) for m in methods for s in seeds]
    if "ewc" in methods:
        runs += [Run("ewc", seeds[0], w) for w in sweep if w != default]
    return runs


def execute(run: Run, repos_file: Path, args: argparse.Namespace) -> dict[str, object]:
    """The run's result (see :func:`_run_json`), from its file under WORK/runs or run now."""
    kept = args.work / "runs" / f"{run.name}.json"
    if kept.is_file():
        found = json.loads(kept.read_text(encoding="utf-8"))
        if found.get("options") != _options(args):
            raise SystemExit(f"{kept} was run with other options ({found.get('options')}): give another --work")
        return found
    config = TrainConfig(
        consolidation=METHODS[run.method], seed=run.seed, ewc_lambda=run.ewc_lambda, max_length=args.train_len
    )
    training = RetrieverTraining(
        model=None, config=config, test_fraction=args.test_fraction, embed_length=args.retriever_len
    )
    options = LifelongOptions(repos_file, tracer=TracerChoice.SOURCE, training=training)
    settings = Settings.resolve(data_dir=args.work / "data" / run.name)
    load = os.getloadavg()
    start = time.perf_counter()
    result = LifelongJob(settings, options).run()
    seconds = time.perf_counter() - start
    assert result.training is not None
    print(f"{run.name}: {seconds:.0f} s, load average {load[0]:.2f} at the start", file=sys.stderr)
    payload = {"options": _options(args), **_run_json(run, result.training, seconds, load, result)}
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return payload


def spread(values: list[float | Undefined]) -> str:
    """mean ± standard deviation of the defined values (n/a when none is)."""
    defined = [v for v in values if isinstance(v, float | int)]
    if not defined:
        return "n/a"
    if len(defined) == 1:
        return f"{defined[0]:.2f}"
    return f"{statistics.fmean(defined):.2f} ± {statistics.stdev(defined):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=Path, default=None, help="where git repositories of the snapshots are")
    parser.add_argument("--work", type=Path, default=Path("/tmp/leanagent-lifelong-real"), help="checkouts, data")
    parser.add_argument("--quick", action="store_true", help=f"only {' and '.join(QUICK)}, one seed, no sweep")
    parser.add_argument("--method", choices=list(METHODS), action="append", default=None, help="repeatable")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--ewc-sweep", type=float, nargs="*", default=[1e6, 1e8, 1e12], help="EWC weights run besides the default"
    )
    parser.add_argument(
        "--repos", nargs="+", choices=[r.name for r in REPOSITORIES], default=None, help="a part of the repositories"
    )
    parser.add_argument("--test-fraction", type=float, default=TEST_FRACTION, help="share of each repository held out")
    parser.add_argument("--retriever-len", type=int, default=256, help="tokens embedded for the scores")
    parser.add_argument("--train-len", type=int, default=256, help="tokens embedded in training")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.quick:
        args.repos, args.seeds, args.ewc_sweep, args.work = QUICK, args.seeds[:1], [], args.work / "quick"
    repos = [r for r in REPOSITORIES if args.repos is None or r.name in args.repos]
    args.repos = [r.name for r in repos]  # in the pinned order, as the kept runs record them
    args.work.mkdir(parents=True, exist_ok=True)
    paths = [checkout(r, args.sources, args.work) for r in repos]
    repos_file = args.work / "repos.txt"
    repos_file.write_text("".join(f"{p.name}\n" for p in paths), encoding="utf-8")
    runs = {
        run: execute(run, repos_file, args) for run in plan(args.method or list(METHODS), args.seeds, args.ewc_sweep)
    }

    default = TrainConfig().ewc_lambda
    main_runs = [(run, result) for run, result in runs.items() if run.method != "ewc" or run.ewc_lambda == default]
    methods = list(dict.fromkeys(run.method for run, _ in main_runs))
    for score in SHOWN:
        names = [name for name, _ in _metrics(main_runs[0][1], score)]
        rows = []
        for method in methods:
            per_seed = [dict(_metrics(result, score)) for run, result in main_runs if run.method == method]
            rows.append([method, len(per_seed), *(spread([m[name] for m in per_seed]) for name in names)])
        print(f"\n{score}: lifelong-learning metrics (percentage points; CFR a ratio), mean ± standard deviation over")
        print("the seeds (docs/lifelong.md)")
        print(table(["method", "seeds", *names], rows))
        print(f"\n{score} (percentage points) on each repository untrained and after each step, mean ± standard")
        print("deviation over the seeds")
        print(table(["method", "after", *main_runs[0][1]["repositories"]], _matrix_rows(main_runs, methods, score)))
    sweep = sorted(
        (run.ewc_lambda, result) for run, result in runs.items() if run.method == "ewc" and run.seed == args.seeds[0]
    )
    if len(sweep) > 1:
        print(f"\nEWC's weight (seed {args.seeds[0]}): recall@10 plasticity against stability")
        wanted = ("plasticity", "stability", "retention", "FM", "BWT")
        rows = [
            [f"{w:g}", *(value(dict(_metrics(result, "recall@10"))[name]) for name in wanted)] for w, result in sweep
        ]
        print(table(["EWC weight", *wanted], rows))
    print("\nheld-out examples per repository (each seed splits its own)")
    rows = [[run.name, *result["held_out"].values()] for run, result in runs.items() if run.method == methods[0]]
    print(table(["run", *next(iter(runs.values()))["held_out"]], rows))
    print(f"\nrepositories at: {', '.join(f'{r.name}@{r.commit[:12]}' for r in repos)}")
    if args.json:
        payload = {
            "repositories": [{"repo": r.url, "commit": r.commit} for r in repos],
            "options": {"seeds": args.seeds, **_options(args)},
            "runs": list(runs.values()),
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def _matrix_rows(runs: list[tuple[Run, dict]], methods: list[str], score: str) -> list[list[object]]:
    """Per method, the untrained scores and the matrix's rows, each cell over the seeds."""
    rows: list[list[object]] = []
    for method in methods:
        results = [result for run, result in runs if run.method == method]
        labelled = [("untrained", [r["untrained"][score] for r in results])]
        labelled += [
            (step["repo"], [r["matrices"][score][i] for r in results]) for i, step in enumerate(results[0]["steps"])
        ]
        for label, per_seed in labelled:
            cells = zip(*per_seed, strict=True)  # a repository's scores, one per seed
            rows.append([method, label, *(spread([100 * v for v in cell if v is not None]) for cell in cells)])
    return rows


def _options(args: argparse.Namespace) -> dict[str, object]:
    """What a kept run must have been run with to stand for a run asked for now."""
    return {
        "repos": args.repos,
        "test_fraction": args.test_fraction,
        "retriever_len": args.retriever_len,
        "train_len": args.train_len,
    }


def _metrics(result: dict, score: str) -> list[tuple[str, float | Undefined]]:
    """(name, value) of ``score``'s metrics for a run's JSON, in report order, read anew from
    the matrices it keeps, so that a run kept from before a metric's definition changed (as
    stability's did on 2026-12-07) is tabled by today's: fractions in percentage points, as
    the LeanAgent paper prints them, ratios as they are (Undefined for a metric the run could
    not define)."""
    matrix = ScoreMatrix(
        tuple(tuple(row) for row in result["matrices"][score]),
        tuple(result["repositories"].index(step["repo"]) for step in result["steps"]),
        tuple(result["before"][score]),
        tuple(result["untrained"][score]),
    )
    return [
        (name, value if isinstance(value, Undefined) or name in RATIOS else 100 * value)
        for name, value in lifelong_metrics(matrix).named()
    ]


def _run_json(
    run: Run, report: ProgressiveReport, seconds: float, load: tuple[float, ...], result: LifelongResult
) -> dict[str, object]:
    def per_step(scores: Callable[[ProgressRow], RecallScores | None], name: str) -> list[float | None]:
        return [None if (s := scores(r)) is None or not s.examples else METRICS[name](s) for r in report.rows]

    last = report.rows[-1].scores
    return {
        "method": run.method,
        "seed": run.seed,
        "ewc_lambda": run.ewc_lambda,
        "seconds": seconds,
        "load_average_at_start": load,
        "steps_before_this_run": report.picked_up,  # a learner kept from an earlier run of the bench
        "steps": [{"repo": Path(r.repo).name, "train_examples": r.train_examples} for r in report.rows],
        "repositories": [Path(r).name for r in report.repos],
        "held_out": {Path(r).name: last[r].examples if r in last else 0 for r in report.repos},
        "matrices": {name: report.matrix(METRICS[name]) for name in METRICS},
        "before": {name: per_step(lambda r: r.before, name) for name in METRICS},
        "untrained": {name: per_step(lambda r: r.untrained, name) for name in METRICS},
        "metrics": {name: metrics_payload(report.metrics(METRICS[name])) for name in METRICS},
        "report": [str(p) for p in result.report],
        "plots": [str(p) for _, p in result.plots],
    }


if __name__ == "__main__":
    sys.exit(main())
