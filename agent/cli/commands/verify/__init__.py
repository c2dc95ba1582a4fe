"""``leanagent verify``: trSAT, robustness, equivalence, SMT-LIB export and one-word evaluation
for quantized encoders.

Parses, calls :mod:`verify.queries.questions`, prints. Every verdict (SAT, UNSAT, UNKNOWN) is a
result and exits 0; a malformed model file, an unknown solver or bad options raise
:class:`~verify.errors.VerifyInputError` (exit 2); Ctrl-C during a query is exit 130 with
what was decided so far (:func:`agent.cli.commands.verify.options.interrupted`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agent.cli.commands.verify import train_example
from agent.cli.commands.verify.options import (
    encoding,
    encoding_options,
    interrupted,
    jsonable,
    progress_lines,
    query_options,
    solver_options,
)
from agent.cli.options import at_least
from agent.reports.output import emit, table
from agent.workspace.settings import Settings

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
    # What a Ctrl-C that no query caught (before any length was decided) leaves: nothing;
    # a caught one names the lengths decided (agent.cli.commands.verify.options.interrupted).
    parser.set_defaults(interrupted="interrupted before any length was decided; nothing is kept")
    sub = parser.add_subparsers(dest="verify_command", metavar="QUERY", required=True)

    p = sub.add_parser("trsat", help="is there a word of length <= N the encoder accepts (or maps to a class)?")
    p.add_argument("model", type=Path, metavar="MODEL", help="the model spec (JSON)")
    length = p.add_mutually_exclusive_group(required=True)
    length.add_argument("--max-len", type=at_least(1), metavar="N", help="search lengths 1..N, shortest first")
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
    _solving_options(p)
    p.set_defaults(handler=run_trsat)

    p = sub.add_parser("robust", help="do all words within Hamming distance D of a word keep its output?")
    p.add_argument("model", type=Path, metavar="MODEL", help="the model spec (JSON)")
    p.add_argument("--word", required=True, help=f"the word ({WORD_HELP})")
    p.add_argument("--distance", type=at_least(0), required=True, metavar="D", help="Hamming distance")
    _word_options(p, affixes=False)
    _solving_options(p)
    p.set_defaults(handler=run_robust)

    p = sub.add_parser("equiv", help="do two encoders agree on every word of length <= N?")
    p.add_argument("model", type=Path, metavar="MODEL", help="the first model spec (JSON)")
    p.add_argument("other", type=Path, metavar="OTHER", help="the second model spec (JSON)")
    p.add_argument("--max-len", type=at_least(1), required=True, metavar="N", help="compare on lengths 1..N")
    _word_options(p)
    _solving_options(p)
    p.set_defaults(handler=run_equiv)

    p = sub.add_parser("export-smt", help="write the trSAT query for one length as an SMT-LIB2 script")
    p.add_argument("model", type=Path, metavar="MODEL", help="the model spec (JSON)")
    p.add_argument("--length", type=at_least(1), required=True, metavar="N", help="word length")
    p.add_argument(
        "--class", dest="label", type=int, default=None, metavar="C", help="target output class instead of accept"
    )
    p.add_argument("--out", type=Path, default=None, help="write here instead of stdout")
    _word_options(p)
    encoding_options(p)
    p.add_argument("--json", action="store_true", help="print a JSON object (with the script) instead")
    p.set_defaults(handler=run_export)

    p = sub.add_parser("eval", help="run one word through the reference interpreter and print its scores")
    p.add_argument("model", type=Path, metavar="MODEL", help="the model spec (JSON)")
    p.add_argument("word", metavar="WORD", help=f"the word ({WORD_HELP})")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run_eval)

    train_example.add_parser(sub)


def _word_options(p: argparse.ArgumentParser, *, affixes: bool = True) -> None:
    p.add_argument("--alphabet", default=None, help=f"restrict the symbols words may use ({WORD_HELP})")
    if affixes:
        p.add_argument("--prefix", default=None, help=f"fixed first symbols ({WORD_HELP})")
        p.add_argument("--suffix", default=None, help=f"fixed last symbols ({WORD_HELP})")


def _solving_options(p: argparse.ArgumentParser) -> None:
    solver_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


# --- handlers -------------------------------------------------------------------------------------


def run_trsat(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify trsat``."""
    from verify.errors import Interrupted, VerifyInputError
    from verify.model.spec import load_spec
    from verify.queries.completeness import length_bound
    from verify.queries.questions import trsat

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
    options = query_options(args)
    try:
        result = trsat(
            spec,
            max_len=max_len,
            exact_len=args.exact_len,
            label=args.label,
            constraints=constraints,
            options=options,
            progress=progress_lines(),
        )
    except Interrupted as e:
        return interrupted(e, as_json=args.json)
    human = [f"{result.verdict.value.upper()}: {result.claim}"]
    if result.witness is not None:
        human.append(
            f"output: scores {list(result.witness.output.scores)}, label {result.witness.output.label} (replayed)"
        )
    human += ["", _checks_table(result.checks), f"solver: {result.solver}"]
    emit(jsonable(result), "\n".join(human), as_json=args.json)
    return 0


def run_robust(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify robust``."""
    from verify.errors import Interrupted
    from verify.model.spec import load_spec
    from verify.queries.questions import robust

    del settings
    spec = load_spec(args.model)
    word = _word(args.word, spec, "--word")
    options = query_options(args)
    try:
        result = robust(spec, word, distance=args.distance, constraints=_constraints(args, spec), options=options)
    except Interrupted as e:
        return interrupted(e, as_json=args.json)
    progress_lines()(result.check)
    human = [
        f"{result.verdict.value.upper()}: {result.claim}",
        f"original output: scores {list(result.original.scores)}, label {result.original.label}",
    ]
    if result.counterexample is not None:
        human.append(f"counterexample output: scores {list(result.counterexample.output.scores)} (replayed)")
    human += ["", _checks_table([result.check]), f"solver: {result.solver}"]
    emit(jsonable(result), "\n".join(human), as_json=args.json)
    return 0


def run_equiv(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify equiv``."""
    from verify.errors import Interrupted
    from verify.model.spec import load_spec
    from verify.queries.questions import equiv

    del settings
    first, second = load_spec(args.model), load_spec(args.other)
    options = query_options(args)
    try:
        result = equiv(
            first,
            second,
            max_len=args.max_len,
            constraints=_constraints(args, first),
            options=options,
            progress=progress_lines(),
        )
    except Interrupted as e:
        return interrupted(e, as_json=args.json)
    human = [
        f"{result.verdict.value.upper()}: {result.claim}",
        "",
        _checks_table(result.checks),
        f"solver: {result.solver}",
    ]
    emit(jsonable(result), "\n".join(human), as_json=args.json)
    return 0


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify export-smt``."""
    from verify.errors import VerifyInputError
    from verify.model.spec import load_spec
    from verify.queries.questions import export_smt

    del settings
    spec = load_spec(args.model)
    script = export_smt(
        spec, length=args.length, label=args.label, constraints=_constraints(args, spec), encoding=encoding(args)
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


def run_eval(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify eval``: the reference interpreter on one word."""
    from verify.model.interpreter import run
    from verify.model.spec import load_spec

    del settings
    spec = load_spec(args.model)
    word = _word(args.word, spec, "WORD")
    out = run(spec, word)
    decision = "accepted" if out.accepted else "rejected"
    human = f"word {' '.join(word)!r}: scores {list(out.scores)}, label {out.label}, {decision}"
    emit({"word": list(word), **jsonable(out)}, human, as_json=args.json)
    return 0


# --- helpers ---------------------------------------------------------------------------------------


def _checks_table(checks: Any) -> str:
    """One row per length: how it was answered and where the time went."""
    rows = [
        (
            c.length,
            c.verdict.value,
            c.method.value,
            c.solver or "-",
            round(c.presearch_seconds, 3),
            round(c.encode_seconds, 3),
            round(c.solve_seconds, 3),
        )
        for c in checks
    ]
    return table(("length", "verdict", "by", "solver", "presearch s", "encode s", "solve s"), rows)


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
    from verify.queries.words import WordConstraints

    alphabet = None if args.alphabet is None else _word(args.alphabet, spec, "--alphabet")
    prefix = _word(args.prefix, spec, "--prefix") if getattr(args, "prefix", None) else ()
    suffix = _word(args.suffix, spec, "--suffix") if getattr(args, "suffix", None) else ()
    return WordConstraints(alphabet=alphabet, prefix=prefix, suffix=suffix)
