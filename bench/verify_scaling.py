"""How the trSAT encoding scales, and how it compares with brute-force enumeration.

    python bench/verify_scaling.py [--quick] [--json OUT] [--timeout S] [--sections a,b,...]

Sections (each row is one trSAT question "is there a word of length exactly n with
output label L?" on a random encoder, seeded; seconds are the whole answer: the interpreter
pre-pass over candidate words, encoding and solving, over every length the query solved):

* ``length``   one layer, d = 4, vocab 2, every attention kind (and unique hardmax with a
  periodic positional encoding, whose exact lengths do not reduce), n = 4..64, by the default
  query and with the pre-pass off (``smt s``: z3; ``portfolio s``: z3, cvc5 and bitwuzla
  racing);
* ``enum``     the same question against enumeration through the batched (numpy)
  interpreter at vocab^n >= 10^6, by the default query (``by``: how it was answered) and
  with the pre-pass off (``smt s``: solver only). Enumeration runs growing batches (256
  words, then 4x larger up to 32768) and stops at its first witness (SAT) or visits every
  word (UNSAT); one pass per encoder times every label. Verdicts must agree. ``~``: time
  extrapolated (--quick only). The unique-hardmax encoders without positions are the
  complete class (its lengths reduce to <= |vocab| + 1); the ``periodic`` rows are answered
  at the asked length by signature words (verify.queries.signatures); the average rows by sorted
  words;
* ``long``     unique hardmax with periodic positions, vocab 4, exact lengths 20..64 (4^64
  words), by signature words and by the solver alone; and the all-lengths question (lengths
  1..40, which the bound of 37 turns into "no word of any length");
* ``shape``    layers, heads and activation width at a fixed length (unique hardmax with
  periodic positions);
* ``solver``   z3, cvc5, bitwuzla (those installed), the three-way portfolio and the default
  race of z3 and bitwuzla on the length-64 UNSAT questions outside the complete class, solver only;
* ``ablation`` tabulation and interval pruning switched off, solver only;
* ``vocab``    vocabularies of 2k, 20k, 200k and 500k symbols, lengths 1..2, no word accepted,
  5 s per length: the whole question's seconds, every stage bounded by the timeout;
* ``route``    deciding by cost: causal table-softmax encoders (1 layer d = 4; 2 layers x 2
  heads d = 8) at growing vocabulary and length, by default (``seconds``, ``by``) and with
  ``--enumerate 0``, the pre-pass and then the solver, as before (``smt s``);
* ``cubes``    ``--jobs 2`` against one process, solver only (``smt s``: one process);
* ``larger``   what users of such a tool try: random encoders of 2 layers x 2 heads, d = 4, 8,
  16 (head dim d/2, FFN d, 8 bits), every attention kind without mask or positions (where the
  reductions apply) and table softmax with a causal mask and a positional table (where none
  does, as in trained models), exact lengths 4..32, the label a
  sample of 4096 words does not show (so mostly UNSAT, the hard case), by default and solver
  only (z3, portfolio), each solver's lengths stopped at its first timeout; and the trained
  example models at 8 bits (majority: 1 layer, d = 4; dyck: 2 layers, d = 16, causal mask,
  positional table), ``equiv`` with the exact model of the language, seconds per length.

UNKNOWN means the per-call timeout hit; it is reported, never counted as an answer. Every
solver call runs in child processes (verify.smt.portfolio), so its time limit holds.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# The random encoders come from the tests' helper (tests/verify_synth.py): tests and this
# benchmark draw the same models, and the library does not ship a generator only they use.
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from verify_synth import SynthConfig, random_spec  # noqa: E402

from agent.reports.output import table  # noqa: E402
from verify.model import interpreter as ref  # noqa: E402
from verify.model.spec import Accept, Attention, EncoderSpec, Mask, PositionalKind  # noqa: E402
from verify.queries.questions import equiv, trsat  # noqa: E402
from verify.queries.results import LengthCheck, QueryOptions  # noqa: E402
from verify.smt.encoding import EncodingOptions  # noqa: E402

# Unique hardmax with a periodic positional encoding: exact lengths do not reduce to short
# ones (verify.queries.completeness), so the solver does the work.
PERIODIC: dict[str, object] = {
    "attention": Attention.UNIQUE_HARDMAX,
    "positional": PositionalKind.PERIODIC,
    "positional_rows": 3,
}


@dataclass(frozen=True, slots=True)
class Row:
    section: str
    config: str
    n: int
    label: int
    verdict: str
    by: str  # how the last length was answered: smt | sample | enumerate
    seconds: float  # pre-pass + encode + solve, over every length solved
    smt_s: float | None = None  # the same question with the pre-pass off (z3)
    portfolio_s: float | None = None  # the same, z3, cvc5 and bitwuzla racing
    enum_s: float | None = None
    speedup: float | None = None  # enum_s / seconds


def _spec(seed: int, **config: object) -> EncoderSpec:
    base = dict(vocab_size=2, d_model=4, head_dim=4, ffn_dim=4, width=8, weight_width=8)
    base.update(config)
    return random_spec(np.random.default_rng(seed), SynthConfig(**base))  # type: ignore[arg-type]


def _solve(section: str, config: str, spec: EncoderSpec, n: int, label: int, options: QueryOptions) -> Row:
    result = trsat(spec, max_len=n, exact_len=True, label=label, options=options)
    seconds = sum(c.seconds for c in result.checks)
    return Row(section, config, n, label, result.verdict.value, result.checks[-1].method.value, round(seconds, 3))


def _enumerate(
    spec: EncoderSpec, n: int, labels: range, *, budget_words: int | None
) -> dict[int, tuple[bool, float, bool]]:
    """Enumerate words of length n in order, in growing batches, as a search per label would.

    One pass times every label: a label's time is the time until the end of the batch holding
    its first witness (all words if none). Returns, per label, whether a witness was found,
    the seconds, and whether the time is extrapolated from the first ``budget_words`` words
    (only for --quick)."""
    alphabet = np.array([spec.token_id(s) for s in spec.word_alphabet], dtype=np.int64)
    total = len(alphabet) ** n
    limit = total if budget_words is None else min(total, budget_words)
    powers = len(alphabet) ** np.arange(n - 1, -1, -1, dtype=np.int64)  # (n,)
    first: dict[int, float] = {}
    done, batch = 0, 256
    start = time.perf_counter()
    while done < limit and len(first) < len(labels):
        index = np.arange(done, min(done + batch, limit), dtype=np.int64)  # (B,)
        chunk = alphabet[(index[:, None] // powers[None, :]) % len(alphabet)]  # (B, n): base-V digits
        seen = set(ref.run_batch(spec, chunk).labels.tolist())
        now = time.perf_counter() - start
        for label in seen:
            first.setdefault(label, now)
        done += len(chunk)
        batch = min(batch * 4, 1 << 15)
    seconds = time.perf_counter() - start
    out = {}
    for label in labels:
        if label in first:
            out[label] = (True, first[label], False)
        else:
            extrapolated = done < total
            out[label] = (False, seconds * total / done if extrapolated else seconds, extrapolated)
    return out


def _smt_only(options: QueryOptions, solver: str = "z3") -> QueryOptions:
    return QueryOptions(solver=solver, timeout=options.timeout, presearch=0)


def length_rows(lengths: list[int], cases: list[tuple[str, dict[str, object]]], options: QueryOptions) -> list[Row]:
    rows = []
    for name, config in cases:
        spec = _spec(0, **config)
        for n in lengths:
            for label in (0, 1):
                row = _solve("length", f"{name} L1 H1 d4", spec, n, label, options)
                smt = _solve("length", name, spec, n, label, _smt_only(options))
                race = _solve("length", name, spec, n, label, _smt_only(options, "portfolio"))
                rows.append(replace(row, smt_s=smt.seconds, portfolio_s=race.seconds))
                print(rows[-1], file=sys.stderr)
    return rows


def enum_rows(
    cases: list[tuple[str, int, int, dict[str, object]]], options: QueryOptions, budget: int | None
) -> list[Row]:
    rows = []
    for name, vocab, n, config in cases:
        # four classes: some are reached by few or no words, where enumeration cannot stop early
        spec = _spec(1, vocab_size=vocab, accept=Accept.ARGMAX, classes=4, **config)
        enumerated = _enumerate(spec, n, range(4), budget_words=budget)
        for label in range(4):
            row = _solve("enum", f"{name} V{vocab}", spec, n, label, options)
            smt = _solve("enum", name, spec, n, label, _smt_only(options))
            race = _solve("enum", name, spec, n, label, _smt_only(options, "portfolio"))
            found, enum_s, extrapolated = enumerated[label]
            for r in (row, smt, race):
                if r.verdict != "unknown" and not extrapolated:
                    assert found == (r.verdict == "sat"), f"enumeration disagrees with the query on {r}"
            note = "~" if extrapolated else ""
            rows.append(
                Row(
                    row.section,
                    row.config + note,
                    n,
                    label,
                    row.verdict,
                    row.by,
                    row.seconds,
                    smt.seconds,
                    race.seconds,
                    round(enum_s, 4),
                    round(enum_s / max(row.seconds, 1e-3), 1),
                )
            )
            print(rows[-1], file=sys.stderr)
    return rows


def long_rows(lengths: list[int], options: QueryOptions) -> list[Row]:
    rows = []
    spec = _spec(1, vocab_size=4, accept=Accept.ARGMAX, classes=4, **PERIODIC)  # the enum section's encoder
    for n in lengths:
        row = _solve("long", "unique_hardmax periodic V4", spec, n, 0, options)
        smt = _solve(
            "long", "unique_hardmax periodic V4", spec, n, 0, QueryOptions(timeout=options.timeout, presearch=0)
        )
        # a solver timeout shows in the config: its seconds are then only a lower bound
        rows.append(replace(row, config=f"{row.config} (smt: {smt.verdict})", smt_s=smt.seconds))
        print(rows[-1], file=sys.stderr)
    result = trsat(spec, max_len=40, label=0, options=options)
    scope = "all lengths" if result.all_lengths else f"lengths 1..{result.checks[-1].length}"
    rows.append(
        Row(
            "long",
            f"unique_hardmax periodic V4 ({scope})",
            result.checks[-1].length,
            0,
            result.verdict.value,
            result.checks[-1].method.value,
            round(sum(c.seconds for c in result.checks), 3),
        )
    )
    print(rows[-1], file=sys.stderr)
    return rows


def shape_rows(n: int, options: QueryOptions) -> list[Row]:
    rows = []
    for layers, heads, width in [
        (1, 1, 8),
        (2, 1, 8),
        (3, 1, 8),
        (1, 2, 8),
        (1, 4, 8),
        (1, 1, 4),
        (1, 1, 12),
        (1, 1, 16),
    ]:
        spec = _spec(2, layers=layers, heads=heads, width=width, weight_width=min(width, 8), **PERIODIC)
        rows.append(_solve("shape", f"unique_hardmax periodic L{layers} H{heads} w{width}", spec, n, 1, options))
        print(rows[-1], file=sys.stderr)
    return rows


def _outside_complete_class() -> list[tuple[str, dict[str, object]]]:
    """Encoders whose questions the solver must answer (no reduction to short lengths)."""
    return [(kind.value, {"attention": kind}) for kind in (Attention.AVERAGE_HARDMAX, Attention.SOFTMAX_TABLE)] + [
        ("unique_hardmax periodic", PERIODIC)
    ]


def solver_rows(n: int, timeout: float) -> list[Row]:
    rows = []
    installed = [s for s in ("cvc5", "bitwuzla") if importlib.util.find_spec(s)]
    names = ["z3", *installed, "portfolio"] + (["z3,bitwuzla"] if "bitwuzla" in installed else [])
    for kind, config in _outside_complete_class():
        spec = _spec(0, **config)  # the encoders of the length section
        for name in names:
            rows.append(
                _solve("solver", f"{kind} {name}", spec, n, 0, QueryOptions(solver=name, timeout=timeout, presearch=0))
            )
            print(rows[-1], file=sys.stderr)
    return rows


def ablation_rows(n: int, timeout: float) -> list[Row]:
    rows = []
    variants = {
        "full": EncodingOptions(),
        "no-tabulate": EncodingOptions(tabulate=False),
        "no-prune": EncodingOptions(prune=False),
    }
    for kind, config in [("unique_hardmax periodic", PERIODIC)] + _outside_complete_class()[:2]:
        spec = _spec(4, **config)
        for name, enc in variants.items():
            rows.append(
                _solve(
                    "ablation", f"{kind} {name}", spec, n, 1, QueryOptions(timeout=timeout, encoding=enc, presearch=0)
                )
            )
            print(rows[-1], file=sys.stderr)
    return rows


def _per_length(checks: tuple[LengthCheck, ...]) -> str:
    return ", ".join(f"{c.length}: {c.verdict.value} {c.seconds:.2f}s" for c in checks)


def larger_rows(dims: list[int], lengths: list[int], timeout: float) -> list[Row]:
    """2 layers x 2 heads at growing width and length; each solver stops at its first timeout."""
    rows = []
    options = QueryOptions(timeout=timeout)
    # Without mask and positions the reductions apply (sorted words, signature words); a
    # causal mask with a positional table, as trained models have, leaves the solver alone.
    cases = [(kind.value, {"attention": kind}) for kind in Attention] + [
        (
            "softmax_table causal table",
            {"attention": Attention.SOFTMAX_TABLE, "mask": Mask.CAUSAL, "positional": PositionalKind.TABLE},
        )
    ]
    for name, config in cases:
        for d in dims:
            shape = {"layers": 2, "heads": 2, "d_model": d, "head_dim": max(1, d // 2), "ffn_dim": d}
            spec = _spec(5, positional_rows=max(lengths), **shape, **config)  # type: ignore[arg-type]
            stopped: set[str] = set()
            for n in lengths:
                ids = np.random.default_rng(n).integers(0, 2, size=(4096, n))
                seen = set(ref.run_batch(spec, np.array([spec.token_id(s) for s in spec.word_alphabet])[ids]).labels)
                label = next((lab for lab in (1, 0) if lab not in seen), 1)
                row = _solve("larger", f"{name} L2 H2 d{d}", spec, n, label, options)
                notes, times = [], {}
                for solver in ("z3", "portfolio"):
                    if solver in stopped:
                        notes.append(f"{solver}: not run")
                        continue
                    smt = _solve("larger", "", spec, n, label, _smt_only(options, solver))
                    times[solver] = smt.seconds
                    notes.append(f"{solver}: {smt.verdict}")
                    if smt.verdict == "unknown":
                        stopped.add(solver)  # longer lengths only get harder
                rows.append(
                    replace(
                        row,
                        config=f"{row.config} ({', '.join(notes)})",
                        smt_s=times.get("z3"),
                        portfolio_s=times.get("portfolio"),
                    )
                )
                print(rows[-1], file=sys.stderr)
    return rows


def trained_rows(tasks: dict[str, int], timeout: float) -> list[Row]:
    """The trained examples at 8 bits: equiv with the exact model, lengths 1..N (up to the first
    distinguishing length), per length: by default and with the solver alone."""
    from verify.trained.exact_models import exact_model
    from verify.trained.quantize import QuantConfig, quantize
    from verify.trained.tasks import get_task, sample_dataset
    from verify.trained.training import recipe, train

    rows = []
    for name, max_len in tasks.items():
        task = get_task(name)
        chosen = recipe(task)
        trained = train(task, chosen.model, chosen.train)
        calibration = sample_dataset(task, size=500, max_len=chosen.train.max_len, seed=1).words
        spec = quantize(trained.model, calibration, QuantConfig(width=8, weight_width=8))
        reference = exact_model(name)
        assert reference is not None
        m = chosen.model
        shape = f"L{m.layers} H{m.heads} d{m.d_model} {m.attention.value} {m.mask.value} {m.positional.value}"
        runs = {
            "default": QueryOptions(timeout=timeout),
            "z3 only": QueryOptions(timeout=timeout, presearch=0),
            "portfolio only": QueryOptions(solver="portfolio", timeout=timeout, presearch=0),
        }
        for run, options in runs.items():
            result = equiv(spec, reference, max_len=max_len, options=options)
            last = result.checks[-1]
            rows.append(
                Row(
                    "trained",
                    f"{name} w8 {shape}, {run} ({_per_length(result.checks)})",
                    last.length,
                    -1,
                    result.verdict.value,
                    last.method.value,
                    round(sum(c.seconds for c in result.checks), 3),
                )
            )
            print(rows[-1], file=sys.stderr)
    return rows


def vocab_rows(vocabs: list[int], n: int, timeout: float) -> list[Row]:
    """Vocabularies of thousands to hundreds of thousands of symbols (d = 4, one layer,
    unique hardmax), a readout that never accepts (so no pre-pass finds a witness), length
    1..n under ``--timeout`` per length: how long a whole question takes, every stage of
    each length (pre-pass, encoding, solving) bounded by the timeout."""
    rows = []
    for vocab in vocabs:
        spec = _spec(0, vocab_size=vocab, head_dim=2, ffn_dim=0, width=6, weight_width=4)
        never = dataclasses.replace(
            spec.readout, weight=np.zeros_like(spec.readout.weight), bias=np.full_like(spec.readout.bias, -1)
        )
        spec = dataclasses.replace(spec, readout=never)
        started = time.perf_counter()
        result = trsat(spec, max_len=n, options=QueryOptions(timeout=timeout))
        seconds = round(time.perf_counter() - started, 3)
        rows.append(
            Row("vocab", f"V{vocab} to length {n}", n, 1, result.verdict.value, result.checks[-1].method.value, seconds)
        )
        print(rows[-1], file=sys.stderr)
    return rows


def _unseen_label(spec: EncoderSpec, n: int, labels: int) -> int:
    """A label no word of a 4096-word sample of length ``n`` shows (the hard, mostly UNSAT
    question), else the rarest one."""
    ids = np.random.default_rng(n).integers(0, len(spec.word_alphabet), size=(4096, n))
    counts = np.bincount(
        ref.run_batch(spec, np.array([spec.token_id(s) for s in spec.word_alphabet])[ids]).labels, minlength=labels
    )
    return int(np.argmin(counts))


def route_rows(timeout: float) -> list[Row]:
    """Decide by cost against the solver: causal-mask, table-softmax encoders with a positional
    table (no reduction applies), exact length n, a label a sample does not show; by default
    (every word through the interpreter when its measured cost fits half the timeout) and with
    ``--enumerate 0`` (the pre-pass's 1024 words, then the solver: the route before). Per model,
    lengths grow until the solver route times out; ``enum s`` is the default's seconds, ``smt s``
    the solver route's."""
    rows = []
    causal = {"attention": Attention.SOFTMAX_TABLE, "mask": Mask.CAUSAL, "positional": PositionalKind.TABLE}
    models = [
        ("L1 H1 d4", {}, [(2, 12), (2, 16), (4, 6), (4, 8), (16, 3), (16, 4)]),
        ("L2 H2 d8", {"layers": 2, "heads": 2, "d_model": 8, "head_dim": 4, "ffn_dim": 8}, [(2, 8), (2, 12), (4, 6)]),
    ]
    for name, shape, sizes in models:
        for vocab, n in sizes:
            spec = _spec(6, vocab_size=vocab, accept=Accept.ARGMAX, classes=4, positional_rows=n, **shape, **causal)  # type: ignore[arg-type]
            label = _unseen_label(spec, n, 4)
            by_cost = _solve("route", f"{name} V{vocab}", spec, n, label, QueryOptions(timeout=timeout))
            before = _solve("route", "", spec, n, label, QueryOptions(timeout=timeout, enumeration=0))
            if before.verdict != "unknown" and by_cost.verdict != "unknown":
                assert before.verdict == by_cost.verdict, (by_cost, before)
            rows.append(
                replace(
                    by_cost, config=f"{by_cost.config} (before: {before.by}, {before.verdict})", smt_s=before.seconds
                )
            )
            print(rows[-1], file=sys.stderr)
    return rows


def cube_rows(timeout: float) -> list[Row]:
    """``--jobs 2`` against one process, solver only, on questions the solver needs seconds for
    (causal table softmax, one layer, d = 4): the seconds of one process in ``smt s``."""
    rows = []
    causal = {"attention": Attention.SOFTMAX_TABLE, "mask": Mask.CAUSAL, "positional": PositionalKind.TABLE}
    for vocab, n in [(8, 4), (4, 6), (2, 12)]:
        spec = _spec(6, vocab_size=vocab, accept=Accept.ARGMAX, classes=4, positional_rows=n, **causal)  # type: ignore[arg-type]
        label = _unseen_label(spec, n, 4)
        one = _solve("cubes", f"V{vocab}", spec, n, label, QueryOptions(timeout=timeout, presearch=0))
        two = _solve("cubes", f"V{vocab} jobs 2", spec, n, label, QueryOptions(timeout=timeout, presearch=0, jobs=2))
        if "unknown" not in (one.verdict, two.verdict):
            assert one.verdict == two.verdict
        rows.append(replace(two, smt_s=one.seconds, config=f"{two.config} (one process: {one.verdict})"))
        print(rows[-1], file=sys.stderr)
    return rows


SECTIONS = ("length", "enum", "long", "shape", "solver", "ablation", "larger", "trained", "vocab", "route", "cubes")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a subset that runs in about a minute")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per solver call (default 60, quick 20)")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"which of {', '.join(SECTIONS)} (default: all)")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    timeout = args.timeout or (20.0 if args.quick else 60.0)
    options = QueryOptions(timeout=timeout)
    kinds = list(Attention)
    unique, average, softmax = Attention.UNIQUE_HARDMAX, Attention.AVERAGE_HARDMAX, Attention.SOFTMAX_TABLE
    periodic = PERIODIC
    if args.quick:
        rows = length_rows(
            [4, 16, 64], [("unique_hardmax", {"attention": unique}), ("unique_hardmax periodic", periodic)], options
        )
        rows += enum_rows([("unique_hardmax", 2, 20, {"attention": unique})], options, budget=1 << 17)
        rows += ablation_rows(8, timeout)[:3]
    else:
        rows = []
        if "length" in sections:
            length_cases = [(k.value, {"attention": k}) for k in kinds] + [("unique_hardmax periodic", periodic)]
            rows += length_rows([4, 8, 16, 32, 64], length_cases, options)
        if "enum" in sections:
            cases = [(kind.value, 2, 20, {"attention": kind}) for kind in kinds]
            cases += [
                ("unique_hardmax", 4, 10, {"attention": unique}),
                ("unique_hardmax periodic", 4, 10, periodic),
                ("average_hardmax", 4, 10, {"attention": average}),
                ("softmax_table", 4, 10, {"attention": softmax}),
            ]
            rows += enum_rows(cases, options, budget=None)
        if "long" in sections:
            rows += long_rows([20, 40, 64], options)
        if "shape" in sections:
            rows += shape_rows(16, options)
        if "solver" in sections:
            rows += solver_rows(64, timeout)
        if "ablation" in sections:
            rows += ablation_rows(12, timeout)
        if "larger" in sections:
            rows += larger_rows([4, 8, 16], [4, 8, 16, 32], min(timeout, 30.0))
        if "trained" in sections:
            rows += trained_rows({"majority": 32, "dyck": 8}, timeout)
        if "vocab" in sections:
            rows += vocab_rows([2_000, 20_000, 200_000, 500_000], 2, min(timeout, 5.0))
        if "route" in sections:
            rows += route_rows(timeout)
        if "cubes" in sections:
            rows += cube_rows(timeout)
    headers = (
        "section",
        "config",
        "n",
        "label",
        "verdict",
        "by",
        "seconds",
        "smt s",
        "portfolio s",
        "enum s",
        "speedup",
    )
    print(table(headers, [[("-" if v is None else v) for v in asdict(r).values()] for r in rows]))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
