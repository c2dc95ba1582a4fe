"""Pass@1 of ``leanagent evaluate`` on a real corpus with a real Lean: the June 2021 Lean 4's
own tests, ``tests/lean/run/*.lean`` (standalone files written by Lean's developers).

    python bench/evaluate_real.py --lean-src GIT_DIR --lean-bin DIR [--work DIR] [--sample N]
        [--time-limit S] [--max-expansions N] [--candidates N] [--half dev|test|both] [--proof-backend file|server]
        [--lean-servers N] [--json OUT]

``--lean-src`` is the Lean 4 source snapshot (a git directory, as ``fetch`` brings
github:Vtec234/lean4, or a work tree) and ``--lean-bin`` the bin directory of that Lean built by
``shared/tools/old-lean.sh`` (put first on PATH for this process and the Lean runs it starts,
never for anything else). The files without a ``sorry`` are split by name: the first half
(sorted) is the **dev** half, where changes to the prover are tuned, the second the **test**
half, reported untuned; each half is one project (``WORK/lean4-run-dev``, ``-test``) with a
``lean-toolchain``, ingested by source extraction into ``WORK/data``. Then the library's
:func:`agent.evaluation.job.evaluate` runs on every theorem with a proof (or a seeded ``--sample``
of each half), one theorem at a time with the built-in suggester and the file check (through
Lean's language server by default, ``--lean-servers`` of them checking candidates at once;
``--proof-backend file`` for one ``lean`` run per check), and
the table gives Pass@1 per half at the budgets of ``--budgets`` (read from the curve of one
run at ``--time-limit``: the search is deterministic, so a theorem proved within t seconds
of a longer run is proved by a run limited to t, up to timing noise).

The corpus and the database stay in ``--work``, outside this repository; re-running resumes
an evaluation that was interrupted.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.evaluation.job import EvaluationResult, PassRate, Selection, evaluate  # noqa: E402
from agent.proving.theorem import ProvingConfig  # noqa: E402
from agent.reports.output import table  # noqa: E402
from agent.search.tree import SearchConfig  # noqa: E402
from agent.workspace.data import ingest_repositories, open_store  # noqa: E402
from agent.workspace.settings import Settings  # noqa: E402
from lean_env.interactive.choice import ProofBackendChoice  # noqa: E402
from lean_env.records import RepoSpec  # noqa: E402
from lean_env.trace.choice import TracerChoice  # noqa: E402

RUN_DIR = "tests/lean/run"
HALVES = ("dev", "test")
# A `sorry` outside comments: such a file is not a clean original.
_SORRY_RE = re.compile(r"(?<![\w.'])sorry(?![\w'])")
_COMMENT_RE = re.compile(r"--[^\n]*|/-.*?-/", re.S)


def corpus_files(source: Path) -> dict[str, str]:
    """``{name: text}`` of the ``.lean`` files in ``RUN_DIR`` of a git directory or work tree."""
    tree = source / RUN_DIR
    if tree.is_dir():
        return {p.name: p.read_text(encoding="utf-8") for p in sorted(tree.glob("*.lean"))}
    archive = subprocess.run(
        ["git", f"--git-dir={source}", "archive", "--format=tar", "HEAD", RUN_DIR], capture_output=True, check=True
    ).stdout
    files = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".lean"):
                handle = tar.extractfile(member)
                assert handle is not None
                files[Path(member.name).name] = handle.read().decode("utf-8")
    return dict(sorted(files.items()))


def build_projects(files: dict[str, str], work: Path, toolchain: str) -> dict[str, Path]:
    """The dev and test projects: the clean files split by sorted name, each half a folder."""
    clean = [name for name, text in files.items() if not _SORRY_RE.search(_COMMENT_RE.sub("", text))]
    half = (len(clean) + 1) // 2
    projects = {}
    for which, names in zip(HALVES, (clean[:half], clean[half:]), strict=True):
        root = work / f"lean4-run-{which}"
        root.mkdir(parents=True, exist_ok=True)
        (root / "lean-toolchain").write_text(f"{toolchain}\n", encoding="utf-8")
        for name in names:
            path = root / name
            if not path.is_file() or path.read_text(encoding="utf-8") != files[name]:
                path.write_text(files[name], encoding="utf-8")
        projects[which] = root
    return projects


def lean_version(lean_bin: Path) -> str:
    done = subprocess.run([str(lean_bin / "lean"), "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lean-src", type=Path, required=True, help="the Lean 4 snapshot (git dir or work tree)")
    parser.add_argument("--lean-bin", type=Path, required=True, help="the bin directory of that Lean, built")
    parser.add_argument("--work", type=Path, default=Path("/tmp/leanagent-evaluate-real"))
    parser.add_argument("--half", choices=(*HALVES, "both"), default="both")
    parser.add_argument("--sample", type=int, default=None, help="a seeded sample of N theorems of each half")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=60.0, help="search seconds per theorem (default 60)")
    parser.add_argument("--max-expansions", type=int, default=30)
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument("--budgets", default="20,60", help="budgets (s) the table reads Pass@1 at")
    parser.add_argument("--tactic-timeout", type=float, default=20.0)
    parser.add_argument("--check-timeout", type=float, default=60.0)
    parser.add_argument(
        "--proof-backend",
        choices=[ProofBackendChoice.FILE.value, ProofBackendChoice.SERVER.value],
        default=ProofBackendChoice.SERVER.value,
        help="the proof environment: `lean` once per check, or through its language server (default)",
    )
    parser.add_argument(
        "--lean-servers", type=int, default=1, help="language servers per theorem, checking candidates at once"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    os.environ["PATH"] = f"{args.lean_bin.resolve()}{os.pathsep}{os.environ.get('PATH', '')}"
    version = lean_version(args.lean_bin)
    projects = build_projects(corpus_files(args.lean_src), args.work, toolchain="leanprover/lean4:nightly-2021-06")
    settings = Settings.resolve(data_dir=args.work / "data", db_url=None)
    halves = HALVES if args.half == "both" else (args.half,)
    config = ProvingConfig(
        backend=ProofBackendChoice(args.proof_backend),
        search=SearchConfig(
            num_candidates=args.candidates, max_expansions=args.max_expansions, time_limit=args.time_limit
        ),
        tactic_timeout=args.tactic_timeout,
        check_timeout=args.check_timeout,
        servers=args.lean_servers,
    )
    budgets = [float(b) for b in args.budgets.split(",")]
    rows, results = [], {}
    with open_store(settings) as store:
        ingest_repositories(store, [RepoSpec(str(projects[h])) for h in halves], settings, TracerChoice.SOURCE)
        for which in halves:
            started = time.monotonic()
            selection = Selection(repo=str(projects[which]), sample=args.sample, seed=args.seed)
            result = evaluate(store, selection, config, data_dir=settings.data_dir)
            wall = time.monotonic() - started
            results[which] = (result, wall)
            rows.append(_row(which, result, budgets, wall))
    at = [f"Pass@1 at {b:g} s" for b in budgets]
    headers = ["half", "theorems", *at, "95% interval (limit)", "outcomes", "wall s"]
    print(
        f"{version}; {args.proof_backend} backend ({args.lean_servers} server(s)), "
        f"{args.candidates} candidates, {args.max_expansions} expansions, "
        f"{args.time_limit:g} s limit"
    )
    print(table(headers, rows))
    if args.json:
        payload = {
            "lean": version,
            "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "halves": {which: {**r.to_json(), "wall_seconds": round(w, 1)} for which, (r, w) in results.items()},
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def _row(which: str, result: EvaluationResult, budgets: list[float], wall: float) -> list[object]:
    total = len(result.attempts)
    at = [f"{100 * result.pass_at(b):.1f}%" for b in budgets]
    rate: PassRate = result.overall
    outcomes = ", ".join(f"{n} {o}" for o, n in result.outcomes().items() if n)
    return [which, total, *at, f"{100 * rate.low:.1f}-{100 * rate.high:.1f}%", outcomes, round(wall)]


if __name__ == "__main__":
    sys.exit(main())
