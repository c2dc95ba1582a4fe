"""The tactic ranking learned from recorded attempts (agent/generators/ranking.py): what it
reads of a goal and a tactic, when it learns nothing, and that what it learns reorders a
generator's candidates as the attempts taught."""

from __future__ import annotations

import math
import pickle
import random

import pytest

from agent.generators.ranking import MIN_TRIED, TacticRanking, tactic_features, tactic_head, target_shape
from agent.search.tree import Candidate
from lean_env.records import TacticOutcome, TriedTactic

EQ = "xs : List Nat\n⊢ xs ++ [] = xs"
HEQ = "a b : Nat\nh : a = b\n⊢ HEq a b"
IFF = "p q : Prop\n⊢ p ∧ q ↔ q ∧ p"


@pytest.mark.parametrize(
    ("target", "shape"),
    [
        pytest.param("xs ++ [] = xs", "eq", id="equation"),
        pytest.param("p ∧ q ↔ q ∧ p", "iff", id="iff-binds-loosest"),
        pytest.param("(a = b) ∧ c", "and", id="bracketed-relation-is-not-the-top"),
        pytest.param("∀ (n : Nat), n + 0 = n", "∀", id="universal"),
        pytest.param("¬a = b", "¬", id="negation"),
        pytest.param("HEq a b", "app:HEq", id="applied"),
        pytest.param("a ≤ b → a < b + 1", "imp", id="implication"),
        pytest.param("", "none", id="nothing"),
    ],
)
def test_the_shape_of_a_target(target: str, shape: str) -> None:
    assert target_shape(target) == shape


@pytest.mark.parametrize(
    ("tactic", "head"),
    [("simp [f] at h", "simp"), ("exact (h.1)", "exact"), ("rw [Nat.add_comm]", "rw"), ("· rfl", "·"), ("", "")],
)
def test_the_head_of_a_tactic(tactic: str, head: str) -> None:
    assert tactic_head(tactic) == head


def test_features_tell_a_hypothesis_from_a_constant() -> None:
    features = tactic_features(HEQ, "exact h ▸ HEq.refl a")
    assert {"head=exact", "head=exact|shape=app:HEq", "head=exact|local=True", "head=exact|local=False"} <= set(
        features
    )
    assert "name=HEq.refl" in features and "name=h" not in features  # a local's name says nothing elsewhere
    assert "head=exact|constant=HEq" in features


def _tried(n: int, seed: int = 0) -> list[TriedTactic]:
    """Attempts where `simp` proves equations of lists and fails on HEq, `subst h` works on
    HEq and fails on lists, and `constructor` works on iffs; `decide` fails everywhere."""
    works = {(EQ, "simp"), (HEQ, "subst h"), (IFF, "constructor")}
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        goal = rng.choice((EQ, HEQ, IFF))
        tactic = rng.choice(("simp", "subst h", "constructor", "decide"))
        accepted = (goal, tactic) in works
        outcome = TacticOutcome.PROOF if accepted and tactic == "simp" else TacticOutcome.STATE
        out.append(TriedTactic(goal, tactic, outcome if accepted else TacticOutcome.ERROR, 1 if accepted else None))
    return out


@pytest.mark.parametrize(
    "tried",
    [
        pytest.param(_tried(MIN_TRIED - 1), id="too-few"),
        pytest.param([TriedTactic(EQ, "simp", TacticOutcome.ERROR, None)] * MIN_TRIED, id="all-refused"),
        pytest.param([TriedTactic(EQ, "simp", TacticOutcome.PROOF, 0)] * MIN_TRIED, id="all-accepted"),
    ],
)
def test_too_little_to_learn_from_is_no_ranking(tried: list[TriedTactic]) -> None:
    assert TacticRanking.train(tried) is None


def test_the_ranking_brings_forward_what_worked_on_such_goals() -> None:
    ranking = TacticRanking.train(_tried(600))
    assert ranking is not None and ranking.tried == 600
    uniform = [Candidate(t, math.log(0.25)) for t in ("decide", "simp", "subst h", "constructor")]
    for goal, best in ((EQ, "simp"), (HEQ, "subst h"), (IFF, "constructor")):
        ranked = ranking.rerank(goal, uniform, n=4)
        assert ranked[0].tactic == best and ranked[-1].tactic != best
        # Renormalised over the candidates: the path scores stay log-probabilities.
        assert math.isclose(sum(math.exp(c.logprob) for c in ranked), 1.0, rel_tol=1e-6)
    # The generator's prior still counts: between tactics never tried it keeps its order, and
    # one it deems far likelier keeps the lead over one that worked.
    unseen = [Candidate("omega", math.log(0.4)), Candidate("norm_num", math.log(0.6))]
    assert [c.tactic for c in ranking.rerank(EQ, unseen, n=2)] == ["norm_num", "omega"]
    skewed = [Candidate("decide", math.log(0.999)), Candidate("simp", math.log(0.001))]
    assert [c.tactic for c in ranking.rerank(EQ, skewed, n=1)] == ["decide"]


def test_a_ranking_travels_to_ray_workers_and_scores_the_same() -> None:
    ranking = TacticRanking.train(_tried(400))
    assert ranking is not None
    again = pickle.loads(pickle.dumps(ranking))
    tactics = ["simp", "decide", "subst h"]
    assert list(again.acceptance(EQ, tactics)) == list(ranking.acceptance(EQ, tactics))
