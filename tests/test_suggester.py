"""The built-in tactic suggester: reading goals and statements, renaming a neighbour's
tactic to the goal's locals, the features and their index, candidates and their scores,
learning a checked proof at once, unknown tactics, and the merge with a model."""

from __future__ import annotations

import math

import pytest
from builders import theorem
from fakes.proof_world import DONE, WorldSession

from agent.generators.blend import Blend
from agent.generators.goals import Local, goal_view, rename_tactic, statement_view
from agent.generators.suggester import (
    TEMPLATE_TRIALS,
    PremiseNames,
    StepIndex,
    StepMemory,
    TacticSuggester,
    declaration_keyword,
    state_features,
    steps_of,
    template_use,
)
from agent.search.online import RecordingSession
from agent.search.tree import Candidate, SearchConfig, best_first_search
from lean_env.interactive.interface import LeanError, TacticState
from lean_env.records import TheoremStatus, TracedTactic


@pytest.mark.parametrize(
    ("pp", "locals_", "target"),
    [
        pytest.param("⊢ 2 = 1 + 1", (), "2 = 1 + 1", id="no-hypotheses"),
        pytest.param(
            "n m : Nat\nh : n ≤ m\n⊢ n ≤ m + 1",
            (Local("n", "Nat"), Local("m", "Nat"), Local("h", "n ≤ m")),
            "n ≤ m + 1",
            id="a-group-and-a-hypothesis",
        ),
        pytest.param(
            "case succ\nk : Nat\nih : ∀ (c : C),\n  f k c = k\n⊢ ∀ (c : C),\n  f (k + 1) c = k + 1"
            "\n\ncase zero\n⊢ True",
            (Local("k", "Nat"), Local("ih", "∀ (c : C), f k c = k")),
            "∀ (c : C), f (k + 1) c = k + 1",
            id="case-tag-continuations-and-a-second-goal",
        ),
    ],
)
def test_goal_view(pp: str, locals_: tuple[Local, ...], target: str) -> None:
    view = goal_view(pp)
    assert (view.locals, view.target) == (locals_, target)


@pytest.mark.parametrize(
    ("statement", "locals_", "target"),
    [
        pytest.param("theorem two : 2 = 1 + 1", (), "2 = 1 + 1", id="no-binders"),
        pytest.param(
            "theorem mono {m n : Nat} [DecidableEq α] ⦃x : α⦄ (h : m ≤ n) :\n    f m ≤ f n",
            (Local("m", "Nat"), Local("n", "Nat"), Local("", "DecidableEq α"), Local("x", "α"), Local("h", "m ≤ n")),
            "f m ≤ f n",
            id="every-bracket",
        ),
        pytest.param("theorem «two is two» (p : Prop) : p → p", (Local("p", "Prop"),), "p → p", id="guillemets"),
        pytest.param("lemma foo(n : Nat) : n = n", (Local("n", "Nat"),), "n = n", id="lemma-no-space"),
    ],
)
def test_statement_view(statement: str, locals_: tuple[Local, ...], target: str) -> None:
    view = statement_view(statement)
    assert (view.locals, view.target) == (locals_, target)


@pytest.mark.parametrize(
    ("context", "tactic", "goal", "expected"),
    [
        pytest.param(
            "theorem t (n : Nat) : n ≤ n", "exact Nat.le_refl n", "m : Nat\n⊢ m ≤ m", "exact Nat.le_refl m", id="issue"
        ),
        pytest.param(
            "theorem t (p q : Prop) (hp : p) (hq : q) : q ∧ p",
            "exact ⟨hq, hp⟩",
            "a b : Prop\nha : a\nhb : b\n⊢ b ∧ a",
            "exact ⟨hb, ha⟩",
            id="hypotheses-by-their-types",
        ),
        pytest.param(
            "n m : Nat\nh : n ≤ m\n⊢ n ≤ m + 1",
            "exact Nat.le_succ_of_le h",
            "a b : Nat\nhab : a ≤ b\n⊢ a ≤ b + 1",
            "exact Nat.le_succ_of_le hab",
            id="traced-goal",
        ),
        pytest.param(
            "theorem t (a b : Nat) : b + a = a + b",
            "exact Nat.add_comm b a",
            "x y : Nat\n⊢ x + y = y + x",
            "exact Nat.add_comm x y",
            id="by-role-not-by-position",
        ),
        pytest.param(
            "theorem t (x y : Nat) (h : x = y) : y = x",
            "exact h.symm",
            "u v : Nat\nhuv : u = v\n⊢ v = u",
            "exact huv.symm",
            id="dotted-head",
        ),
        pytest.param(
            "theorem t (n : Nat) : g n = n", "simp [(f n).n]", "k : Nat\n⊢ g k = k", "simp [(f k).n]", id="not-a-field"
        ),
        pytest.param(
            "theorem t (p : Prop) : p → p", "intro h", "p : Prop\n⊢ p → p", "intro h", id="same-names-unchanged"
        ),
        pytest.param(
            "theorem t (a : Nat) : 0 + a = a", "exact Nat.zero_add a", "⊢ 0 + 0 = 0", None, id="no-counterpart"
        ),
        pytest.param(
            "theorem mul_inv {G : CommGroup} (a b : G) : (a * b)⁻¹ = a⁻¹ * b⁻¹",
            "rw [mul_inv_rev, G.mul_comm]",
            "α : Type u_1\ninst✝ : CommGroup α\na b : α\n⊢ (a * b)⁻¹ = a⁻¹ * b⁻¹",
            "rw [mul_inv_rev, mul_comm]",
            id="a-structure's-field-for-a-class's",
        ),
    ],
)
def test_rename_tactic(context: str, tactic: str, goal: str, expected: str | None) -> None:
    source = statement_view(context) if context.startswith("theorem") else goal_view(context)
    assert rename_tactic(tactic, source, goal_view(goal)) == expected


def test_features_ignore_local_names_and_see_a_statement_as_its_goal() -> None:
    goal = state_features(goal_view("n : Nat\nh : 0 < n\n⊢ n + 0 = n"), None)
    assert goal == state_features(goal_view("m : Nat\nhm : 0 < m\n⊢ m + 0 = m"), None)
    assert goal == state_features(statement_view("theorem t (n : Nat) (h : 0 < n) : n + 0 = n"), None)
    assert goal != state_features(goal_view("n : Nat\nh : 0 < n\n⊢ n + 0 = n"), "intro h")


def test_the_index_ranks_by_cosine_and_finds_steps_added_later() -> None:
    views = ["n : Nat\n⊢ n + 0 = n", "p : Prop\n⊢ p → p", "n : Nat\n⊢ n * 1 = n"]
    index = StepIndex([state_features(goal_view(v), None) for v in views])
    hits = index.search(state_features(goal_view("k : Nat\n⊢ k + 0 = k"), None), 3)
    assert [i for i, _ in hits][:2] == [0, 2] and hits[0][1] == pytest.approx(1.0)
    added = index.add(state_features(goal_view("a b : Nat\n⊢ a + b = b + a"), None))
    (best, score), *_ = index.search(state_features(goal_view("x y : Nat\n⊢ x + y = y + x"), None), 2)
    assert (best, score) == (added, pytest.approx(1.0)) and len(index) == 4
    assert StepIndex([]).search({1: 1.0}, 5) == []


@pytest.mark.parametrize(
    ("proof", "tactics", "status", "expected"),
    [
        pytest.param("by\n  simp", ("simp",), TheoremStatus.PROVEN, ["simp"], id="tactics"),
        pytest.param("⟨h.2, h.1⟩", (), TheoremStatus.PROVEN, ["exact ⟨h.2, h.1⟩"], id="term-as-exact"),
        pytest.param("by\n  sorry", ("sorry",), TheoremStatus.SORRY, [], id="sorry-theorem"),
        pytest.param("by\n  simp\n  sorry", ("simp", "sorry"), TheoremStatus.PROVED_BY_US, ["simp"], id="sorry-step"),
        pytest.param("| 0 => rfl\n| n+1 => rfl", (), TheoremStatus.PROVEN, [], id="equations"),
        pytest.param("f " * 150, (), TheoremStatus.PROVEN, [], id="long-term"),
    ],
)
def test_steps_of(proof: str, tactics: tuple[str, ...], status: TheoremStatus, expected: list[str]) -> None:
    record = theorem("t", proof=proof, status=status, tactics=tuple(TracedTactic(t) for t in tactics))
    assert [s.tactic for s in steps_of(record)] == expected


def _suggester(*theorems: object) -> TacticSuggester:
    return TacticSuggester(StepMemory(tuple(s for t in theorems for s in steps_of(t)), ("Demo.le_self",)))


LE_SELF = theorem(
    "Demo.le_self",
    statement="theorem le_self (n : Nat) : n ≤ n",
    proof="by\n  exact Nat.le_refl n",
    tactics=(TracedTactic("exact Nat.le_refl n"),),
)


def test_candidates_are_a_distribution_best_first_and_honour_the_budget() -> None:
    found = (
        _suggester(LE_SELF)
        .episode("repo", LE_SELF)
        .generate("m : Nat\n⊢ m ≤ m", premises=[("Demo.le_self", "theorem le_self (n : Nat) : n ≤ n")], n=6)
    )
    assert found[0] == Candidate("exact Nat.le_refl m", found[0].logprob) and len(found) == 6
    scores = [c.logprob for c in found]
    assert scores == sorted(scores, reverse=True) and all(s < 0 for s in scores) and sum(map(math.exp, scores)) <= 1
    assert "exact Demo.le_self" in [
        c.tactic
        for c in _suggester().suggest(
            "⊢ x", previous=None, premises=[("Demo.le_self", "theorem le_self (n : Nat) : n ≤ n")], n=20
        )
    ]


def test_a_step_the_compiler_decides_comes_after_every_other_candidate() -> None:
    """`native_decide` proves by trusting the compiler (the axiom Lean.ofReduceBool): a goal
    gets it only after everything else of its expansion, however close its neighbour."""
    by_compiler = theorem(
        "Demo.big",
        statement="theorem big : 2 ^ 64 > 0",
        proof="by\n  native_decide",
        tactics=(TracedTactic("native_decide"),),
    )
    found = [c.tactic for c in _suggester(by_compiler).suggest("⊢ 2 ^ 64 > 0", previous=None, premises=[], n=64)]
    assert found[-1] == "native_decide" and found.index("decide") < len(found) - 1


def test_a_checked_proof_is_a_neighbour_of_the_very_next_goal() -> None:
    suggester = _suggester(LE_SELF)
    goal = "a b : Nat\nh : a = b\n⊢ b = a"
    assert "exact h.symm" not in [c.tactic for c in suggester.episode("repo", LE_SELF).generate(goal, n=8)]
    proved = theorem("Demo.eq_symm'", statement="theorem eq_symm' (x y : Nat) (h : x = y) : y = x")
    steps = suggester.learn("repo", proved, [TracedTactic("exact h.symm", "x y : Nat\nh : x = y\n⊢ y = x")])
    assert steps == (TracedTactic("exact h.symm", "x y : Nat\nh : x = y\n⊢ y = x"),) and len(suggester) == 2
    (best, *_) = suggester.episode("repo", proved).generate("u v : Nat\nhuv : u = v\n⊢ v = u", n=8)
    assert best.tactic == "exact huv.symm"
    # learning resolves the premises a step names
    (step,) = suggester.learn("repo", proved, [TracedTactic("exact Demo.le_self _", "⊢ 0 ≤ 0")])
    assert step.premises == ("Demo.le_self",)


def test_an_unknown_tactic_fails_once_and_is_not_offered_again_in_the_run() -> None:
    suggester = _suggester()
    unknown = LeanError("<input>:1:1: unknown tactic")
    moves = {"⊢ x": {"aesop": unknown, "contradiction": DONE}}  # aesop comes first
    ran = []
    for _ in range(2):  # two theorems of one run
        world = WorldSession("⊢ x", moves)
        episode = suggester.episode("repo", LE_SELF)
        result = best_first_search(RecordingSession(world, episode), episode, SearchConfig(num_candidates=20))
        assert result.proof == ("contradiction",)
        ran += [tactic for _, tactic in world.ran]
    assert ran.count("aesop") == 1
    suggester.note_error("norm_num [h]", unknown.message)  # one word and its arguments: the word goes
    suggester.note_error("first | decide | rfl", unknown.message)  # nested: only this tactic
    offered = [c.tactic for c in suggester.suggest("⊢ x", previous=None, premises=(), n=30)]
    assert "norm_num" not in offered and "decide" in offered and "rfl" in offered
    suggester.note_error("simp", "simp made no progress")  # another error: nothing is dropped
    assert "simp" in [c.tactic for c in suggester.suggest("⊢ x", previous=None, premises=(), n=30)]


def test_the_recorder_gives_a_proof_with_its_states() -> None:
    world = WorldSession("p : Prop\n⊢ p → p", {"p : Prop\n⊢ p → p": {"intro h": "p : Prop\nh : p\n⊢ p"}})
    world.moves["p : Prop\nh : p\n⊢ p"] = {"exact h": DONE}
    recorded = RecordingSession(world, _suggester().episode("repo", LE_SELF))
    state = recorded.run_tactic(recorded.initial_state, "intro h")
    assert isinstance(state, TacticState)
    recorded.run_tactic(state, "exact h")
    assert recorded.steps(["intro h", "exact h"]) == (
        TracedTactic("intro h", "p : Prop\n⊢ p → p", "p : Prop\nh : p\n⊢ p"),
        TracedTactic("exact h", "p : Prop\nh : p\n⊢ p", None),
    )


class _Model:
    def __init__(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates
        self.premises_seen: list[tuple[tuple[str, str], ...]] = []

    def generate(self, state: str, *, premises=(), n: int) -> list[Candidate]:
        self.premises_seen.append(tuple(premises))
        return self.candidates[:n]


class _Premises:
    """A premise source that names, for each goal, one premise after it."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def premises_for(self, location: str, theorem):
        self.asked.append((location, theorem.full_name))
        return lambda goal: [(f"for_{goal}", f"theorem for_{goal}")]


def test_the_blend_retrieves_each_goals_premises_itself() -> None:
    """ReProver's generator owns its retriever: the search asks for tactics of a goal only,
    and the model is given the premises retrieved for that goal."""
    model = _Model([Candidate("omega", math.log(0.5))])
    premises = _Premises()
    blend = Blend(_suggester(LE_SELF), model, share=0.0).with_premises(premises)
    episode = blend.episode("r", LE_SELF)
    assert premises.asked == [("r", LE_SELF.full_name)]
    episode.generate("A", n=2)
    episode.generate("B", n=2)
    assert model.premises_seen == [(("for_A", "theorem for_A"),), (("for_B", "theorem for_B"),)]
    Blend(_suggester(LE_SELF), model, share=0.0).episode("r", LE_SELF).generate("C", n=2)
    assert model.premises_seen[-1] == ()  # without a source, none


def test_merged_with_a_model_the_candidates_are_a_mixture() -> None:
    suggester = _suggester(LE_SELF)
    goal = "m : Nat\n⊢ m ≤ m"
    own = {c.tactic: c.logprob for c in suggester.episode("r", LE_SELF).generate(goal, n=4)}
    model = _Model([Candidate("exact Nat.le_refl m", math.log(0.5)), Candidate("omega", math.log(0.25))])
    merged = {c.tactic: c.logprob for c in Blend(suggester, model, share=0.5).episode("r", LE_SELF).generate(goal, n=4)}
    both = math.log(0.5 * math.exp(own["exact Nat.le_refl m"]) + 0.5 * 0.5)
    assert merged["exact Nat.le_refl m"] == pytest.approx(both)
    assert merged["rfl"] == pytest.approx(math.log(0.5) + own["rfl"])
    only_model = Blend(suggester, model, share=0.0).episode("r", LE_SELF).generate(goal, n=4)
    assert only_model == model.candidates
    with pytest.raises(ValueError):
        Blend(suggester, None, share=0.5)


def test_no_tactic_names_an_inaccessible_local() -> None:
    """Lean parses no `✝`: `induction n✝` is never offered; a hypothesis `cases` left
    inaccessible is written by its type."""
    goal = "n✝ : Nat\nh✝ : 0 < n✝ ∧ n✝ < 5\nh : m < 3 ∨ m = 4\n⊢ n✝ + m = m + n✝"
    offered = [c.tactic for c in _suggester().suggest(goal, previous=None, premises=(), n=200)]
    assert "cases h" in offered and "cases n✝" not in offered
    assert not [tactic for tactic in offered if "✝" in tactic]


def test_a_neighbours_name_that_the_theorems_namespace_would_not_resolve_is_also_offered_in_full() -> None:
    """casesUsing.lean: `ex3b`, under `open Nat in`, writes `parityElim`; its twin `ex3` at
    the root needs `Nat.parityElim`, which the neighbour's tactic names only by suffix."""
    twin = theorem(
        "ex3b",
        statement="theorem ex3b (n : Nat) : n = n",
        proof="by\n  cases n using parityElim with\n  | even i => rfl\n  | odd i => rfl",
        tactics=(TracedTactic("cases n using parityElim with\n  | even i => rfl\n  | odd i => rfl"),),
    )
    suggester = TacticSuggester(StepMemory(tuple(steps_of(twin)), ("Nat.parityElim", "Nat.half", "half")))
    goal = "m : Nat\n⊢ m = m"
    qualified = "cases m using Nat.parityElim with\n  | even i => rfl\n  | odd i => rfl"
    root = [
        c.tactic
        for c in suggester.episode("repo", theorem("ex3", statement="theorem ex3 (m : Nat) : m = m")).generate(
            goal, n=64
        )
    ]
    assert root[:2] == ["cases m using parityElim with\n  | even i => rfl\n  | odd i => rfl", qualified]
    inside = theorem("Nat.ex3", statement="theorem ex3 (m : Nat) : m = m")
    assert qualified not in [c.tactic for c in suggester.episode("repo", inside).generate(goal, n=64)]
    names = PremiseNames(["Nat.parityElim", "Nat.half", "half", "A.B.c"])
    assert names.qualified("exact half", "", frozenset()) is None  # a full name as it stands
    assert names.qualified("exact c", "A.B", frozenset()) is None  # A.B resolves it
    assert names.qualified("exact c", "A", frozenset()) == "exact A.B.c"
    assert names.qualified("exact B.c", "A", frozenset()) is None
    assert names.qualified("exact (c x)", "", frozenset({"c"})) is None  # a local, not the premise


def test_a_tactics_own_name_is_never_qualified_as_a_premise() -> None:
    """The corpus has `Quotient.exact` and `Lean.IR.FnBody.case`, the only premises whose
    names end in `exact` and `case`: a neighbour's `exact rfl` stays `exact rfl`."""
    names = PremiseNames(["Quotient.exact", "Lean.IR.FnBody.case", "Nat.parityElim"])
    assert names.qualified("exact rfl", "", frozenset()) is None
    assert names.qualified("case zero => rfl", "", frozenset()) is None
    assert names.qualified("exact parityElim", "", frozenset()) == "exact Nat.parityElim"
    assert (
        names.qualified("induction n <;> exact parityElim", "", frozenset()) == "induction n <;> exact Nat.parityElim"
    )
    assert (
        names.qualified("have h := by\n  exact parityElim", "", frozenset()) == "have h := by\n  exact Nat.parityElim"
    )
    assert names.qualified("· exact (fun h => exact h)", "", frozenset()) == "· exact (fun h => Quotient.exact h)"


def test_a_simp_set_never_holds_a_lemma_and_its_converse() -> None:
    """The core library states `succ n = n + 1` both ways round; `simp` with both rewrites
    until its tactic runs out of time, so a `simp` list keeps the first of the two."""
    premises = [
        ("f", "def f (x : Nat) : Nat := x + 1"),
        ("Nat.succ_eq_add_one", "theorem succ_eq_add_one (n : Nat) : succ n = n + 1 := rfl"),
        ("Nat.add_one", "theorem add_one (n : Nat) : n + 1 = succ n := rfl"),
        ("Nat.add_comm", "protected theorem add_comm : ∀ (n m : Nat), n + m = m + n"),
    ]
    found = [c.tactic for c in _suggester().suggest("x y : Nat\n⊢ f x = y + 1", previous=None, premises=premises, n=64)]
    assert "simp [f, Nat.succ_eq_add_one, Nat.add_comm]" in found
    lists = [t for t in found if "[" in t and "," in t]
    assert lists and not any("Nat.succ_eq_add_one" in t and "Nat.add_one" in t for t in lists)
    assert "simp [Nat.add_one]" in found  # alone it is no loop


def test_a_name_a_tactic_binds_is_never_qualified_as_a_premise() -> None:
    """`String.Iterator.s` is the only premise ending in `s`: a neighbour's `intro s` stays,
    while a premise in the body after the binders is still qualified."""
    names = PremiseNames(["String.Iterator.s", "Nat.parityElim", "Point.y"])
    assert names.qualified("intro s", "", frozenset()) is None
    assert names.qualified("funext x y", "", frozenset()) is None
    assert names.qualified("intro (s : Nat) h", "", frozenset()) is None
    assert names.qualified("exact fun s => parityElim s", "", frozenset()) == "exact fun s => Nat.parityElim s"
    assert names.qualified("intro h; exact s", "", frozenset()) == "intro h; exact String.Iterator.s"


def test_an_equation_among_the_premises_is_also_rewritten_from_right_to_left() -> None:
    """`rw [← mul_assoc]` makes room for the inverse law in `a⁻¹ * (a * b)`; a definition's
    equation is never folded back, nor a lemma that states no equation."""
    premises = [
        ("inv", "def inv (a : α) : α := a"),
        ("mul_assoc", "theorem mul_assoc (a b c : α) : a * b * c = a * (b * c)"),
        ("lt_irrefl", "theorem lt_irrefl (a : α) : ¬ a < a"),
        ("mul_left_inv", "theorem mul_left_inv (a : α) : a⁻¹ * a = 1"),
    ]
    found = [
        c.tactic for c in _suggester().suggest("a b : α\n⊢ a⁻¹ * (a * b) = b", previous=None, premises=premises, n=64)
    ]
    reversed_ = [t for t in found if t.startswith("rw [←")]
    assert reversed_ == ["rw [← mul_assoc]", "rw [← mul_left_inv]"]


def test_a_larger_ask_puts_more_of_the_retrieved_premises_into_templates() -> None:
    """A search that asks for more candidates (`--candidates 128`) gets templates of the next
    premises of the retriever's ranking too."""
    premises = [(f"lemma{i}", f"theorem lemma{i} (n : Nat) : n = n") for i in range(20)]
    state = "n : Nat\n⊢ f n = n"

    def templated(n: int) -> set[str]:
        found = _suggester().suggest(state, previous=None, premises=premises, n=n)
        return {name for name, _ in premises if f"exact {name}" in {c.tactic for c in found}}

    assert templated(64) == {f"lemma{i}" for i in range(6)}
    assert templated(128) == {f"lemma{i}" for i in range(12)}


def test_a_template_lean_always_refused_for_a_kind_of_premise_is_not_offered_again_in_the_search() -> None:
    """`rw [D]` for a definition: the June 2021 Lean rewrites with none. After TEMPLATE_TRIALS
    refusals and no acceptance for definitions, no `rw [D]` in the rest of the search; the
    same template for lemmas, which Lean once accepted, goes on; a new search starts afresh."""
    definitions = [(f"f{i}", f"def f{i} (n : Nat) : Nat := n") for i in range(TEMPLATE_TRIALS + 2)]
    lemmas = [(f"l{i}", f"@[simp] theorem l{i} (n : Nat) : f0 n = n") for i in range(TEMPLATE_TRIALS + 2)]
    premises = [*definitions, *lemmas]
    episode = _suggester().episode("r", LE_SELF)
    goal = TacticState("n : Nat\n⊢ f0 n = n")

    def offered() -> set[str]:
        return {c.tactic for c in episode.generate(goal.pp, premises=premises, n=1000)}

    assert "rw [f0]" in offered() and "rw [l0]" in offered()
    refused = LeanError("motive is not type correct")
    episode.observe(goal, "rw [l0]", TacticState("n : Nat\n⊢ n = n"))
    for i in range(TEMPLATE_TRIALS):
        episode.observe(goal, f"rw [f{i}]", refused)
        episode.observe(goal, f"rw [l{i + 1}]", refused)
    now = offered()
    assert not any(t.startswith("rw [f") for t in now)
    assert "rw [l11]" in now and "simp [f0]" in now and "exact f0" in now
    assert "rw [f0]" in {
        c.tactic for c in _suggester().episode("r", LE_SELF).generate(goal.pp, premises=premises, n=1000)
    }


@pytest.mark.parametrize(
    ("tactic", "use"),
    [
        pytest.param("exact Nat.le_refl", ("exact {}", "Nat.le_refl"), id="exact"),
        pytest.param("apply h.1", ("apply {}", "h.1"), id="apply"),
        pytest.param("rw [← mul_assoc]", ("rw [← {}]", "mul_assoc"), id="backwards"),
        pytest.param("simp [Ex.denote]", ("simp [{}]", "Ex.denote"), id="simp"),
        pytest.param("simp [a, b]", None, id="a-list"),
        pytest.param("exact absurd rfl (h _)", None, id="a-term"),
        pytest.param("rw [mul_assoc] at h", None, id="at-a-hypothesis"),
    ],
)
def test_a_template_use_is_read_from_its_tactic(tactic: str, use: tuple[str, str] | None) -> None:
    assert template_use(tactic) == use


def test_what_a_premise_declares() -> None:
    assert declaration_keyword("/-- doc -/\n@[simp] protected theorem Nat.x : 1 = 1") == "theorem"
    assert declaration_keyword("private def f : Nat := 1") == "def"
    assert declaration_keyword("class Monad (m : Type → Type)") == "class"
