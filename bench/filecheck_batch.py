"""Lean seconds per expansion of the file-check backends, batched against one run per
candidate, on a real Lean and a real corpus (the 2021 Lean 4's ``tests/lean/run``).

    python bench/filecheck_batch.py --lean-src GIT_DIR --lean-bin DIR [--theorems N] [--candidates 8 64]
        [--proof-backends file server] [--servers 1 2] [--work DIR] [--json OUT]

``--lean-src``: a git checkout of the Lean 4 sources at nightly-2021-06-20 (its
``tests/lean/run`` is the corpus); ``--lean-bin``: the bin directory of the Lean built from
them (what ``LEANAGENT_TEST_OLD_LEAN`` names for the opt-in tests).

For each of ``--theorems`` theorems of the corpus (a seeded choice among those with proofs),
the built-in suggester proposes ``--candidates`` tactics for the theorem's first goal (its
memory: every other proof of the corpus); the same tactics then run once one by one, each
its own ``lean`` run over the file up to the theorem (the file backend without batches),
and once batched by each backend of ``--proof-backends`` (:mod:`lean_env.interactive.batch`: one
Lean check per batch, then one of its own for a candidate the batch says finishes the proof,
when it is read): ``file`` runs ``lean`` once per check, ``server`` sends each check to a
language server that elaborated the file before the theorem when the session opened
(:mod:`lean_env.lean.server`), once per count of ``--servers``: with more than one, each
checks a candidate at once, on its own core (the same Lean work, in less wall time; the
machine's cores bound it). Opening the session (the theorem's first goals) is not
counted: a search pays it once, and each expansion after it. An expansion's cost is what
the search pays: the outcomes read up to the first proof (one by one, the tactics after it
never run). An expansion that finds no proof reads every outcome: the table gives both, as
mean wall seconds of Lean per expansion one by one and batched, their ratio, and whether
every verdict agreed with one by one (it must, up to the numbers of metavariables in
messages, which count up through a file, and to the function named in a heartbeat timeout:
the server's file worker runs out of heartbeats elsewhere in the same tactic). With every
outcome read it also gives the CPU seconds the batched backend's Lean processes spent (the
machine's, less this process's: run it alone), which several servers spend on several
cores at once; the JSON has each theorem's seconds.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import sys
import time
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluate_real import build_projects, corpus_files, lean_version  # noqa: E402

from agent.generators.suggester import StepMemory, TacticSuggester  # noqa: E402
from agent.reports.output import table  # noqa: E402
from curriculum.results import theorem_key  # noqa: E402
from lean_env.errors import LeanAgentError  # noqa: E402
from lean_env.interactive.filecheck import FileCheckBackend, ServerCheckBackend  # noqa: E402
from lean_env.interactive.interface import LeanError, ProofFinished, TacticState  # noqa: E402
from lean_env.lean.server import ServerRunner  # noqa: E402
from lean_env.records import RepoSpec, TheoremStatus  # noqa: E402
from lean_env.trace.source import extract_repo  # noqa: E402

_MVAR_RE = re.compile(r"\?[mu]\.\d+")
# Where a tactic ran out of heartbeats: the same tactic in the language server's file worker
# can run out in another function ('whnf' for 'isDefEq'), the same error otherwise.
_HEARTBEATS_RE = re.compile(r"\(deterministic\) timeout at '[^']*'")


def _message(error: LeanError) -> str:
    return _HEARTBEATS_RE.sub("(deterministic) timeout", _MVAR_RE.sub("?m", error.message))


def same_verdict(a: object, b: object) -> bool:
    """The same verdict, up to the numbers of metavariables, which count up through a file
    (``?m.4578`` alone is ``?m.13057`` among 64 copies), and to where a tactic ran out of
    heartbeats."""
    if type(a) is not type(b):
        return False
    if isinstance(a, LeanError) and isinstance(b, LeanError):
        return _message(a) == _message(b)
    if isinstance(a, TacticState) and isinstance(b, TacticState):
        return _MVAR_RE.sub("?m", a.key) == _MVAR_RE.sub("?m", b.key)
    return a == b


def _others_cpu() -> float:
    """CPU seconds the machine spent outside this process since boot (Linux): Lean's, when
    nothing else runs. One by one a single `lean` runs at a time, so its wall seconds are its
    CPU seconds; several servers spend CPU seconds on several cores at once."""
    fields = Path("/proc/stat").read_text(encoding="utf-8").split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    busy = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    return busy - time.process_time()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lean-src", type=Path, required=True)
    parser.add_argument("--lean-bin", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/leanagent-evaluate-real"))
    parser.add_argument("--theorems", type=int, default=20)
    parser.add_argument("--candidates", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--proof-backends", nargs="+", choices=["file", "server"], default=["file", "server"])
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2], help="language servers per session")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per Lean run")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    os.environ["PATH"] = f"{args.lean_bin.resolve()}{os.pathsep}{os.environ.get('PATH', '')}"
    version = lean_version(args.lean_bin)
    projects = build_projects(corpus_files(args.lean_src), args.work, toolchain="leanprover/lean4:nightly-2021-06")
    root = projects["dev"]
    trace = extract_repo(root, spec=RepoSpec(str(root)), commit="bench", lean_version=version)
    proved = [t for t in trace.theorems if t.status is TheoremStatus.PROVEN and t.proof_start is not None]
    chosen = random.Random(args.seed).sample(proved, min(args.theorems, len(proved)))
    backend = FileCheckBackend(timeout=args.timeout)
    batching: dict[str, FileCheckBackend] = {}
    for name in args.proof_backends:
        if name == "file":
            batching[name] = backend
        for n in args.servers if name == "server" else ():
            factory = functools.partial(ServerRunner.for_project, workers=n)
            batching[name if n == 1 else f"{name} x{n}"] = ServerCheckBackend(
                timeout=args.timeout, runner_factory=factory
            )
    rows, measured = [], []
    for n in args.candidates:
        single, single_all, counted = 0.0, 0.0, 0
        batched, batched_all = dict.fromkeys(batching, 0.0), dict.fromkeys(batching, 0.0)
        batched_cpu = dict.fromkeys(batching, 0.0)
        agreed = dict.fromkeys(batching, True)
        for theorem in tqdm(chosen, desc=f"{n} candidates", unit="theorem", disable=None):
            key = theorem_key(trace.spec.location, theorem)
            suggester = TacticSuggester(StepMemory.from_traces([trace], leave_out={key}))
            try:
                with backend.open(root, theorem) as session:
                    state = session.initial_state
                    tactics = [c.tactic for c in suggester.episode("", theorem).generate(state.pp, n=n)]
                    one, times = [], []
                    for tactic in tactics:
                        started = time.monotonic()
                        one.append(session.run_tactic(state, tactic))
                        times.append(time.monotonic() - started)
                # The search reads an expansion's outcomes up to the first proof, either way.
                stop = next((i + 1 for i, o in enumerate(one) if isinstance(o, ProofFinished)), len(one))
                verdicts, to_proof, every, every_cpu = {}, {}, {}, {}
                for name in batching:
                    with batching[name].open(root, theorem) as session:
                        started = time.monotonic()
                        outcomes = session.run_tactics(session.initial_state, tactics)
                        many = [next(outcomes) for _ in range(stop)]
                        to_proof[name] = time.monotonic() - started
                        verdicts[name] = many + list(outcomes)  # the rest too, untimed: every verdict is compared
                    # An expansion that finds no proof reads every outcome.
                    with batching[name].open(root, theorem) as session:
                        started, cpu = time.monotonic(), _others_cpu()
                        list(session.run_tactics(session.initial_state, tactics))
                        every[name] = time.monotonic() - started
                        every_cpu[name] = _others_cpu() - cpu
            except LeanAgentError as error:  # a file that does not elaborate around the theorem
                tqdm.write(f"skipped {theorem.path}:{theorem.full_name}: {str(error).splitlines()[0]}", file=sys.stderr)
                continue
            counted += 1
            single, single_all = single + sum(times[:stop]), single_all + sum(times)
            for name in batching:
                batched[name] += to_proof[name]
                batched_all[name] += every[name]
                batched_cpu[name] += every_cpu[name]
                agreed[name] = agreed[name] and all(map(same_verdict, one, verdicts[name]))
            measured.append(
                {
                    "theorem": f"{theorem.path}:{theorem.full_name}",
                    "candidates": len(tactics),
                    "all read, one by one s": round(sum(times), 3),
                    "all read, batched s": {name: round(every[name], 3) for name in batching},
                }
            )
        for name in batching:
            rows.append(
                [
                    n,
                    name,
                    counted,
                    round(single / counted, 3),
                    round(batched[name] / counted, 3),
                    f"{single / batched[name]:.1f}x",
                    round(single_all / counted, 3),
                    round(batched_all[name] / counted, 3),
                    f"{single_all / batched_all[name]:.1f}x",
                    round(batched_cpu[name] / counted, 3),
                    agreed[name],
                ]
            )
    for kept in batching.values():
        kept.close()  # the language servers kept between sessions
    print(f"{version}; one expansion of each theorem's first goal; one by one: a `lean` run per candidate")
    headers = ["candidates", "batched by", "theorems", "to a proof: one by one s", "batched s", "gain"]
    headers += ["all read: one by one s", "batched s", "gain", "batched CPU s", "same verdicts"]
    print(table(headers, rows))
    if args.json:
        payload = {"lean": version, "rows": rows, "theorems": measured}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
