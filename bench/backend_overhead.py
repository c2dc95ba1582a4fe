"""Per-tactic overhead of the file-check backend and of the LeanDojo wrapper.

What our code adds around Lean, measured against the stand-ins of the tests:

* file check -- ``FileCheckSession.run_tactic`` with the fake ``lean`` on PATH, minus the
  same fake run directly on the same file (the stand-in's own cost: interpreter start-up,
  reading the file). The remainder is ours: writing the temporary file, starting the
  process group, parsing diagnostics, classifying the outcome.
* dojo -- ``DojoSession.run_tactic`` against a fake ``Dojo`` that answers instantly with
  real ``lean_dojo`` values, minus calling that fake's ``run_tac`` directly.

Run ``python bench/backend_overhead.py [--quick] [--json OUT]``. A real Lean adds its own
elaboration time (seconds per file-check step with Mathlib imports) on top of both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fakes import fake_lean  # noqa: E402

from agent.reports.output import table  # noqa: E402
from lean_env.interactive.filecheck import FileCheckBackend  # noqa: E402
from lean_env.interactive.interface import TacticState  # noqa: E402

SOURCE = "theorem chain (p : Prop) (h : p) : p := by\n  sorry\n"


def _script(steps: int) -> dict:
    """A theorem whose tactics `step1`, `step2`, ... each leave its one goal open."""
    goal = {"goals": "p : Prop\nh : p\n⊢ p"}
    prefixes = {"\n".join(f"step{i}" for i in range(1, n + 1)): goal for n in range(1, steps + 1)}
    return {"theorems": {"chain": {**goal, "steps": prefixes}}}


class _Env:
    """PATH and FAKE_LEAN_SCRIPT for the fake, without pytest's monkeypatch."""

    def __init__(self, workdir: Path, script: dict) -> None:
        self.bin = workdir / "bin"
        fake_lean.write_wrappers(self.bin)
        self.script = workdir / "script.json"
        self.script.write_text(json.dumps(script), encoding="utf-8")

    def __enter__(self) -> _Env:
        self._saved = {k: os.environ.get(k) for k in ("PATH", "FAKE_LEAN_SCRIPT")}
        os.environ["PATH"] = f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"
        os.environ["FAKE_LEAN_SCRIPT"] = str(self.script)
        return self

    def __exit__(self, *exc: object) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def bench_filecheck(steps: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "Chain.lean").write_text(SOURCE, encoding="utf-8")
        theorem = fake_lean.theorem_record(SOURCE, "chain", "Chain.lean")
        with _Env(work, _script(steps)):
            session_times, direct_times = [], []
            with FileCheckBackend(timeout=60).open(work, theorem) as session:
                state = session.initial_state
                for i in range(1, steps + 1):
                    started = time.perf_counter()
                    result = session.run_tactic(state, f"step{i}")
                    session_times.append(time.perf_counter() - started)
                    assert isinstance(result, TacticState), result
                    state = result
                    started = time.perf_counter()
                    lean = [str(work / "bin" / "lean"), str(session._file)]
                    subprocess.run(lean, capture_output=True, check=False)
                    direct_times.append(time.perf_counter() - started)
    return _summary(session_times, direct_times, scale=1e3)


def bench_dojo(steps: int) -> dict[str, float] | None:
    try:
        import lean_dojo
        from fakes.fake_dojo import FakeDojo, dojo_class
    except ImportError:
        return None
    from lean_env.interactive.dojo import DojoBackend
    from lean_env.records import Position, Theorem, TheoremStatus

    goal = "p : Prop\nh : p\n⊢ p"
    answers = {(goal, "skip"): lambda sid: lean_dojo.TacticState(goal, sid)}
    theorem = Theorem(
        "chain",
        "Chain.lean",
        Position(1, 1),
        Position(2, 8),
        "theorem chain",
        "by\n  sorry",
        TheoremStatus.SORRY,
        proof_start=Position(1, 40),
    )
    fake = dojo_class(start=goal, table=answers)
    backend = DojoBackend(timeout=60, repo_factory=lambda d: d, dojo_class=fake)
    wrapped, direct = [], []
    with backend.open(Path("."), theorem) as session:
        raw = FakeDojo(lean_dojo.Theorem(".", Path("Chain.lean"), "chain"), 60, start=goal, table=answers)
        raw_state = raw.__enter__()[1]
        state = session.initial_state
        for _ in range(steps):
            started = time.perf_counter()
            state = session.run_tactic(state, "skip")
            wrapped.append(time.perf_counter() - started)
            started = time.perf_counter()
            raw_state = raw.run_tac(raw_state, "skip")
            direct.append(time.perf_counter() - started)
    return _summary(wrapped, direct, scale=1e6)


def _summary(ours: list[float], baseline: list[float], *, scale: float) -> dict[str, float]:
    overhead = [a - b for a, b in zip(ours, baseline, strict=True)]
    return {
        "steps": len(ours),
        "per_tactic": statistics.median(ours) * scale,
        "stand_in": statistics.median(baseline) * scale,
        "overhead_median": statistics.median(overhead) * scale,
        "overhead_mean": statistics.fmean(overhead) * scale,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (well under a minute)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    file_steps, dojo_steps = (10, 2000) if args.quick else (40, 20000)
    results = {"filecheck_ms": bench_filecheck(file_steps), "dojo_us": bench_dojo(dojo_steps)}
    rows = [
        [name, r["steps"], r["per_tactic"], r["stand_in"], r["overhead_median"], r["overhead_mean"]]
        for name, r in (
            ("file check (ms)", results["filecheck_ms"]),
            ("dojo wrapper (µs)", results["dojo_us"]),
        )
        if r is not None
    ]
    print(table(["backend", "steps", "per tactic", "stand-in alone", "overhead p50", "overhead mean"], rows))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
