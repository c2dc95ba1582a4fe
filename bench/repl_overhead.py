"""What our Lean REPL client adds around Lean, measured against the fake REPL.

Lean's own time per tactic is the same whatever client drives it, so this benchmark
replaces Lean by ``tests/fakes/fake_repl.py`` (which answers at once) and times:

* **raw pipe** -- the floor: pre-encoded request bytes written to the fake's stdin, the answer
  read up to its blank line with plain blocking reads, no parsing;
* **ReplProcess.request** -- our process layer: encode, lock, select-based reads with a
  deadline, JSON parse into typed responses;
* **ReplSession.run_tactic** -- the whole backend: pool lookup, incarnation check, outcome
  mapping, TacticState construction.

Overhead = median of a layer minus median of the raw pipe. Then **pool reuse**: opening
N theorems of one file on one pooled process (header loaded once) versus a new backend and
process per theorem; the fake sleeps ``--header-delay`` seconds on imports to stand in for
Lean loading them (Mathlib's imports take far longer, so the real gap is larger).

    python bench/repl_overhead.py [--quick] [--json OUT] [--tactics 2000] [--theorems 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.reports.output import table  # noqa: E402
from lean_env.interactive.repl.backend import ReplBackend  # noqa: E402
from lean_env.interactive.repl.process import ReplCommand, ReplProcess  # noqa: E402
from lean_env.interactive.repl.protocol import CommandRequest, TacticRequest, encode  # noqa: E402
from lean_env.records import Position, Theorem, TheoremStatus  # noqa: E402

FAKE_REPL = ROOT / "tests" / "fakes" / "fake_repl.py"
GOAL = "n : Nat\n⊢ n + 0 = n"


def script(header_delay: float) -> dict:
    return {
        "theorems": {f"t{i}": GOAL for i in range(1000)},
        "tactics": {GOAL: {"skip": {"goals": [GOAL]}}},
        "header_delay": header_delay,
    }


def lean_file(theorems: int) -> str:
    body = "".join(f"theorem t{i} (n : Nat) : n + 0 = n := by\n  simp\n\n" for i in range(theorems))
    return "import Mathlib.Data.Nat.Defs\n\n" + body


def theorem(i: int) -> Theorem:
    line = 3 + 3 * i
    return Theorem(
        full_name=f"t{i}",
        path="Bench.lean",
        start=Position(line, 1),
        end=Position(line + 1, 7),
        statement="",
        proof="by\n  simp",
        status=TheoremStatus.PROVEN,
        proof_start=Position(line, len(f"theorem t{i} (n : Nat) : n + 0 = n :=") + 1),
    )


def timed(fn: Callable[[], object], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def raw_pipe(command: ReplCommand, n: int) -> list[float]:
    proc = subprocess.Popen(list(command.argv), cwd=command.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def round_trip(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()
        while stdout.readline().strip():
            pass

    round_trip(encode(CommandRequest(cmd="theorem t0 (n : Nat) : n + 0 = n := by sorry")).encode())
    request = encode(TacticRequest(tactic="skip", proof_state=0)).encode()
    try:
        return timed(lambda: round_trip(request), n)
    finally:
        proc.kill()
        proc.wait()


def process_layer(command: ReplCommand, n: int) -> list[float]:
    with ReplProcess.start(command, memory_limit_mb=None) as repl:
        repl.request(CommandRequest(cmd="theorem t0 (n : Nat) : n + 0 = n := by sorry"), timeout=30)
        request = TacticRequest(tactic="skip", proof_state=0)
        return timed(lambda: repl.request(request, timeout=30), n)


def backend_layer(command: ReplCommand, project: Path, n: int) -> list[float]:
    with ReplBackend.create(launcher=lambda _: command, memory_limit_mb=None) as backend:
        with backend.open(project, theorem(0)) as session:
            state = session.initial_state
            return timed(lambda: session.run_tactic(state, "skip"), n)


def open_all(command: ReplCommand, project: Path, theorems: int, *, pooled: bool) -> tuple[float, int]:
    """Seconds to open every theorem and run one tactic on each; processes started."""
    started = 0
    start = time.perf_counter()
    backend = ReplBackend.create(launcher=lambda _: command, memory_limit_mb=None)
    for i in range(theorems):
        if not pooled and i:
            started += backend.pool.stats.started
            backend.close()
            backend = ReplBackend.create(launcher=lambda _: command, memory_limit_mb=None)
        with backend.open(project, theorem(i)) as session:
            session.run_tactic(session.initial_state, "skip")
    started += backend.pool.stats.started
    backend.close()
    return time.perf_counter() - start, started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (well under a minute)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the numbers here")
    parser.add_argument("--tactics", type=int, default=2000, help="tactic round trips per layer")
    parser.add_argument("--theorems", type=int, default=20, help="theorems opened in the pool test")
    parser.add_argument("--header-delay", type=float, default=0.2, help="seconds the fake takes to 'load imports'")
    args = parser.parse_args(argv)
    n = 300 if args.quick else args.tactics
    theorems = 6 if args.quick else args.theorems

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "script.json").write_text(json.dumps(script(args.header_delay)))
        (project / "Bench.lean").write_text(lean_file(max(theorems, 1)))
        command = ReplCommand(argv=(sys.executable, str(FAKE_REPL), str(project / "script.json")), cwd=project)
        layers = {
            "raw pipe": raw_pipe(command, n),
            "ReplProcess.request": process_layer(command, n),
            "ReplSession.run_tactic": backend_layer(command, project, n),
        }
        pooled = open_all(command, project, theorems, pooled=True)
        fresh = open_all(command, project, theorems, pooled=False)

    floor = statistics.median(layers["raw pipe"])
    rows, payload = (
        [],
        {"tactics": n, "theorems": theorems, "header_delay": args.header_delay, "layers": {}, "pool": {}},
    )
    for name, samples in layers.items():
        median = statistics.median(samples)
        p95 = statistics.quantiles(samples, n=20)[-1]
        rows.append([name, n, median * 1e6, p95 * 1e6, (median - floor) * 1e6])
        payload["layers"][name] = {
            "median_us": median * 1e6,
            "p95_us": p95 * 1e6,
            "overhead_us": (median - floor) * 1e6,
        }
    print(table(["layer", "requests", "median us", "p95 us", "overhead us"], rows))
    print()
    pool_rows = []
    for name, (seconds, started) in (("pooled (one process)", pooled), ("process per theorem", fresh)):
        pool_rows.append([name, theorems, started, seconds, seconds / theorems * 1e3])
        payload["pool"][name] = {"seconds": seconds, "processes": started, "ms_per_theorem": seconds / theorems * 1e3}
    print(table(["mode", "theorems", "processes", "total s", "ms/theorem"], pool_rows))
    print(f"\npool speed-up: {fresh[0] / pooled[0]:.1f}x (header delay {args.header_delay:g} s)")
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
