"""What a premise's code states, read from its text: the statement after its name and
binders, and the two sides of the equation (or iff) it concludes with.

Text, not terms: enough to compare the shapes of statements (the lexical retriever) and to
tell a lemma from its converse (the suggester's ``simp`` sets), where nothing elaborates
them. A side is its tokens with each name the lemma binds made ``_``: ``add_one (n : Nat) :
n + 1 = succ n`` is ``(_ + 1, succ _)``.
"""

from __future__ import annotations

import re
from collections import Counter

from lean_env.trace.source.lexer import CLOSING_BRACKETS, OPENING_BRACKETS, top_level_at

# A name, a numeral, Lean's multi-character punctuation, or one other character.
_TOKEN_RE = re.compile(r"[^\W\d][\w.'!?]*|\d+|:=|=>|==|!=|<->|->|[^\s\w]")
# A binder group's names, up to its `:` (`(n m : Nat)`, `{α : Type}`, `∀ (x : α)`).
_BINDER_RE = re.compile(r"[({⦃\[]\s*([^(){}\[\]⦃⦄:]*?)\s*:")
_EQUATIONS = ("=", "↔")


def conclusion(code: str) -> str:
    """The statement of ``code`` after its name and binders: the text between the first
    top-level ``:`` of its signature and ``:=``, without a leading ``∀ ... ,``."""
    statement = code.partition(":=")[0]
    if colons := top_level_at(statement, (":",)):
        statement = statement[colons[0] + 1 :].strip()
    if statement.startswith("∀") and (commas := top_level_at(statement, (",",))):
        statement = statement[commas[0] + 1 :].strip()
    return statement


def shape(text: str) -> Counter[tuple[str, str]]:
    """The pairs of neighbouring tokens of ``text`` with every name made ``_``: what a
    statement looks like whatever its variables and functions are called."""
    tokens = ["_" if _is_name(t) else t for t in _TOKEN_RE.findall(text)]
    return Counter(zip(tokens, tokens[1:], strict=False))


def sides(code: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The two sides of the equation or iff that ``code``'s statement concludes with (after
    its hypotheses), each bound name ``_``; None when it concludes with something else."""
    statement = code.partition(":=")[0]
    bound = {name for group in _BINDER_RE.findall(statement) for name in group.split()}
    tokens = ["_" if t in bound else t for t in _TOKEN_RE.findall(conclusion(code))]
    depth, arrow, equation = 0, -1, None
    for index, token in enumerate(tokens):
        depth += (token in OPENING_BRACKETS) - (token in CLOSING_BRACKETS)
        if depth == 0 and token in ("→", "->"):
            arrow, equation = index, None
        elif depth == 0 and token in _EQUATIONS and equation is None:
            equation = index
    if equation is None:
        return None
    return tuple(tokens[arrow + 1 : equation]), tuple(tokens[equation + 1 :])


def converse(a: str, b: str) -> bool:
    """Whether the lemmas of code ``a`` and ``b`` state one equation both ways round
    (``succ n = n + 1`` and ``n + 1 = succ n``): ``simp`` with both rewrites forever."""
    sides_a, sides_b = sides(a), sides(b)
    return sides_a is not None and sides_b is not None and sides_a[0] != sides_a[1] and sides_a == sides_b[::-1]


def _is_name(token: str) -> bool:
    return token[0].isalpha() or token[0] == "_"
