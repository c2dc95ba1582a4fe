"""Ingest speed of the dynamic database on a synthetic mathlib-sized repository.

Builds one seeded synthetic trace (default 100k theorems, 200k premises, 5k files, 1-6
tactic steps per proved theorem with 0-3 premise links each; ``--quick`` for a tenth),
stores it into a fresh SQLite file in one transaction, then reads the merged view back.
Prints a table (rows, seconds, rows/s) and optionally writes JSON::

    python bench/db_ingest.py [--quick] [--json OUT] [--db URL]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.reports.output import table
from curriculum.store import Store
from lean_env.records import (
    DeclKind,
    IngestBackend,
    LeanFile,
    Position,
    Premise,
    RepoSpec,
    RepoTrace,
    Theorem,
    TheoremStatus,
    TracedTactic,
)

TACTICS = (
    "simp",
    "rw [{p}]",
    "exact {p}",
    "apply {p}",
    "intro h",
    "omega",
    "linarith [{p}]",
    "cases h",
)


def synthetic_trace(*, theorems: int, premises: int, files: int, seed: int) -> RepoTrace:
    """A deterministic trace shaped like mathlib: names, code, states and premise links."""
    rng = random.Random(seed)
    paths = [f"Mathlib/Area{i % 50}/File{i}.lean" for i in range(files)]
    lean_files = tuple(
        LeanFile(
            p,
            tuple(f"Mathlib.Area{rng.randrange(50)}.File{rng.randrange(files)}" for _ in range(rng.randint(1, 6))),
        )
        for p in paths
    )
    names = [f"Mathlib.Area{i % 50}.lemma_{i}" for i in range(premises)]
    premise_records = tuple(
        Premise(
            full_name=name,
            path=paths[i % files],
            start=Position(10 + i % 900, 1),
            end=Position(12 + i % 900, 30),
            kind=DeclKind.THEOREM if i % 3 else DeclKind.DEF,
            code=f"theorem {name} (a b : Nat) : a + b = b + a := by omega",
        )
        for i, name in enumerate(names)
    )
    theorem_records = []
    for i in range(theorems):
        sorry = rng.random() < 0.02
        steps = (
            ()
            if sorry
            else tuple(
                TracedTactic(
                    tactic=rng.choice(TACTICS).format(p=rng.choice(names)),
                    state_before=f"a b : Nat\n⊢ a + b = b + a -- {i}.{j}",
                    state_after="no goals",
                    premises=tuple(rng.choice(names) for _ in range(rng.randint(0, 3))),
                )
                for j in range(rng.randint(1, 6))
            )
        )
        theorem_records.append(
            Theorem(
                full_name=f"Mathlib.Thm.t{i}",
                path=paths[i % files],
                start=Position(1000 + i % 5000, 1),
                end=Position(1003 + i % 5000, 10),
                statement=f"theorem Mathlib.Thm.t{i} (a b : Nat) : a + b = b + a",
                proof="sorry" if sorry else "by\n  " + "\n  ".join(s.tactic for s in steps),
                status=TheoremStatus.SORRY if sorry else TheoremStatus.PROVEN,
                tactics=steps,
                premises=tuple(sorted({p for s in steps for p in s.premises})),
                sorries=(Position(1001 + i % 5000, 3),) if sorry else (),
                proof_start=Position(1000 + i % 5000, 50),
            )
        )
    return RepoTrace(
        spec=RepoSpec("https://example.org/synthetic/mathlib.git"),
        commit=f"{seed:040x}",
        backend=IngestBackend.SOURCE,
        lean_version="leanprover/lean4:v4.20.0",
        files=lean_files,
        premises=premise_records,
        theorems=tuple(theorem_records),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a tenth of the size (10k theorems, 20k premises)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--db", metavar="URL", help="database URL (default: a fresh SQLite file in a temp dir)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    t0 = time.perf_counter()
    trace = synthetic_trace(theorems=100_000 // scale, premises=200_000 // scale, files=5_000 // scale, seed=args.seed)
    build_s = time.perf_counter() - t0
    tactic_steps = sum(len(t.tactics) for t in trace.theorems)
    links = sum(len(s.premises) for t in trace.theorems for s in t.tactics)
    imports = sum(len(f.imports) for f in trace.files)
    rows = len(trace.files) + imports + len(trace.premises) + len(trace.theorems) + tactic_steps + links

    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{Path(tmp) / 'bench.db'}"
        with Store.open(url) as store:
            shown_url = store.url
            t0 = time.perf_counter()
            store.add_trace(trace)
            ingest_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            [back] = store.latest_traces()
            read_s = time.perf_counter() - t0
        assert back == trace, "the trace read back differs from the one stored"

    results = {
        "db": "sqlite (fresh file)" if not args.db else shown_url,
        "theorems": len(trace.theorems),
        "premises": len(trace.premises),
        "files": len(trace.files),
        "tactic_steps": tactic_steps,
        "tactic_premise_links": links,
        "file_imports": imports,
        "total_rows": rows,
        "build_trace_seconds": round(build_s, 2),
        "ingest_seconds": round(ingest_s, 2),
        "ingest_rows_per_second": round(rows / ingest_s),
        "read_back_seconds": round(read_s, 2),
        "read_rows_per_second": round(rows / read_s),
    }
    print(
        table(
            ["step", "rows", "seconds", "rows/s"],
            [
                ["ingest (one transaction)", rows, round(ingest_s, 2), round(rows / ingest_s)],
                ["read back (latest_traces)", rows, round(read_s, 2), round(rows / read_s)],
            ],
        )
    )
    print(
        f"\n{len(trace.theorems)} theorems, {len(trace.premises)} premises, "
        f"{len(trace.files)} files, "
        f"{tactic_steps} tactic steps, {links} premise links, {imports} imports"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
