"""The prover's generator (:class:`Blend`): the built-in suggester's candidates, a model's, or
both merged, conditioned on premises it retrieves itself for each goal, as ReProver's
``RetrievalAugmentedGenerator`` owns its retriever: the search sees goals and tactics only.

Mixed, ``share`` of the probability goes to the suggester:
p(t) = share * p_suggester(t) + (1 - share) * p_model(t), in log space; a tactic both propose
adds up. The suggester learns every checked proof whichever proposed it. With a ranking
learned from recorded attempts (:mod:`agent.generators.ranking`), the candidates are then
reweighted by how likely Lean is to accept each on the goal.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agent.generators.premises import PremisedGenerator, PremiseSource
from agent.generators.ranking import OVERSAMPLE, TacticRanking
from agent.generators.suggester import SuggesterEpisode, TacticSuggester
from agent.search.online import Episode
from agent.search.tree import Candidate
from lean_env.interactive.interface import TacticResult, TacticState
from lean_env.records import Theorem, TracedTactic
from retrieval.formats import PremisesFor


@dataclass(frozen=True, slots=True)
class Blend:
    """The :class:`~agent.search.online.OnlineGenerator` the prover uses."""

    suggester: TacticSuggester
    model: PremisedGenerator | None = None
    share: float = 1.0  # the suggester's share of the probability (1 without a model)
    premises: PremiseSource | None = None  # where each goal's premises come from; None: none
    ranking: TacticRanking | None = None  # reweights the candidates; None: as generated

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0 or (self.model is None and self.share != 1.0):
            raise ValueError(f"the suggester's share must be in [0, 1] (1 without a model), got {self.share}")

    def with_premises(self, premises: PremiseSource | None) -> Blend:
        """This generator (the same suggester and model) with premises from ``premises``."""
        return dataclasses.replace(self, premises=premises)

    def episode(self, location: str, theorem: Theorem) -> Episode:
        premises_for = self.premises.premises_for(location, theorem) if self.premises is not None else None
        suggester = self.suggester.episode(location, theorem)
        return _BlendEpisode(suggester, self.model, self.share, premises_for, self.ranking)

    def learn(self, location: str, theorem: Theorem, steps: Sequence[TracedTactic]) -> tuple[TracedTactic, ...]:
        return self.suggester.learn(location, theorem, steps)


class _BlendEpisode:
    def __init__(
        self,
        suggester: SuggesterEpisode,
        model: PremisedGenerator | None,
        share: float,
        premises_for: PremisesFor | None,
        ranking: TacticRanking | None,
    ) -> None:
        self._suggester, self._model, self._share = suggester, model, share
        self._premises_for = premises_for
        self._ranking = ranking

    def generate(self, state: str, *, n: int) -> list[Candidate]:
        if self._ranking is None:
            return self._generate(state, n=n)
        return self._ranking.rerank(state, self._generate(state, n=n * OVERSAMPLE), n=n)

    def _generate(self, state: str, *, n: int) -> list[Candidate]:
        premises = self._premises_for(state) if self._premises_for is not None else ()
        if self._model is None:
            return self._suggester.generate(state, premises=premises, n=n)
        pool: dict[str, float] = {}
        for generator, share in ((self._suggester, self._share), (self._model, 1.0 - self._share)):
            if share <= 0.0:
                continue
            for c in generator.generate(state, premises=premises, n=n):
                score = math.log(share) + c.logprob
                pool[c.tactic] = np.logaddexp(pool[c.tactic], score) if c.tactic in pool else score
        ranked = sorted(pool.items(), key=lambda item: -item[1])[:n]
        return [Candidate(tactic, float(score)) for tactic, score in ranked]

    def observe(self, state: TacticState, tactic: str, outcome: TacticResult) -> None:
        self._suggester.observe(state, tactic, outcome)
