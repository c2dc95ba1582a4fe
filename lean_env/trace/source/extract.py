"""From read declarations to the shared records: premises, theorems, tactic steps, sorries.

What becomes what:

* Every named declaration is a :class:`~lean_env.records.Premise` (kind from its keyword,
  code as LeanDojo's corpus has it: comments removed, a ``theorem`` cut before its ``:=``,
  see :mod:`~lean_env.syntax.corpus_code`), and so are the names it introduces:
  constructors (``Foo.mk``, ``Nat.succ``-style), structure and class fields (``Foo.x``) and
  ``where`` items (``foo.go``). Those carry their parent's kind and code. The whole source
  of a theorem stays in its :class:`~lean_env.records.Theorem` (``statement``, ``proof``).
  ``example`` declares nothing: it is neither a premise nor a theorem.
* ``theorem`` and ``lemma`` declarations are :class:`~lean_env.records.Theorem` records.
  A ``def`` whose type happens to be a ``Prop`` is not: that would need elaboration.
  A theorem's span ends with its proof, before any ``where``/``termination_by`` trailer, so
  that replacing ``proof_start``..``end`` keeps the trailer's auxiliary declarations.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from lean_env.records import (
    DeclKind,
    LeanFile,
    ParseProblem,
    Position,
    Premise,
    Theorem,
    TheoremStatus,
    TracedTactic,
)
from lean_env.syntax.corpus_code import corpus_code
from lean_env.syntax.lexer import IDENT, IDENT_RE, MaskedText, mask
from lean_env.syntax.names import Entry, NameTable, Site
from lean_env.syntax.reader import Decl, ReadFile, read_file
from lean_env.syntax.tactics import tactic_steps

_THEOREM_KINDS = frozenset({DeclKind.THEOREM, DeclKind.LEMMA})
# Each alternative starts with a literal letter (the "not inside a name" lookbehind comes
# after it) so that `re` skips to candidates in C rather than trying every offset.
_SORRY = re.compile(r"(?:s(?<![\w'!?.]s)orry|a(?<![\w'!?.]a)dmit)(?![\w'!?])")
_BY = re.compile(r"\s*by(?![\w'!?])")
_CASE_TAG = re.compile(rf"(?:c(?<![\w'!?.]c)ase'?|n(?<![\w'!?.]n)ext)\s+({IDENT})")


@dataclass(frozen=True, slots=True)
class FileExtract:
    """Everything source extraction learned from one file.

    From :func:`extract_file` premises resolve within the file only; :func:`extract_repo`
    (in :mod:`lean_env.trace.source.repo`) resolves them across the repository and its imports.
    """

    file: LeanFile
    premises: tuple[Premise, ...]
    theorems: tuple[Theorem, ...]
    problems: tuple[ParseProblem, ...]


def extract_file(text: str, *, path: str) -> FileExtract:
    """Read one Lean file's source: declarations, theorems with their proofs split into
    steps, sorries, and the premises each proof uses among the file's own declarations.

    Never raises on malformed Lean: what cannot be read becomes a ``ParseProblem`` and
    reading goes on with the next declaration.
    """
    read = read_file(mask(text))
    table = NameTable()
    register(table, read, module=0)
    return build(read, path=path, table=table, module=0, imported=0, with_theorems=True)


def register(table: NameTable, read: ReadFile, *, module: int) -> None:
    """Add the names ``read`` declares to ``table``, as living in module number ``module``."""
    table.add_all(_declared(read, module))


def _declared(read: ReadFile, module: int) -> Iterator[tuple[str, Entry]]:
    for decl in read.decls:
        if decl.name is None:  # an example
            continue
        yield decl.name, Entry(module, decl.start, "", decl.protected, decl.private)
        for child in decl.children:
            yield child.name, Entry(module, decl.start, decl.name, False, decl.private)


def build(
    read: ReadFile,
    *,
    path: str,
    table: NameTable,
    module: int,
    imported: int,
    with_theorems: bool,
) -> FileExtract:
    """Turn one read file into records, resolving proof identifiers against ``table``;
    ``imported`` is the bit set of the module numbers the file imports, directly or not."""
    source = read.source
    position = source.position
    premises: list[Premise] = []
    theorems: list[Theorem] = []
    for decl in read.decls:
        name, kind = decl.name, decl.kind
        if name is None:  # an example
            continue
        # A theorem's record shares these positions: compute each offset's position once.
        start, end = position(decl.start), position(decl.end)
        code = corpus_code(source, decl.start, decl.header_end if kind is DeclKind.THEOREM else decl.end)
        premises.append(Premise(name, path, start, end, kind, code))
        if decl.children:
            # LeanDojo's corpus has no premise of their own: a use of a field or constructor is
            # a use of the declaration whose span holds it, so they carry its code.
            premises.extend(
                Premise(c.name, path, position(c.start), position(c.end), kind, code) for c in decl.children
            )
        if with_theorems and kind in _THEOREM_KINDS:
            body_end = end if decl.body_end == decl.end else position(decl.body_end)
            site = Site(module, decl.start, name, imported)
            theorems.append(_theorem(source, decl, name, path, table, site, start, body_end))
    problems = tuple(ParseProblem(path, source.line_of(i.offset), i.reason) for i in read.issues)
    return FileExtract(LeanFile(path, read.imports), tuple(premises), tuple(theorems), problems)


def _theorem(
    source: MaskedText,
    decl: Decl,
    name: str,
    path: str,
    table: NameTable,
    site: Site,
    start_position: Position,
    end_position: Position,
) -> Theorem:
    """The theorem record of ``decl`` (named ``name``); ``start_position``/``end_position``
    are the positions of ``decl.start`` and ``decl.body_end``."""
    text = source.text
    statement = text[decl.keyword_start : decl.header_end]
    proof_start, body_end = decl.proof_start, decl.body_end
    if proof_start is None:
        return Theorem(name, path, start_position, end_position, statement, None, TheoremStatus.SORRY)
    # Work on the proof's lines only (from the start of its first line, so that columns
    # stay right), with offsets shifted by `base`.
    masked = source.masked
    base = masked.rfind("\n", 0, proof_start) + 1
    proof = masked[base:body_end]
    start, end = proof_start - base, body_end - base
    if ("case" in proof or "next" in proof) and _CASE_TAG.search(proof, start):
        # `case succ k ih =>` names a goal, not the constructor: keep it out of premises.
        proof = _CASE_TAG.sub(_blank_tag, proof)
    # Resolve each distinct identifier of the proof once; steps then only look names up.
    idents = IDENT_RE.findall(proof, start)
    meaning = table.resolve_all(idents, decl.scope, site)
    premises = tuple(dict.fromkeys(meaning[i] for i in idents if i in meaning)) if meaning else ()
    tactics: tuple[TracedTactic, ...] = ()
    if decl.is_tactic:
        # The reader set is_tactic only where `by` matched at the proof's start.
        by = _BY.match(proof, start)
        assert by is not None
        steps = tactic_steps(proof, by.end(), end)
        # Step offsets are relative to `base`: slice the proof's own text with them.
        lines = text[base:body_end]
        if meaning:
            tactics = tuple([TracedTactic(lines[s:e], premises=_names_in(proof, s, e, meaning)) for s, e in steps])
        else:
            tactics = tuple([TracedTactic(lines[s:e]) for s, e in steps])
    if "sorry" in proof or "admit" in proof:
        position = source.position
        sorries = tuple([position(base + m.start()) for m in _SORRY.finditer(proof, start)])
    else:
        sorries = ()
    status = TheoremStatus.SORRY if sorries else TheoremStatus.PROVEN
    # Positional, in Theorem's field order (full_name, path, start, end, statement, proof,
    # status, tactics, premises, sorries, proof_start): keywords cost ~10% more per record.
    return Theorem(
        name,
        path,
        start_position,
        end_position,
        statement,
        text[proof_start:body_end],
        status,
        tactics,
        premises,
        sorries,
        source.position(proof_start),
    )


def _blank_tag(m: re.Match[str]) -> str:
    return m.group()[: m.start(1) - m.start()] + " " * len(m.group(1))


def _names_in(masked: str, start: int, end: int, meaning: dict[str, str]) -> tuple[str, ...]:
    """The full names the identifiers of ``masked[start:end]`` mean, in order, once each."""
    step = masked[start:end]
    if not any(ident in step for ident in meaning):  # a substring test rules most steps out
        return ()
    return tuple(dict.fromkeys(meaning[i] for i in IDENT_RE.findall(masked, start, end) if i in meaning))
