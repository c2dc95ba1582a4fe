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
* ``frontier`` the largest sizes decided within ``--timeout`` per length, per route and solver:
  causal table-softmax encoders with a positional table (1 layer d = 4; 2 layers x 2 heads
  d = 8; 8 bits, 8 classes), each one model asked at vocabulary 2 and lengths 4..64 (x1.33-1.5
  a step) and at length 4 and vocabularies 4..128 (x2), a label no sampled word shows (UNSAT,
  or SAT where a word is found after all) and, at vocabulary 2, a label every sample shows
  (SAT); routes ``before`` (``--enumerate 0 --solver z3``: the 1024-word pre-pass, then z3,
  the old default), ``after`` (the defaults: deciding by cost, then z3 and bitwuzla racing)
  and each solver alone (``--presearch 0``: z3, bitwuzla, the z3 + bitwuzla race), each
  stopped at its first UNKNOWN. On the UNSAT questions every size's words are also
  enumerated (the library's enumeration, up to min(10, timeout/4) s, extrapolated beyond)
  while that takes under the timeout: the enumeration/solver crossover. After the rows: one
  line per series (the largest size decided, its seconds, the first size that timed out), the
  crossover, and the load average at start and end (also in ``--json``). About 27 minutes at
  ``--timeout 60`` on 2 busy cores; ``--quick --sections frontier``: one shape, three lengths
  and two vocabularies.
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
import os
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
from verify.queries.presearch import enumerate_words  # noqa: E402
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


# --- frontier: how far each route and solver gets within the timeout -----------------------

# Sizes of the frontier series, grown geometrically (x1.33-1.5 in length, x2 in vocabulary):
# the word count V^n grows by 4x to 256x a step, so a route's decided sizes bracket its limit.
FRONTIER_LENGTHS = (4, 6, 8, 12, 16, 24, 32, 48, 64)  # at vocabulary 2
FRONTIER_VOCABS = (4, 8, 16, 32, 64, 128)  # at length 4
# Classes of the argmax readout: with 4, no seed of 6..105 left a class unseen by the samples of
# the 2-layer model at vocabularies 4..128 (the UNSAT question needs one); with 8, seed 7 does.
FRONTIER_CLASSES = 8
FRONTIER_SEEDS = 20  # seeds tried per series for a label no sampled word shows


@dataclass(frozen=True, slots=True)
class Reach:
    """How far one route got along one series: its largest size decided before its first
    UNKNOWN (sizes grow, so later ones are taken to be no easier)."""

    shape: str
    series: str  # which size grows, e.g. "V=2, n=4..64"
    seed: int  # of the series' model
    question: str  # UNSAT | SAT: how the label was chosen (each size's verdict is in the rows)
    label: int
    route: str
    vocab: int | None  # the largest size decided; None: not even the first
    n: int | None
    words: int | None  # vocab ** n
    verdict: str | None
    seconds: float | None
    stopped_at: str | None  # the first size not decided within the timeout; None: every size decided


@dataclass(frozen=True, slots=True)
class Crossover:
    """Where exhaustive enumeration and one solver route take the same time, along one UNSAT series."""

    shape: str
    series: str
    route: str
    words: float | None  # interpolated word count; None: no crossing inside the sizes measured
    note: str  # the two sizes it lies between, with both times, or why there is no crossing


def _frontier_routes(timeout: float) -> dict[str, QueryOptions]:
    """``before``: the old default (the 1024-word pre-pass, then z3 alone); ``after``: the
    defaults (deciding by cost, then z3 and bitwuzla racing); then each solver alone on every
    length (``--presearch 0``), the race last."""
    routes = {
        "before": QueryOptions(timeout=timeout, enumeration=0, solver="z3"),
        "after": QueryOptions(timeout=timeout),
        "z3": QueryOptions(timeout=timeout, presearch=0, solver="z3"),
    }
    if importlib.util.find_spec("bitwuzla"):
        routes["bitwuzla"] = QueryOptions(timeout=timeout, presearch=0, solver="bitwuzla")
    routes["z3+bitwuzla"] = QueryOptions(timeout=timeout, presearch=0)  # AUTO: those installed
    return routes


def _restricted(spec: EncoderSpec, vocab: int) -> EncoderSpec:
    """The same encoder on its first ``vocab`` symbols: a growing vocabulary adds rows to one
    embedding instead of drawing a new model at each size."""
    return dataclasses.replace(spec, vocab=spec.vocab[:vocab], embedding=spec.embedding[:vocab])


def _frontier_model(seed: int, sizes: list[tuple[int, int]], config: dict[str, object]) -> list[EncoderSpec]:
    """The series' encoder at each of its sizes (vocabulary, length): one model, drawn at the
    largest vocabulary and positional table, restricted to each vocabulary."""
    top = _spec(
        seed,
        vocab_size=max(v for v, _ in sizes),
        accept=Accept.ARGMAX,
        classes=FRONTIER_CLASSES,
        positional_rows=max(n for _, n in sizes),
        **config,
    )
    return [_restricted(top, v) for v, _ in sizes]


def _frontier_labels(specs: list[EncoderSpec], lengths: list[int]) -> tuple[int, int, int | None]:
    """How often a 4096-word sample at every size shows the label it shows least (0: the UNSAT
    question's label), that label, and the SAT question's label (the rarest one every size's
    sample shows; None if there is none)."""
    alphabet = [np.array([s.token_id(c) for c in s.word_alphabet]) for s in specs]
    counts = np.array(
        [
            np.bincount(
                ref.run_batch(spec, ids[np.random.default_rng(n).integers(0, len(ids), size=(4096, n))]).labels,
                minlength=FRONTIER_CLASSES,
            )
            for spec, ids, n in zip(specs, alphabet, lengths, strict=True)
        ]
    )  # (sizes, classes)
    rarest = int(np.argmin(counts.sum(axis=0)))
    everywhere = [c for c in range(FRONTIER_CLASSES) if counts[:, c].min() > 0]
    sat = min(everywhere, key=lambda c: counts[:, c].min()) if everywhere else None
    return int(counts[:, rarest].sum()), rarest, sat


def _enumerate_all(spec: EncoderSpec, n: int, label: int, seconds: float) -> tuple[bool, float, bool]:
    """Every word of length ``n`` through the library's own enumeration (the batches and word
    decoding that deciding by cost runs, :func:`verify.queries.presearch.enumerate_words`) until
    the first word with output ``label``, or for ``seconds``: whether a word was found, the
    seconds, and whether they are extrapolated linearly in words from the words run in time."""
    ids = np.array([spec.token_id(s) for s in spec.word_alphabet], dtype=np.int64)
    total = len(ids) ** n

    def hit(codes: np.ndarray) -> np.ndarray:
        return ref.run_batch(spec, ids[codes]).labels == label

    run = enumerate_words([range(len(ids))] * n, hit, deadline=time.perf_counter() + seconds)
    if run.found is not None or run.exhaustive:
        return run.found is not None, run.seconds, False
    return False, run.seconds * total / max(run.words, 1), True


def _crossover(shape: str, series: str, route: str, points: list[tuple[int, str, float, float, bool]]) -> Crossover:
    """Where enumeration's seconds overtake the route's, from ``points`` (words, size,
    enumeration s, route s, enumeration extrapolated) in growing order: interpolated linearly
    in log(words) on log(enumeration s / route s) between the last size enumeration won and the
    first it lost."""
    if not points:
        return Crossover(shape, series, route, None, "no size with both times")

    def said(p: tuple[int, str, float, float, bool]) -> str:
        return f"{p[1]} ({p[0]:.3g} words): enumeration {'~' if p[4] else ''}{p[2]:.3g} s, {route} {p[3]:.3g} s"

    lost = next((i for i, p in enumerate(points) if p[2] > p[3]), None)
    if lost is None:
        return Crossover(
            shape, series, route, None, f"enumeration faster at every size both decided, to {said(points[-1])}"
        )
    if lost == 0:
        return Crossover(shape, series, route, None, f"{route} faster from the first size, {said(points[0])}")
    (w0, _, e0, s0, _), (w1, _, e1, s1, _) = points[lost - 1], points[lost]
    r0, r1 = np.log(max(e0, 1e-4) / max(s0, 1e-4)), np.log(e1 / s1)
    words = float(np.exp(np.log(w0) + (np.log(w1) - np.log(w0)) * (-r0) / (r1 - r0)))
    return Crossover(shape, series, route, words, f"between {said(points[lost - 1])} and {said(points[lost])}")


def frontier_rows(timeout: float, quick: bool) -> tuple[list[Row], list[Reach], list[Crossover]]:
    """The largest sizes each route decides within ``timeout`` per length: causal-mask,
    table-softmax encoders with a positional table (no reduction applies: the hard class), 8
    bits, 8 classes (argmax), seeded; shapes 1 layer d = 4 and 2 layers x 2 heads d = 8. Per
    shape two series, each one model asked at growing size: vocabulary 2 at lengths 4..64, and
    length 4 at vocabularies 4..128 (the first symbols of one embedding); per series the UNSAT
    question (a label no sampled word shows) and, on the length series, one SAT question. Each
    route stops at its first UNKNOWN. On the UNSAT questions every size's words are also
    enumerated (the library's enumeration, for up to ``min(10, timeout / 4)`` s, then
    extrapolated linearly in words) until enumeration passes ``timeout``: the crossover. With
    ``quick``: the first shape, lengths 8..16 and vocabularies 4 and 16."""
    rows: list[Row] = []
    reaches: list[Reach] = []
    crossovers: list[Crossover] = []
    routes = _frontier_routes(timeout)
    causal = {"attention": Attention.SOFTMAX_TABLE, "mask": Mask.CAUSAL, "positional": PositionalKind.TABLE}
    shapes: list[tuple[str, dict[str, object]]] = [
        ("L1 H1 d4", {}),
        ("L2 H2 d8", {"layers": 2, "heads": 2, "d_model": 8, "head_dim": 4, "ffn_dim": 8}),
    ]
    lengths, vocabs = (FRONTIER_LENGTHS, FRONTIER_VOCABS) if not quick else ((8, 12, 16), (4, 16))
    if quick:
        shapes = shapes[:1]
    enum_seconds = min(10.0, timeout / 4)
    for shape, config in shapes:
        axes = [
            (f"V=2, n={lengths[0]}..{lengths[-1]}", [(2, n) for n in lengths]),
            (f"n=4, V={vocabs[0]}..{vocabs[-1]}", [(v, 4) for v in vocabs]),
        ]
        for series, sizes in axes:
            # One model per series, seeded: the first seed from 6 whose samples show some label at
            # no size (the UNSAT question) and, on the length series, another at every size (SAT);
            # if none does, the seed whose rarest label the samples show least ("rarest").
            best: tuple[int, int] | None = None  # (hits of the rarest label, seed)
            for seed in range(6, 6 + FRONTIER_SEEDS):
                hits, _, sat = _frontier_labels(
                    _frontier_model(seed, sizes, {**config, **causal}), [n for _, n in sizes]
                )
                if hits == 0 and (sat is not None or not series.startswith("V=2")):
                    best = (hits, seed)
                    break
                if best is None or hits < best[0]:
                    best = (hits, seed)
            assert best is not None
            seed = best[1]
            specs = _frontier_model(seed, sizes, {**config, **causal})
            hits, unsat, sat = _frontier_labels(specs, [n for _, n in sizes])
            questions = [("UNSAT" if hits == 0 else "rarest", unsat)]
            if sat is not None and series.startswith("V=2"):
                questions.append(("SAT", sat))
            for question, label in questions:
                name = f"{shape} {series} seed {seed} {question}"
                reached: dict[str, Reach] = {}
                stopped: dict[str, str] = {}
                points: dict[str, list[tuple[int, str, float, float, bool]]] = {r: [] for r in routes}
                enumerate_on = question != "SAT"
                for (vocab, n), spec in zip(sizes, specs, strict=True):
                    if len(stopped) == len(routes):
                        break
                    size, words = (f"n={n}" if series.startswith("V=2") else f"V={vocab}"), vocab**n
                    enumerated: tuple[bool, float, bool] | None = None
                    if enumerate_on and words < 1 << 62:
                        enumerated = _enumerate_all(spec, n, label, enum_seconds)
                        found, enum_s, extrapolated = enumerated
                        rows.append(
                            Row(
                                "frontier",
                                f"{name} V{vocab}: enumeration{' ~' if extrapolated else ''}",
                                n,
                                label,
                                "sat" if found else ("unsat" if not extrapolated else "unknown"),
                                "enumerate",
                                round(enum_s, 4),
                            )
                        )
                        print(rows[-1], file=sys.stderr)
                        enumerate_on = enum_s <= timeout  # past it, the crossover lies behind
                    verdicts = {}
                    for route, options in routes.items():
                        if route in stopped:
                            continue
                        row = _solve("frontier", f"{name} V{vocab}: {route}", spec, n, label, options)
                        rows.append(row)
                        print(row, file=sys.stderr)
                        if row.verdict == "unknown":
                            stopped[route] = size
                            continue
                        verdicts[route] = row.verdict
                        reached[route] = Reach(
                            shape, series, seed, question, label, route, vocab, n, words, row.verdict, row.seconds, None
                        )
                        if enumerated is not None:
                            points[route].append((words, size, enumerated[1], row.seconds, enumerated[2]))
                    assert len(set(verdicts.values())) <= 1, f"routes disagree on {name} {size}: {verdicts}"
                    if enumerated is not None and not enumerated[2] and verdicts:
                        assert enumerated[0] == (next(iter(verdicts.values())) == "sat"), (name, size, verdicts)
                for route in routes:
                    got = reached.get(route)
                    if got is None:
                        got = Reach(shape, series, seed, question, label, route, None, None, None, None, None, None)
                    reaches.append(replace(got, stopped_at=stopped.get(route)))
                if question != "SAT":
                    solvers = [r for r in routes if r not in ("before", "after")]
                    crossovers += [_crossover(shape, series, r, points[r]) for r in solvers]
    return rows, reaches, crossovers


def _reach_cell(reach: Reach) -> str:
    size = "-" if reach.n is None else (f"n={reach.n}" if reach.series.startswith("V=2") else f"V={reach.vocab}")
    got = "none" if reach.seconds is None else f"{size} {reach.seconds:.3g}s"
    if reach.verdict is not None and reach.verdict != {"UNSAT": "unsat", "SAT": "sat"}.get(reach.question):
        got += f" ({reach.verdict})"
    return got + (f"; {reach.stopped_at} t/o" if reach.stopped_at else "; all")


def frontier_table(reaches: list[Reach]) -> str:
    """One line per series and question, one column per route: the largest size decided and
    its seconds, then the first size that timed out ("all": every size decided)."""
    routes = list(dict.fromkeys(r.route for r in reaches))
    lines: dict[tuple[str, str, int, str, int], dict[str, str]] = {}
    for r in reaches:
        lines.setdefault((r.shape, r.series, r.seed, r.question, r.label), {})[r.route] = _reach_cell(r)
    return table(
        ("shape", "series", "seed", "question", "label", *routes),
        [[*key, *(cells.get(r, "-") for r in routes)] for key, cells in lines.items()],
    )


SECTIONS = (
    "length",
    "enum",
    "long",
    "shape",
    "solver",
    "ablation",
    "larger",
    "trained",
    "vocab",
    "route",
    "cubes",
    "frontier",
)
QUICK = ("length", "enum", "ablation")  # --quick's default subset; frontier also has a quick form


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a subset that runs in about a minute")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows (and the load) here")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per solver call (default 60, quick 20)")
    parser.add_argument(
        "--sections",
        default=None,
        help=f"which of {', '.join(SECTIONS)} (default: all; with --quick: {', '.join(QUICK)}, or frontier)",
    )
    args = parser.parse_args()
    sections = set(args.sections.split(",")) if args.sections else set(QUICK if args.quick else SECTIONS)
    timeout = args.timeout or (20.0 if args.quick else 60.0)
    options = QueryOptions(timeout=timeout)
    kinds = list(Attention)
    unique, average, softmax = Attention.UNIQUE_HARDMAX, Attention.AVERAGE_HARDMAX, Attention.SOFTMAX_TABLE
    periodic = PERIODIC
    # The machine is shared: the load says how far the seconds are from an idle machine's.
    load_start, started = os.getloadavg(), time.perf_counter()
    print(f"load average at start {_load(load_start)} on {os.cpu_count()} cores", file=sys.stderr)
    rows: list[Row] = []
    reaches: list[Reach] = []
    crossovers: list[Crossover] = []
    if args.quick:
        if "length" in sections:
            rows += length_rows(
                [4, 16, 64], [("unique_hardmax", {"attention": unique}), ("unique_hardmax periodic", periodic)], options
            )
        if "enum" in sections:
            rows += enum_rows([("unique_hardmax", 2, 20, {"attention": unique})], options, budget=1 << 17)
        if "ablation" in sections:
            rows += ablation_rows(8, timeout)[:3]
    else:
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
    if "frontier" in sections:
        more, reaches, crossovers = frontier_rows(timeout, args.quick)
        rows += more
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
    if reaches:
        print(f"\nfrontier: the largest size decided within {timeout:g} s per length, then the first that was not")
        print(frontier_table(reaches))
        print("\nenumeration/solver crossover (UNSAT questions; enumeration: every word, the library's enumeration)")
        print(table(("shape", "series", "route", "words", "measured"), [_crossover_line(c) for c in crossovers]))
    load_end, wall = os.getloadavg(), time.perf_counter() - started
    print(f"\nload average (1, 5, 15 min) at start {_load(load_start)}, at end {_load(load_end)}")
    print(f"on {os.cpu_count()} cores; wall {wall:.0f} s, timeout {timeout:g} s per length")
    if args.json:
        payload = {
            "timeout": timeout,
            "cores": os.cpu_count(),
            "load_start": load_start,
            "load_end": load_end,
            "wall_seconds": round(wall, 1),
            "rows": [asdict(r) for r in rows],
            "frontier": [asdict(r) for r in reaches],
            "crossover": [asdict(c) for c in crossovers],
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n")
    return 0


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.2f}" for x in load)


def _crossover_line(c: Crossover) -> list[object]:
    return [c.shape, c.series, c.route, "-" if c.words is None else f"{c.words:.2g}", c.note]


if __name__ == "__main__":
    sys.exit(main())
