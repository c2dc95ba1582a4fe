"""``leanagent verify``: trSAT, robustness, equivalence and SMT-LIB export for quantized encoders.

Parses, calls :mod:`verify.queries`, prints. Every verdict (SAT, UNSAT, UNKNOWN) is a
result and exits 0; a malformed model file, an unknown solver or bad options raise
:class:`~verify.errors.VerifyInputError` (exit 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import sys
from pathlib import Path
from typing import Any

from agent.commands.verify import train_example
from agent.output import emit, table
from agent.settings import Settings

SOLVER_HELP = "z3 (default) | cvc5 | bitwuzla | smtlib:CMD (any SMT-LIB2 binary, e.g. smtlib:z3)"
WORD_HELP = "symbols separated by spaces or commas; a single run of one-character symbols may be written 'abba'"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="exact SMT verification of quantized transformer encoders (trSAT and friends)",
        description=(
            "Answer questions about a quantized transformer encoder (a JSON model spec, see "
            "docs/verify.md) exactly, with a bit-vector SMT encoding. Every SAT answer comes "
            "with a witness word replayed through the reference interpreter."
        ),
    )
    sub = parser.add_subparsers(dest="verify_command", metavar="QUERY", required=True)

    p = sub.add_parser("trsat", help="is there a word of length <= N the encoder accepts (or maps to a class)?")
    p.add_argument("model", type=Path, metavar="MODEL", help="the model spec (JSON)")
    length = p.add_mutually_exclusive_group(required=True)
    length.add_argument("--max-len", type=int, metavar="N", help="search lengths 1..N, shortest first")
    length.add_argument(
        "--all-lengths",
        action="store_true",
        help="search up to the completeness bound (only for the class in docs/verify.md; an error otherwise)",
    )
    p.add_argument("--exact-len", action="store_true", help="only words of length exactly N")
    p.add_argument(
        "--class", dest="label", type=int, default=None, metavar="C", help="target output class instead of accept"
    )
    _word_options(p)
    _solver_options(p)
    p.set_defaults(handler=run_trsat)

    p = sub.add_parser("robust", help="do all words within Hamming distance D of a word keep its output?")
    p.add_argument("model", type=Path, metavar="MODEL", help="the model spec (JSON)")
    p.add_argument("--word", required=True, help=f"the word ({WORD_HELP})")
    p.add_argument("--distance", type=int, required=True, metavar="D", help="Hamming distance")
    _word_options(p, affixes=False)
    _solver_options(p)
    p.set_defaults(handler=run_robust)

    p = sub.add_parser("equiv", help="do two encoders agree on every word of length <= N?")
    p.add_argument("model", type=Path, metavar="MODEL", help="the first model spec (JSON)")
    p.add_argument("other", type=Path, metavar="OTHER", help="the second model spec (JSON)")
    p.add_argument("--max-len", type=int, required=True, metavar="N", help="compare on lengths 1..N")
    _word_options(p)
    _solver_options(p)
    p.set_defaults(handler=run_equiv)

    p = sub.add_parser("export-smt", help="write the trSAT query for one length as an SMT-LIB2 script")
    p.add_argument("model", type=Path, metavar="MODEL", help="the model spec (JSON)")
    p.add_argument("--length", type=int, required=True, metavar="N", help="word length")
    p.add_argument(
        "--class", dest="label", type=int, default=None, metavar="C", help="target output class instead of accept"
    )
    p.add_argument("--out", type=Path, default=None, help="write here instead of stdout")
    _word_options(p)
    _encoding_options(p)
    p.add_argument("--json", action="store_true", help="print a JSON object (with the script) instead")
    p.set_defaults(handler=run_export)

    train_example.add_parser(sub)


def _word_options(p: argparse.ArgumentParser, *, affixes: bool = True) -> None:
    p.add_argument("--alphabet", default=None, help=f"restrict the symbols words may use ({WORD_HELP})")
    if affixes:
        p.add_argument("--prefix", default=None, help=f"fixed first symbols ({WORD_HELP})")
        p.add_argument("--suffix", default=None, help=f"fixed last symbols ({WORD_HELP})")


def _encoding_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-tabulate", action="store_true", help="encode layer 1 symbolically (ablation)")
    p.add_argument("--no-prune", action="store_true", help="no interval pruning: one worst-case width (ablation)")


def _solver_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--solver", default="z3", help=SOLVER_HELP)
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="seconds per solver call (default: none)")
    p.add_argument(
        "--presearch",
        type=int,
        default=1024,
        metavar="W",
        help="candidate words per length run through the interpreter before the solver: all of them "
        "when there are at most W, which decides the length, else W ordered and random ones that "
        "can find a witness (default: 1024; 0 = no pre-pass at all: solver only)",
    )
    p.add_argument(
        "--canonical",
        type=int,
        default=1 << 15,
        metavar="C",
        help="with the pre-pass on: when a sound reduction (see docs/verify.md) leaves at most C words "
        "that stand for all words of a length, run them all, which decides it (default: 32768)",
    )
    _encoding_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


# --- handlers -------------------------------------------------------------------------------------


def run_trsat(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify trsat``."""
    from verify.completeness import length_bound
    from verify.errors import VerifyInputError
    from verify.queries import search_lengths, trsat
    from verify.spec import load_spec

    del settings
    spec = load_spec(args.model)
    constraints = _constraints(args, spec)
    max_len = args.max_len
    if args.all_lengths:
        alphabet = constraints.alphabet or spec.word_alphabet
        bound = length_bound(
            spec, alphabet_size=len(alphabet), fixes_affixes=bool(constraints.prefix or constraints.suffix)
        )
        if bound.bound is None:
            raise VerifyInputError(f"--all-lengths needs the complete class of docs/verify.md, but {bound.reason}")
        if args.exact_len:
            raise VerifyInputError("--all-lengths and --exact-len contradict each other")
        max_len = bound.bound
    lengths = search_lengths(spec, max_len=max_len, exact_len=args.exact_len, constraints=constraints)
    with _progress(len(lengths)) as progress:
        result = trsat(
            spec,
            max_len=max_len,
            exact_len=args.exact_len,
            label=args.label,
            constraints=constraints,
            options=_query_options(args),
            progress=progress,
        )
    human = [f"{result.verdict.value.upper()}: {result.claim}"]
    if result.witness is not None:
        human.append(
            f"output: scores {list(result.witness.output.scores)}, label {result.witness.output.label} (replayed)"
        )
    human += ["", _checks_table(result.checks), f"solver: {result.solver}"]
    emit(_jsonable(result), "\n".join(human), as_json=args.json)
    return 0


def run_robust(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify robust``."""
    from verify.queries import robust
    from verify.spec import load_spec

    del settings
    spec = load_spec(args.model)
    word = _word(args.word, spec, "--word")
    with _progress(1) as progress:
        result = robust(
            spec, word, distance=args.distance, constraints=_constraints(args, spec), options=_query_options(args)
        )
        progress(result.check)
    human = [
        f"{result.verdict.value.upper()}: {result.claim}",
        f"original output: scores {list(result.original.scores)}, label {result.original.label}",
    ]
    if result.counterexample is not None:
        human.append(f"counterexample output: scores {list(result.counterexample.output.scores)} (replayed)")
    human += ["", _checks_table([result.check]), f"solver: {result.solver}"]
    emit(_jsonable(result), "\n".join(human), as_json=args.json)
    return 0


def run_equiv(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify equiv``."""
    from verify.queries import equiv
    from verify.spec import load_spec

    del settings
    first, second = load_spec(args.model), load_spec(args.other)
    with _progress(args.max_len) as progress:
        result = equiv(
            first,
            second,
            max_len=args.max_len,
            constraints=_constraints(args, first),
            options=_query_options(args),
            progress=progress,
        )
    human = [
        f"{result.verdict.value.upper()}: {result.claim}",
        "",
        _checks_table(result.checks),
        f"solver: {result.solver}",
    ]
    emit(_jsonable(result), "\n".join(human), as_json=args.json)
    return 0


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify export-smt``."""
    from verify.errors import VerifyInputError
    from verify.queries import export_smt
    from verify.spec import load_spec

    del settings
    spec = load_spec(args.model)
    script = export_smt(
        spec, length=args.length, label=args.label, constraints=_constraints(args, spec), encoding=_encoding(args)
    )
    if args.out is not None:
        try:
            args.out.write_text(script, encoding="utf-8")
        except OSError as e:
            raise VerifyInputError(f"cannot write {args.out}: {e.strerror or e}") from e
        emit({"out": str(args.out), "bytes": len(script)}, f"wrote {args.out} ({len(script)} bytes)", as_json=args.json)
    else:
        emit({"script": script}, script, as_json=args.json)
    return 0


# --- helpers ---------------------------------------------------------------------------------------


def _checks_table(checks: Any) -> str:
    """One row per length: how it was answered and where the time went."""
    rows = [
        (
            c.length,
            c.verdict.value,
            c.method.value,
            round(c.presearch_seconds, 3),
            round(c.encode_seconds, 3),
            round(c.solve_seconds, 3),
        )
        for c in checks
    ]
    return table(("length", "verdict", "by", "presearch s", "encode s", "solve s"), rows)


def _word(text: str, spec: Any, option: str) -> tuple[str, ...]:
    """Split a word given on the command line into symbols of ``spec``'s vocabulary."""
    from verify.errors import VerifyInputError

    parts = [p for p in text.replace(",", " ").split() if p]
    if len(parts) == 1 and parts[0] not in spec.vocab and all(ch in spec.vocab for ch in parts[0]):
        parts = list(parts[0])
    unknown = [p for p in parts if p not in spec.word_alphabet]
    if unknown:
        raise VerifyInputError(
            f"{option}: symbol(s) {unknown} are not in the model's alphabet {list(spec.word_alphabet)}"
        )
    return tuple(parts)


def _constraints(args: argparse.Namespace, spec: Any) -> Any:
    from verify.queries import WordConstraints

    alphabet = None if args.alphabet is None else _word(args.alphabet, spec, "--alphabet")
    prefix = _word(args.prefix, spec, "--prefix") if getattr(args, "prefix", None) else ()
    suffix = _word(args.suffix, spec, "--suffix") if getattr(args, "suffix", None) else ()
    return WordConstraints(alphabet=alphabet, prefix=prefix, suffix=suffix)


def _encoding(args: argparse.Namespace) -> Any:
    from verify.encoding import EncodingOptions

    return EncodingOptions(tabulate=not args.no_tabulate, prune=not args.no_prune)


def _query_options(args: argparse.Namespace) -> Any:
    from verify.errors import VerifyInputError
    from verify.queries import QueryOptions
    from verify.solvers import make_backend

    if args.timeout is not None and args.timeout <= 0:
        raise VerifyInputError(f"--timeout must be positive, got {args.timeout}")
    for option, value in (("--presearch", args.presearch), ("--canonical", args.canonical)):
        if value < 0:
            raise VerifyInputError(f"{option} must be >= 0, got {value}")
    make_backend(args.solver)  # an unknown or missing solver is a usage error before any work
    return QueryOptions(
        solver=args.solver,
        timeout=args.timeout,
        encoding=_encoding(args),
        presearch=args.presearch,
        canonical=args.canonical,
    )


class _progress:
    """A tqdm bar on stderr advanced once per solved length, showing its verdict."""

    def __init__(self, total: int) -> None:
        self.total = total

    def __enter__(self) -> Any:
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, desc="verify", unit="length", file=sys.stderr, leave=False, disable=None)

        def step(check: Any) -> None:
            self.bar.set_postfix_str(f"length {check.length}: {check.verdict.value}")
            self.bar.update(1)

        return step

    def __exit__(self, *exc: object) -> None:
        self.bar.close()


def _jsonable(value: Any) -> Any:
    """Results as JSON-ready data: dataclasses as dicts, enums as their values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
