"""A retriever without a model: the premises a goal names, then the lemmas of its own file
about the file's declarations the goal names, among those accessible from the theorem.

What proving uses when it is given no trained retriever and the built-in suggester
proposes the tactics: its premise templates (``simp [f, g]``, ``rw [L]``, ``exact L``) then
have the definitions a goal mentions and the file's lemmas about them to work with, where
otherwise they would have only the premises of its neighbours' proofs. Names, not meaning:
a trained retriever (:class:`retrieval.index.PremiseRetriever`) ranks by what a goal needs.
"""

from __future__ import annotations

from collections import defaultdict

from lean_env.records import DeclKind, Theorem
from lean_env.trace.source.lexer import IDENT_RE
from retrieval.corpus import PremiseCorpus
from retrieval.formats import PremiseCode, PremisesFor

# Declarations that are types (with their constructors), not facts or definitions to unfold.
_TYPES = frozenset({DeclKind.STRUCTURE, DeclKind.INDUCTIVE, DeclKind.CLASS})


class LexicalRetriever:
    """Up to ``k`` premises per goal, as ``(full_name, code)``: first the accessible
    premises (no types) whose full or short name the goal mentions (in the order it
    mentions them),
    then those declared before the theorem in its own file whose code uses the most of the
    file's declarations that the goal names (ties: the nearest first; none that use none,
    so a goal about library names only gets the premises it names)."""

    def __init__(self, corpus: PremiseCorpus, *, k: int) -> None:
        self.corpus, self.k = corpus, k
        self._by_name: dict[str, list[int]] = defaultdict(list)
        for index, premise in enumerate(corpus.premises):
            if premise.kind in _TYPES:  # a type a goal names is no premise to rewrite or apply
                continue
            self._by_name[premise.full_name].append(index)
            short = premise.full_name.rsplit(".", 1)[-1]
            if short != premise.full_name:
                self._by_name[short].append(index)

    def premises_for(self, location: str, theorem: Theorem) -> PremisesFor:
        """A goal -> premises function for ``theorem`` of the repository ``location`` (the
        prover's :class:`~agent.proving.theorem.PremiseSource` seam)."""
        allowed = self.corpus.accessible(location, theorem.path, theorem.start)
        # The file's own premises before the theorem, nearest first, and the names each uses.
        own = [int(i) for i in self.corpus.file_premises(location, theorem.path) if allowed[i]][::-1]
        uses = {i: _names(self.corpus.premises[i].code) for i in own}
        own_names = {n for i in own for n in _names(self.corpus.premises[i].full_name)}

        def premises(goal: str) -> list[PremiseCode]:
            mentioned = list(dict.fromkeys(m.group() for m in IDENT_RE.finditer(goal)))
            named = [i for name in mentioned for i in self._by_name.get(name, ()) if allowed[i]]
            # The file's own declarations the goal names: its lemmas about them come next.
            about = own_names.intersection(mentioned)
            shared = {i: len(about & uses[i]) for i in own}
            related = sorted((i for i in own if shared[i]), key=lambda i: -shared[i])
            chosen = list(dict.fromkeys([*named, *related]))[: self.k]
            return [(self.corpus.premises[i].full_name, self.corpus.premises[i].code) for i in chosen]

        return premises


def _names(code: str) -> set[str]:
    """The identifiers of ``code``, and the short name of each dotted one."""
    found = {m.group() for m in IDENT_RE.finditer(code)}
    return found | {name.rsplit(".", 1)[-1] for name in found}
