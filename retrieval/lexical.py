"""A retriever without a model: the premises a goal names, then the lemmas of its own file
about the file's declarations the goal names, then its lemmas that share the goal's rarer
notation, then the lemmas of other files (the core library's among them) about the types
the goal names whose statements are shaped most like its target, among those accessible
from the theorem.

What proving uses when it is given no trained retriever and the built-in suggester
proposes the tactics: its premise templates (``simp [f, g]``, ``rw [L]``, ``exact L``) then
have the definitions a goal mentions and the file's lemmas about them to work with, where
otherwise they would have only the premises of its neighbours' proofs. Names, not meaning:
a trained retriever (:class:`retrieval.index.PremiseRetriever`) ranks by what a goal needs.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

import numpy as np

from lean_env.interactive.interface import hypothesis_names
from lean_env.records import DeclKind, Premise, Theorem
from lean_env.syntax.lexer import IDENT_RE, mask
from lean_env.syntax.reader import DOC_AND_ATTRIBUTES
from retrieval.corpus import PremiseCorpus
from retrieval.formats import PremiseCode, PremisesFor
from retrieval.statements import conclusion, declares_proposition, field_signature, shape, states_fact

# Declarations that are types, with their constructors and fields.
_TYPES = frozenset({DeclKind.STRUCTURE, DeclKind.INDUCTIVE, DeclKind.CLASS})
# Notation: a superscript (``⁻¹``, ``²``: Lean lets names have them, but they follow a
# term) or a run of what is neither a name's letters nor a bracket, comma or space (``++``,
# ``∣``, ``≤``).
_SYMBOL_RE = re.compile(r"[⁻⁺]?[⁰¹²³⁴-⁹]|[⁻⁺]|[^\w\s()\[\]{}⟨⟩,.'«»⁰¹²³⁴-⁹⁻⁺]+")
# Punctuation of a goal's text or a declaration's signature, not notation of a statement;
# and `=`, which most statements have but definitions lack, so it would seem rare.
_PUNCTUATION = frozenset({":", "⊢", ":=", "|", "=>", "→", "->", "@", "_", "$", "="})
_LEMMAS = frozenset({DeclKind.THEOREM, DeclKind.LEMMA})
# A declaration only its own file can name.
_PRIVATE_RE = re.compile(DOC_AND_ATTRIBUTES + r"private\b", re.DOTALL)
# A goal's instance hypothesis, as Lean names them (`inst✝¹ : Monad m`).
_INSTANCE_LINE_RE = re.compile(r"^inst\S* :.*$", re.MULTILINE)
_ATTRIBUTES_RE = re.compile(r"@\[[^\]]*\]")
# A numeral of a goal: a number not part of a name (`2` of `2 ^ n`, not of `x₂` or `h2`).
_NUMERAL_RE = re.compile(r"(?<![\w.'])\d+(?![\w.])")
# A type's declared name; a structure's or class's parents: what `extends` lists, up to its
# type or `where`.
_DECLARED_RE = re.compile(r"\b(?:class|structure|inductive)\s+(?:inductive\s+)?(?P<name>[^\s({\[:]+)")
_EXTENDS_RE = re.compile(r"(?:(?!\bwhere\b|:=).)*?\bextends\b(?P<parents>(?:(?!\bwhere\b|:=|\s:\s).)*)", re.DOTALL)


class LexicalRetriever:
    """Up to ``k`` premises per goal, as ``(full_name, code)``: first the accessible
    premises whose full or short name the goal mentions (in the order it mentions them;
    not its own variables, which shadow such names), then those declared before the
    theorem in its own file whose code uses the most of the file's declarations that the
    goal names (ties: the goal's rarer notation, then the nearest first; none that use none;
    an instance hypothesis's class counts for its own fact fields only, and for those of the
    classes it extends that have the goal's rarest notation), then the file's lemmas whose
    code shares the goal's notation, the rarer among the file's declarations the more
    (``(a * b)⁻¹`` finds ``mul_inv_rev``; notation that every declaration has counts for
    nothing; a fact field of a class the goal has no instance of comes after the others),
    then the lemmas declared in other files (the repository's, its dependencies', the core
    library's) in the namespace of a name the goal mentions
    (``Nat.add_assoc`` for a goal over ``Nat``), whose conclusion is shaped most like the
    goal's target (``x + y + (z + w) = ...`` finds ``(n + m) + k = n + (m + k)``); a goal
    with a numeral is about ``Nat`` too (``2 ^ k > 0`` finds ``0 < n ^ m``), and another
    file's ``private`` lemmas are none of them.
    Instances and types are never premises (nothing to rewrite with or apply); a type's
    fields and constructors are, among the file's own; and a field that states a fact (every
    field of a class of ``Prop``, as ``LawfulApplicative.pure_seq``, or one whose type is a
    relation) is a lemma everywhere, read from its own line of the declaration and given as
    ``theorem NAME BINDERS : TYPE``."""

    def __init__(self, corpus: PremiseCorpus, *, k: int) -> None:
        self.corpus, self.k = corpus, k
        self._usable = _usable(corpus.premises)
        self._facts = _fact_fields(corpus.premises, self._usable)
        self._parents = _parents(corpus.premises)
        self._by_name: dict[str, list[int]] = defaultdict(list)
        for index, premise in enumerate(corpus.premises):
            # A goal names a type's fields and constructors as terms, not as facts.
            if not self._usable[index] or (premise.kind in _TYPES and index not in self._facts):
                continue
            self._by_name[premise.full_name].append(index)
            short = premise.full_name.rsplit(".", 1)[-1]
            if short != premise.full_name:
                self._by_name[short].append(index)
        self._by_namespace: dict[str, list[int]] = defaultdict(list)
        for index, premise in enumerate(corpus.premises):
            namespace = premise.full_name.rpartition(".")[0]
            # Another file's private lemma is no premise: its file alone can name it.
            lemma = premise.kind in _LEMMAS and not _PRIVATE_RE.match(premise.code)
            if (lemma or index in self._facts) and namespace:
                self._by_namespace[namespace].append(index)
        self._shapes: dict[int, Counter[tuple[str, str]]] = {}
        # Each fact field's class (or structure) by full and short name, and all of them.
        self._fact_class = {i: _names(self._class_of(i)) for i in self._facts}
        self._fact_classes = set().union(*self._fact_class.values())

    def _class_of(self, index: int) -> str:
        """The type a field belongs to (its full name less the field's)."""
        return self.corpus.premises[index].full_name.rpartition(".")[0]

    def _uses(self, index: int) -> set[str]:
        """The names a premise's code uses; a fact field's, its class's too (what it is about)."""
        names = _names(self._code(index))
        if index in self._facts:
            names.add(self._class_of(index))
        return names

    def _code(self, index: int) -> str:
        """What a premise says: its code, or a fact field's own statement."""
        premise = self.corpus.premises[index]
        fact = self._facts.get(index)
        return premise.code if fact is None else f"theorem {premise.full_name} {fact}"

    def premises_for(self, location: str, theorem: Theorem) -> PremisesFor:
        """A goal -> premises function for ``theorem`` of the repository ``location`` (the
        prover's :class:`~agent.proving.theorem.PremiseSource` seam)."""
        allowed = self.corpus.accessible(location, theorem.path, theorem.start)
        scopes = _scopes(theorem.full_name)
        # The file's own premises before the theorem, nearest first, and the names each uses.
        own = [int(i) for i in self.corpus.file_premises(location, theorem.path) if allowed[i]][::-1]
        own_names = {n for i in own for n in _names(self.corpus.premises[i].full_name)}
        own = [i for i in own if self._usable[i]]
        uses = {i: self._uses(i) for i in own}
        notation = {i: _notation(self._code(i)) for i in own}
        spread = Counter(symbol for symbols in notation.values() for symbol in symbols)
        rarity = {symbol: math.log((1 + len(own)) / (1 + count)) for symbol, count in spread.items()}

        def premises(goal: str) -> list[PremiseCode]:
            # A goal's own variables (`α`, `a`) shadow the file's names (a field `α`).
            bound = set(hypothesis_names(goal))
            mentioned = [n for n in dict.fromkeys(m.group() for m in IDENT_RE.finditer(goal)) if n not in bound]
            matches = [i for name in mentioned for i in self._by_name.get(name, ()) if allowed[i]]
            # A short name resolves to a declaration of the theorem's namespaces; one of another
            # namespace (`Except.pure` for a goal's `pure`) only perhaps (an `open`): last.
            named = [i for i in matches if _resolves(self.corpus.premises[i].full_name, mentioned, scopes)]
            elsewhere = [i for i in matches if i not in set(named)]
            # The file's own declarations the goal names: its lemmas about them come next. The
            # class of an instance hypothesis (`inst✝ : LawfulMonad m`) counts for the class's
            # fact fields only: most lemmas of a file about monads take that instance, so that
            # they do says little about this goal. A class it extends counts for those of its
            # fact fields that have the goal's rarest notation too (`LawfulApplicative.seqRight_eq`
            # for `x *> y`): inheritance alone says less, and a class of a file of algebra
            # extends a chain of others whose fields all have `*`. Ties: the most alike in
            # notation first.
            about = own_names.intersection(mentioned)
            outside = about & _names(_INSTANCE_LINE_RE.sub("", goal))
            symbols = _goal_notation(goal)
            rarest = max(symbols & rarity.keys(), key=lambda s: (rarity[s], s), default=None)
            extended = _with_ancestors(about, self._parents) - about
            shared = {
                i: len(about & uses[i]) + bool(rarest in notation[i] and extended & uses[i])
                if i in self._facts
                else len(outside & uses[i])
                for i in own
            }
            alike = {i: sum(rarity[s] for s in symbols & notation[i]) for i in own}
            related = sorted((i for i in own if shared[i]), key=lambda i: (-shared[i], -alike[i]))
            # Where the goal names a class with fact fields, a fact field of a class it has no
            # instance of (neither that class nor one it extends: `CommGroup.mul_comm` for a
            # goal about a `Group`) comes after those alike that apply.
            instances = _with_ancestors(about & self._fact_classes, self._parents)
            foreign = {i for i in own if instances and i in self._facts and not self._fact_class[i] & instances}
            similar = sorted((i for i in own if alike[i] > 0), key=lambda i: (i in foreign, -alike[i]))
            # A numeral no type is given is a `Nat`: its lemmas are the goal's too.
            namespaces = [*mentioned, "Nat"] if _NUMERAL_RE.search(goal) else mentioned
            library = self._shaped_like(goal, namespaces, allowed, theorem.path)
            chosen = list(dict.fromkeys([*named, *related, *similar, *library, *elsewhere]))[: self.k]
            return [(self.corpus.premises[i].full_name, self._code(i)) for i in chosen]

        return premises

    def _shaped_like(self, goal: str, mentioned: list[str], allowed: np.ndarray, path: str) -> list[int]:
        """The lemmas of other files than ``path`` in the namespaces ``mentioned`` (see the
        class docstring), most alike first (ties: by the goal's order of the namespaces, then
        the corpus's); none unlike."""
        pool = [
            i
            for name in mentioned
            for i in self._by_namespace.get(name, ())
            if allowed[i] and self.corpus.premises[i].path != path
        ]
        target = shape(goal.partition("\n\n")[0].rpartition("⊢")[2])
        alike = {i: _cosine(target, self._shape_of(i)) for i in pool}
        return sorted((i for i in alike if alike[i] > 0), key=lambda i: -alike[i])

    def _shape_of(self, index: int) -> Counter[tuple[str, str]]:
        if index not in self._shapes:
            self._shapes[index] = shape(conclusion(self._code(index)))
        return self._shapes[index]


def _cosine(a: Counter[tuple[str, str]], b: Counter[tuple[str, str]]) -> float:
    if not a or not b:
        return 0.0
    shared = sum((a & b).values())
    return shared / math.sqrt(sum(a.values()) * sum(b.values()))


def _usable(premises: tuple[Premise, ...]) -> list[bool]:
    """Per premise, whether it is one to rewrite with or apply: not an instance, nor a type
    (a name its constructors or fields extend) or the constructor generated at the type's
    own position (``S.mk``); fields and declared constructors are."""
    declared = [p for p in premises if p.kind in _TYPES]
    starts = {(p.path, p.full_name): p.start for p in declared}
    extended = {(p.path, p.full_name.rpartition(".")[0]) for p in declared}

    def usable(premise: Premise) -> bool:
        if premise.kind is DeclKind.INSTANCE:
            return False
        if premise.kind not in _TYPES:
            return True
        parent = (premise.path, premise.full_name.rpartition(".")[0])
        generated = premise.full_name.endswith(".mk") and starts.get(parent) == premise.start
        return (premise.path, premise.full_name) not in extended and not generated

    return [usable(premise) for premise in premises]


def _scopes(full_name: str) -> set[str]:
    """The namespaces a declaration named ``full_name`` resolves short names in: its own and
    each one around it, the root (``""``) included."""
    parts = full_name.split(".")[:-1]
    return {".".join(parts[:n]) for n in range(len(parts) + 1)}


def _resolves(full_name: str, mentioned: list[str], scopes: set[str]) -> bool:
    """Whether a goal that mentions ``mentioned`` names ``full_name``: in full, or by the rest of
    its name after one of ``scopes``."""
    return full_name in mentioned or any(
        full_name.startswith(f"{scope}.") and full_name[len(scope) + 1 :] in mentioned for scope in scopes if scope
    )


def _fact_fields(premises: tuple[Premise, ...], usable: list[bool]) -> dict[int, str]:
    """The fields (usable, of a type's kind) that state facts, by index: their signatures
    (:func:`retrieval.statements.field_signature`)."""
    facts = {}
    for index, premise in enumerate(premises):
        if premise.kind not in _TYPES or not usable[index]:
            continue
        signature = field_signature(premise.code, premise.full_name.rsplit(".", 1)[-1])
        if signature and states_fact(signature, in_proposition=declares_proposition(premise.code)):
            facts[index] = signature
    return facts


def _parents(premises: tuple[Premise, ...]) -> dict[str, set[str]]:
    """The types each structure or class extends (by full and short name), by its full and
    short name: ``LawfulMonad`` extends ``LawfulApplicative``."""
    headers = [(p, _DECLARED_RE.search(p.code)) for p in premises if p.kind in _TYPES]
    # The types' own premises, not their fields' and constructors' (which share the code).
    types = [(p, h) for p, h in headers if h and h["name"].rsplit(".")[-1] == p.full_name.rsplit(".")[-1]]
    names = _names(" ".join(p.full_name for p, _ in types))
    parents: dict[str, set[str]] = {}
    for premise, header in types:
        clause = _EXTENDS_RE.match(premise.code, header.end())
        extended = (names & _names(clause["parents"])) - _names(premise.full_name) if clause else set()
        for name in _names(premise.full_name) if extended else ():
            parents.setdefault(name, set()).update(extended)
    return parents


def _with_ancestors(names: set[str], parents: dict[str, set[str]]) -> set[str]:
    """``names`` and every type they extend, through any number of ``extends``."""
    found, todo = set(names), list(names)
    while todo:
        for parent in parents.get(todo.pop(), ()):
            if parent not in found:
                found.add(parent)
                todo.append(parent)
    return found


def _notation(text: str) -> set[str]:
    """The notation ``text`` uses (see :data:`_SYMBOL_RE`), not counting what its comments,
    string literals and attributes hold (``@[extern c inline "#1 ^ #2"]`` is no ``^``)."""
    statement = _ATTRIBUTES_RE.sub(" ", mask(text).masked)
    return {m.group() for m in _SYMBOL_RE.finditer(statement)} - _PUNCTUATION


def _goal_notation(goal: str) -> set[str]:
    """The notation of a printed goal. It has no comments, but Lean prints ``-(-a)`` as
    ``--a``, which :func:`_notation` would blank to the end of the line as one: it is read
    as the two negations it is."""
    return _notation(goal.replace("--", "- -"))


def _names(code: str) -> set[str]:
    """The identifiers of ``code``, and the short name of each dotted one."""
    found = {m.group() for m in IDENT_RE.finditer(code)}
    return found | {name.rsplit(".", 1)[-1] for name in found}
