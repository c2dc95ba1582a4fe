"""Words on the ``leanagent verify`` command line: a word, an alphabet, a prefix or a suffix
given as text, read into symbols of the model's vocabulary, and the word constraints of a
query (:class:`~verify.queries.words.WordConstraints`) read from the options."""

from __future__ import annotations

import argparse
from typing import Any

WORD_HELP = "symbols separated by spaces or commas; a single run of one-character symbols may be written 'abba'"


def read_word(text: str, spec: Any, option: str) -> tuple[str, ...]:
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


def word_constraints(args: argparse.Namespace, spec: Any) -> Any:
    """The ``--alphabet``, ``--prefix`` and ``--suffix`` of a query (the last two where the
    command has them), read against ``spec``'s vocabulary."""
    from verify.queries.words import WordConstraints

    alphabet = None if args.alphabet is None else read_word(args.alphabet, spec, "--alphabet")
    prefix = read_word(args.prefix, spec, "--prefix") if getattr(args, "prefix", None) else ()
    suffix = read_word(args.suffix, spec, "--suffix") if getattr(args, "suffix", None) else ()
    return WordConstraints(alphabet=alphabet, prefix=prefix, suffix=suffix)
