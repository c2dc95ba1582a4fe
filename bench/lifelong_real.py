"""The lifelong job over real public Lean repositories: the metrics matrix and every
lifelong-learning metric, for plain fine-tuning, replay and EWC.

    python bench/lifelong_real.py --sources DIR [--quick] [--json OUT] [--work DIR] [--method M]

Each repository of ``REPOSITORIES`` is taken at its pinned commit from a git repository under
``--sources`` (``DIR/OWNER+NAME/repo``, a bare one as mirrors keep them, or ``DIR/NAME``, a
clone), or else cloned from GitHub (needs the network), and extracted into ``--work``; the
snapshots stay there, outside this repository. Then ``leanagent run`` (the library's
:class:`~agent.lifelong.LifelongJob`) goes over them once per method, on one database (ingest
by source extraction, once), each method its own learner, starting from the bundled MiniLM
with the job's default options (one epoch per repository, lr 2e-5, batch 16, seed 0). The
table shows the metrics of recall@10 and of MRR and each repository's recall@10 after the
last step; the JSON has the matrices, each repository's scores before its step, every metric
and the run reports (with the plots: line plots and heat maps). ``--quick``: the two
smallest repositories only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.lifelong import LifelongJob, LifelongOptions, LifelongResult, RetrieverTraining  # noqa: E402
from agent.output import table  # noqa: E402
from agent.render import METRICS, SHOWN, metrics_payload  # noqa: E402
from agent.settings import Settings  # noqa: E402
from lean_env.trace.choice import TracerChoice  # noqa: E402
from retrieval.index import RecallScores  # noqa: E402
from retrieval.lifelong_metrics import Undefined  # noqa: E402
from retrieval.progressive import ProgressiveReport, ProgressRow  # noqa: E402
from retrieval.train import Consolidation, TrainConfig  # noqa: E402


@dataclass(frozen=True, slots=True)
class Pinned:
    owner: str
    name: str
    commit: str  # the snapshot measured

    @property
    def url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"


# Lean 4 projects without Mathlib of their own (batteries, aesop) and with it (the others:
# source extraction reads their own files; Mathlib's premises are not theirs, so only the
# uses of their own lemmas become examples). Held-out theorems (test fraction 0.2, seed 0):
# batteries 186, aesop 4, pfr 125, LeanAPAP 154, mathematics_in_lean_source 14. Five: the fewest
# that give WF5 and WP5 a window; every step re-embeds all premises seen (9,600 at the end).
REPOSITORIES = (
    Pinned("leanprover-community", "batteries", "45f65c8b8292f98a70a0eccb706f89bb3e69feab"),
    Pinned("leanprover-community", "aesop", "b5b9e2bb45ce91e4bc44eaa738c3a8910404ab82"),
    Pinned("teorth", "pfr", "01c9b666945eaf73b3f7d8b20ffe003f8640e630"),
    Pinned("YaelDillies", "LeanAPAP", "96325adf1d139b2adaa32d9839f096eec959480d"),
    Pinned("avigad", "mathematics_in_lean_source", "c7a19becc9b7b4e696b0746b135d8c6da1aba707"),
)
QUICK = ("aesop", "mathematics_in_lean_source")

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
    return "n/a" if isinstance(v, Undefined) else round(v, 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=Path, default=None, help="where git repositories of the snapshots are")
    parser.add_argument("--work", type=Path, default=Path("/tmp/leanagent-lifelong-real"), help="checkouts, data")
    parser.add_argument("--quick", action="store_true", help=f"only {' and '.join(QUICK)}")
    parser.add_argument("--method", choices=list(METHODS), action="append", default=None, help="repeatable")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    repos = [r for r in REPOSITORIES if not args.quick or r.name in QUICK]
    args.work.mkdir(parents=True, exist_ok=True)
    paths = [checkout(r, args.sources, args.work) for r in repos]
    repos_file = args.work / ("repos-quick.txt" if args.quick else "repos.txt")
    repos_file.write_text("".join(f"{p.name}\n" for p in paths), encoding="utf-8")
    settings = Settings.resolve(data_dir=args.work / ("data-quick" if args.quick else "data"))

    runs = []  # (method, report, seconds, load average at the start, the run's result)
    for method in args.method or list(METHODS):
        training = RetrieverTraining(model=None, config=TrainConfig(consolidation=METHODS[method]))
        options = LifelongOptions(repos_file, tracer=TracerChoice.SOURCE, training=training)
        load = os.getloadavg()
        start = time.perf_counter()
        result = LifelongJob(settings, options).run()
        seconds = time.perf_counter() - start
        assert result.training is not None
        print(f"{method}: {seconds:.0f} s, load average {load[0]:.2f} at the start", file=sys.stderr)
        runs.append((method, result.training, seconds, load, result))

    for score in SHOWN:
        named = [(method, report.metrics(METRICS[score]).named()) for method, report, *_ in runs]
        print(f"\n{score}: lifelong-learning metrics (docs/lifelong.md)")
        print(table(["method", *(name for name, _ in named[0][1])], [[m, *(value(v) for _, v in n)] for m, n in named]))
    first = runs[0][1]
    print(f"\nrecall@10 after the last step (curriculum order: {', '.join(Path(r.repo).name for r in first.rows)})")
    rows = [
        [method, *(value(v) if v is not None else "-" for v in report.matrix(METRICS["recall@10"])[-1]), round(seconds)]
        for method, report, seconds, *_ in runs
    ]
    print(table(["method", *(Path(repo).name for repo in first.repos), "seconds"], rows))
    print(f"\nrepositories at: {', '.join(f'{r.name}@{r.commit[:12]}' for r in repos)}")
    if args.json:
        payload = {
            "repositories": [{"repo": r.url, "commit": r.commit} for r in repos],
            "runs": [_run_json(*run) for run in runs],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def _run_json(
    method: str, report: ProgressiveReport, seconds: float, load: tuple[float, ...], result: LifelongResult
) -> dict[str, object]:
    def per_step(scores: Callable[[ProgressRow], RecallScores | None], name: str) -> list[float | None]:
        return [None if (s := scores(r)) is None or not s.examples else METRICS[name](s) for r in report.rows]

    return {
        "method": method,
        "seconds": seconds,
        "load_average_at_start": load,
        "steps_before_this_run": report.picked_up,  # a learner kept from an earlier run of the bench
        "steps": [{"repo": Path(r.repo).name, "train_examples": r.train_examples} for r in report.rows],
        "repositories": [Path(r).name for r in report.repos],
        "matrices": {name: report.matrix(METRICS[name]) for name in METRICS},
        "before": {name: per_step(lambda r: r.before, name) for name in METRICS},
        "untrained": {name: per_step(lambda r: r.untrained, name) for name in METRICS},
        "metrics": {name: metrics_payload(report.metrics(METRICS[name])) for name in METRICS},
        "report": [str(p) for p in result.report],
        "plots": [str(p) for _, p in result.plots],
    }


if __name__ == "__main__":
    sys.exit(main())
