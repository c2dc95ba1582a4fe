"""``leanagent verify``: trSAT, robustness, equivalence, SMT-LIB export and one-word evaluation
for quantized encoders.

Parses, calls :mod:`verify.queries.questions`, prints. Every verdict (SAT, UNSAT, UNKNOWN) is a
result and exits 0; a malformed model file, an unknown solver or bad options raise
:class:`~verify.errors.VerifyInputError` (exit 2); Ctrl-C during a query is exit 130 with
what was decided so far (:func:`agent.cli.commands.verify.options.interrupted`).

This module builds the parsers (:func:`register`); the rest, one job each:
:mod:`.handlers` (run a query, print its answer), :mod:`.words` (words given as text),
:mod:`.options` (the solving options every query shares, progress, Ctrl-C) and
:mod:`.train_example` (``verify train-example``, parser and handler).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agent.cli.commands.verify import train_example
from agent.cli.commands.verify.handlers import run_equiv, run_eval, run_export, run_robust, run_trsat
from agent.cli.commands.verify.options import encoding_options, solver_options
from agent.cli.commands.verify.words import WORD_HELP
from agent.cli.options import at_least


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``verify`` and its queries (and ``train-example``) to the ``leanagent`` commands."""
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
