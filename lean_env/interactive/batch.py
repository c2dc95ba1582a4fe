"""Many candidate tactics of one proof state in one Lean run: the file-check backend's batch.

One run per candidate re-elaborates the file up to the theorem (imports included) every
time; a batch pays for that once. The file is cut before the theorem and the theorem follows
once per candidate, each copy under a fresh name (the declared name, :data:`BATCH_MARK` and
its index) with its tactic prefix plus that candidate as its proof. Lean elaborates each
declaration on its own and goes on after an error, so the diagnostics within a copy's span
are what Lean says of that candidate; messages get the declared name back.

What a copy sees that a run of its own would not: the copies before it. They are left
without their attributes (a copy that is a ``simp`` lemma would change its siblings'
``simp``), so only a tactic that searches the environment by statement (``exact?``) can find
one; such a tactic's "finished" is confirmed by a run of its own (:func:`needs_confirming`;
:class:`~lean_env.interactive.filecheck.FileCheckSession` does it). And what the parser does
after an error, and what the theorem's own name means inside its proof: a candidate whose
brackets do not balance, or that names the theorem, is never batched (:func:`batchable`).
After each copy comes its declaration probe (:mod:`lean_env.interactive.probe`) under the
copy's name, then a marker, ``#check @`` :data:`END_MARK`, whose one error ("unknown
identifier") says that the parser read the copy to its end and started afresh: a copy
whose text wants more reads on into its marker, and after a parse error the parser skips
ahead to the next command, at the latest that marker. So a copy with a parse error, or
whose marker says anything else, runs alone (:meth:`BatchFile.unsure`); its neighbours
keep their verdicts.
Every other verdict is the one the candidate alone gets, up to the numbers of metavariables
in its messages (``?m.4578`` alone is ``?m.13057`` among many copies: they count up through
a file).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from lean_env.interactive.probe import declaration_probe, says_undeclared
from lean_env.lean.diagnostics import Diagnostic
from lean_env.proofs.text import offset_of, position_of, splice_proof
from lean_env.records import Position, Theorem
from lean_env.syntax.lexer import CLOSING_BRACKETS, IDENT_RE, OPENING_BRACKETS, mask

# What a copy's name gets after the declared name, then its index.
BATCH_MARK = "_leanagent_batch"
_MARK_RE = re.compile(re.escape(BATCH_MARK) + r"\d+")
# The name each copy's marker checks: declared nowhere, so Lean always says it is unknown.
END_MARK = "leanagent_batch_end"
_MARKER = f"#check @{END_MARK}"
# The declaration keyword and the declared name (in comment-masked text).
_DECLARATION_RE = re.compile(r"(?<![\w.'])(?:theorem|lemma)\s+([^\s:({\[⦃]+)")
# Text between a copy and its marker, and between the marker and the next copy.
_GAP = "\n\n"
# Tactics that search the environment by statement, and could find an earlier copy: `exact?`,
# `apply?`, `rw?` and the like, and the older names of library search.
_SEARCHES_RE = re.compile(r"(?<![\w.'])(?:[\w.']+\?|library_search|hint|suggest)(?![\w'!?])")


@dataclass(frozen=True, slots=True)
class Copy:
    """Where one candidate's copy of the theorem lies in the batch file (1-based positions)."""

    start: Position  # its first character
    by: Position  # its proof's ``by``
    probe: Position  # its declaration probe, after the proof
    marker: Position  # its marker's ``#check``, after the probe


@dataclass(frozen=True, slots=True)
class BatchFile:
    """The text of a batch and where each copy lies in it, in the candidates' order."""

    text: str
    copies: tuple[Copy, ...]

    def diagnostics_of(self, index: int, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
        """The diagnostics within copy ``index`` (up to its probe), with the declared name in
        place of the copy's."""
        copy = self.copies[index]
        return [_unmarked(d) for d in diagnostics if copy.start <= d.start < copy.probe]

    def probe_of(self, index: int, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
        """The diagnostics of copy ``index``'s declaration probe."""
        copy = self.copies[index]
        return [d for d in diagnostics if copy.probe <= d.start < copy.marker]

    def unsure(self, diagnostics: Sequence[Diagnostic]) -> set[int]:
        """The copies whose verdict the batch may not give right: one with a parse error
        (what the parser read after it is not what it reads alone, where the rest of the file
        follows), one whose probe says more than that the copy is unknown, and one whose
        marker does not say just that its name is unknown (the copy read on into them, or the
        parser skipped over them)."""
        return {
            index
            for index in range(len(self.copies))
            if any(d.is_parse_error for d in self.diagnostics_of(index, diagnostics))
            or not self._marker_clean(index, diagnostics)
            or not _probe_clean(self.probe_of(index, diagnostics))
        }

    def _marker_clean(self, index: int, diagnostics: Sequence[Diagnostic]) -> bool:
        start = self.copies[index].marker
        stop = self.copies[index + 1].start if index + 1 < len(self.copies) else None
        said = [d for d in diagnostics if start <= d.start and (stop is None or d.start < stop)]
        return len(said) == 1 and said[0].is_error and END_MARK in said[0].message

    def before_copies(self, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
        """The diagnostics before the first copy: of the file around the theorem."""
        return [d for d in diagnostics if d.start < self.copies[0].start]


def _probe_clean(said: list[Diagnostic]) -> bool:
    """Whether a probe gave no error, or just the one that says its copy is not declared."""
    errors = [d for d in said if d.is_error]
    return not errors or (len(errors) == 1 and says_undeclared(errors))


def batch_file(source: str, theorem: Theorem, proofs: Sequence[str]) -> BatchFile | None:
    """``source`` (the file up to the end of ``theorem``) with the theorem once per proof in
    ``proofs`` (each a tactic block, ``by`` first), as the module docstring says; None when
    the declaration cannot be renamed (no ``theorem``/``lemma`` keyword, a ``«»`` name)."""
    start = offset_of(source, theorem.start)
    parts, spans = [source[:start]], []
    at = start
    for index, proof in enumerate(proofs):
        spliced, proof_at = splice_proof(source, theorem, proof)
        header = _renamed(spliced[start:proof_at], index)
        if header is None:
            return None
        copy = header + spliced[proof_at:]
        probe = declaration_probe(f"{theorem.full_name}{BATCH_MARK}{index}")
        marked = f"{copy}{_GAP}{probe}{_GAP}{_MARKER}{_GAP}"
        after = at + len(copy) + len(_GAP)
        spans.append((at, at + len(header), after, after + len(probe) + len(_GAP)))
        parts.append(marked)
        at += len(marked)
    text = "".join(parts)
    copies = tuple(Copy(*(position_of(text, offset) for offset in span)) for span in spans)
    return BatchFile(text, copies)


def needs_confirming(tactic: str, index: int) -> bool:
    """Whether the batch's word that ``tactic``, copy ``index``, finished the proof must be
    confirmed by a run of its own: it follows other copies and may search the environment,
    where it could find one of them (the first copy sees none)."""
    return index > 0 and bool(_SEARCHES_RE.search(mask(tactic).masked))


def batchable(tactic: str, theorem: Theorem) -> bool:
    """Whether ``tactic`` can share a batch: it does not name the theorem itself (inside its
    own proof that is a recursive call, in a renamed copy an unknown name), and its brackets
    balance (outside comments and strings), so that its copy cannot swallow the next (``{``
    alone would)."""
    masked = mask(tactic)
    short = theorem.full_name.rsplit(".", 1)[-1]
    if any(m.group() == short or m.group().endswith(f".{short}") for m in IDENT_RE.finditer(masked.masked)):
        return False
    depth = 0
    for char in masked.masked:
        if char in OPENING_BRACKETS:
            depth += 1
        elif char in CLOSING_BRACKETS:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and not masked.problems


def _renamed(header: str, index: int) -> str | None:
    """The declaration's text before its proof, under the copy's name and without its
    attributes; None when it has no name we can extend."""
    masked = mask(header).masked
    found = _DECLARATION_RE.search(masked)
    if found is None or "«" in found[1]:
        return None
    before = "".join(header[a:b] for a, b in _outside_attributes(masked, found.start()))
    declaration = header[found.start() :]
    name_end = found.end(1) - found.start()
    return f"{before}{declaration[:name_end]}{BATCH_MARK}{index}{declaration[name_end:]}"


def _outside_attributes(masked: str, end: int) -> list[tuple[int, int]]:
    """The spans of ``masked[:end]`` outside its ``@[...]`` attribute lists (brackets nest);
    all of it when a list never closes (Lean rejects the file then anyway)."""
    spans, at, depth, i = [], 0, 0, 0
    while i < end:
        if depth == 0 and masked.startswith("@[", i):
            spans.append((at, i))
            depth, i = 1, i + 2
            continue
        if depth:
            depth += {"[": 1, "]": -1}.get(masked[i], 0)
            at = i + 1
        i += 1
    return [(0, end)] if depth else [*spans, (at, end)]


def _unmarked(diagnostic: Diagnostic) -> Diagnostic:
    message = _MARK_RE.sub("", diagnostic.message)
    return diagnostic if message == diagnostic.message else replace(diagnostic, message=message)
