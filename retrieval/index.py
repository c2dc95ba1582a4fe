"""A searchable index of a corpus's premise embeddings, restricted per query to the premises
the theorem may use, and the recall metrics of LeanDojo/ReProver measured through it.

Embeddings are unit vectors, so the faiss inner-product index ranks by cosine similarity.
The accessibility restriction is a faiss ID selector (a bitmap over the corpus), so the k
results are the best k *accessible* premises, not the best k filtered afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import faiss
import numpy as np

from lean_env.records import Position, Theorem
from retrieval.corpus import PremiseCorpus, RetrievalExample, premise_text
from retrieval.encoder import Encoder
from retrieval.formats import PremiseCode, PremisesFor


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved premise."""

    index: int  # corpus index
    score: float  # cosine similarity to the query


class PremiseIndex:
    """The corpus's premises, embedded, behind a faiss inner-product index."""

    def __init__(self, corpus: PremiseCorpus, embeddings: np.ndarray) -> None:
        if embeddings.shape[0] != len(corpus):
            raise ValueError(f"{embeddings.shape[0]} embeddings for a corpus of {len(corpus)} premises")
        self.corpus = corpus
        self.embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)  # (N, d)
        self._faiss = faiss.IndexFlatIP(self.embeddings.shape[1])
        self._faiss.add(self.embeddings)

    @classmethod
    def build(
        cls, corpus: PremiseCorpus, encoder: Encoder, *, progress: Callable[[int], None] | None = None
    ) -> PremiseIndex:
        """Embed every premise of ``corpus`` with ``encoder``."""
        texts = [premise_text(p) for p in corpus.premises]
        return cls(corpus, encoder.encode(texts, progress=progress))

    def search(self, queries: np.ndarray, k: int, *, allowed: Sequence[np.ndarray] | None = None) -> list[list[Hit]]:
        """The ``k`` best premises for each query embedding (Q, d), best first; with
        ``allowed`` (one boolean mask over the corpus per query) only among those."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = min(k, len(self.corpus))
        if k == 0:
            return [[] for _ in queries]
        if allowed is None:
            scores, ids = self._faiss.search(queries, k)
            return [_hits(s, i) for s, i in zip(scores, ids, strict=True)]
        out = []
        for query, mask in zip(queries, allowed, strict=True):
            bitmap = np.packbits(mask, bitorder="little")  # kept alive for the call below
            selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
            scores, ids = self._faiss.search(query[None], k, params=faiss.SearchParameters(sel=selector))
            out.append(_hits(scores[0], ids[0]))
        return out


def _hits(scores: np.ndarray, ids: np.ndarray) -> list[Hit]:
    return [Hit(int(i), float(s)) for s, i in zip(scores, ids, strict=True) if i >= 0]  # -1: fewer than k allowed


@dataclass(frozen=True, slots=True)
class RecallScores:
    """Retrieval quality over a set of examples (ReProver's definitions)."""

    examples: int
    recall: dict[int, float]  # k -> mean over examples of |used premises in top k| / |used premises|
    mrr: float  # mean over examples of 1 / rank of the first used premise (0 when not retrieved)


def evaluate(
    index: PremiseIndex,
    encoder: Encoder,
    examples: Sequence[RetrievalExample],
    *,
    ks: Sequence[int] = (1, 10),
    depth: int = 100,
    batch_size: int = 64,
) -> RecallScores:
    """Recall@k and MRR of ``encoder`` + ``index`` on ``examples``, each query restricted to
    the premises accessible from its theorem. A used premise ranked below ``depth`` counts
    as not retrieved."""
    if not examples:
        return RecallScores(0, {k: 0.0 for k in ks}, 0.0)
    depth = max(depth, *ks)
    totals = dict.fromkeys(ks, 0.0)
    reciprocal = 0.0
    corpus = index.corpus
    for start in range(0, len(examples), batch_size):
        chunk = examples[start : start + batch_size]
        queries = encoder.encode([e.context for e in chunk], batch_size=batch_size)
        masks = [corpus.accessible(e.repo, e.path, e.start) for e in chunk]
        for example, hits in zip(chunk, index.search(queries, depth, allowed=masks), strict=True):
            ranked = [h.index for h in hits]
            used = set(example.positives)
            for k in ks:
                totals[k] += len(used.intersection(ranked[:k])) / len(used)
            reciprocal += next((1.0 / (rank + 1) for rank, i in enumerate(ranked) if i in used), 0.0)
    n = len(examples)
    return RecallScores(n, {k: totals[k] / n for k in ks}, reciprocal / n)


class PremiseRetriever:
    """The premises to give a tactic generator for a goal: the ``k`` accessible premises
    nearest to it, as ``(full_name, code)`` (the generator marks and joins them itself,
    :func:`retrieval.formats.augmented_state`)."""

    def __init__(self, index: PremiseIndex, encoder: Encoder, *, k: int) -> None:
        self.index, self.encoder, self.k = index, encoder, k

    def premises_for(self, location: str, theorem: Theorem) -> PremisesFor:
        """A goal -> premises function for ``theorem`` of the repository ``location`` (the
        prover's :class:`~agent.prove.PremiseSource` seam)."""
        return self.for_theorem(location, theorem.path, theorem.start)

    def for_theorem(self, repo: str, path: str, before: Position) -> PremisesFor:
        """A goal -> premises function for a declaration of ``repo`` at ``path``:``before``."""
        allowed = self.index.corpus.accessible(repo, path, before)

        def premises(goal: str) -> list[PremiseCode]:
            (hits,) = self.index.search(self.encoder.encode([goal]), self.k, allowed=[allowed])
            return [(p.full_name, p.code) for p in (self.index.corpus.premises[h.index] for h in hits)]

        return premises
