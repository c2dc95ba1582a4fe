"""The handlers of ``leanagent verify trsat|robust|equiv|export-smt|eval``: each loads the
model spec, reads the words of the command line (:mod:`.words`), calls
:mod:`verify.queries.questions` (or, for ``eval``, the reference interpreter) and prints the
answer as text or JSON. Every verdict exits 0; Ctrl-C during a query is
:func:`~agent.cli.commands.verify.options.interrupted`'s answer."""

from __future__ import annotations

import argparse
from typing import Any

from agent.cli.commands.verify.options import encoding, interrupted, jsonable, progress_lines, query_options
from agent.cli.commands.verify.words import read_word, word_constraints
from agent.reports.output import emit, table
from agent.workspace.settings import Settings


def run_trsat(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``leanagent verify trsat``."""
    from verify.errors import Interrupted, VerifyInputError
    from verify.model.spec import load_spec
    from verify.queries.completeness import length_bound
    from verify.queries.questions import trsat

    del settings
    spec = load_spec(args.model)
    constraints = word_constraints(args, spec)
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
    word = read_word(args.word, spec, "--word")
    options = query_options(args)
    try:
        result = robust(spec, word, distance=args.distance, constraints=word_constraints(args, spec), options=options)
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
            constraints=word_constraints(args, first),
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
        spec, length=args.length, label=args.label, constraints=word_constraints(args, spec), encoding=encoding(args)
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
    word = read_word(args.word, spec, "WORD")
    out = run(spec, word)
    decision = "accepted" if out.accepted else "rejected"
    human = f"word {' '.join(word)!r}: scores {list(out.scores)}, label {out.label}, {decision}"
    emit({"word": list(word), **jsonable(out)}, human, as_json=args.json)
    return 0


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
