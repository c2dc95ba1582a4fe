"""Best-first proof search over a :class:`~lean_env.interactive.interface.ProofSession` (after
ReProver's search tree).

Nodes are proof states. The frontier is ordered by the sum of the log-probabilities of the
tactics on the path to a node, so the most likely partial proof is expanded first. Expanding
a node asks the generator for ``num_candidates`` tactics and runs each in Lean (all in one Lean run
where the session batches them, as the file check does; else one at a time, so that none
runs after a proof):

* a :class:`~lean_env.interactive.interface.ProofFinished` ends the search with the path as the proof,
  unless ``accept`` (the final check, when the caller gives one) refuses it: then it is
  counted and dropped, and the search goes on;
* a :class:`~lean_env.interactive.interface.TacticState` becomes a node; states compare by their goals
  up to the names, order and grouping of their hypotheses and their case tags (``intro h`` and
  ``intro h₁`` reach one state; so do ``rename``, which only moves a hypothesis, and
  ``apply id``, which only tags the goal), so a
  state that several paths reach is one node, with the most likely of those paths found
  before it is expanded (a later, likelier path re-queues it), and it is expanded once;
* a :class:`~lean_env.interactive.interface.LeanError` or :class:`~lean_env.interactive.interface.TacticTimeout`
  is counted and dropped;
* a state that asks for a predicate, relation or type to be invented is dropped
  (:func:`asks_for_a_motive`): ``apply WellFounded.recursion`` on ``USize.size > 0`` leaves
  ``⊢ Nat → Nat → Prop`` for the relation the other goals name ``?r``. No tactic the
  generators propose writes such a term, and these states drew most of the expansions of the
  searches that failed on the core library (25 of 28 of one of them).

The search stops when a proof is found, the frontier is empty (every reachable state was
expanded: the generator's tactics cannot prove it; or some were too deep to expand), or a
budget runs out (wall time, expansions), each its own status. A found proof is only a
candidate: it counts once the final check (:mod:`lean_env.proofs.final_check`) compiled the
file with it.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from lean_env.interactive.interface import (
    LeanError,
    ProofFinished,
    ProofSession,
    TacticState,
    TacticTimeout,
    hypotheses_and_target,
    normalize_goals,
    tactic_outcomes,
)
from lean_env.syntax.lexer import IDENT_RE

# Tactics asked of the generator per expanded goal: LeanDojo's evaluation's (ReProver's
# prover/proof_search.py), the default of every command; a CPU runs far fewer (docs/search.md).
CANDIDATES_PER_EXPANSION = 64


@dataclass(frozen=True, slots=True)
class Candidate:
    """A tactic the generator proposes, with its log-probability (<= 0)."""

    tactic: str
    logprob: float


class TacticGenerator(Protocol):
    """Proposes tactics for a goal, best first, ready for Lean (no ``<a>`` marks). Premises
    are the generator's own business (agent.generators.blend): the search knows goals and
    tactics only."""

    def generate(self, state: str, *, n: int) -> list[Candidate]: ...


class SearchStatus(enum.StrEnum):
    PROVED = "proved"  # a tactic closed the last goal
    EXHAUSTED = "exhausted"  # no open node left: these tactics cannot prove it
    OUT_OF_TIME = "out_of_time"  # the time limit passed first (unknown: more time might prove it)
    OUT_OF_EXPANSIONS = "out_of_expansions"  # every expansion allowed was spent first
    TOO_DEEP = "too_deep"  # no open node left but some too deep to expand (max_depth)


@dataclass(frozen=True, slots=True)
class SearchConfig:
    num_candidates: int = CANDIDATES_PER_EXPANSION  # tactics asked of the generator per expansion
    max_expansions: int = 100
    time_limit: float = 600.0  # seconds of wall time for the search (for the whole attempt, when proving)
    max_depth: int = 50  # the longest proof searched, in tactics


@dataclass(frozen=True, slots=True)
class SearchResult:
    status: SearchStatus
    proof: tuple[str, ...] | None  # the tactics from the initial state, when proved
    expansions: int
    tactics_run: int
    lean_errors: int
    timeouts: int
    seconds: float
    rejected: int = 0  # paths Lean said finish the proof, which ``accept`` refused


@dataclass(frozen=True, slots=True)
class _Node:
    state: TacticState
    path: tuple[str, ...]
    score: float  # sum of the log-probabilities along the path
    shape: str  # what the search merges states by (_shape)


def best_first_search(
    session: ProofSession,
    generator: TacticGenerator,
    config: SearchConfig = SearchConfig(),
    *,
    accept: Callable[[tuple[str, ...]], bool] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> SearchResult:
    """Search for a proof of ``session``'s theorem; see the module docstring. ``accept``
    judges a finished path (True ends the search with it); its time counts in the budget."""
    start = clock()
    order = itertools.count()  # ties broken by insertion: deterministic
    root = _Node(session.initial_state, (), 0.0, _shape(session.initial_state))
    frontier: list[tuple[float, int, _Node]] = [(0.0, next(order), root)]
    best = {root.shape: 0.0}  # the best path score known for each state
    expanded: set[str] = set()
    expansions = tactics_run = errors = timeouts = rejected = 0
    cut = False  # some node was too deep to expand: an empty frontier then proves nothing

    def result(status: SearchStatus, proof: tuple[str, ...] | None = None) -> SearchResult:
        return SearchResult(status, proof, expansions, tactics_run, errors, timeouts, clock() - start, rejected)

    while frontier:
        if clock() - start >= config.time_limit:
            return result(SearchStatus.OUT_OF_TIME)
        if expansions >= config.max_expansions:
            return result(SearchStatus.OUT_OF_EXPANSIONS)
        _, _, node = heapq.heappop(frontier)
        if node.shape in expanded or node.score < best[node.shape]:
            continue  # a stale entry: the state was re-queued with a likelier path
        if len(node.path) >= config.max_depth:
            cut = True
            continue
        expanded.add(node.shape)
        expansions += 1
        candidates = _distinct(generator.generate(node.state.pp, n=config.num_candidates))
        outcomes = tactic_outcomes(session, node.state, [c.tactic for c in candidates])
        for candidate, outcome in zip(candidates, outcomes):
            tactics_run += 1
            path = (*node.path, candidate.tactic)
            if isinstance(outcome, ProofFinished):
                if accept is None or accept(path):
                    return result(SearchStatus.PROVED, path)
                rejected += 1
            elif isinstance(outcome, LeanError):
                errors += 1
            elif isinstance(outcome, TacticTimeout):
                timeouts += 1
            elif not asks_for_a_motive(outcome):
                score = node.score + candidate.logprob
                reached = _shape(outcome)
                if reached not in expanded and score > best.get(reached, -math.inf):
                    best[reached] = score
                    heapq.heappush(frontier, (-score, next(order), _Node(outcome, path, score, reached)))
            if clock() - start >= config.time_limit:
                return result(SearchStatus.OUT_OF_TIME)
    return result(SearchStatus.TOO_DEEP if cut else SearchStatus.EXHAUSTED)


# A goal's target that is a sort or a function into one: `Prop`, `Sort u`, `Type`,
# `Nat → Nat → Prop`.
_SORT_TARGET_RE = re.compile(r"⊢ (?:.*→ )?(?:Prop|Sort|Type)(?: \S+)?\s*\Z", re.DOTALL)
# A metavariable a goal mentions: `?r`, `?p x`.
_METAVARIABLE_RE = re.compile(r"\?[^\W\d]")


def asks_for_a_motive(state: TacticState) -> bool:
    """Whether one of ``state``'s goals is a term of a sort to invent (a predicate, relation
    or type: the target is a sort or a function into one) that another goal depends on (it
    names a metavariable). A theorem whose statement is itself such a type (``Nat → Prop``)
    has one goal, with nothing depending on it."""
    goals = state.goals
    return len(goals) > 1 and any(
        _SORT_TARGET_RE.search(goal) and any(_METAVARIABLE_RE.search(other) for other in goals if other is not goal)
        for goal in goals
    )


def _shape(state: TacticState) -> str:
    """``state``'s goals, each as :func:`_canonical` writes it, with each hypothesis name a
    tactic can write replaced by its order of first appearance (``a✝`` stays: a state where
    a tactic cannot name the hypothesis is not the same to search from)."""
    goals = [_canonical(goal) for goal in state.goals]
    names: dict[str, str] = {}
    for name in (name for _, hypotheses in goals for name in hypotheses):
        if IDENT_RE.fullmatch(name):
            names.setdefault(name, f"⟪{len(names)}⟫")
    return normalize_goals(_rename_locals("\n\n".join(text for text, _ in goals), names))


def _canonical(goal: str) -> tuple[str, list[str]]:
    """``goal`` with one hypothesis a line (``x y : Nat`` is ``x : Nat`` and ``y : Nat``),
    sorted, and no case tag: the same facts to prove the same target, whatever order,
    grouping and tag the tactics that reached it left; and the names of its hypotheses in
    that order.

    A tactic that only moves hypotheses (``rename``, ``revert x; intro x``, a ``cases`` that
    re-adds a dependent one at the end) or only tags the goal (``apply id`` leaves ``case
    a``) reaches the state it started from. The search expanded such states again: 227 of
    the 1,463 states expanded on the evaluation halves of session 41 were an earlier one
    in another order, grouping or case tag, 207 of them in searches that ran out of time."""
    hypotheses, target = hypotheses_and_target(goal)
    masks = dict.fromkeys((name for name, _ in hypotheses if name), "·")

    def order(hypothesis: tuple[str, str]) -> tuple[str, str]:
        # By the text with local names masked first, so that states differing in names
        # alone (merged by _shape's renaming) still sort alike.
        line = _line(*hypothesis)
        return _rename_locals(line, masks), line

    ordered = sorted(hypotheses, key=order)
    text = "\n".join([*(_line(name, type_) for name, type_ in ordered), f"⊢ {target}"])
    return text, [name for name, type_ in ordered if type_]


def _line(name: str, type_: str) -> str:
    """A hypothesis as a line of a goal (its name alone where the goal gave no type)."""
    return f"{name} : {type_}" if type_ else name


def _rename_locals(text: str, names: dict[str, str]) -> str:
    """``text`` with each local of ``names`` replaced, also as the head of a dotted name
    (``xs.length``)."""

    def renamed(match: re.Match[str]) -> str:
        head, dot, rest = match.group().partition(".")
        return names[head] + dot + rest if head in names else match.group()

    return IDENT_RE.sub(renamed, text)


def _distinct(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Each tactic once (its best log-probability), blank ones dropped, best first."""
    best: dict[str, Candidate] = {}
    for c in candidates:
        tactic = c.tactic.strip()
        if tactic and (tactic not in best or c.logprob > best[tactic].logprob):
            best[tactic] = Candidate(tactic, c.logprob if math.isfinite(c.logprob) else -math.inf)
    return sorted(best.values(), key=lambda c: -c.logprob)
