"""A ranking of tactics learned from recorded attempts: how likely Lean is to accept a tactic
on a goal, by what the searches of the repositories seen so far tried and what Lean said
(:class:`~lean_env.records.TriedTactic`, kept in the database per attempt).

Most tactics a search runs are refused: a goal that times out has run 100-1,300 of them
(issue 40). The suggester's weights are set by hand, the same for every repository; this
ranking learns, from the attempts recorded, which kinds of tactic work on which kinds of
goal there (``simp`` on a ``HEq``, ``induction`` on a ``List`` equation, ``exact h`` where a
hypothesis has the target's head) and reweights the generator's candidates by it:

    p'(t) ∝ p(t) · P(Lean accepts t on the goal)

renormalised over the candidates of one goal, so that the search's path scores stay sums of
log-probabilities. The hand-set weights stay the prior: a tactic of a kind never tried is
reweighted by the model's base rate, not dropped, and without enough recorded attempts
(:data:`MIN_TRIED`, or only one kind of answer) there is no ranking at all.

The model is a logistic regression (scikit-learn) over hashed features of the goal and the
tactic (:func:`tactic_features`): the tactic's head word, alone and with the shape of the
goal's target, its number of goals and hypotheses, the names the tactic uses (and whether
they are the goal's hypotheses), the constants of the target. CPU-cheap: it trains in a
second on tens of thousands of tried tactics and scores a goal's candidates in a millisecond.
Steps of proofs Lean accepted weigh more (:data:`PROOF_STEP_WEIGHT`): they are what a search
should find first.

Off unless asked for (``--ranking``): measured on the core-library corpora it has not yet
proved more than the hand-set weights alone (docs/search.md, docs/evaluate.md).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent.search.tree import Candidate
from lean_env.interactive.interface import hypothesis_names
from lean_env.records import TacticOutcome, TriedTactic
from lean_env.syntax.lexer import IDENT_RE

log = logging.getLogger(__name__)

# Fewer tried tactics than this (or only accepted, or only refused ones) train no ranking.
MIN_TRIED = 200
# How much more a step of an accepted proof weighs than another tactic Lean accepted.
PROOF_STEP_WEIGHT = 4.0
# Candidates asked of the generator per candidate kept: the ranking may bring forward a
# tactic the hand-set weights put just past the search's `num_candidates`.
OVERSAMPLE = 2
# Hashed feature dimensions (collisions among a few thousand distinct features are rare).
FEATURES = 2**18
# The regularisation of the logistic regression (scikit-learn's C: larger fits closer).
REGULARISATION = 1.0
# Names of the target and of the tactic kept as features, each (the first ones).
NAMES_KEPT = 12

# The relation or connective at the top of a target, in the order they bind loosest first.
_SHAPES = (("↔", "iff"), ("→", "imp"), ("∨", "or"), ("∧", "and"), ("≠", "ne"), ("≤", "le"), ("<", "lt"), ("=", "eq"))
_HEAD_RE = re.compile(r"[^\s(\[{⟨]+")


def tactic_features(goal: str, tactic: str) -> list[str]:
    """What the ranking knows of ``tactic`` run on ``goal`` (the goals as printed), as
    feature names for hashing."""
    head = tactic_head(tactic)
    target = _target(goal)
    shape = target_shape(target)
    hypotheses = set(hypothesis_names(goal))
    goals = goal.count("⊢")
    named = [n for n in IDENT_RE.findall(tactic) if n != head][:NAMES_KEPT]
    constants = [n for n in dict.fromkeys(IDENT_RE.findall(target)) if n not in hypotheses][:NAMES_KEPT]
    features = [
        f"head={head}",
        f"head={head}|shape={shape}",
        f"head={head}|goals={min(goals, 3)}",
        f"head={head}|hypotheses={_bucket(len(hypotheses))}",
        f"head={head}|length={_bucket(len(tactic) // 8)}",
        f"shape={shape}",
    ]
    if "<;>" in tactic:
        features.append(f"head={head}|then")
    for name in named:
        local = name in hypotheses
        features += [f"head={head}|local={local}", f"name={name}" if not local else "name=(local)"]
        features.append(f"head={head}|uses={name}" if not local else f"head={head}|uses=(local)|shape={shape}")
    features += [f"head={head}|constant={c}" for c in constants]
    return features


def tactic_head(tactic: str) -> str:
    """A tactic's first word (``simp`` of ``simp [f] at h``; ``·`` for a focused block)."""
    match = _HEAD_RE.match(tactic.strip())
    return match.group() if match else ""


def target_shape(target: str) -> str:
    """The relation or connective at the top of ``target``, or its head word."""
    if target.startswith(("∀", "∃", "¬")):
        return target[0]
    depth, tops = 0, set[str]()
    for index, char in enumerate(target):
        if char in "([{⟨⦃":
            depth += 1
        elif char in ")]}⟩⦄":
            depth -= 1
        elif depth == 0:
            tops.update(name for symbol, name in _SHAPES if target.startswith(symbol, index))
    for _symbol, name in _SHAPES:
        if name in tops:
            return name
    return f"app:{tactic_head(target)}" if target else "none"


def _target(goal: str) -> str:
    """The target of the first goal (what follows its ``⊢``), on one line."""
    _, _, rest = goal.partition("⊢")
    first = re.split(r"\n\s*\n", rest, maxsplit=1)[0]
    return " ".join(first.split())


def _bucket(n: int) -> int:
    """0, 1, 2, 3-4, 5-8, ...: counts by their order of magnitude."""
    return n if n < 3 else 1 + math.ceil(math.log2(n))


@dataclass(frozen=True, slots=True)
class TacticRanking:
    """P(Lean accepts a tactic on a goal), learned from tried tactics; picklable, so that Ray
    workers get it with the rest of the prover's recipe."""

    model: Any  # a fitted sklearn LogisticRegression over hashed tactic_features
    tried: int  # the tried tactics it learned from
    accepted: float  # the share of them Lean accepted

    @classmethod
    def train(cls, tried: Sequence[TriedTactic], *, seed: int = 0) -> TacticRanking | None:
        """The ranking ``tried`` teaches, or None when it is too little to learn from
        (:data:`MIN_TRIED`, or Lean's answers all of one kind)."""
        from sklearn.linear_model import LogisticRegression

        labels = np.array([t.outcome in (TacticOutcome.PROOF, TacticOutcome.STATE) for t in tried])
        if len(tried) < MIN_TRIED or labels.all() or not labels.any():
            return None
        weights = np.array([PROOF_STEP_WEIGHT if t.on_proof else 1.0 for t in tried])
        model = LogisticRegression(C=REGULARISATION, solver="liblinear", random_state=seed)
        model.fit(_hashed([(t.goal, t.tactic) for t in tried]), labels, sample_weight=weights)
        ranking = cls(model, len(tried), float(labels.mean()))
        log.info("learned a tactic ranking from %d tried tactics (%.1f%% accepted)", len(tried), 100 * ranking.accepted)
        return ranking

    def acceptance(self, goal: str, tactics: Sequence[str]) -> np.ndarray:
        """P(Lean accepts each of ``tactics`` on ``goal``)."""
        if not tactics:
            return np.zeros(0)
        return self.model.predict_proba(_hashed([(goal, t) for t in tactics]))[:, 1]

    def rerank(self, goal: str, candidates: Sequence[Candidate], *, n: int) -> list[Candidate]:
        """The ``n`` best of ``candidates`` (a goal's, from a generator) by their probability
        times Lean's acceptance, renormalised over ``candidates``, best first."""
        if not candidates:
            return []
        prior = np.array([c.logprob for c in candidates])
        scores = prior + np.log(np.clip(self.acceptance(goal, [c.tactic for c in candidates]), 1e-9, 1.0))
        finite = np.isfinite(scores)
        total = np.logaddexp.reduce(scores[finite]) if finite.any() else 0.0
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:n]
        return [Candidate(candidates[i].tactic, float(scores[i] - total)) for i in order]


def _hashed(pairs: Sequence[tuple[str, str]]) -> Any:
    from sklearn.feature_extraction import FeatureHasher

    hasher = FeatureHasher(n_features=FEATURES, input_type="string", alternate_sign=False)
    return hasher.transform(tactic_features(goal, tactic) for goal, tactic in pairs)
