"""How the trSAT encoding scales, and how it compares with brute-force enumeration.

    python bench/verify_scaling.py [--quick] [--json OUT] [--timeout S]

Sections (each row is one trSAT question "is there a word of length exactly n with
output label L?" on a random encoder, seeded):

* ``length``   one layer, d = 4, vocab 2, every attention kind, n = 4..64;
* ``enum``     the same question against enumeration through the batched (numpy)
  interpreter at vocab^n >= 10^6: enumeration stops at its first witness (SAT) or visits
  every word (UNSAT); verdicts must agree. ``~``: time extrapolated (--quick only);
* ``shape``    layers, heads and activation width at a fixed length;
* ``solver``   z3, cvc5, bitwuzla (those installed) on the length-64 questions;
* ``ablation`` tabulation and interval pruning switched off.

UNKNOWN means the per-call timeout hit; it is reported, never counted as an answer.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.output import table  # noqa: E402
from verify import interpreter as ref  # noqa: E402
from verify.encoding import EncodingOptions  # noqa: E402
from verify.queries import QueryOptions, trsat  # noqa: E402
from verify.spec import Accept, Attention, EncoderSpec  # noqa: E402
from verify.synth import SynthConfig, random_spec  # noqa: E402


@dataclass(frozen=True, slots=True)
class Row:
    section: str
    config: str
    n: int
    label: int
    verdict: str
    encode_s: float
    solve_s: float
    enum_s: float | None = None
    speedup: float | None = None


def _spec(seed: int, **config: object) -> EncoderSpec:
    base = dict(vocab_size=2, d_model=4, head_dim=4, ffn_dim=4, width=8, weight_width=8)
    base.update(config)
    return random_spec(np.random.default_rng(seed), SynthConfig(**base))  # type: ignore[arg-type]


def _solve(section: str, config: str, spec: EncoderSpec, n: int, label: int, options: QueryOptions) -> Row:
    result = trsat(spec, max_len=n, exact_len=True, label=label, options=options)
    check = result.checks[0]
    return Row(section, config, n, label, result.verdict.value, round(check.encode_seconds, 3), round(check.solve_seconds, 3))


def _enumerate(spec: EncoderSpec, n: int, label: int, *, budget_words: int | None) -> tuple[bool, float, bool]:
    """Enumerate words of length n in order until one has ``label`` (all of them if none does).

    Returns whether one was found, the seconds taken, and whether the time is extrapolated
    from the first ``budget_words`` words (only for --quick)."""
    alphabet = np.array([spec.token_id(s) for s in spec.word_alphabet], dtype=np.int64)
    total = len(alphabet) ** n
    limit = total if budget_words is None else min(total, budget_words)
    batch = 1 << 15
    powers = len(alphabet) ** np.arange(n - 1, -1, -1, dtype=np.int64)  # (n,)
    found, done = False, 0
    start = time.perf_counter()
    while done < limit and not found:
        index = np.arange(done, min(done + batch, limit), dtype=np.int64)  # (B,)
        chunk = alphabet[(index[:, None] // powers[None, :]) % len(alphabet)]  # (B, n): base-V digits
        found = bool((ref.run_batch(spec, chunk).labels == label).any())
        done += len(chunk)
    seconds = time.perf_counter() - start
    extrapolated = not found and done < total
    return found, seconds * total / done if extrapolated else seconds, extrapolated


def length_rows(lengths: list[int], kinds: list[Attention], options: QueryOptions) -> list[Row]:
    rows = []
    for kind in kinds:
        spec = _spec(0, attention=kind)
        for n in lengths:
            for label in (0, 1):
                rows.append(_solve("length", f"{kind.value} L1 H1 d4", spec, n, label, options))
                print(rows[-1], file=sys.stderr)
    return rows


def enum_rows(cases: list[tuple[int, int]], kinds: list[Attention], options: QueryOptions, budget: int | None) -> list[Row]:
    rows = []
    for kind in kinds:
        for vocab, n in cases:
            # four classes: some are reached by few or no words, where enumeration cannot stop early
            spec = _spec(1, attention=kind, vocab_size=vocab, accept=Accept.ARGMAX, classes=4)
            for label in range(4):
                row = _solve("enum", f"{kind.value} V{vocab}", spec, n, label, options)
                if row.verdict == "unknown":
                    rows.append(row)
                    continue
                found, enum_s, extrapolated = _enumerate(spec, n, label, budget_words=budget)
                if not extrapolated:
                    assert found == (row.verdict == "sat"), f"enumeration disagrees with SMT on {row}"
                smt = row.encode_s + row.solve_s
                note = "~" if extrapolated else ""
                rows.append(Row(row.section, row.config + note, n, label, row.verdict, row.encode_s, row.solve_s, round(enum_s, 2), round(enum_s / smt, 1)))
                print(rows[-1], file=sys.stderr)
    return rows


def shape_rows(n: int, options: QueryOptions) -> list[Row]:
    rows = []
    for layers, heads, width in [(1, 1, 8), (2, 1, 8), (3, 1, 8), (1, 2, 8), (1, 4, 8), (1, 1, 4), (1, 1, 12), (1, 1, 16)]:
        spec = _spec(2, layers=layers, heads=heads, width=width, weight_width=min(width, 8))
        rows.append(_solve("shape", f"unique_hardmax L{layers} H{heads} w{width}", spec, n, 1, options))
        print(rows[-1], file=sys.stderr)
    return rows


def solver_rows(n: int, timeout: float) -> list[Row]:
    rows = []
    names = ["z3"] + [s for s in ("cvc5", "bitwuzla") if importlib.util.find_spec(s)]
    for kind in Attention:
        spec = _spec(0, attention=kind)  # the encoders of the length section
        for name in names:
            rows.append(_solve("solver", f"{kind.value} {name}", spec, n, 0, QueryOptions(solver=name, timeout=timeout)))
            print(rows[-1], file=sys.stderr)
    return rows


def ablation_rows(n: int, timeout: float) -> list[Row]:
    rows = []
    variants = {"full": EncodingOptions(), "no-tabulate": EncodingOptions(tabulate=False), "no-prune": EncodingOptions(prune=False)}
    for kind in Attention:
        spec = _spec(4, attention=kind)
        for name, enc in variants.items():
            rows.append(_solve("ablation", f"{kind.value} {name}", spec, n, 1, QueryOptions(timeout=timeout, encoding=enc)))
            print(rows[-1], file=sys.stderr)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a subset that runs in about a minute")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per solver call (default 60, quick 20)")
    args = parser.parse_args()
    timeout = args.timeout or (20.0 if args.quick else 60.0)
    options = QueryOptions(timeout=timeout)
    kinds = list(Attention)
    if args.quick:
        rows = length_rows([4, 16, 64], [Attention.UNIQUE_HARDMAX], options)
        rows += enum_rows([(2, 20)], [Attention.UNIQUE_HARDMAX], options, budget=1 << 17)
        rows += ablation_rows(8, timeout)[:3]
    else:
        rows = length_rows([4, 8, 16, 32, 64], kinds, options)
        rows += enum_rows([(2, 20), (4, 10)], [Attention.UNIQUE_HARDMAX], options, budget=None)
        rows += enum_rows([(2, 20)], [Attention.AVERAGE_HARDMAX, Attention.SOFTMAX_TABLE], options, budget=None)
        rows += shape_rows(16, options)
        rows += solver_rows(64, timeout)
        rows += ablation_rows(12, timeout)
    headers = ("section", "config", "n", "label", "verdict", "encode s", "solve s", "enum s", "speedup")
    print(table(headers, [[("-" if v is None else v) for v in asdict(r).values()] for r in rows]))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
