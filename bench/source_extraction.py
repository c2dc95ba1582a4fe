"""Throughput of Lean-free source extraction on generated Lean source.

Generates a few MB of varied, seeded Lean 4 source (namespaces, sections, opens, doc and
nested comments, strings, attributes, structures, inductives, instances, theorems in tactic
and term mode with bullets, ``;``/``<;>`` steps and ``sorry``), then times
``extract_file`` over one big file and ``extract_repo`` over the same text split into an
importing chain of files. Prints a table of MB/s; ``--json OUT`` writes the numbers.

    python bench/source_extraction.py [--quick] [--json OUT] [--mb 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.output import table  # noqa: E402
from lean_env.records import RepoSpec  # noqa: E402
from lean_env.source import extract_file, extract_repo  # noqa: E402

_TACTICS = (
    "simp",
    "omega",
    "rfl",
    "intro h hx",
    "exact h",
    "constructor",
    "simp [{lemma}, Nat.add_comm, Nat.mul_comm]",
    "rw [{lemma}, Nat.add_assoc, ← Nat.mul_succ]",
    "exact {lemma} _ _",
    "apply {lemma}",
    "cases h <;> simp_all",
    "induction n with\n  | zero => simp\n  | succ k ih =>\n    rw [Nat.succ_eq_add_one, ih]\n    simp [{lemma}]",
    "have hx : x + 0 = x := by simp",
    "simp only [Nat.add_comm, Nat.add_left_comm]; omega",
    "obtain ⟨a, b⟩ := h",
    "calc n + 0 = n := by simp\n    _ = n := rfl",
)
_WORDS = "the of a natural number sum product is equal to when and that this lemma states holds for every".split()
_BINDERS = (
    "(n m : Nat)",
    "{α : Type u}",
    "[Inhabited α]",
    "(h : n ≤ m)",
    "(xs : List α)",
    "(p : Nat → Prop)",
)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16))).capitalize() + "."


def generate(*, size_bytes: int, seed: int, chunk: int = 1) -> list[str]:
    """Seeded Lean source of about ``size_bytes`` characters, cut into ``chunk`` modules.

    The mix aims at Mathlib's density (a few hundred bytes per declaration, half of them
    with doc comments), so that MB/s compares with real repositories.
    """
    rng = random.Random(seed)
    modules: list[str] = []
    counter = 0
    target = size_bytes // chunk
    for index in range(chunk):
        out = [
            f"/-!\n# Generated module {index}\n\n{_sentence(rng)} /- nested -/ {_sentence(rng)}\n-/\n\n"
        ]
        size = 0
        lemmas: list[str] = []
        while size < target:
            counter += 1
            ns = f"Gen{counter}"
            block = [f"namespace {ns}\n\nopen Nat\n\nvariable {{α : Type u}}\n\n"]
            block.append(
                f'/-- A point number {counter}: {_sentence(rng)} See "docs". -/\n'
                f"structure P{counter} where\n  /-- first coordinate -/\n  x : Nat\n  y : Nat := 0\nderiving Repr\n\n"
                f"/-- {_sentence(rng)} -/\ninductive C{counter} where\n  | a\n  | b (n : Nat)\n\n"
                f"instance : Inhabited (P{counter}) := ⟨⟨0, 0⟩⟩\n\n"
                f"/-- {_sentence(rng)} -/\ndef f{counter} (n : Nat) : Nat := n + {rng.randint(0, 9)} -- {_sentence(rng)}\n\n"
            )
            for k in range(rng.randint(10, 30)):
                if rng.random() < 0.1:
                    block.append(f"/-! ### {_sentence(rng)} -/\n\n")
                name = f"f{counter}_{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{k}"
                attr = rng.choice(("", "", "@[simp] ", "private ", "protected ", "@[simp, norm_cast] "))
                doc = (
                    f"/-- {' '.join(_sentence(rng) for _ in range(rng.randint(1, 3)))} -/\n"
                    if rng.random() < 0.5
                    else ""
                )
                binders = " ".join(rng.sample(_BINDERS, rng.randint(1, 4)))
                statement = f"{attr}theorem {name} {binders} :\n    f{counter} (n + 0) * 1 = f{counter} n + 0 * m"
                if rng.random() < 0.3:
                    proof = rng.choice(
                        ("rfl", "fun h => h.symm", "Nat.le_refl _", "sorry", f"by simp [f{counter}]")
                    )
                    block.append(f"{doc}{statement} :=\n  {proof}\n\n")
                else:
                    steps = []
                    for _ in range(rng.randint(1, 7)):
                        lemma = rng.choice(lemmas) if lemmas else f"f{counter}"
                        tactic = rng.choice(_TACTICS).format(lemma=lemma).replace("\n", "\n  ")
                        if rng.random() < 0.15:
                            tactic = f"· {tactic}\n    simp /- inline -/"
                        steps.append(tactic)
                    if rng.random() < 0.2:
                        steps.append("sorry")
                    body = "\n  ".join(steps)
                    block.append(f"{doc}{statement} := by\n  {body}\n\n")
                lemmas.append(name)
            block.append(f"end {ns}\n\n")
            text = "".join(block)
            out.append(text)
            size += len(text)
        modules.append("".join(out))
    return modules


def _time(fn: Callable[[], object], repeats: int) -> float:
    """The best CPU time of ``repeats`` runs: CPU rather than wall time, because the
    machines this runs on are shared and wall time measures the neighbours too."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 MB, 2 repeats")
    parser.add_argument("--json", metavar="OUT", type=Path, help="write the results as JSON")
    parser.add_argument("--mb", type=float, default=4.0, help="megabytes of source to generate")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the best counts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    megabytes, repeats = (1.0, 2) if args.quick else (args.mb, args.repeats)
    size = int(megabytes * 1_000_000)

    (single,) = generate(size_bytes=size, seed=args.seed)
    mb = len(single.encode()) / 1e6
    result = extract_file(single, path="Gen.lean")
    single_s = _time(lambda: extract_file(single, path="Gen.lean"), repeats)

    parts = generate(size_bytes=size, seed=args.seed, chunk=20)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i, text in enumerate(parts):
            header = f"import Gen.M{i - 1}\n" if i else ""
            (root / "Gen").mkdir(exist_ok=True)
            (root / "Gen" / f"M{i}.lean").write_text(header + text, encoding="utf-8")
        repo_mb = sum(len(p.encode()) for p in parts) / 1e6
        spec = RepoSpec(str(root))
        trace = extract_repo(root, spec=spec, commit="bench", lean_version=None)
        repo_s = _time(lambda: extract_repo(root, spec=spec, commit="bench", lean_version=None), repeats)

    rows = [
        [
            "extract_file (1 file)",
            round(mb, 2),
            len(result.theorems),
            len(result.premises),
            round(single_s, 3),
            round(mb / single_s, 2),
        ],
        [
            "extract_repo (20 files)",
            round(repo_mb, 2),
            len(trace.theorems),
            len(trace.premises),
            round(repo_s, 3),
            round(repo_mb / repo_s, 2),
        ],
    ]
    print(table(["run", "MB", "theorems", "premises", "best CPU s", "MB/s"], rows))
    # CPU time still rises with the machine's load (shared caches): say what it was.
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        payload = {
            "seed": args.seed,
            "repeats": repeats,
            "load_average": round(load, 2),
            "runs": [
                dict(zip(["run", "mb", "theorems", "premises", "seconds", "mb_per_s"], r, strict=True))
                for r in rows
            ],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
