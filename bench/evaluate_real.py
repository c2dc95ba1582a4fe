"""Pass@1 of ``leanagent evaluate`` on real corpora with a real Lean: the June 2021 Lean 4's own
tests and core library (standalone files written by Lean's developers).

    python bench/evaluate_real.py --lean-src GIT_DIR --lean-bin DIR [--corpus run,control,core]
        [--work DIR] [--sample N] [--time-limit S] [--max-expansions N] [--candidates N] [--half dev|test|both]
        [--proof-backend file|server] [--lean-servers N] [--json OUT]

``--lean-src`` is the Lean 4 source snapshot (a git directory, as ``fetch`` brings
github:Vtec234/lean4, or a work tree) and ``--lean-bin`` the bin directory of that Lean, built
from those sources (put first on PATH for this process and the Lean runs it starts, never for
anything else). The corpora (``--corpus``, a comma-separated list):

* ``run``: the files of ``tests/lean/run`` without a ``sorry``, split by name: the first half
  (sorted) is the **dev** half, where changes to the prover are tuned, the second the
  **test** half, reported untuned; each half is one project (``WORK/lean4-run-dev``,
  ``-test``), ingested into ``WORK/data``.
* ``control``, ``core``: files of the core library (:data:`CORE_CORPORA`), each
  copied as it is into one project ``WORK/lean4-CORPUS`` under a name no core module has:
  a ``prelude`` file importing exactly what the original imports, so that no theorem can be
  closed by citing the original, and the source tracer's core premises (read from the
  imported modules only) never hold the original's lemmas. The halves alternate over the
  corpus's theorems with proofs in file and source order (few files, so a split by file would
  be lopsided), each a theorems file ``WORK/data-CORPUS/HALF.txt``; each corpus has its own
  data directory ``WORK/data-CORPUS``, so the suggester remembers that corpus's proofs only.
  The files issue 40 holds out for the maintainers' own measurement (:data:`HELD_OUT`) are
  in none of them.

Every project has a ``lean-toolchain`` and is ingested by source extraction; then the
library's :func:`agent.evaluation.evaluate.evaluate` runs on every theorem with a proof of each
half (or a seeded ``--sample`` of it), one theorem at a time with the built-in suggester and
the file check (through Lean's language server by default, ``--lean-servers`` of them checking
candidates at once; ``--proof-backend file`` for one ``lean`` run per check), and the table
gives Pass@1 per corpus and half at the budgets of ``--budgets``, read from the curve of one
run at ``--time-limit``: the search is deterministic and every Lean call of an attempt is cut
to the attempt's time limit, so an attempt that ended within t seconds of a longer limit runs
the same under a limit of t, up to timing noise. ``max s`` is the longest attempt's wall time
(the limit bounds it, plus the kill of a Lean past it).

The corpora and the databases stay in ``--work``, outside this repository; re-running resumes
an evaluation that was interrupted.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.evaluation.evaluate import EvaluationResult, PassRate, Selection, evaluate, select_theorems  # noqa: E402
from agent.proving.config import DEFAULT_SERVERS, ProvingConfig  # noqa: E402
from agent.reports.output import table  # noqa: E402
from agent.search.tree import SearchConfig  # noqa: E402
from agent.workspace.data import ingest_repositories, open_store  # noqa: E402
from agent.workspace.settings import Settings  # noqa: E402
from curriculum.store import Store  # noqa: E402
from lean_env.interactive.choice import ProofBackendChoice  # noqa: E402
from lean_env.records import RepoSpec  # noqa: E402
from lean_env.trace.choice import TracerChoice  # noqa: E402

RUN_DIR = "tests/lean/run"
HALVES = ("dev", "test")
# The core library's files each corpus copies: every file of the 2021 Lean's `src/` with
# theorems with proofs, but for those held out and `Init/Prelude.lean`, whose 50 theorems
# come before the tactic framework exists (its proofs are terms, `by skip` is an unknown
# tactic there: the file check cannot open one of them).
CORE_CORPORA = {
    "control": ("Init/Control/Lawful.lean", "Init/Control/StateCps.lean", "Init/Control/ExceptCps.lean"),
    "core": (
        "Init/Classical.lean",
        "Init/WF.lean",
        "Init/Control/Except.lean",
        "Init/Data/Array/Basic.lean",
        "Init/Data/List/Control.lean",
        "Init/Data/Char/Basic.lean",
        "Init/Data/UInt.lean",
        "Init/Data/Option/Basic.lean",
        "Init/Data/Option/Instances.lean",
        "Std/Data/PersistentHashMap.lean",
    ),
}
CORPORA = ("run", *CORE_CORPORA)
# Issue 40 holds these out for the maintainers' own measurement: never a corpus, never tuned on
# (with every file under `tests/` outside `tests/lean/run`).
HELD_OUT = (
    "Init/Core.lean",
    "Init/SimpLemmas.lean",
    "Init/Data/Nat/",
    "Init/Data/List/Basic.lean",
    "Init/Data/Fin/Basic.lean",
)
# A `sorry` outside comments: such a file is not a clean original.
_SORRY_RE = re.compile(r"(?<![\w.'])sorry(?![\w'])")
_COMMENT_RE = re.compile(r"--[^\n]*|/-.*?-/", re.S)
TOOLCHAIN = "leanprover/lean4:nightly-2021-06"


@dataclass(frozen=True, slots=True)
class Half:
    """One half of a corpus, as evaluated."""

    corpus: str
    name: str  # dev | test
    project: Path  # the project its theorems are in
    data_dir: Path  # the data directory (database) the project is ingested into
    theorems: Path | None = None  # a theorems file choosing the half; None: the whole project


def source_files(source: Path, folder: str) -> dict[str, str]:
    """``{path under folder: text}`` of the ``.lean`` files under ``folder`` of a git
    directory or work tree."""
    tree = source / folder
    if tree.is_dir():
        return {str(p.relative_to(tree)): p.read_text(encoding="utf-8") for p in sorted(tree.rglob("*.lean"))}
    archive = subprocess.run(
        ["git", f"--git-dir={source}", "archive", "--format=tar", "HEAD", folder], capture_output=True, check=True
    ).stdout
    files = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".lean"):
                handle = tar.extractfile(member)
                assert handle is not None
                files[str(Path(member.name).relative_to(folder))] = handle.read().decode("utf-8")
    return dict(sorted(files.items()))


def write_project(root: Path, files: dict[str, str]) -> Path:
    """A project folder holding ``files`` (rewritten only where they changed) and a toolchain pin."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "lean-toolchain").write_text(f"{TOOLCHAIN}\n", encoding="utf-8")
    for name, text in files.items():
        path = root / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return root


def run_halves(source: Path, work: Path) -> list[Half]:
    """The dev and test projects of ``tests/lean/run``: the clean files split by sorted name."""
    files = source_files(source, RUN_DIR)
    clean = [
        name for name, text in files.items() if "/" not in name and not _SORRY_RE.search(_COMMENT_RE.sub("", text))
    ]
    half = (len(clean) + 1) // 2
    return [
        Half("run", which, write_project(work / f"lean4-run-{which}", {n: files[n] for n in names}), work / "data")
        for which, names in zip(HALVES, (clean[:half], clean[half:]), strict=True)
    ]


def core_project(source: Path, work: Path, corpus: str) -> Path:
    """The project of a core corpus: each file under its path with `/` as `_` (`Init_WF.lean`),
    which no core module is called, so neither Lean nor the source tracer takes it for one."""
    originals = source_files(source, "src")
    paths = CORE_CORPORA[corpus]
    held = [p for p in paths if any(p == h or (h.endswith("/") and p.startswith(h)) for h in HELD_OUT)]
    assert not held, f"held-out files in the {corpus} corpus: {held}"
    return write_project(work / f"lean4-{corpus}", {p.replace("/", "_"): originals[p] for p in paths})


def core_halves(
    store: Store, corpus: str, project: Path, data_dir: Path, *, sample: int | None, seed: int
) -> list[Half]:
    """The halves of an ingested core corpus: its theorems with proofs alternately dev and
    test in file and source order (a seeded ``sample`` of each), written as theorems files."""
    found = select_theorems(store, Selection(repo=str(project)))
    ordered = sorted(found, key=lambda t: (t.theorem.path, t.theorem.start.line, t.theorem.start.column))
    halves = []
    for index, which in enumerate(HALVES):
        chosen = ordered[index :: len(HALVES)]
        if sample is not None and sample < len(chosen):
            picked = set(random.Random(seed).sample(range(len(chosen)), sample))
            chosen = [t for i, t in enumerate(chosen) if i in picked]
        listing = data_dir / f"{which}.txt"
        listing.write_text("".join(f"{t.theorem.path}:{t.theorem.full_name}\n" for t in chosen), encoding="utf-8")
        halves.append(Half(corpus, which, project, data_dir, listing))
    return halves


def lean_version(lean_bin: Path) -> str:
    done = subprocess.run([str(lean_bin / "lean"), "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lean-src", type=Path, required=True, help="the Lean 4 snapshot (git dir or work tree)")
    parser.add_argument("--lean-bin", type=Path, required=True, help="the bin directory of that Lean, built")
    parser.add_argument("--work", type=Path, default=Path("/tmp/leanagent-evaluate-real"))
    parser.add_argument("--corpus", default="run", help=f"comma-separated, of {', '.join(CORPORA)} (default: run)")
    parser.add_argument("--half", choices=(*HALVES, "both"), default="both")
    parser.add_argument("--sample", type=int, default=None, help="a seeded sample of N theorems of each half")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per theorem (default 60)")
    parser.add_argument("--max-expansions", type=int, default=30)
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument("--budgets", default="20,60", help="budgets (s) the table reads Pass@1 at")
    parser.add_argument(
        "--tactic-timeout",
        type=float,
        default=None,
        help="seconds per tactic (default: the CLI's, from the time limit)",
    )
    parser.add_argument("--check-timeout", type=float, default=60.0)
    parser.add_argument(
        "--proof-backend",
        choices=[ProofBackendChoice.FILE.value, ProofBackendChoice.SERVER.value],
        default=ProofBackendChoice.SERVER.value,
        help="the proof environment: `lean` once per check, or through its language server (default)",
    )
    parser.add_argument(
        "--lean-servers",
        type=int,
        default=DEFAULT_SERVERS,
        help=f"language servers per theorem, checking candidates at once (default: {DEFAULT_SERVERS}, as the CLI's)",
    )
    parser.add_argument("--ranking", action="store_true", help="with the tactic ranking learned from recorded attempts")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    corpora = args.corpus.split(",")
    if unknown := [c for c in corpora if c not in CORPORA]:
        parser.error(f"unknown corpus {', '.join(unknown)}: choose from {', '.join(CORPORA)}")

    os.environ["PATH"] = f"{args.lean_bin.resolve()}{os.pathsep}{os.environ.get('PATH', '')}"
    version = lean_version(args.lean_bin)
    config = ProvingConfig(
        backend=ProofBackendChoice(args.proof_backend),
        search=SearchConfig(
            num_candidates=args.candidates, max_expansions=args.max_expansions, time_limit=args.time_limit
        ),
        tactic_timeout=args.tactic_timeout,
        check_timeout=args.check_timeout,
        servers=args.lean_servers,
        ranking=args.ranking,
    )
    wanted = HALVES if args.half == "both" else (args.half,)
    budgets = [float(b) for b in args.budgets.split(",")]
    rows, results = [], {}
    for corpus in corpora:
        for half, result, wall in evaluate_corpus(corpus, args, config, wanted):
            results[f"{corpus}/{half}"] = (result, wall)
            rows.append(_row(f"{corpus} {half}", result, budgets, wall))
    at = [f"Pass@1 at {b:g} s" for b in budgets]
    headers = ["corpus", "theorems", *at, "95% interval (limit)", "outcomes", "max s", "wall s"]
    print(
        f"{version}; {args.proof_backend} backend ({args.lean_servers} server(s)), "
        f"{args.candidates} candidates, {args.max_expansions} expansions, "
        f"{args.time_limit:g} s limit, ranking {'on' if args.ranking else 'off'}"
    )
    print(table(headers, rows))
    if args.json:
        payload = {
            "lean": version,
            "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "halves": {name: {**r.to_json(), "wall_seconds": round(w, 1)} for name, (r, w) in results.items()},
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def evaluate_corpus(
    corpus: str, args: argparse.Namespace, config: ProvingConfig, wanted: tuple[str, ...]
) -> list[tuple[str, EvaluationResult, float]]:
    """Build and ingest ``corpus``, then evaluate its ``wanted`` halves: (half, result, wall s)."""
    if corpus == "run":
        halves = [h for h in run_halves(args.lean_src, args.work) if h.name in wanted]
        projects = [h.project for h in halves]
        data_dir = args.work / "data"
    else:
        projects = [core_project(args.lean_src, args.work, corpus)]
        data_dir = args.work / f"data-{corpus}"  # outside the project: its checkouts hold .lean files
    settings = Settings.resolve(data_dir=data_dir, db_url=None)
    out = []
    with open_store(settings) as store:
        ingest_repositories(store, [RepoSpec(str(p)) for p in projects], settings, TracerChoice.SOURCE)
        if corpus != "run":
            found = core_halves(store, corpus, projects[0], data_dir, sample=args.sample, seed=args.seed)
            halves = [h for h in found if h.name in wanted]
        for half in halves:
            started = time.monotonic()
            if half.theorems is None:
                selection = Selection(repo=str(half.project), sample=args.sample, seed=args.seed)
            else:
                selection = Selection(theorems=half.theorems)
            result = evaluate(store, selection, config, data_dir=settings.data_dir)
            out.append((half.name, result, time.monotonic() - started))
    return out


def _row(name: str, result: EvaluationResult, budgets: list[float], wall: float) -> list[object]:
    total = len(result.attempts)
    at = [f"{100 * result.pass_at(b):.1f}%" for b in budgets]
    rate: PassRate = result.overall
    outcomes = ", ".join(f"{n} {o}" for o, n in result.outcomes().items() if n)
    longest = max((a.seconds for a in result.attempts), default=0.0)
    return [name, total, *at, f"{100 * rate.low:.1f}-{100 * rate.high:.1f}%", outcomes, round(longest, 1), round(wall)]


if __name__ == "__main__":
    sys.exit(main())
