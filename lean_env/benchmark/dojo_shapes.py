"""LeanDojo's data shapes as our records: the dicts ``TracedFile.get_premise_definitions()``
returns (the premise entries of ``corpus.jsonl``), ``TracedTactic.get_annotated_tactic()``
(``[text, provenances]``), ``[line, column]`` positions, and corpus file paths.

Shared by the LeanDojo tracing backend (:mod:`lean_env.trace.dojo`), which gets these
shapes from live lean_dojo objects, and the Benchmark 4 reader and writer
(:mod:`lean_env.benchmark.read`), which gets them from JSON; so both backends make the same
records of the same data. Malformed values raise ``ValueError``; callers add the context.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lean_env.records import DeclKind, Position, Premise
from lean_env.syntax.corpus_code import premise_code

# LeanDojo's benchmark leaves out tactics that start with no goals and `·` focusing dots.
NO_GOALS = "no goals"
FOCUS_DOT = "·"
# LeanDojo's premise `kind` is its AST node kind; these name one keyword without looking.
_NODE_KINDS = {
    "lemma": DeclKind.LEMMA,
    "mathlibtacticlemma": DeclKind.LEMMA,
    "leanelabcommandcommandirreducibledef": DeclKind.DEF,
}
_MODIFIERS = frozenset("private protected noncomputable partial unsafe nonrec scoped local".split())
_WORD_RE = re.compile(r"[^\s(]+")
# `sorry` and `admit` close a goal without proof; a proof using either proves nothing.
SORRY_RE = re.compile(r"(?<![\w.'])(sorry|admit)(?![\w'])")


def position_from_json(value: Any) -> Position:
    """A ``[line, column]`` pair (1-based) as a :class:`Position`; ValueError otherwise."""
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise ValueError(f"a position must be [line, column], got {value!r}")
    return Position(value[0], value[1])


def decl_kind(kind: str, code: str) -> DeclKind:
    """Our :class:`DeclKind` for a premise of LeanDojo ``kind`` with source ``code``.

    LeanDojo writes the AST node kind (``commanddeclaration`` for every ``def``, ``theorem``,
    ``instance``, ...), so the keyword is read from the code, after attributes and
    modifiers. A kind that already is one of ours (what we write) is taken as it is.
    """
    if kind in _NODE_KINDS:
        return _NODE_KINDS[kind]
    words = [w for w in _WORD_RE.findall(_skip_attributes(code.lstrip())[:200]) if w not in _MODIFIERS]
    for candidate in (kind, words[0] if words else ""):
        try:
            return DeclKind(candidate)
        except ValueError:
            continue
    return DeclKind.UNKNOWN


def _skip_attributes(code: str) -> str:
    """``code`` without leading ``@[...]`` attribute lists (brackets may nest)."""
    while code.startswith("@["):
        depth = 0
        for i, ch in enumerate(code):
            depth += ch == "["
            depth -= ch == "]"
            if depth == 0 and ch == "]":
                code = code[i + 1 :].lstrip()
                break
        else:
            return ""
    return code


def premise_from_json(data: Mapping[str, Any], path: str) -> Premise | None:
    """A corpus premise entry as a :class:`Premise` of file ``path``.

    None for entries without a name (LeanDojo leaves some, ReProver skips them too);
    ValueError when a field is missing or has the wrong type. The code is brought to the
    corpus form (:func:`~lean_env.syntax.corpus_code.premise_code`): LeanDojo's own
    comes back as it is, a whole declaration's source (as an older leanagent exported it) is
    cut as LeanDojo would have cut it.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"a premise must be an object, got {type(data).__name__}")
    full_name = data.get("full_name")
    if full_name is None:
        return None
    code = data.get("code", "")
    kind = data.get("kind", "")
    if not isinstance(full_name, str) or not isinstance(code, str) or not isinstance(kind, str):
        raise ValueError("premise full_name, code and kind must be strings")
    declared = decl_kind(kind, code)
    return Premise(
        full_name=full_name,
        path=path,
        start=position_from_json(data.get("start")),
        end=position_from_json(data.get("end")),
        kind=declared,
        code=premise_code(code, declared),
    )


def premise_to_json(premise: Premise) -> dict[str, Any]:
    return {
        "full_name": premise.full_name,
        "code": premise.code,
        "start": premise.start.as_list(),
        "end": premise.end.as_list(),
        "kind": premise.kind.value,
    }


def annotated_premises(annotated: Any) -> tuple[str, ...]:
    """The premise names of an ``annotated_tactic`` ``[text, provenances]``, first use first.

    Names come from the provenances (as ReProver's ``get_all_pos_premises`` reads them),
    not from the ``<a>`` marks; ValueError when the value has the wrong shape.
    """
    if not isinstance(annotated, (list, tuple)) or len(annotated) != 2:
        raise ValueError("annotated_tactic must be [text, provenances]")
    text, provenances = annotated
    if not isinstance(text, str) or not isinstance(provenances, list):
        raise ValueError("annotated_tactic must be [text, provenances]")
    names: dict[str, None] = {}
    for prov in provenances:
        name = prov.get("full_name") if isinstance(prov, Mapping) else None
        if not isinstance(name, str):
            raise ValueError("every provenance needs a string full_name")
        names[name] = None
    return tuple(names)


def statement_text(statement: str) -> str:
    """A theorem statement as our records keep it: the declaration header without the
    trailing ``:=`` (LeanDojo's ``get_theorem_statement`` and LeanAgent's
    ``theorem_statement`` keep it; source extraction and corpus premise code do not)."""
    return statement.strip().removesuffix(":=").rstrip()


def keeps_tactic(tactic: str, state_before: str) -> bool:
    """LeanDojo's export filter: no tactic run on ``no goals``, no ``·`` focusing steps."""
    return state_before != NO_GOALS and FOCUS_DOT not in tactic
