"""Throughput of Lean-free source extraction on generated Lean source.

Generates a few MB of varied, seeded Lean 4 source (namespaces, sections, opens, doc and
nested comments, strings, attributes, structures, inductives, instances with class binders,
aliases, theorems in tactic and term mode with bullets, ``;``/``<;>`` steps and ``sorry``)
in two mixes: ``mathlib`` (calibrated on a sample of Mathlib files, see :data:`MATHLIB`) and
``dense`` (the earlier, denser mix), then times
``extract_file`` over one big file and ``extract_repo`` over the same text split into an
importing chain of files. Prints a table of MB/s; ``--json OUT`` writes the numbers.

    python bench/source_extraction.py [--quick] [--json OUT] [--mb 4] [--repeats 3] [--mix mathlib dense]
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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.reports.output import table  # noqa: E402
from lean_env.records import RepoSpec  # noqa: E402
from lean_env.trace.source import extract_file, extract_repo  # noqa: E402

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
_LONG_TACTICS = (
    "rw [{lemma}, Nat.mul_comm a b, ← Nat.add_assoc, Nat.succ_le_iff]",
    "simp only [{lemma}, Finset.sum_range_succ, Nat.mul_add, Nat.add_mul] at h ⊢",
    "exact Nat.le_antisymm ({lemma} _ _) (Nat.le_of_lt_succ hx)",
    "refine ⟨fun h => ?_, fun h => ?_⟩",
    "have key : n * m ≤ m * n + 0 := {lemma} (Nat.le_refl _) h",
    "obtain ⟨x, hx, rfl⟩ := h",
    "simpa [{lemma}, Nat.add_comm] using Nat.le_of_lt_succ hx",
    "rcases Nat.lt_or_ge n m with hnm | hnm <;> simp [{lemma}, hnm]",
    "apply Nat.le_trans ({lemma} n m)\n  exact Nat.le_of_eq (by ring_nf)",
    "calc n + 0 = n := by simp\n    _ = n * 1 := (Nat.mul_one n).symm",
)
_WORDS = "the of a natural number sum product is equal to when and that this lemma states holds for every".split()
_BINDERS = (
    "(n m : Nat)",
    "{α : Type u}",
    "[Inhabited α]",
    "(h : n ≤ m)",
    "(xs : List α)",
    "(p : Nat → Prop)",
    "(hf : ∀ x ∈ s, f x ≤ g x)",
    "[CommRing R] [IsDomain R]",
    "{s t : Set α}",
    "(hst : s ⊆ t ∪ u)",
)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16))).capitalize() + "."


@dataclass(frozen=True, slots=True)
class Mix:
    """What the generated source is made of."""

    term_share: float  # theorems proved by a term
    steps: tuple[int, int]  # top-level steps of a tactic proof, uniform in this range
    long_steps: bool  # Mathlib-like steps (`rw [a, b, c]`, `refine ⟨…⟩`) or short ones
    doc_share: float  # theorems with a doc comment
    doc_sentences: int  # at most, per doc comment
    binders: tuple[int, int]  # binders of a theorem, uniform in this range
    sorry_share: float  # proofs ending in `sorry`
    containers: float  # blocks with a structure and an inductive
    instances: float  # anonymous instances with class binders, per block
    aliases: float  # `alias` lines, per theorem


# Measured on 40 Mathlib files (0.41 MB, `#align` lines discounted): about 2,900 theorems,
# 3,500 premises and 3,000 top-level tactic steps per MB; 56% of theorems proved by a term,
# tactic proofs of 2.4 steps of ~66 characters, 16% comments, no `sorry`. This mix gives
# 2,965 / 3,540 / 3,070 per MB, 54% term proofs and 16% comments (seed 0), and keeps 2%
# `sorry` so that finding them is timed too.
MATHLIB = Mix(
    term_share=0.62,
    steps=(1, 4),
    long_steps=True,
    doc_share=0.4,
    doc_sentences=2,
    binders=(3, 8),
    sorry_share=0.02,
    containers=0.15,
    instances=1.2,
    aliases=0.03,
)
# The earlier generator's mix: denser in everything (3.3x the steps of Mathlib per MB), kept
# to compare with earlier measurements.
DENSE = Mix(
    term_share=0.3,
    steps=(1, 7),
    long_steps=False,
    doc_share=0.5,
    doc_sentences=3,
    binders=(1, 4),
    sorry_share=0.2,
    containers=1.0,
    instances=1.0,
    aliases=0.0,
)
MIXES = {"mathlib": MATHLIB, "dense": DENSE}


def generate(*, size_bytes: int, seed: int, chunk: int = 1, mix: Mix = MATHLIB) -> list[str]:
    """Seeded Lean source of about ``size_bytes`` characters, cut into ``chunk`` modules."""
    rng = random.Random(seed)
    modules: list[str] = []
    counter = 0
    target = size_bytes // chunk
    for index in range(chunk):
        out = [f"/-!\n# Generated module {index}\n\n{_sentence(rng)} /- nested -/ {_sentence(rng)}\n-/\n\n"]
        size = 0
        lemmas: list[str] = []
        while size < target:
            counter += 1
            text = _block(rng, counter, lemmas, mix)
            out.append(text)
            size += len(text)
        modules.append("".join(out))
    return modules


def _block(rng: random.Random, counter: int, lemmas: list[str], mix: Mix) -> str:
    """One namespace of declarations: a definition, maybe a structure and an inductive,
    instances, and 10-30 theorems."""
    ns = f"Gen{counter}"
    block = [f"namespace {ns}\n\nopen Nat\n\nvariable {{α : Type u}}\n\n"]
    if rng.random() < mix.containers:
        block.append(
            f'/-- A point number {counter}: {_sentence(rng)} See "docs". -/\n'
            f"structure P{counter} where\n  /-- first coordinate -/\n  x : Nat\n  y : Nat := 0\nderiving Repr\n\n"
            f"/-- {_sentence(rng)} -/\ninductive C{counter} where\n  | a\n  | b (n : Nat)\n\n"
        )
    for _ in range(int(mix.instances) + (rng.random() < mix.instances % 1)):
        # Class binders with long names, as Mathlib writes them (`[PreservesLimitsOfShape J F]`).
        block.append(
            f"instance [HasFiniteLimitsAndPreserves{counter} α] [DecidableEq α] : Inhabited (Option α) := ⟨none⟩\n\n"
        )
    block.append(
        f"/-- {_sentence(rng)} -/\ndef f{counter} (n : Nat) : Nat := n + {rng.randint(0, 9)} -- {_sentence(rng)}\n\n"
    )
    for k in range(rng.randint(10, 30)):
        if rng.random() < 0.1:
            block.append(f"/-! ### {_sentence(rng)} -/\n\n")
        name = f"f{counter}_{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{k}"
        attr = rng.choice(("", "", "@[simp] ", "private ", "protected ", "@[simp, norm_cast] "))
        sentences = rng.randint(1, mix.doc_sentences)
        doc = f"/-- {' '.join(_sentence(rng) for _ in range(sentences))} -/\n" if rng.random() < mix.doc_share else ""
        binders = " ".join(rng.sample(_BINDERS, rng.randint(*mix.binders)))
        statement = f"{attr}theorem {name} {binders} :\n    f{counter} (n + 0) * 1 = f{counter} n + 0 * m"
        lemma = rng.choice(lemmas) if lemmas else f"f{counter}"
        if rng.random() < mix.term_share:
            proof = (
                "sorry"
                if rng.random() < mix.sorry_share
                else rng.choice(
                    (
                        "rfl",
                        "fun h => h.symm",
                        "Nat.le_refl _",
                        f"by simp [f{counter}]",
                        f"({lemma} _ _).trans (Nat.le_of_eq rfl)",
                        f"⟨fun h => {lemma} h (Nat.le_refl _), fun h => h.elim⟩",
                        f"Nat.le_antisymm ({lemma} (n + 0) m) (Nat.le_trans (Nat.le_of_lt_succ hx) (Nat.le_refl _))",
                        f"fun a b hab => (Nat.mul_le_mul_left _ ({lemma} a b hab)).trans_eq (Nat.mul_comm _ _)",
                    )
                )
            )
            block.append(f"{doc}{statement} :=\n  {proof}\n\n")
        else:
            steps = []
            for _ in range(rng.randint(*mix.steps)):
                tactic = (
                    rng.choice(_LONG_TACTICS if mix.long_steps else _TACTICS).format(lemma=lemma).replace("\n", "\n  ")
                )
                if rng.random() < 0.15:
                    tactic = f"· {tactic}\n    simp /- inline -/"
                steps.append(tactic)
            if rng.random() < mix.sorry_share:
                steps.append("sorry")
            body = "\n  ".join(steps)
            block.append(f"{doc}{statement} := by\n  {body}\n\n")
        if rng.random() < mix.aliases:
            block.append(f"alias {name}_alias := {name}\n\n")
        lemmas.append(name)
    block.append(f"end {ns}\n\n")
    return "".join(block)


def _time(fn: Callable[[], object], repeats: int) -> float:
    """The best CPU time of ``repeats`` runs: CPU rather than wall time, because the
    machines this runs on are shared and wall time measures the neighbours too."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def _measure(mix: Mix, name: str, *, size: int, seed: int, repeats: int) -> list[list[object]]:
    """Rows for one file and for the same text as a 20-file import chain."""
    (single,) = generate(size_bytes=size, seed=seed, mix=mix)
    mb = len(single.encode()) / 1e6
    # Only the counts are kept: a result left alive would make every later collection of the
    # garbage collector walk its ~60,000 objects per MB, a cost of this script, not of
    # extraction (ingestion stores a repository's records and drops them).
    result = extract_file(single, path="Gen.lean")
    single_counts = len(result.theorems), len(result.premises)
    del result
    single_s = _time(lambda: extract_file(single, path="Gen.lean"), repeats)

    parts = generate(size_bytes=size, seed=seed, chunk=20, mix=mix)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i, text in enumerate(parts):
            header = f"import Gen.M{i - 1}\n" if i else ""
            (root / "Gen").mkdir(exist_ok=True)
            (root / "Gen" / f"M{i}.lean").write_text(header + text, encoding="utf-8")
        repo_mb = sum(len(p.encode()) for p in parts) / 1e6
        spec = RepoSpec(str(root))
        trace = extract_repo(root, spec=spec, commit="bench", lean_version=None)
        repo_counts = len(trace.theorems), len(trace.premises)
        del trace
        repo_s = _time(lambda: extract_repo(root, spec=spec, commit="bench", lean_version=None), repeats)
    return [
        [name, "extract_file (1 file)", round(mb, 2), *single_counts, round(single_s, 3), round(mb / single_s, 2)],
        [
            name,
            "extract_repo (20 files)",
            round(repo_mb, 2),
            *repo_counts,
            round(repo_s, 3),
            round(repo_mb / repo_s, 2),
        ],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 MB, 2 repeats")
    parser.add_argument("--json", metavar="OUT", type=Path, help="write the results as JSON")
    parser.add_argument("--mb", type=float, default=4.0, help="megabytes of source to generate")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs; the best counts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--mix",
        nargs="+",
        choices=sorted(MIXES),
        default=["mathlib", "dense"],
        help="generated mixes: mathlib (calibrated on Mathlib files) and/or dense (the earlier, denser one)",
    )
    args = parser.parse_args(argv)
    megabytes, repeats = (1.0, 2) if args.quick else (args.mb, args.repeats)
    size = int(megabytes * 1_000_000)
    rows = []
    for mix_name in args.mix:
        rows += _measure(MIXES[mix_name], mix_name, size=size, seed=args.seed, repeats=repeats)

    print(table(["mix", "run", "MB", "theorems", "premises", "best CPU s", "MB/s"], rows))
    # CPU time still rises with the machine's load (shared caches): say what it was.
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        payload = {
            "seed": args.seed,
            "repeats": repeats,
            "load_average": round(load, 2),
            "runs": [
                dict(zip(["mix", "run", "mb", "theorems", "premises", "seconds", "mb_per_s"], r, strict=True))
                for r in rows
            ],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
