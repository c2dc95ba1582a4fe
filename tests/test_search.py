"""Best-first search: order, backtracking, state merging, outcomes and budgets; and end to
end through the REPL backend against the fake REPL."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from builders import target
from fakes.proof_world import DONE, WorldSession
from fakes.repl_support import fake_command, write_script

from agent.search.tree import Candidate, SearchConfig, SearchStatus, asks_for_a_motive, best_first_search
from lean_env.interactive.interface import LeanError, TacticState, TacticTimeout
from lean_env.interactive.repl.backend import ReplBackend
from lean_env.records import Position


class TableGenerator:
    """Proposes fixed (tactic, probability) lists per state."""

    def __init__(self, table: dict[str, list[tuple[str, float]]]) -> None:
        self.table = table

    def generate(self, state: str, *, n: int) -> list[Candidate]:
        return [Candidate(t, math.log(p)) for t, p in self.table.get(state, [])][:n]


def test_best_first_backtracks_from_a_likely_dead_end() -> None:
    session = WorldSession("A", {"A": {"likely": "B", "unlikely": "C"}, "B": {"stuck": "B2"}, "C": {"finish": DONE}})
    generator = TableGenerator(
        {"A": [("likely", 0.9), ("unlikely", 0.1)], "B": [("stuck", 0.5)], "C": [("finish", 0.9)]}
    )
    result = best_first_search(session, generator, SearchConfig(max_expansions=10))
    assert result.status is SearchStatus.PROVED and result.proof == ("unlikely", "finish")
    # expanded A (0), B (log .9), B2 (log .45 > log .1), then C
    assert [s for s, _ in session.ran] == ["A", "A", "B", "C"]
    assert result.expansions == 4


def test_states_reached_twice_are_expanded_once_and_outcomes_are_counted() -> None:
    session = WorldSession(
        "A",
        {
            "A": {"a": "B", "b": "B", "bad": LeanError("type mismatch"), "slow": TacticTimeout(1.0)},
            "B": {},
        },
    )
    generator = TableGenerator(
        {"A": [("a", 0.4), ("b", 0.3), ("bad", 0.2), ("slow", 0.1), ("a ", 0.05)], "B": [("x", 1.0)]}
    )
    result = best_first_search(session, generator)
    assert result.status is SearchStatus.EXHAUSTED and result.proof is None
    assert (result.expansions, result.tactics_run, result.lean_errors, result.timeouts) == (2, 5, 2, 1)
    assert [t for s, t in session.ran if s == "B"] == ["x"]  # B once, although two tactics reach it


def test_a_state_that_asks_for_a_relation_to_be_invented_is_dropped() -> None:
    """`apply WellFounded.recursion` on `n > 0` leaves the relation `?r` as a goal of its own:
    no generator writes one, so the search never expands that state; a theorem that states a
    type (`Nat → Prop`) is searched as any other."""
    invent = "case hwf\n⊢ WellFounded ?r\n\ncase h\n⊢ ∀ (x : Nat), ?r x 0 → x > 0\n\ncase r\n⊢ Nat → Nat → Prop"
    session = WorldSession("⊢ n > 0", {"⊢ n > 0": {"apply WellFounded.recursion": invent, "simp": "⊢ 0 < n"}})
    generator = TableGenerator({"⊢ n > 0": [("apply WellFounded.recursion", 0.9), ("simp", 0.1)], invent: [("x", 1.0)]})
    result = best_first_search(session, generator)
    # The root and `⊢ 0 < n` (it has no candidates), never the likelier `invent`.
    assert result.status is SearchStatus.EXHAUSTED and result.expansions == 2
    assert [s for s, _ in session.ran] == ["⊢ n > 0", "⊢ n > 0"]
    assert asks_for_a_motive(TacticState(invent))
    assert asks_for_a_motive(TacticState("case a\n⊢ Sort ?u\n\ncase b\n⊢ ?a"))
    assert not asks_for_a_motive(TacticState("⊢ Nat → Prop"))
    assert not asks_for_a_motive(TacticState("case h\n⊢ p ?w\n\ncase w\nα : Sort u\n⊢ α"))  # a witness: no sort


def test_states_that_differ_in_hypothesis_names_alone_are_one_node() -> None:
    named, renamed, inaccessible = "p : Prop\nh : p\n⊢ p ∧ p", "q : Prop\nh₁ : q\n⊢ q ∧ q", "p : Prop\na✝ : p\n⊢ p ∧ p"
    world = {"A": {"intro h": named, "intro h₁": renamed, "intros": inaccessible}}
    session = WorldSession("A", world | {named: {}, renamed: {}, inaccessible: {}})
    generator = TableGenerator(
        {"A": [("intro h", 0.5), ("intro h₁", 0.3), ("intros", 0.2)]}
        | {state: [("constructor", 1.0)] for state in (named, renamed, inaccessible)}
    )
    result = best_first_search(session, generator)
    # The likelier path's state; the `✝` one is its own: no tactic can name its hypothesis.
    assert list(dict.fromkeys(s for s, _ in session.ran)) == ["A", named, inaccessible]
    assert result.expansions == 3


def test_states_that_differ_in_hypothesis_order_or_case_tag_alone_are_one_node() -> None:
    """`rename` (or a `cases` that re-adds a dependent hypothesis last) only moves facts and
    `apply id` only tags the goal: the state reached is the one it started from, also when
    the names differ too."""
    start = "n : Nat\nh : n > 0\nxs : List Nat\n⊢ xs.length + n > 0"
    moved = "n : Nat\nxs : List Nat\nh : n > 0\n⊢ xs.length + n > 0"
    renamed = "m : Nat\nys : List Nat\nh₁ : m > 0\n⊢ ys.length + m > 0"
    tagged = "case a\n" + start
    other = "n : Nat\nxs : List Nat\nh : n > 1\n⊢ xs.length + n > 0"
    reached = {"rename Nat => n": moved, "revert h; intro h₁": renamed, "apply id": tagged, "weaken": other}
    session = WorldSession(start, {start: reached} | {state: {} for state in reached.values()})
    generator = TableGenerator(
        {start: [("rename Nat => n", 0.4), ("revert h; intro h₁", 0.3), ("apply id", 0.2), ("weaken", 0.1)]}
        | {state: [("omega", 1.0)] for state in reached.values()}
    )
    result = best_first_search(session, generator)
    assert list(dict.fromkeys(s for s, _ in session.ran)) == [start, other]
    assert result.expansions == 2


def test_a_state_reached_again_by_a_likelier_path_takes_that_path() -> None:
    session = WorldSession(
        "A", {"A": {"a": "B", "b": "C"}, "B": {"rare": "S"}, "C": {"sure": "S"}, "S": {"finish": DONE}}
    )
    generator = TableGenerator(
        {"A": [("a", 0.6), ("b", 0.4)], "B": [("rare", 0.01)], "C": [("sure", 0.9)], "S": [("finish", 1.0)]}
    )
    result = best_first_search(session, generator)
    assert result.proof == ("b", "sure", "finish")  # log .4 + log .9 beats log .6 + log .01
    assert [s for s, _ in session.ran].count("S") == 1  # expanded once


@pytest.mark.parametrize(
    "config, status",
    [
        pytest.param(SearchConfig(max_expansions=3), SearchStatus.OUT_OF_EXPANSIONS, id="expansions"),
        pytest.param(SearchConfig(max_depth=3), SearchStatus.TOO_DEEP, id="depth"),
        pytest.param(SearchConfig(max_depth=20), SearchStatus.PROVED, id="deep-enough"),
    ],
)
def test_budgets(config: SearchConfig, status: SearchStatus) -> None:
    chain = {f"S{i}": {"next": f"S{i + 1}"} for i in range(10)} | {"S10": {"close": DONE}}
    generator = TableGenerator({f"S{i}": [("next", 0.5)] for i in range(10)} | {"S10": [("close", 0.5)]})
    result = best_first_search(WorldSession("S0", chain), generator, config)
    assert result.status is status
    if status is SearchStatus.PROVED:
        assert result.proof == ("next",) * 10 + ("close",)


def test_the_time_limit_is_checked_between_tactics() -> None:
    ticks = iter(range(100))
    session = WorldSession("A", {"A": {f"t{i}": f"B{i}" for i in range(8)}})
    generator = TableGenerator({"A": [(f"t{i}", 0.1) for i in range(8)]})
    result = best_first_search(session, generator, SearchConfig(time_limit=4), clock=lambda: next(ticks))
    assert result.status is SearchStatus.OUT_OF_TIME and len(session.ran) == 3


G_AND = "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q"
G_LEFT, G_RIGHT = "case left\np q : Prop\nhp : p\nhq : q\n⊢ p", "case right\np q : Prop\nhp : p\nhq : q\n⊢ q"


def test_search_proves_a_theorem_through_the_repl_backend(tmp_path: Path) -> None:
    """The real REPL client and protocol, against the fake REPL's scripted Lean."""
    script = write_script(
        tmp_path,
        {
            "theorems": {"and_both": G_AND},
            "tactics": {
                G_AND: {"constructor": {"goals": [G_LEFT, G_RIGHT]}, "simp": {"error": "simp made no progress"}},
                f"{G_LEFT}\n\n{G_RIGHT}": {"exact hp": {"goals": [G_RIGHT]}, "exact hq": {"error": "type mismatch"}},
                G_RIGHT: {"exact hq": {"goals": []}},
            },
        },
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "A.lean").write_text(
        "theorem and_both (p q : Prop) (hp : p) (hq : q) : p ∧ q := by\n  sorry\n", encoding="utf-8"
    )
    theorem = target("and_both", end=Position(2, 8), proof_start=Position(1, 59))
    generator = TableGenerator(
        {
            G_AND: [("simp", 0.6), ("constructor", 0.4)],
            f"{G_LEFT}\n\n{G_RIGHT}": [("exact hq", 0.5), ("exact hp", 0.5)],
            G_RIGHT: [("exact hq", 0.9)],
        }
    )
    backend = ReplBackend.create(
        launcher=lambda project_dir: fake_command(project_dir, script),
        max_processes=1,
        memory_limit_mb=None,
        tactic_timeout=2.0,
        command_timeout=5.0,
        header_timeout=5.0,
    )
    with backend, backend.open(project, theorem) as session:
        result = best_first_search(session, generator)
    assert result.status is SearchStatus.PROVED
    assert result.proof == ("constructor", "exact hp", "exact hq")
    assert result.lean_errors == 2


def test_a_finished_path_the_caller_refuses_is_dropped_and_the_search_goes_on() -> None:
    """The final check runs as ``accept``: a path Lean's session says finishes, which the
    check refuses, is counted, and the next candidate is tried."""
    session = WorldSession("A", {"A": {"bogus": DONE, "step": "B"}, "B": {"finish": DONE}})
    generator = TableGenerator({"A": [("bogus", 0.9), ("step", 0.1)], "B": [("finish", 1.0)]})
    judged = []

    def accept(path: tuple[str, ...]) -> bool:
        judged.append(path)
        return path != ("bogus",)

    result = best_first_search(session, generator, accept=accept)
    assert result.status is SearchStatus.PROVED and result.proof == ("step", "finish")
    assert judged == [("bogus",), ("step", "finish")] and result.rejected == 1
    refused = best_first_search(session, generator, accept=lambda path: False)
    assert refused.status is SearchStatus.EXHAUSTED and refused.rejected == 2
