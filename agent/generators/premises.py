"""The retriever seam of generators: generators conditioned on premises, the source of the
premises for the goals of one theorem of one repository (only premises accessible from the
theorem), and the source the project trains, the retriever's index."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from agent.search.tree import Candidate
from lean_env.records import RepoTrace, Theorem
from retrieval.formats import PremiseCode, PremisesFor
from retrieval.index_options import IndexOptions

if TYPE_CHECKING:
    from retrieval.embeddings import EmbeddingStore
    from retrieval.encoder import TextEncoder

# Premises retrieved for each expanded goal: ReProver's evaluation's (prover/evaluate.py),
# the default of every command, of which those that fit the generator's input are shown; a
# CPU runs far fewer (docs/search.md).
PREMISES_PER_GOAL = 100


class PremisedGenerator(Protocol):
    """Proposes tactics for a goal, best first, given the premises retrieved for it
    (``(full_name, code)``, best first): a model, or the suggester's templates."""

    def generate(self, state: str, *, premises: Sequence[PremiseCode] = (), n: int) -> list[Candidate]: ...


class PremiseSource(Protocol):
    """The retriever seam: the premises to condition the generator on, for the goals of one
    theorem of one repository (only premises accessible from the theorem)."""

    def premises_for(self, location: str, theorem: Theorem) -> PremisesFor:
        """goal text -> ``(full_name, code)`` of premises, best first."""
        ...


def premise_source(
    traces: Sequence[RepoTrace],
    encoder: TextEncoder,
    *,
    k: int,
    store: EmbeddingStore | None = None,
    options: IndexOptions = IndexOptions(),
) -> PremiseSource:
    """The ``k`` premises ``encoder`` ranks first for a goal, among those of ``traces``
    accessible from the theorem; with ``store``, only premises it has not embedded with
    these weights are embedded. The index searches where the encoder runs (a GPU), else
    on the CPU as ``options`` say."""
    from retrieval.corpus import PremiseCorpus
    from retrieval.index import PremiseIndex, PremiseRetriever

    index = PremiseIndex.build(
        PremiseCorpus(traces), encoder, store=store, options=options, device=encoder.placement.index_device
    )
    return PremiseRetriever(index, encoder, k=k)
