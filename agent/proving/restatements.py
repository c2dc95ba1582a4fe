"""Found proofs that only restate a premise: ``exact X``, ``apply X`` or the term ``X``,
where ``X`` is a lemma of the same repository whose statement is the theorem's, up to the
names of their binders (FormalBook #67: a maintainer declined such a "proof").

Lean accepts them, and they are true, but they add nothing: the sorry was a copy of a
lemma proved elsewhere (an exercise's twin, a restatement kept for a chapter's flow). The
lifelong job reports them as "restates X" and, unless asked to keep them
(``--keep-restatements``), does not write them back.

Statements are compared as token sequences after each binder is replaced by its position
(``(a b : α)`` and ``(x y : α)`` are alike) and each auto-bound variable (an unbound
single letter, ``α``, ``β₁``) by the order of its first use; everything else, the
binders' kinds and types and the target, must agree token for token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.generators.goals import GoalView, statement_view, tokens
from lean_env.records import Premise, Theorem
from lean_env.syntax.lexer import IDENT

# `by exact X`, `by apply X`, or the term `X`, optionally applied to the theorem's own
# binders or holes (`exact X a b`, `X _ _`).
_PROOF_RE = re.compile(rf"^(?:by\s+(?:exact|apply)\s+)?@?(?P<name>{IDENT})(?P<args>(?:\s+(?:{IDENT}|_))*)\s*$")
# A variable Lean binds on its own (autoImplicit): one letter, with subscripts or primes.
_AUTO_BOUND_RE = re.compile(r"^[^\W\d_][₀-₉']*$")


def restated(proof: str | None, theorem: Theorem, premises: Sequence[Premise]) -> str | None:
    """The full name of the premise of ``premises`` that ``proof`` of ``theorem`` only
    invokes and whose statement is the theorem's, or None."""
    if not proof:
        return None
    found = _PROOF_RE.match(" ".join(proof.split()))
    if found is None:
        return None
    name = found["name"]
    view = statement_view(theorem.statement)
    binders = [local.name for local in view.locals if local.name]
    # Applied, it passes the theorem's own binders in their order (or holes), nothing else.
    if any(arg != "_" and (i >= len(binders) or arg != binders[i]) for i, arg in enumerate(found["args"].split())):
        return None
    shape = _shape(view)
    for premise in premises:
        if premise.full_name == theorem.full_name or not _names_it(premise.full_name, name):
            continue
        if _shape(statement_view(premise.code.split(":=", 1)[0])) == shape:
            return premise.full_name
    return None


def _names_it(full_name: str, name: str) -> bool:
    """Whether ``name``, as written in a proof, can refer to the premise ``full_name``."""
    return full_name == name or full_name.endswith("." + name)


def _shape(view: GoalView) -> tuple[str, ...]:
    """The statement's tokens with binders by position and auto-bound variables by first use."""
    positions = {local.name: f"#{i}" for i, local in enumerate(view.locals) if local.name}
    auto: dict[str, str] = {}

    def token(t: str) -> str:
        if t in positions:
            return positions[t]
        if _AUTO_BOUND_RE.match(t):
            return auto.setdefault(t, f"?{len(auto)}")
        return t

    out: list[str] = []
    for local in view.locals:
        out += ["(", *(token(t) for t in tokens(local.type)), ")"]
    return (*out, ":", *(token(t) for t in tokens(view.target)))
