"""The built-in tactic suggester: model-free, CPU-cheap tactic candidates, after
Tactician's online k-nearest-neighbour prediction for Coq.

For a goal it pools four kinds of candidates, each with a weight, and gives each its
share of the pool's weight as a log-probability (so best-first search adds them along a
path as it adds a model's):

* **Neighbours.** The stored tactic steps of proven theorems whose proof state is nearest
  the goal (cosine of TF-IDF weighted, hashed features; :func:`state_features`), each
  renamed to the goal's local names (:func:`agent.generators.goals.rename_tactic`) and weighted by
  its similarity squared (close neighbours count much more than loose ones); a tactic that
  several neighbours propose adds their weights. A name that the theorem's namespace would
  not resolve (the neighbour's was another, or it opened one) is also offered in full.
* **Premise templates.** ``exact P``, ``apply P``, ``rw [P]``, ``simp [P]`` for the
  premises the retriever gives (weight falling with rank) and those the neighbours' steps
  use (weight their similarity); ``rw [← L]`` for the retriever's lemmas that state an
  equation or an iff.
* **Structure.** What the goal's shape asks for (:func:`structural`): ``simp`` with the
  goal's best premises, induction or case analysis on a data local followed by that
  ``simp``, ``cases`` on a split hypothesis, ``constructor``, ``intros``; a chain of
  ``Nat``'s order through a hypothesis (:func:`chains`), a sum or product over ``Nat`` put in
  one order (:func:`sortings`).
* **Closers.** A short list of tactics that often finish a goal (``rfl``, ``simp``,
  ``omega``, ``decide``, ...), each with a small fixed weight.

A stored step's proof state is its traced goal when the repository was traced (LeanDojo,
the benchmark, or a proof we found: the proof environment printed its goals); for a step
that only source extraction saw, it is the theorem's statement (binders as hypotheses,
the type as the target) and the step before it, since the goal there is not known.

It learns at once: a proof accepted by Lean's final check is added to the index
(:meth:`TacticSuggester.learn`) and is a neighbour for the next theorem. A tactic that the
toolchain does not know (Lean's parser says ``unknown tactic``) is not offered again by
this suggester; a tactic made of one word and its arguments takes its whole head word
with it (``norm_num [h]`` drops ``norm_num`` too).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import re
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from agent.generators.goals import UNIVERSE_RE, GoalView, Local, abstracted, goal_view, rename_tactic, statement_view
from agent.search.tree import CANDIDATES_PER_EXPANSION, Candidate
from curriculum.results import TheoremKey, theorem_key
from lean_env.interactive.interface import LeanError, TacticResult, TacticState, normalize_goals
from lean_env.proofs.text import uses_sorry
from lean_env.records import RepoTrace, Theorem, TheoremStatus, TracedTactic
from lean_env.syntax.lexer import IDENT_RE, top_level_at
from lean_env.syntax.reader import DECLARATION_PREFIX
from retrieval.formats import PremiseCode
from retrieval.statements import converse

log = logging.getLogger(__name__)

# Stored steps whose tactics are candidates, per goal.
NEIGHBOURS = 16
# Premises put into templates, per goal (the best by weight), for an ask of up to
# CANDIDATES_PER_EXPANSION candidates; as many more for each such further part of a larger ask.
TEMPLATE_PREMISES = 6
# (template, weight): multiplied by the premise's weight (1 for the retriever's first).
TEMPLATES = (("exact {}", 0.3), ("apply {}", 0.25), ("rw [{}]", 0.25), ("simp [{}]", 0.2))
# `rw [← L]` for the retriever's first TEMPLATE_PREMISES lemmas that state an equation or an
# iff, weighted this divided by 1 + the lemma's rank among the retriever's premises.
REVERSED = 0.1
REVERSED_TEMPLATE = "rw [← {}]"
# A template that Lean refused this many times in one search for premises of one kind (`rw
# [D]` for definitions: the June 2021 Lean rewrites with none) and never accepted is not
# offered again in that search (SuggesterEpisode).
TEMPLATE_TRIALS = 10
# (closing tactic, weight). Mathlib's `norm_num`/`linarith` and Aesop's `aesop` are
# offered too: a toolchain without them says `unknown tactic` once, and they go.
CLOSERS = (
    ("rfl", 0.3),
    ("simp", 0.3),
    ("omega", 0.25),
    ("decide", 0.2),
    ("trivial", 0.15),
    ("assumption", 0.15),
    ("simp_all", 0.1),
    ("aesop", 0.1),
    ("contradiction", 0.05),
    ("norm_num", 0.05),
    ("linarith", 0.05),
)
# The share of a goal's pool given to the tactics Lean refused at the state before it (by
# their probability there): a proof often needs an `intro`, `funext` or `cases` before the
# tactic that closes it, and the state before proposed that tactic too early.
INHERITED = 0.5
# Premises a structural candidate's `simp [...]` unfolds: the retriever's first ones, else
# the neighbours' best by weight.
SIMP_PREMISES = 4
# Structural candidates (:func:`structural`), by weight: the shapes of the proofs a goal's
# locals and target ask for, with no stored proof to copy them from.
SIMP_WITH = 0.2  # simp [P, Q, ...]: the goal's definitions and lemmas at once
SIMP_ALL_WITH = 0.15  # simp_all [P, ...]: and the hypotheses
SPLIT_THEN_SIMP = 0.15  # induction x <;> simp_all [P, ...] (cases: two thirds of it)
SPLIT = 0.05  # induction x, cases x, cases h: the cases left to the next expansions
SPLIT_TWO = 0.05  # cases x <;> cases y <;> simp_all [P, ...]: two data locals at once
CONSTRUCTOR = 0.15  # a conjunction or an iff
CONSTRUCT_ANY = 0.05  # another type or predicate applied
DISJUNCT = 0.1  # apply Or.inl, apply Or.inr: a disjunction, one side at a time
APPLY_LOCAL = 0.3  # apply h, where h's type is an implication that ends in the target
APPLY_ANY = 0.1  # apply h, where h's type is another universal or implication
ABSURD = 0.1  # exact absurd rfl (h _ _), where h's type is a universal that ends in `≠`
INJECTION = 0.1  # injection h, where h equates two applications (constructors, perhaps)
CONGR_ARG = 0.1  # have h' := congrArg (f c) h, where the target is f c a = f c b
SIMP_AT = 0.1  # simp [P, ...] at h, where h is the newest hypothesis
IFF_SIDE = 0.1  # exact h.1, exact h.2, where h is an iff: its two implications
EXACT_LOCAL = 1.0  # exact h, where h's type is the target
INTROS = 0.1  # an implication or a universal
UNFOLDED_INTRO = 0.05  # intro x, intro x h: an order or a predicate that may unfold to a universal
FUNEXT = 0.15  # funext x y, where the target equates functions (`fun x y => ...`)
SUBST = 0.1  # subst h, where h equates a local with a term
POINTWISE = 0.15  # simp [funext h], exact funext h, where h : ∀ x, f x = g x
HEQ_REFL = 0.3  # exact HEq.refl _, where the target is a heterogeneous equality
WITNESS = 0.2  # exists x, where the target is ∃ (x : T), P and a local x has type T
EXCLUDED_MIDDLE = 0.05  # cases Classical.em p <;> simp_all, where p : Prop is in the target
CHAIN = 0.3  # apply Nat.lt_trans h, where h : a < b and the target is a < c (as APPLY_LOCAL)
SORTED = 0.3  # simp [Nat.add_comm, Nat.add_assoc, Nat.add_left_comm], where the target adds Nats
# Transitivity of `Nat`'s order by the relations of (a hypothesis, the target): the lemmas
# that take the hypothesis as their first premise (`a R b`, target `a R' c`) and those that
# take it as their second (`b R c`, target `a R' c`), in today's spelling and the June 2021
# library's; a suggester offers those its premises have.
_CHAIN_FIRST = {
    ("<", "<"): ("Nat.lt_trans", "Nat.ltTrans", "Nat.lt_of_lt_of_le", "Nat.ltOfLtOfLe"),
    ("≤", "≤"): ("Nat.le_trans", "Nat.leTrans"),
    ("≤", "<"): ("Nat.lt_of_le_of_lt", "Nat.ltOfLeOfLt"),
}
_CHAIN_SECOND = {
    ("<", "<"): ("Nat.lt_trans", "Nat.ltTrans", "Nat.lt_of_le_of_lt", "Nat.ltOfLeOfLt"),
    ("≤", "≤"): ("Nat.le_trans", "Nat.leTrans"),
    ("≤", "<"): ("Nat.lt_of_lt_of_le", "Nat.ltOfLtOfLe"),
}
# What puts a sum or a product of `Nat`s in one order: commutativity, associativity and left
# commutativity, with which `simp`'s ordered rewriting (a permutation is applied only when it
# makes the term smaller) sorts the operands of both sides alike; each in today's spelling and
# the June 2021 library's. Without left commutativity `simp` cannot move an operand past a
# bracket (`n * (m * o) = m * (n * o)`), but the other two still bring sums together.
_SORTING = {
    "+": (("Nat.add_comm", "Nat.addComm"), ("Nat.add_assoc", "Nat.addAssoc"), ("Nat.add_left_comm", "Nat.addLeftComm")),
    "*": (("Nat.mul_comm", "Nat.mulComm"), ("Nat.mul_assoc", "Nat.mulAssoc"), ("Nat.mul_left_comm", "Nat.mulLeftComm")),
}
_NAT_TYPES = frozenset({"Nat", "ℕ"})
# A local is data (something to split by induction or cases) unless its type is a
# proposition (it has a relation or a connective) or a universe.
_PROPOSITION_RE = re.compile(r"[=≠≤≥<>∧∨→↔¬∀∃∣∈∉⊆≅]|\b(?:True|False)\b")
# A lambda and its binders (the 2021 Lean prints `fun (x : T) =>`, today's `fun x =>`).
_LAMBDA_RE = re.compile(r"^(?:fun|λ)\s+(?P<binders>[^=]*?)\s*(?:=>|↦)")
_BINDER_GROUP_RE = re.compile(r"[({\[⦃](?P<bracketed>[^(){}\[\]⦃⦄]*)[)}\]⦄]|(?P<bare>[^\s(){}\[\]⦃⦄]+)")
# The first binder of a universal target: `∀ x`, `∀ (x : T)`, `∀ {x y}`.
_BINDER_RE = re.compile(r"∀\s*[({\[]?\s*([^\s,:(){}\[\]]+)")
# Hypotheses that `cases` takes apart (`≅`: its one case makes both sides one; `∈`: a
# membership unfolds to what the set is, `x ∈ s ⊓ t` to `x ∈ s ∧ x ∈ t`).
_SPLITTABLE_RE = re.compile(r"[∧∨∃↔≅∈]")
# A feature in more than this share of the stored steps (and more than STOP_MIN of them)
# is a stop feature: its idf is at most log(1 + 1/share), so its part of a dot product is a
# few percent of a rare feature's, while its postings are most of the index. Similarity
# skips its postings (it still counts in the norms); a goal with nothing but stop
# features is scored with them.
STOP_SHARE = 0.1
STOP_MIN = 1000
# A premise's code that states a lemma (one to rewrite with, not a definition to unfold).
_LEMMA_RE = re.compile(DECLARATION_PREFIX + r"(?:theorem|lemma)\b", re.DOTALL)
# A lemma that can rewrite: an equation or an iff in its statement.
_REWRITES_RE = re.compile(_LEMMA_RE.pattern + r".*?(?:\s=\s|↔)", re.DOTALL)
# A declaration's keyword.
_KEYWORD_RE = re.compile(DECLARATION_PREFIX + r"(\w+)", re.DOTALL)
# Each premise template (TEMPLATES, REVERSED_TEMPLATE), and what its tactics match: the
# template with a premise's name in place of `{}`.
_TEMPLATE_USES = tuple(
    (template, re.compile(re.escape(template).replace(r"\{\}", r"([^\s\[\](),]+)")))
    for template in (*(template for template, _ in TEMPLATES), REVERSED_TEMPLATE)
)
# A term-mode proof longer than this is no tactic worth offering as `exact TERM`.
MAX_TERM = 200
# Deciding by the compiler: such a proof depends on `Lean.ofReduceBool`, an axiom beyond
# Lean's own, which the final check reports and `evaluate` calls vacuous where the original
# proof does not need it. Offered after every other candidate (its weight times this), so
# that it is what a goal gets only when nothing else in its expansion proves it.
_COMPILED_RE = re.compile(r"(?<![\w.'])(?:native_decide|nativeDecide)(?![\w'!?])")
COMPILED_SHARE = 1e-6

# Lean 4's parser error for a tactic it has no syntax for (a tactic of a package the
# project does not import, or of a newer Lean).
UNKNOWN_TACTIC_RE = re.compile(r"\bunknown tactic\b")
# Tactic syntax that holds further tactics: the unknown one may be any of them.
_NESTED_RE = re.compile(
    r"<;>|;|·|=>|\|\||\bby\b|^\s*(?:try|first|repeat|all_goals|any_goals|focus|iterate|case|next)\b"
)
_HEAD_RE = re.compile(r"^\s*([^\s\[\](){}⟨⟩,;]+)")


@dataclass(frozen=True, slots=True)
class StoredStep:
    """One tactic step of a proven theorem, as the suggester keeps it."""

    tactic: str
    context: str  # the goal before the step (traced), or the theorem's statement
    traced: bool  # whether ``context`` is a goal (else a statement)
    previous: str | None  # the step before it in its proof; None for the first
    premises: tuple[str, ...]  # full names of the premises it uses

    @property
    def view(self) -> GoalView:
        return goal_view(self.context) if self.traced else statement_view(self.context)


def steps_of(theorem: Theorem) -> list[StoredStep]:
    """The steps of a proven theorem worth remembering: its tactic steps, or for a short
    term-mode proof the one step ``exact TERM``; none for a ``sorry`` theorem."""
    if theorem.status is TheoremStatus.SORRY:
        return []
    if theorem.tactics:
        return [
            StoredStep(
                t.tactic,
                t.state_before or theorem.statement,
                t.state_before is not None,
                theorem.tactics[i - 1].tactic if i else None,
                t.premises,
            )
            for i, t in enumerate(theorem.tactics)
            if not uses_sorry(t.tactic)
        ]
    term = " ".join((theorem.proof or "").split())
    if not term or term.startswith(("by ", "|")) or term == "by" or len(term) > MAX_TERM or uses_sorry(term):
        return []
    return [StoredStep(f"exact {term}", theorem.statement, False, None, theorem.premises)]


def proved_steps(theorem: Theorem, steps: Sequence[TracedTactic]) -> list[StoredStep]:
    """What :func:`steps_of` keeps of ``theorem`` proved by ``steps`` (a proof we found)."""
    return steps_of(dataclasses.replace(theorem, tactics=tuple(steps), status=TheoremStatus.PROVED_BY_US))


@dataclass(frozen=True, slots=True)
class StepMemory:
    """What a suggester starts from (picklable: Ray workers build theirs from it)."""

    steps: tuple[StoredStep, ...] = ()
    premises: tuple[str, ...] = ()  # full names of every known premise

    @classmethod
    def from_traces(cls, traces: Iterable[RepoTrace], *, leave_out: Collection[TheoremKey] = ()) -> StepMemory:
        """The steps of every proof of ``traces`` but those of the theorems ``leave_out``
        names (the proofs an evaluation hides), and every premise's name."""
        traces = list(traces)
        steps = tuple(
            s
            for trace in traces
            for theorem in trace.theorems
            if theorem_key(trace.spec.location, theorem) not in leave_out
            for s in steps_of(theorem)
        )
        names = tuple(dict.fromkeys(p.full_name for trace in traces for p in trace.premises))
        return cls(steps, names)

    def with_steps(self, steps: Sequence[StoredStep]) -> StepMemory:
        return dataclasses.replace(self, steps=self.steps + tuple(steps))


# ---- features and the index ------------------------------------------------------------


def _key(feature: str) -> int:
    # crc32, not hash(): stable across processes (Ray workers), and fast.
    return zlib.crc32(feature.encode())


def head_word(tactic: str | None) -> str:
    match = _HEAD_RE.match(tactic or "")
    return match.group(1) if match else ""


def state_features(view: GoalView, previous: str | None) -> dict[int, float]:
    """Hashed features of a proof state, locals abstracted (renaming a variable changes
    none): the target's tokens and token pairs, the hypotheses' type tokens (half weight),
    and the head of the tactic before (``intro`` ...; its absence for a first step)."""
    return {**_goal_features(view), _key("p" + head_word(previous) if previous else "p^"): 1.5}


@lru_cache(maxsize=65536)  # the steps of one source theorem share its statement
def _goal_features(view: GoalView) -> dict[int, float]:
    names = view.names
    counts: Counter[str] = Counter()
    target = abstracted(view.target, names)
    counts.update("t" + t for t in target)
    counts.update(f"b{a} {b}" for a, b in zip(target, target[1:], strict=False))
    weights = {_key(f): 1.0 + math.log(c) for f, c in counts.items()}
    hyps = Counter("h" + t for local in view.locals for t in set(abstracted(local.type, names)))
    for f, c in hyps.items():
        key = _key(f)
        weights[key] = weights.get(key, 0.0) + 0.5 * (1.0 + math.log(c))
    return weights


class StepIndex:
    """Cosine similarity of TF-IDF weighted features, by inverted lists over numpy arrays.

    Built once from the stored steps; steps added later (:meth:`add`) go into a small
    dictionary index scored beside it, with the idf of the build (a feature the build did
    not see gets the largest idf). Neither is rebuilt during a run. Stop features (see
    :data:`STOP_SHARE`) are left out of the dot products of the build's steps.
    """

    def __init__(self, features: Sequence[Mapping[int, float]]) -> None:
        self.size = len(features)
        lengths = np.fromiter((len(f) for f in features), np.int64, count=self.size)
        ids = np.repeat(np.arange(self.size, dtype=np.int32), lengths)  # (P,)
        keys = np.fromiter((k for f in features for k in f), np.uint32, count=int(lengths.sum()))
        tfs = np.fromiter((v for f in features for v in f.values()), np.float32, count=len(keys))
        order = np.argsort(keys, kind="stable")
        keys, ids, tfs = keys[order], ids[order], tfs[order]
        self._keys, starts, counts = np.unique(keys, return_index=True, return_counts=True)  # (F,)
        self._starts, self._ends = starts, starts + counts
        self._idf = np.log1p(self.size / np.maximum(counts, 1)).astype(np.float32)  # (F,)
        self._stop = counts > max(STOP_SHARE * self.size, STOP_MIN)  # (F,)
        self._unseen_idf = float(math.log1p(max(self.size, 1)))
        weights = tfs * np.repeat(self._idf, counts)
        norms = np.sqrt(np.bincount(ids, weights=weights * weights, minlength=self.size)).astype(np.float32)
        self._ids = ids
        self._weights = weights / np.maximum(norms[ids], 1e-12)  # (P,) unit rows
        self._added: dict[int, list[tuple[int, float]]] = defaultdict(list)
        self._count = self.size

    def __len__(self) -> int:
        return self._count

    def _idf_of(self, keys: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(position in the build's features or -1, idf) of each key."""
        wanted = np.fromiter(keys, np.uint32, count=len(keys))
        pos = np.searchsorted(self._keys, wanted)
        inside = pos < len(self._keys)
        found = np.zeros(len(wanted), dtype=bool)
        found[inside] = self._keys[pos[inside]] == wanted[inside]
        idf = np.full(len(wanted), self._unseen_idf, np.float32)
        idf[found] = self._idf[pos[found]]
        return np.where(found, pos, -1), idf

    def add(self, features: Mapping[int, float]) -> int:
        """Index one more step; returns its id."""
        keys = list(features)
        _, idf = self._idf_of(keys)
        weights = np.fromiter(features.values(), np.float32, count=len(keys)) * idf
        norm = float(np.sqrt((weights * weights).sum())) or 1.0
        entry = self._count
        for key, weight in zip(keys, weights / norm, strict=True):
            self._added[key].append((entry, float(weight)))
        self._count += 1
        return entry

    def search(self, query: Mapping[int, float], k: int) -> list[tuple[int, float]]:
        """The ``k`` nearest steps with a positive similarity, nearest first (equal ones
        in step order), stop features left out of the dot products."""
        if not query or not self._count:
            return []
        keys = list(query)
        pos, idf = self._idf_of(keys)
        q = np.fromiter(query.values(), np.float32, count=len(keys)) * idf  # (Q,)
        q /= float(np.sqrt((q * q).sum())) or 1.0
        hits: list[tuple[int, float]] = []
        found = pos >= 0
        if found.any() and not self._stop[pos[found]].all():
            found[found] = ~self._stop[pos[found]]
        if self.size and found.any():
            starts, ends = self._starts[pos[found]], self._ends[pos[found]]
            spans = list(zip(starts.tolist(), ends.tolist(), strict=True))
            ids = np.concatenate([self._ids[a:b] for a, b in spans])  # (P,) the postings of the query's features
            weights = np.concatenate([self._weights[a:b] for a, b in spans])
            weights *= np.repeat(q[found], ends - starts)  # each posting times its feature's query weight
            scores = np.bincount(ids, weights=weights, minlength=self.size)  # (N,) cosine with the query
            top = np.argpartition(-scores, k)[:k] if k < self.size else np.arange(self.size)
            hits = [(int(i), float(scores[i])) for i in top if scores[i] > 0]
        added: dict[int, float] = defaultdict(float)
        for key, weight in zip(keys, q, strict=True):
            for entry, w in self._added.get(key, ()):
                added[entry] += w * float(weight)
        hits += [(e, s) for e, s in added.items() if s > 0]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:k]


# ---- premise names ---------------------------------------------------------------------


# Where a word is a tactic's name, not a term's: the start of the text or of a line, or after
# `;`, `<;>`, `by` or a `·` bullet (after `=>` it may be either: `case zero => rfl`, `fun h => f h`).
_TACTIC_HEAD_RE = re.compile(r"(?:\A|\n|;|<;>|\bby|·)\s*\Z")
# A binder list (`intro x`, `funext a b`, `fun x y =>`): the names it binds are new, no
# premises, there and after it (`intro s` is no `intro String.Iterator.s`).
_BINDERS_RE = re.compile(r"\b(?:intros?|rename_i|funext|fun|λ)\s([^;\n:=]*)")


class PremiseNames:
    """Premise names as tactics and retrieved texts show them, resolved to full names."""

    def __init__(self, names: Iterable[str]) -> None:
        self._full = set(names)
        by_suffix: dict[str, set[str]] = defaultdict(set)
        for name in self._full:
            parts = name.split(".")
            for i in range(len(parts)):
                by_suffix[".".join(parts[i:])].add(name)
        # A suffix that names one premise only: `sumTo_succ` for `DemoArith.sumTo_succ`.
        self._unique = {suffix: next(iter(found)) for suffix, found in by_suffix.items() if len(found) == 1}

    def resolve(self, name: str) -> str | None:
        return name if name in self._full else self._unique.get(name)

    def qualified(self, tactic: str, namespace: str, locals_: frozenset[str]) -> str | None:
        """``tactic`` with each name that the theorem's ``namespace`` would not resolve
        written in full (``parityElim`` for ``Nat.parityElim``, a neighbour's under ``open
        Nat``); None when every name resolves as written. A name resolves when it is a full
        name, or a full name less one of the namespace's prefixes; locals and the names the
        tactic binds (``intro s``) are no premises."""
        prefixes = [""] + [f"{namespace.rsplit('.', i)[0]}." for i in range(namespace.count(".") + 1) if namespace]
        bound = {name for binders in _BINDERS_RE.findall(tactic) for name in IDENT_RE.findall(binders)}
        no_premises = locals_ | bound

        def qualify(match: re.Match[str]) -> str:
            name = match.group()
            full = self._unique.get(name)
            if (
                full is None
                or name.partition(".")[0] in no_premises
                or _TACTIC_HEAD_RE.search(tactic, 0, match.start())  # `exact`, not `Quotient.exact`
            ):
                return name
            return name if any(full == prefix + name for prefix in prefixes) else full

        written = IDENT_RE.sub(qualify, tactic)
        return None if written == tactic else written

    def used_in(self, tactic: str) -> tuple[str, ...]:
        """The known premises ``tactic`` names, first use first (an approximation of what
        Lean elaborates: names by their text, namespaces by unique suffix)."""
        found = (self.resolve(m.group()) for m in IDENT_RE.finditer(tactic))
        return tuple(dict.fromkeys(n for n in found if n))


# ---- the suggester ---------------------------------------------------------------------


class TacticSuggester:
    """The built-in tactic suggester (module docstring): one per prover, for a whole run."""

    def __init__(self, memory: StepMemory = StepMemory(), *, neighbours: int = NEIGHBOURS) -> None:
        self.neighbours = neighbours
        self._steps: list[StoredStep] = list(memory.steps)
        self._index = StepIndex([state_features(s.view, s.previous) for s in self._steps])
        self._names = PremiseNames(memory.premises)
        # Tactics (whole) and head words the toolchain does not know: never offered again.
        self._unknown: set[str] = set()

    def __len__(self) -> int:
        return len(self._steps)

    def episode(self, location: str, theorem: Theorem) -> SuggesterEpisode:
        return SuggesterEpisode(self, namespace=theorem.full_name.rpartition(".")[0])

    def learn(self, location: str, theorem: Theorem, steps: Sequence[TracedTactic]) -> tuple[TracedTactic, ...]:
        """Index the checked proof ``steps`` of ``theorem`` at once, with the premises each
        uses; returns the steps so annotated."""
        known = tuple(dataclasses.replace(s, premises=s.premises or self._names.used_in(s.tactic)) for s in steps)
        for step in proved_steps(theorem, known):
            self._steps.append(step)
            self._index.add(state_features(step.view, step.previous))
        log.debug("learned %d step(s) of %s", len(known), theorem.full_name)
        return known

    def note_error(self, tactic: str, message: str) -> None:
        """Lean rejected ``tactic`` with ``message``: an unknown tactic is dropped for good."""
        if not UNKNOWN_TACTIC_RE.search(message):
            return
        self._unknown.add(tactic.strip())
        if not _NESTED_RE.search(tactic):
            self._unknown.add(head_word(tactic))
        log.info("the toolchain does not know %r: not offered again", tactic)

    def offered(self, tactic: str) -> bool:
        """Whether ``tactic`` is worth running: not unknown to the toolchain, and naming no
        inaccessible local (``induction n✝``, a neighbour's tactic renamed to ``w✝``: Lean
        parses no ``✝``: of the 671 such tactics of session 42's dev halves none succeeded)."""
        return "✝" not in tactic and tactic not in self._unknown and head_word(tactic) not in self._unknown

    def suggest(
        self,
        state: str,
        *,
        previous: str | None,
        premises: Sequence[PremiseCode],
        n: int,
        inherited: Mapping[str, float] | None = None,
        namespace: str = "",
        spent: Callable[[str], bool] = lambda tactic: False,
    ) -> list[Candidate]:
        """Up to ``n`` candidates for the goal ``state`` (``previous``: the tactic that led
        to it), best first, with log-probabilities; ``inherited``: tactics (with their
        probabilities there) that Lean refused at the state before, offered again here
        with :data:`INHERITED` of the pool's weight times that probability; none that
        ``spent`` says are not worth running any more."""
        view = goal_view(state)
        pool: dict[str, float] = defaultdict(float)
        premise_weight: dict[str, float] = {}
        for entry, similarity in self._index.search(state_features(view, previous), self.neighbours):
            step = self._steps[entry]
            renamed = rename_tactic(step.tactic, step.view, view)
            if renamed is not None:
                pool[renamed] += similarity * similarity
                # The neighbour's namespace or `open`s may not be this theorem's.
                qualified = self._names.qualified(renamed, namespace, view.names)
                if qualified is not None:
                    pool[qualified] += similarity * similarity
            for name in step.premises:
                premise_weight[name] = max(premise_weight.get(name, 0.0), similarity)
        for rank, (name, _code) in enumerate(premises):
            premise_weight[name] = max(premise_weight.get(name, 0.0), 1.0 / (1 + rank))
        templated = TEMPLATE_PREMISES * max(1, math.ceil(n / CANDIDATES_PER_EXPANSION))
        best = sorted(premise_weight.items(), key=lambda item: -item[1])[:templated]
        for name, weight in best:
            for template, share in TEMPLATES:
                pool[template.format(name)] += weight * share
        # An equation rewritten from right to left: often the step that makes room for the
        # others (`rw [← mul_assoc]` takes `a⁻¹ * (a * b)` to `a⁻¹ * a * b`, where the inverse
        # law applies). Lemmas only: a definition's equation unfolded backwards folds anything.
        equations = ((rank, name) for rank, (name, code) in enumerate(premises) if _REWRITES_RE.match(code))
        for rank, name in itertools.islice(equations, templated):
            pool[REVERSED_TEMPLATE.format(name)] += REVERSED / (1 + rank)
        # The retriever's premises first (those the goal is about), else the neighbours'.
        unfolded = _simp_set(premises, SIMP_PREMISES) or [name for name, _ in best][:SIMP_PREMISES]
        lemmas = _simp_set([p for p in premises if _LEMMA_RE.match(p[1])], SIMP_PREMISES)
        resolve = self._names.resolve
        for tactic, weight in [*structural(view, unfolded, lemmas), *chains(view, resolve), *sortings(view, resolve)]:
            pool[tactic] += weight
        for closer, weight in CLOSERS:
            pool[closer] += weight
        if inherited:
            scale = INHERITED * sum(pool.values())
            for tactic, probability in inherited.items():
                pool[tactic] += scale * probability
        offered = {
            t.strip(): w * (COMPILED_SHARE if _COMPILED_RE.search(t) else 1.0)
            for t, w in pool.items()
            if t.strip() and self.offered(t.strip()) and not spent(t.strip())
        }
        total = sum(offered.values())
        ranked = sorted(offered.items(), key=lambda item: -item[1])[:n]
        return [Candidate(tactic, math.log(weight / total)) for tactic, weight in ranked]


def _simp_set(premises: Sequence[PremiseCode], size: int) -> list[str]:
    """The first ``size`` of ``premises`` but a lemma whose converse is among those before
    it: ``simp`` with ``succ n = n + 1`` and ``n + 1 = succ n`` rewrites until its tactic
    runs out of time (the core library has both)."""
    kept: list[PremiseCode] = []
    for name, code in premises:
        if len(kept) == size:
            break
        if not any(converse(code, earlier) for _, earlier in kept):
            kept.append((name, code))
    return [name for name, _ in kept]


def declaration_keyword(code: str) -> str:
    """What a premise's code declares (``def``, ``theorem``, ``class``, ...; ``""``: unreadable)."""
    found = _KEYWORD_RE.match(code)
    return found.group(1) if found else ""


def template_use(tactic: str) -> tuple[str, str] | None:
    """The premise template ``tactic`` instantiates (``exact {}``, ``rw [← {}]``, ...) and the
    premise it names, or None for a tactic of another form."""
    for template, pattern in _TEMPLATE_USES:
        if found := pattern.fullmatch(tactic):
            return template, found.group(1)
    return None


def structural(view: GoalView, premises: Sequence[str], lemmas: Sequence[str] = ()) -> list[tuple[str, float]]:
    """Candidates from the goal's shape, not from a stored proof: ``exact h`` for a local
    whose type is the target, ``simp`` with the goal's best ``premises`` (definitions
    unfold, lemmas rewrite) on the target, the best ``lemmas`` alone (rewriting, nothing
    unfolded) on the newest hypothesis, induction or case
    analysis on a data local followed by that ``simp`` (and on two of them at once), ``cases`` on a hypothesis that is
    a conjunction, disjunction, existential or iff, ``apply h`` with a hypothesis that
    takes premises (first one that implies the target), ``absurd`` of one that ends in a
    disequality, either side of an iff hypothesis, ``subst`` of a hypothesis that equates a
    local with a term, ``injection`` of one that equates applications, ``congrArg`` of an
    equation under the function both sides of the target apply, ``constructor`` on a
    conjunction, iff or other type applied, either side of a disjunction, a witness of an
    existential (:func:`_witnesses`), either truth value of a proposition the target is
    about (``cases Classical.em p``), ``intros`` on an implication or a universal (and
    ``intro`` with every binder's and premise's name, or with a pattern taking its first
    premise apart), ``funext`` on an equation of functions, ``funext h`` of a
    hypothesis that equates two functions at every argument, and ``HEq.refl`` for a
    heterogeneous equality."""
    listed = ", ".join(premises)
    # `simp_all [P]`, not `simp [*, P]`: the same rewriting with the hypotheses, in every
    # Lean 4 (the June 2021 one has no `*` in simp lists).
    simp_all = f"simp_all [{listed}]" if premises else "simp_all"
    out = []
    if len(premises) > 1:  # one premise: the templates offer `simp [P]` already
        out += [(f"simp [{listed}]", SIMP_WITH), (simp_all, SIMP_ALL_WITH)]
    newest = view.locals[-1] if view.locals else None
    if lemmas and newest and IDENT_RE.fullmatch(newest.name) and _PROPOSITION_RE.search(newest.type):
        # The fact a `have` or `intro` just made, rewritten by the lemmas alone (`simp_all`
        # would rewrite it by the hypotheses too, often into `True`; unfolding the goal's
        # definitions in it would take it away from the target).
        out.append((f"simp [{', '.join(lemmas)}] at {newest.name}", SIMP_AT))
    target = view.target.strip()
    # The function both sides of the target apply (`denote ctx` of `denote ctx a = denote
    # ctx b`): applied to an equation among the locals, it may give the target once the
    # premises rewrite it.
    applied = _common_function(*_equation_sides(target))
    data = [
        local.name
        for local in view.locals
        if IDENT_RE.fullmatch(local.name) and not local.name.startswith("inst") and _splittable(local.type, view)
    ]
    # Every case of two of them (`Option`s, `Bool`s), the first few only; the premises may
    # be what fails there (a neighbour's lemma this file does not have yet).
    out += [
        (f"cases {x} <;> cases {y} <;> {simp}", SPLIT_TWO)
        for x, y in itertools.combinations(data[:3], 2)
        for simp in dict.fromkeys((simp_all, "simp_all"))
    ]
    # A proposition the target is about, true or false (classical reasoning: `by_cases`
    # in every Lean 4, which the June 2021 one spells as a macro of its own). In each case
    # `simp_all` rewrites it to `True` or `False` everywhere.
    target_words = set(IDENT_RE.findall(target))
    propositions = [local.name for local in view.locals if local.type.strip() == "Prop" and local.name in target_words]
    for proposition in propositions[:2]:
        out += [
            (f"cases Classical.em {proposition} <;> simp_all", EXCLUDED_MIDDLE),
            (f"cases Classical.em {proposition}", SPLIT),
        ]
    for local in view.locals:
        if not local.name or local.name.startswith("inst") or not local.type:
            continue
        if " ".join(local.type.split()) == " ".join(target.split()):
            out.append((f"exact {local.name}", EXACT_LOCAL))
        if _splittable(local.type, view):
            out += [
                (f"induction {local.name} <;> {simp_all}", SPLIT_THEN_SIMP),
                (f"cases {local.name} <;> {simp_all}", SPLIT_THEN_SIMP * 2 / 3),
                (f"induction {local.name}", SPLIT),
                (f"cases {local.name}", SPLIT),
            ]
        elif _SPLITTABLE_RE.search(local.type) and (written := _written(local)):
            out.append((f"cases {written}", SPLIT))
        premised = _arity_and_conclusion(local.type)
        if _concludes(local.type, target):
            out.append((f"apply {local.name}", APPLY_LOCAL))
        elif premised and _PROPOSITION_RE.search(premised[1]):
            out.append((f"apply {local.name}", APPLY_ANY))
        if premised and (premised[1].startswith("¬") or _top_level(premised[1], ("≠",))):
            # Its instance at the target's terms is refuted by `rfl` (`xs ≠ a :: as` once
            # `xs` is `a :: as`); `h ..` would take the negation's argument too.
            holes = " _" * premised[0]
            out.append((f"exact absurd rfl ({local.name}{holes})", ABSURD))
        sides = _equation_sides(local.type)
        if sides and all(" " in side for side in sides):
            out.append((f"injection {local.name}", INJECTION))
        if sides and applied:
            out.append((f"have {_fresh(local.name, view.names)} := congrArg ({applied}) {local.name}", CONGR_ARG))
        if _top_level(local.type, ("↔",)):
            out += [(f"exact {local.name}.1", IFF_SIDE), (f"exact {local.name}.2", IFF_SIDE)]
        if premised and local.type.startswith("∀") and _equation_sides(premised[1]):
            # Functions equal at every argument: equal (`x >>= f = x >>= g` from `∀ a, f a = g a`).
            out += [(f"simp [funext {local.name}]", POINTWISE), (f"exact funext {local.name}", POINTWISE)]
        if any(side in view.names for side in sides):
            out.append((f"subst {local.name}", SUBST))
    # The target's connective: `→` binds weakest, then `↔`, `∨`, `∧`. A Lean may print the
    # arrow as `->` and a connective applied (`Or a b`: the 2021 Lean does when the
    # statement's binders are implicit).
    shape = target.replace("->", "→")
    # A binder's body runs to the end: `∃ x, a ∧ b` is no conjunction.
    connective = {"∀": "→", "¬": "→", "∃": "∃"}.get(shape[:1]) or next(
        (c for c in "→↔∨∧≠" if _top_level(shape, (c,))), ""
    )
    # `a ≠ b` is `a = b → False`: `intro h` assumes the equation.
    implication = connective in ("→", "≠")
    if connective in ("↔", "∧") or (not connective and _head(shape) in ("And", "Iff")):
        out.append(("constructor", CONSTRUCTOR))
    elif _head(shape) and not _PROPOSITION_RE.search(shape):
        # A predicate or type applied (`Nonempty α`, `Even (n + 2)`): one of its
        # constructors may build it.
        out.append(("constructor", CONSTRUCT_ANY))
    if connective == "∨" or (not connective and _head(shape) == "Or"):
        out += [("apply Or.inl", DISJUNCT), ("apply Or.inr", DISJUNCT)]
    if connective == "∃":
        out += [("constructor", CONSTRUCT_ANY), *_witnesses(shape, view)]
    if connective == "" and (_top_level(shape, ("≅",)) or _head(shape) == "HEq"):
        out.append(("exact HEq.refl _", HEQ_REFL))
    binders = next(filter(None, map(_lambda_binders, _equation_sides(shape))), ())
    if binders:
        fresh = _fresh_names(binders, view.names)
        out += [(f"funext {' '.join(fresh[:count])}", FUNEXT) for count in dict.fromkeys((1, len(fresh)))]
    if not connective and (_top_level(shape, ("≤", "≥", "⊆")) or (_head(shape) and not _PROPOSITION_RE.search(shape))):
        # No binder in sight, but `intro` unfolds the target until it finds one: the order
        # of sets (`s ⊓ t ≤ s` is `∀ {x}, x ∈ s ⊓ t → x ∈ s`), a predicate (`Injective f`).
        point, fact = _fresh_names(("x", "h"), view.names)
        out += [(f"intro {point}", UNFOLDED_INTRO), (f"intro {point} {fact}", UNFOLDED_INTRO)]
    if implication:
        out.append(("intros", INTROS))
        # One hypothesis at a time, by a name later tactics can use (`intros` leaves `a✝`).
        binder = _BINDER_RE.match(target)
        out.append((f"intro {_fresh(binder.group(1) if binder else 'h', view.names)}", INTROS))
        # Every binder and premise at once, each by a name (`intro x y h`).
        names = _introduced(shape)
        if names is not None and len(names) > 1:
            out.append((f"intro {' '.join(_fresh_names(names, view.names))}", INTROS))
        # A premise that is an existential or a conjunction, taken apart by names: `cases`
        # would leave its parts inaccessible (`val✝`), which no later tactic can name.
        parts = _parts(_premise(shape))
        if parts:
            out.append((f"intro ⟨{', '.join(_fresh_names(parts, view.names))}⟩", INTROS))
    return out


def chains(view: GoalView, resolve: Callable[[str], str | None]) -> list[tuple[str, float]]:
    """``apply L h`` where the hypothesis ``h : a R b`` is the first step of the target
    ``a R' c`` by the transitivity lemma ``L`` (the goal left: ``b R c``, often a numeral
    comparison that ``decide`` settles), and ``refine L ?_ h`` where it is the last (``h``
    as :func:`_written` writes it, or a part of it: ``h.2`` of ``h : 57343 < n ∧ n <
    1114112``); only the lemmas ``resolve`` knows."""
    target = _relation(view.target)
    if target is None:
        return []
    out = []
    for local in view.locals:
        written = _written(local)
        for named, proposition in _conjuncts(written, local.type) if written else ():
            out += _chain(named, proposition, target, resolve)
    return out


def sortings(view: GoalView, resolve: Callable[[str], str | None]) -> list[tuple[str, float]]:
    """``simp [Nat.add_comm, Nat.add_assoc, Nat.add_left_comm]`` (:data:`_SORTING`) for a target
    that adds a local ``Nat`` to something (and the same for ``*``, and both at once): both
    sides put in one order, as Mathlib's ``ac_rfl`` would (``x₁ + x₂ + (x₃ + x₄) = x₃ + x₁ +
    x₂ + x₄``); only the lemmas ``resolve`` knows, and only when commutativity and
    associativity are among them."""
    target = " ".join(view.target.split())
    words = set(IDENT_RE.findall(target))
    if not any(local.type.strip() in _NAT_TYPES and local.name in words for local in view.locals):
        return []
    sets = []
    for symbol, lemmas in _SORTING.items():
        known = [next((n for n in spellings if resolve(n) == n), None) for spellings in lemmas]
        if f" {symbol} " in target and known[0] and known[1]:
            sets.append([name for name in known if name])
    if len(sets) > 1:
        sets.append([name for names in sets for name in names])
    return [(f"simp [{', '.join(names)}]", SORTED) for names in sets]


def _conjuncts(term: str, proposition: str) -> list[tuple[str, str]]:
    """``term : proposition`` and, when it is a conjunction ``A ∧ B ∧ ...``, each part as a
    projection of it: ``(h.1, A)``, ``(h.2, B ∧ ...)``, ``(h.2.1, B)``, ..."""
    out = [(term, proposition)]
    if at := top_level_at(proposition, ("∧",)):
        out.append((f"{term}.1", _unbracketed(proposition[: at[0]])))
        out += _conjuncts(f"{term}.2", _unbracketed(proposition[at[0] + 1 :]))
    return out


def _chain(
    named: str, proposition: str, target: tuple[str, str, str], resolve: Callable[[str], str | None]
) -> list[tuple[str, float]]:
    """The chains (:func:`chains`) through the fact ``named : proposition``."""
    fact = _relation(proposition)
    if fact is None:
        return []
    if fact[1] == target[1]:
        lemmas, written = _CHAIN_FIRST.get((fact[0], target[0]), ()), "apply {} " + named
    elif fact[2] == target[2]:
        lemmas, written = _CHAIN_SECOND.get((fact[0], target[0]), ()), "refine {} ?_ " + named
    else:
        return []
    return [(written.format(lemma), CHAIN) for lemma in lemmas if resolve(lemma) == lemma]


def _written(local: Local) -> str | None:
    """How a tactic names ``local``: by its name; one that ``cases`` made inaccessible (``h✝ :
    n < 55296``) by its type, ``‹n < 55296›``; None when the type names an inaccessible local
    too (``‹Nat.succ n✝ < 55296›`` cannot be written)."""
    if IDENT_RE.fullmatch(local.name):
        return local.name
    if not local.name or not local.type or "✝" in local.type:
        return None
    return f"‹{' '.join(local.type.split())}›"


def _relation(proposition: str) -> tuple[str, str, str] | None:
    """``(R, a, b)`` of ``a R b`` where ``R`` is ``<`` or ``≤`` (outside every bracket, spaced
    as Lean prints it, the only relation there), each side without surrounding space; None
    otherwise (``<$>`` is no relation)."""
    at = top_level_at(proposition, ("<", "≤"))
    if len(at) != 1 or proposition[at[0] - 1 : at[0] + 2] != f" {proposition[at[0]]} ":
        return None
    if _top_level(proposition, ("=", "→", "∧", "∨", "↔", ",", "¬", "∀", "∃")):
        return None
    left, right = proposition[: at[0]].strip(), proposition[at[0] + 1 :].strip()
    return (proposition[at[0]], left, right) if left and right else None


def _premise(implication: str) -> str:
    """What ``implication`` (``A → B``, ``¬A``) assumes first: ``A``; "" for a universal."""
    if implication.startswith("¬"):
        return _unbracketed(implication[1:])
    arrows = top_level_at(implication, ("→",))
    return "" if implication.startswith("∀") or not arrows else _unbracketed(implication[: arrows[0]])


def _parts(proposition: str) -> list[str]:
    """Names for the parts of an existential or a conjunction (or iff), nested ones
    flattened as an anonymous constructor pattern flattens them: ``x y h`` of ``∃ x y, P``,
    ``h h h`` of ``A ∧ B ∧ C``; [] for any other proposition."""
    proposition = _unbracketed(proposition)
    if proposition.startswith("∃") and (commas := top_level_at(proposition, (",",))):
        binders = _binder_names(_unbracketed(proposition[1 : commas[0]]))
        if not binders:
            return []
        return binders + (_parts(proposition[commas[0] + 1 :]) or ["h"])
    for connective in ("↔", "∧"):
        if at := top_level_at(proposition, (connective,)):
            return ["h", *(_parts(proposition[at[0] + 1 :]) or ["h"])]
    return []


def _fresh_names(names: Sequence[str], taken: Collection[str]) -> list[str]:
    """``names``, each made fresh against ``taken`` and the ones before it."""
    fresh: list[str] = []
    for name in names:
        fresh.append(_fresh(name, {*taken, *fresh}))
    return fresh


def _introduced(proposition: str) -> list[str] | None:
    """The names for ``intro`` to give the binders and premises of ``proposition``, in
    order: a binder its own, a premise ``h`` (``x y h`` of ``∀ {x y : T}, P → Q``); None
    when a binder has no name to give (an instance's ``[Monad m]``)."""
    names, text = [], proposition.strip()
    while True:
        commas = top_level_at(text, (",",))
        arrows = top_level_at(text, ("→",))
        if text.startswith("∀") and commas:
            binders = _binder_names(text[1 : commas[0]])
            if binders is None:
                return None
            names += binders
            text = text[commas[0] + 1 :].strip()
        elif text.startswith("¬"):
            return [*names, "h"]
        elif arrows:
            names.append("h")
            text = text[arrows[0] + 1 :].strip()
        else:
            return names


def _binder_names(binders: str) -> list[str] | None:
    """The names ``binders`` (``x y``, ``{x y : T}``, ``(a : T) (b : U)``, ``x y : T``)
    bind; None when a group binds none by name (``[Monad m]``)."""
    names: list[str] = []
    for group in _BINDER_GROUP_RE.finditer(binders):
        if group["bare"] == ":":  # `∀ x y : T`: the rest is the type
            break
        if group["bare"] is not None:
            names.append(group["bare"])
            continue
        named = group["bracketed"].partition(":")[0].split() if ":" in group["bracketed"] else []
        if not named or not all(IDENT_RE.fullmatch(name) for name in named):
            return None
        names += named
    return names


def _witnesses(existential: str, view: GoalView) -> list[tuple[str, float]]:
    """``exists x`` for each local ``x`` that may be the witness of ``existential`` (``∃ (y
    : T), P``): one of type ``T``, or any data local when Lean printed no type. A local Lean
    made inaccessible (``val✝``, after ``cases``) is named by its type: ``refine ⟨‹T›, ?_⟩``."""
    commas = top_level_at(existential, (",",))
    if not commas:
        return []
    binders = _unbracketed(existential[1 : commas[0]])
    wanted = " ".join(binders.partition(":")[2].split()) or None
    out = []
    for local in view.locals:
        kind = " ".join(local.type.split())
        fits = kind == wanted if wanted is not None else _is_data(kind)
        if not fits:
            continue
        if IDENT_RE.fullmatch(local.name):
            out.append((f"exists {local.name}", WITNESS))
        elif wanted is not None:
            out.append((f"refine ⟨‹{wanted}›, ?_⟩", WITNESS))
    return list(dict.fromkeys(out))


def _is_data(kind: str) -> bool:
    """Whether a local of type ``kind`` is data, something to split by induction or cases
    (see :data:`_PROPOSITION_RE`)."""
    return not _PROPOSITION_RE.search(kind) and not UNIVERSE_RE.match(kind)


def _splittable(kind: str, view: GoalView) -> bool:
    """Whether a local of type ``kind`` is data of a type with constructors to split by: not
    of a type that is itself a local applied (``s : σ``, ``x : m α``), whose constructors
    nothing knows. Of the 1,867 splits the search tried on the dev halves of session 42,
    476 were of such locals, every one an error."""
    words = kind.split()
    abstract = bool(words) and words[0] in view.names and all(IDENT_RE.fullmatch(w.strip("()")) for w in words)
    return _is_data(kind) and not abstract


def _equation_sides(text: str) -> tuple[str, ...]:
    """The two sides of ``text`` when it is an equation (an ``=`` outside every bracket,
    spaced as Lean prints it), each without the brackets around it; () otherwise."""
    spaced = [at for at in top_level_at(text, ("=",)) if text[at - 1 : at + 2] == " = "]
    if len(spaced) != 1:
        return ()
    return tuple(_unbracketed(side) for side in (text[: spaced[0]], text[spaced[0] + 1 :]))


def _arity_and_conclusion(proposition: str) -> tuple[int, str] | None:
    """How many explicit arguments ``proposition`` takes (its premises and explicit
    binders), and what it says after them (2 and ``c`` of ``∀ (x : T) {y : U}, a → c``);
    None when it takes none."""
    text, explicit = proposition.strip().replace("->", "→"), 0
    while True:
        if text.startswith("∀") and (commas := top_level_at(text, (",",))):
            explicit += _explicit_binders(text[1 : commas[0]])
            text = text[commas[0] + 1 :].strip()
        elif arrows := top_level_at(text, ("→",)):
            explicit += len(arrows)
            text = text[arrows[-1] + 1 :].strip()
        else:
            return (explicit, text) if explicit else None


def _explicit_binders(binders: str) -> int:
    """How many names ``binders`` (``x y``, ``(a b : T) {c : U}``, ``x y : T``) bind
    explicitly."""
    count = 0
    for group in _BINDER_GROUP_RE.finditer(binders):
        if group["bare"] == ":":  # `∀ x y : T`: the rest is the type
            break
        if group["bare"] is not None:
            count += 1
        elif group.group().startswith("("):
            count += len(group["bracketed"].partition(":")[0].split())
    return count


def _common_function(*sides: str) -> str:
    """The function (a name and its first arguments) that two ``sides`` both apply to a
    different last argument; "" when they are no such applications (an operator's
    operands, say)."""
    if len(sides) != 2:
        return ""
    lhs, rhs = (_top_level_split(side) for side in sides)
    if not all(IDENT_RE.fullmatch(part) or part[0] in "([⟨" for part in (*lhs, *rhs)):
        return ""
    shared = list(itertools.takewhile(lambda pair: pair[0] == pair[1], zip(lhs[:-1], rhs[:-1], strict=False)))
    if not shared or not IDENT_RE.fullmatch(shared[0][0]) or lhs[len(shared) :] == rhs[len(shared) :]:
        return ""
    return " ".join(left for left, _ in shared)


def _top_level_split(term: str) -> list[str]:
    """The parts of ``term`` between the spaces outside every bracket."""
    cuts = [-1, *top_level_at(term, (" ",)), len(term)]
    return [term[start + 1 : end] for start, end in zip(cuts, cuts[1:], strict=False) if end > start + 1]


def _unbracketed(term: str) -> str:
    term = term.strip()
    while term.startswith("(") and _closes_at_end(term):
        term = term[1:-1].strip()
    return term


def _lambda_binders(term: str) -> tuple[str, ...]:
    """The names a lambda ``term`` binds (``fun (y x : Nat) => ...``: y, x; an anonymous
    pattern binds ``x``); () when ``term`` is no lambda."""
    found = _LAMBDA_RE.match(term)
    if found is None:
        return ()
    names = []
    for group in _BINDER_GROUP_RE.finditer(found["binders"]):
        inner = group["bracketed"]
        if inner is None:
            if group["bare"] == ":":  # `fun x y : T =>`: the rest is the type
                break
            names.append(group["bare"] if group["bare"].isidentifier() else "x")
        elif ":" in inner or "," not in inner:  # (x y : T) binds x y; (a, b) is a pattern
            names += [n for n in inner.partition(":")[0].split() if n.isidentifier()] or ["x"]
        else:
            names.append("x")
    return tuple(names)


def _fresh(name: str, taken: Collection[str]) -> str:
    """``name``, or ``name`` with the first subscript digit that no local has."""
    if name not in taken:
        return name
    return next(f"{name}{digit}" for digit in "₁₂₃₄₅₆₇₈₉" if f"{name}{digit}" not in taken)


def _head(term: str) -> str:
    """The function a term applies, in prefix form (``Or`` of ``(Or a b)``); "" otherwise."""
    head, _, rest = _unbracketed(term).partition(" ")
    return head if rest and head.isidentifier() else ""


def _closes_at_end(term: str) -> bool:
    """Whether the bracket ``term`` opens with is the one it ends with."""
    depth = 0
    for at, char in enumerate(term):
        depth += char in "([{⟨"
        depth -= char in ")]}⟩"
        if depth == 0:
            return at == len(term) - 1
    return False


def _concludes(implication: str, target: str) -> bool:
    """Whether ``implication`` is ``A → ... → target`` (an arrow outside every bracket,
    the text after the last such arrow the target, whitespace aside)."""
    arrows = top_level_at(implication, ("→",))
    return bool(arrows) and " ".join(implication[arrows[-1] + 1 :].split()) == " ".join(target.split())


def _top_level(text: str, symbols: Sequence[str]) -> bool:
    """Whether one of ``symbols`` occurs in ``text`` outside every bracket."""
    return bool(top_level_at(text, symbols))


class SuggesterEpisode:
    """The suggester for one theorem's search: it remembers which tactic first reached each
    state (the "step before" of its features), passes Lean's errors on, and stops offering a
    premise template that Lean refused :data:`TEMPLATE_TRIALS` times for premises of one kind
    (``rw [D]`` for definitions) and never accepted. Replayed on the searches of session 43's
    dev halves (35,029 tactics), the rule leaves out 29% of the tactics run, none on a proof."""

    def __init__(self, suggester: TacticSuggester, *, namespace: str = "") -> None:
        self._suggester = suggester
        self._namespace = namespace  # the theorem's, where the names of its tactics resolve
        # Normalised goals -> the tactic that reached them first, and the goals it ran in.
        self._previous: dict[str, tuple[str, str]] = {}
        self._offered: dict[str, dict[str, float]] = {}  # goals -> their candidates' probabilities
        self._refused: dict[str, set[str]] = defaultdict(set)  # goals -> tactics Lean refused there
        self._kinds: dict[str, str] = {}  # each premise given so far -> what its code declares
        # (template, premise kind) -> [times run, times Lean accepted it]
        self._templates: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])

    def generate(self, state: str, *, premises: Sequence[PremiseCode] = (), n: int) -> list[Candidate]:
        key = normalize_goals(state)
        previous, parent = self._previous.get(key, (None, None))
        inherited = None
        if parent is not None:
            offered = self._offered.get(parent, {})
            inherited = {t: offered[t] for t in self._refused[parent] if t in offered}
        for name, code in premises:
            self._kinds.setdefault(name, declaration_keyword(code))
        candidates = self._suggester.suggest(
            state,
            previous=previous,
            premises=premises,
            n=n,
            inherited=inherited,
            namespace=self._namespace,
            spent=self._spent,
        )
        self._offered[key] = {c.tactic: math.exp(c.logprob) for c in candidates}
        return candidates

    def observe(self, state: TacticState, tactic: str, outcome: TacticResult) -> None:
        template = self._template(tactic)
        if template is not None:
            self._templates[template][0] += 1
            self._templates[template][1] += not isinstance(outcome, LeanError)
        if isinstance(outcome, TacticState):
            self._previous.setdefault(outcome.key, (tactic, state.key))
        elif isinstance(outcome, LeanError):
            self._refused[state.key].add(tactic)
            self._suggester.note_error(tactic, outcome.message)

    def _template(self, tactic: str) -> tuple[str, str] | None:
        """The template ``tactic`` instantiates and the kind of its premise; None for another
        tactic, and for a name no premise given so far has (a local: ``exact h`` where ``h``'s
        type is the target proves whatever ``exact`` did before)."""
        use = template_use(tactic)
        if use is None or use[1] not in self._kinds:
            return None
        return use[0], self._kinds[use[1]]

    def _spent(self, tactic: str) -> bool:
        template = self._template(tactic)
        run, accepted = self._templates.get(template, (0, 0)) if template else (0, 0)
        return run >= TEMPLATE_TRIALS and not accepted
