"""Goal states of a corpus's stored theorems as calibration queries of its premise index
(:class:`retrieval.calibration.GoalQueries`): the kind of query proof search and evaluation
serve, embedded by the same encoder as the premises, each with its theorem's mask.

A theorem's goals are its traced states (the goal before each tactic, LeanDojo traces) where
there are, else its statement as a goal: ``⊢`` and what it concludes after its binders (a
``sorry`` theorem is opened at that goal; its hypotheses, as Lean prints them from the
elaborated binders, cannot be read from the text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lean_env.records import Theorem
from retrieval.calibration import GoalQueries
from retrieval.index_options import IndexOptions
from retrieval.statements import conclusion

if TYPE_CHECKING:
    from retrieval.corpus import PremiseCorpus
    from retrieval.encoder import Encoder


def goal_states(theorem: Theorem) -> list[str]:
    """The goals of ``theorem`` a retriever is asked about: traced states, else its statement as a goal."""
    traced = [t.state_before for t in theorem.tactics if t.state_before]
    if traced:
        return traced
    target = conclusion(theorem.statement)
    return [f"⊢ {target}"] if target else []


def goal_queries(corpus: PremiseCorpus, encoder: Encoder, options: IndexOptions) -> GoalQueries:
    """Up to ``options.calibration_goals`` goal states of ``corpus``'s theorems, one per
    theorem drawn (seeded) without replacement, embedded by ``encoder``, with the masks of
    their theorems."""
    rng = np.random.default_rng(options.seed)
    count = options.calibration_goals
    texts: list[str] = []
    masks: list[np.ndarray] = []
    for t in rng.permutation(len(corpus.theorems)).tolist():
        if len(texts) == count:
            break
        repo, theorem = corpus.theorems[t]
        states = goal_states(theorem)
        if states:
            texts.append(states[int(rng.integers(len(states)))])
            masks.append(corpus.accessible(repo, theorem.path, theorem.start))
    vectors = np.asarray(encoder.encode(texts), dtype=np.float32) if texts else np.zeros((0, 0), dtype=np.float32)
    return GoalQueries(vectors, masks)
