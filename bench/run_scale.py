"""``leanagent run`` over a hundred repositories: time and peak memory against the number of
repositories, what a run leaves behind, a second run with nothing new, and a kill and resume.

    python bench/run_scale.py [--repos 100] [--sizes 25,50,100] [--seed 0] [--work DIR] [--json OUT]

The repositories are generated Lake projects of a realistic shape (seeded): 100 to 1000
theorems each, in files of about 40 under a namespace per file, with definitions, lemmas
that later proofs use (``rw``, ``simp``, ``exact``), tactic proofs of one to four steps,
term proofs, and a sorry in about one theorem in twenty. Each row is one
``leanagent run REPOS --tracer source --no-train --no-prove --json`` (ingest by source
extraction and the curriculum: what a run does before training and proving, which need a
model and a Lean) in a fresh data directory, in a process of its own: its wall seconds and
peak resident memory (``ru_maxrss``), and the slope of both against the number of
repositories (a least-squares line over the sizes; linear growth: the seconds per
repository stay level). After the largest run, in the same process: the file descriptors,
threads, child processes and ``leanagent-*`` temporary files it left (each counted against
before the run). Then the same run again (nothing new: only the check that every commit is
stored), and the largest run killed (SIGKILL) at a seeded moment between a fifth and four
fifths of its work (after its process's start-up), run again to its end, and its database compared with the
uninterrupted one: ``leanagent export`` (every stored repository, file, premise and theorem,
in a fixed order) must give the same bytes.

Everything lives in ``--work`` (default /tmp/leanagent-run-scale), outside this repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.reports.output import table  # noqa: E402

TOOLCHAIN = "leanprover/lean4:v4.20.0\n"
LAKEFILE = "import Lake\nopen Lake DSL\npackage {name}\nlean_lib {lib}\n"
PER_FILE = 40  # theorems per file


# ---- the repositories -------------------------------------------------------------------


def project_source(rng: random.Random, lib: str, index: int, theorems: int) -> str:
    """One file: a namespace with two definitions, lemmas about them, and theorems whose
    proofs use the lemmas before them."""
    ns = f"{lib}.F{index}"
    lines = [f"namespace {ns}", "", f"def f (n : Nat) : Nat := n + {index}", "", "def g (n : Nat) : Nat := 2 * n", ""]
    lemmas: list[str] = []
    for k in range(theorems):
        name = f"t{k}"
        kind = rng.random()
        if kind < 0.05:
            body = "by\n  sorry"
        elif kind < 0.3 or not lemmas:
            body = "by\n  simp [f]" if rng.random() < 0.5 else f"Nat.add_comm a {k}"
            lemmas.append(name)
        elif kind < 0.6:
            used = rng.sample(lemmas, min(len(lemmas), rng.randint(1, 3)))
            steps = [f"rw [{used[0]}]"] + [f"simp [{u}]" for u in used[1:]]
            body = "by\n  " + "\n  ".join(steps)
        elif kind < 0.85:
            body = f"by\n  intro h\n  exact {rng.choice(lemmas)} a"
        else:
            body = f"{rng.choice(lemmas)} a"
        statement = f"(a : Nat) : f a + {k} = {k} + f a" if rng.random() < 0.5 else "(a : Nat) : g a = a + a"
        lines += [f"theorem {name} {statement} := {body}", ""]
    lines.append(f"end {ns}")
    return "\n".join(lines) + "\n"


def make_repositories(root: Path, count: int, seed: int) -> list[Path]:
    """``count`` Lake projects under ``root``, the same for the same seed (their commits are
    hashes of their content). Shaped like Lean, not meant to compile: nothing here runs Lean."""
    rng = random.Random(seed)
    projects = []
    for r in range(count):
        theorems = rng.randint(100, 1000)
        project, lib = root / f"repo{r:03d}", f"Lib{r:03d}"
        (project / lib).mkdir(parents=True, exist_ok=True)
        for index, start in enumerate(range(0, theorems, PER_FILE)):
            text = project_source(rng, lib, index, min(PER_FILE, theorems - start))
            (project / lib / f"F{index}.lean").write_text(text, encoding="utf-8")
        (project / "lean-toolchain").write_text(TOOLCHAIN, encoding="utf-8")
        (project / "lakefile.lean").write_text(LAKEFILE.format(name=f"repo{r:03d}", lib=lib), encoding="utf-8")
        projects.append(project)
    return projects


# ---- one run in a process of its own ------------------------------------------------------


def _children() -> int:
    """Processes whose parent is this one, alive or not reaped."""
    me, count = str(os.getpid()), 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                count += 1
    return count


def _leftovers() -> dict[str, int]:
    """What a process holds that a finished run should have given back."""
    temp = Path(tempfile.gettempdir())
    return {
        "open files": len(os.listdir("/proc/self/fd")),
        "threads": threading.active_count(),
        "child processes": _children(),
        "temporary files": sum(1 for _ in temp.glob("leanagent-*")),
    }


def worker(repos_file: Path, data: Path) -> None:
    """Run ``leanagent run`` in this process and print one JSON line of what it cost."""
    import agent.lifelong.job  # noqa: F401 (imported before the clock starts: torch alone takes seconds)
    from agent.cli.main import main

    before = _leftovers()
    started = time.perf_counter()
    args = ["--data-dir", str(data), "run", str(repos_file), "--tracer", "source", "--no-train", "--no-prove"]
    with open(os.devnull, "w") as sink:  # the run's own JSON report: not ours to print
        stdout, sys.stdout = sys.stdout, sink
        try:
            code = main([*args, "--json"])
        finally:
            sys.stdout = stdout
    seconds = time.perf_counter() - started
    after = _leftovers()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    left: dict[str, object] = {k: after[k] - before[k] for k in after}
    left["thread names"] = sorted(t.name for t in threading.enumerate() if t is not threading.main_thread())
    print(json.dumps({"exit": code, "seconds": round(seconds, 2), "peak_mb": round(peak_mb, 1), "left": left}))


def run_in_process(repos_file: Path, data: Path) -> dict:
    """What :func:`worker` printed, and ``wall``: the process's seconds, start-up included."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--worker", str(repos_file), str(data)],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    if done.returncode != 0:
        raise SystemExit(f"the run over {repos_file} failed:\n{done.stderr[-2000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": round(time.perf_counter() - started, 2)}


def export_digest(data: Path, out: Path) -> str:
    """The SHA-256 of every file ``leanagent export`` writes for the database in ``data``."""
    subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "--data-dir", str(data), "export", str(out)],
        check=True,
        capture_output=True,
    )
    digest = hashlib.sha256()
    for file in sorted(p for p in out.rglob("*") if p.is_file()):
        digest.update(file.relative_to(out).as_posix().encode())
        if file.name == "metadata.json":  # but for when it was exported
            metadata = json.loads(file.read_text(encoding="utf-8"))
            metadata.pop("creation_time", None)
            digest.update(json.dumps(metadata, sort_keys=True).encode())
        else:
            digest.update(file.read_bytes())
    return digest.hexdigest()


def slope(xs: list[int], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repos", type=int, default=100)
    parser.add_argument("--sizes", default="25,50,100", help="numbers of repositories, one run each")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/leanagent-run-scale"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return 0

    sizes = sorted({int(s) for s in args.sizes.split(",")} | {args.repos})
    projects = make_repositories(args.work / "projects", args.repos, args.seed)
    theorems = [sum(p.read_text().count("\ntheorem ") for p in project.rglob("*.lean")) for project in projects]
    rows, runs = [], {}
    for size in sizes:
        repos_file = args.work / f"repos-{size}.txt"
        repos_file.write_text("".join(f"{p}\n" for p in projects[:size]), encoding="utf-8")
        data = args.work / f"data-{size}"
        subprocess.run(["rm", "-rf", str(data)], check=True)
        runs[size] = run_in_process(repos_file, data)
        result = runs[size]
        per_repository = round(result["seconds"] / size, 3)
        rows.append([size, sum(theorems[:size]), result["seconds"], per_repository, result["peak_mb"]])
        print(f"{size} repositories: {result}", file=sys.stderr)

    largest = sizes[-1]
    repos_file, data = args.work / f"repos-{largest}.txt", args.work / f"data-{largest}"
    again = run_in_process(repos_file, data)
    print(f"again, nothing new: {again}", file=sys.stderr)

    # Killed at a seeded moment, then run to its end in the same data directory.
    killed_data = args.work / f"data-{largest}-killed"
    subprocess.run(["rm", "-rf", str(killed_data)], check=True)
    whole = runs[largest]
    start_up = whole["wall"] - whole["seconds"]  # imports, before the run's work begins
    moment = start_up + random.Random(args.seed).uniform(0.2, 0.8) * whole["seconds"]
    process = subprocess.Popen(
        [sys.executable, __file__, "--worker", str(repos_file), str(killed_data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(moment)
    process.send_signal(signal.SIGKILL)
    process.wait()
    resumed = run_in_process(repos_file, killed_data)
    same = export_digest(data, args.work / "export-whole") == export_digest(killed_data, args.work / "export-killed")
    subprocess.run(["rm", "-rf", str(args.work / "export-whole"), str(args.work / "export-killed")], check=True)

    xs = sizes
    per_repo_s = slope(xs, [runs[s]["seconds"] for s in xs])
    per_repo_mb = slope(xs, [runs[s]["peak_mb"] for s in xs])
    print(table(["repositories", "theorems", "seconds", "s per repository", "peak MB"], rows))
    print(f"slope: {per_repo_s:.3f} s and {per_repo_mb:.2f} MB per repository (least squares over {xs})")
    print(f"left behind by the {largest}-repository run: {runs[largest]['left']}")
    print(f"the same run again, nothing new: {again['seconds']} s (exit {again['exit']})")
    print(
        f"killed after {moment:.1f} s and run again: {resumed['seconds']} s (exit {resumed['exit']}); "
        f"exported database identical to the uninterrupted run's: {same}"
    )
    if args.json:
        payload = {
            "sizes": xs,
            "rows": rows,
            "slope_seconds_per_repository": round(per_repo_s, 4),
            "slope_mb_per_repository": round(per_repo_mb, 3),
            "left_behind": runs[largest]["left"],
            "again": again,
            "killed_after_seconds": round(moment, 2),
            "resumed": resumed,
            "identical_after_resume": same,
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if same and all(r["exit"] == 0 for r in (*runs.values(), again, resumed)) else 1


if __name__ == "__main__":
    sys.exit(main())
