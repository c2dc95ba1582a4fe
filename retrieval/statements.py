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

from lean_env.syntax.lexer import CLOSING_BRACKETS, OPENING_BRACKETS, top_level_at

# A name, a numeral, Lean's multi-character punctuation, or one other character.
_TOKEN_RE = re.compile(r"[^\W\d][\w.'!?]*|\d+|:=|=>|==|!=|<->|->|[^\s\w]")
# A binder group's names, up to its `:` (`(n m : Nat)`, `{α : Type}`, `∀ (x : α)`).
_BINDER_RE = re.compile(r"[({⦃\[]\s*([^(){}\[\]⦃⦄:]*?)\s*:")
_EQUATIONS = ("=", "↔")
_FLIPPED = {">": "<", "≥": "≤"}
# A relation a statement may conclude with.
_RELATION_RE = re.compile(r"(?<![<>=])(?:=|↔|≤|≥|≠|∣|∈|∉|⊆)(?![>=])|(?<![<$*|])<(?![$*|=-])")


def conclusion(code: str) -> str:
    """The statement of ``code`` after its name and binders: the text between the first
    top-level ``:`` of its signature and ``:=``, without a leading ``∀ ... ,``."""
    statement = code.partition(":=")[0]
    if colons := top_level_at(statement, (":",)):
        statement = statement[colons[0] + 1 :].strip()
    if statement.startswith("∀") and (commas := top_level_at(statement, (",",))):
        statement = statement[commas[0] + 1 :].strip()
    return statement


def field_signature(code: str, field: str) -> str | None:
    """The binders and type of the field ``field`` (a short name) of the structure or class
    that ``code`` declares, on one line (``(g : α → β) (x : f α) : pure g <*> x = g <$> x``);
    None when ``code`` declares no such field with a type (one given only a default value,
    or a declaration with no ``where`` block). A field's own premise carries the code of its
    whole declaration, which says what every field states at once."""
    lines = code.split("\n")
    start = next((i for i, line in enumerate(lines) if re.search(r"\bwhere\s*$", line)), None)
    if start is None:
        return None
    for index in range(start + 1, len(lines)):
        match = re.match(rf"(\s+){re.escape(field)}(?![\w.'!?])(.*)$", lines[index])
        if match is None:
            continue
        indent, text = len(match.group(1)), [match.group(2)]
        for line in lines[index + 1 :]:
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            text.append(line)
        signature = " ".join(" ".join(text).split())
        if defaults := [at for at in top_level_at(signature, (":",)) if signature.startswith(":=", at)]:
            signature = signature[: defaults[0]].strip()  # the default value is no part of it
        return signature if top_level_at(signature, (":",)) else None
    return None


def states_fact(signature: str, *, in_proposition: bool) -> bool:
    """Whether a field of ``signature`` (:func:`field_signature`) is a fact to rewrite with or
    apply: every field of a structure or class of ``Prop`` is, and elsewhere one whose type
    concludes with a relation."""
    return in_proposition or bool(_RELATION_RE.search(conclusion(signature)))


def declares_proposition(code: str) -> bool:
    """Whether ``code`` declares a structure or class of ``Prop`` (``class C ... : Prop where``)."""
    header = re.search(r"\bwhere\s*$", code, re.M)
    return header is not None and bool(re.search(r":\s*Prop\s*$", code[: header.start()]))


def shape(text: str) -> Counter[tuple[str, str]]:
    """The pairs of neighbouring tokens of ``text`` with every name made ``_``: what a
    statement looks like whatever its variables and functions are called. A comparison
    ``a > b`` (``≥``) is read as ``b < a`` (``≤``), the way lemmas state it."""
    tokens = _less_than(["_" if _is_name(t) else t for t in _TOKEN_RE.findall(text)])
    return Counter(zip(tokens, tokens[1:], strict=False))


def _less_than(tokens: list[str]) -> list[str]:
    """``tokens`` of ``a > b`` as those of ``b < a`` (``≥``: ``≤``) when that comparison is
    the only relation or arrow outside every bracket; else as they are."""
    depth, at = 0, []
    for index, token in enumerate(tokens):
        depth += (token in OPENING_BRACKETS) - (token in CLOSING_BRACKETS)
        if depth == 0 and (_RELATION_RE.fullmatch(token) or token in (">", "→", "->")):
            at.append(index)
    if len(at) != 1 or tokens[at[0]] not in _FLIPPED:
        return tokens
    index = at[0]
    return [*tokens[index + 1 :], _FLIPPED[tokens[index]], *tokens[:index]]


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
