"""The premises of a set of repositories, which of them a theorem may use, and the
examples a premise retriever learns from and is measured on.

A premise is *accessible* from a point of a file (LeanDojo's rule, which Lean enforces) when
it is declared in a file that the file imports, directly or through other imports, or
earlier in the same file. Each repository has its own import graph (a networkx DiGraph
over its files): two repositories may hold files with equal paths (e.g. their own copies of
a dependency), and a theorem sees only its own repository's.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import networkx as nx
import numpy as np

from lean_env.records import Position, Premise, RepoTrace, Theorem
from retrieval import formats


@dataclass(frozen=True, slots=True)
class RetrievalExample:
    """One query of a retriever: a goal, and the premises its proof step really used."""

    repo: str  # the repository's location (RepoSpec.location)
    theorem: str  # the theorem's full name
    path: str  # the theorem's file
    start: Position  # where the theorem is declared: premises after it are not accessible
    context: str  # the goal before a tactic (LeanDojo traces), or the theorem's statement
    positives: tuple[int, ...]  # corpus indices of the premises used, in first-use order


def premise_text(premise: Premise) -> str:
    """What a retriever embeds for a premise: its code with its name marked, as ReProver's
    retriever was trained to embed it (:func:`retrieval.formats.premise_text`)."""
    return formats.premise_text(premise.full_name, premise.code)


class PremiseCorpus:
    """Every premise of some repositories, with per-repository name lookup and accessibility.

    Premises without code are left out, as ReProver's corpus leaves them out: there is
    nothing to embed (their names alone are no text the retriever was trained on), and a
    proof step's use of one is dropped from its example like that of any premise the corpus
    does not hold.
    """

    def __init__(self, traces: Sequence[RepoTrace]) -> None:
        premises: list[Premise] = []
        self.repos: tuple[str, ...] = tuple(t.spec.location for t in traces)
        # Every theorem with its repository's location: the goals an index of this corpus serves.
        self.theorems: tuple[tuple[str, Theorem], ...] = tuple(
            (t.spec.location, theorem) for t in traces for theorem in t.theorems
        )
        self._names: dict[str, dict[str, int]] = {}
        # Per (repo, file): corpus indices of its premises sorted by start, and those starts.
        self._by_file: dict[tuple[str, str], tuple[np.ndarray, list[Position]]] = {}
        self._graphs: dict[str, nx.DiGraph] = {}
        for trace in traces:
            repo = trace.spec.location
            names = self._names.setdefault(repo, {})
            per_file: dict[str, list[int]] = {}
            for premise in trace.premises:
                if not premise.code:
                    continue
                index = len(premises)
                premises.append(premise)
                names.setdefault(premise.full_name, index)
                per_file.setdefault(premise.path, []).append(index)
            for path, indices in per_file.items():
                indices.sort(key=lambda i: premises[i].start)
                self._by_file[(repo, path)] = (
                    np.asarray(indices, dtype=np.int64),
                    [premises[i].start for i in indices],
                )
            self._graphs[repo] = _import_graph(trace)
        self.premises: tuple[Premise, ...] = tuple(premises)
        self._imported = lru_cache(maxsize=4096)(self._imported_mask)

    def __len__(self) -> int:
        return len(self.premises)

    def index_of(self, repo: str, full_name: str) -> int | None:
        """The corpus index of the premise ``full_name`` as ``repo`` sees it, if it has one."""
        return self._names.get(repo, {}).get(full_name)

    def file_premises(self, repo: str, path: str) -> np.ndarray:
        """The corpus indices of the premises declared in ``path`` of ``repo``, in source order."""
        found = self._by_file.get((repo, path))
        return found[0] if found else np.zeros(0, dtype=np.int64)

    def accessible(self, repo: str, path: str, before: Position) -> np.ndarray:
        """A boolean mask over the corpus: the premises a declaration of ``repo`` at
        ``path``:``before`` may use."""
        mask = self._imported(repo, path).copy()
        if (repo, path) in self._by_file:
            indices, starts = self._by_file[(repo, path)]
            mask[indices[: bisect.bisect_left(starts, before)]] = True
        return mask

    def _imported_mask(self, repo: str, path: str) -> np.ndarray:
        mask = np.zeros(len(self.premises), dtype=bool)
        graph = self._graphs.get(repo)
        if graph is not None and path in graph:
            for imported in nx.descendants(graph, path):
                if (repo, imported) in self._by_file:
                    mask[self._by_file[(repo, imported)][0]] = True
        mask.setflags(write=False)
        return mask

    def examples(self, trace: RepoTrace) -> list[RetrievalExample]:
        """The retrieval examples of one repository: one per traced tactic with a goal and
        used premises (LeanDojo traces), else one per proven theorem with used premises (its
        statement as the query: source extraction sees no goals). Premises the corpus does
        not hold, or that are not accessible from the theorem, are dropped (an example
        left with none is skipped), so a perfect retriever scores 1."""
        repo = trace.spec.location
        out: list[RetrievalExample] = []
        for theorem in trace.theorems:
            allowed = self.accessible(repo, theorem.path, theorem.start)
            for context, names in _queries(theorem):
                positives = tuple(
                    dict.fromkeys(i for i in (self.index_of(repo, n) for n in names) if i is not None and allowed[i])
                )
                if positives:
                    out.append(
                        RetrievalExample(repo, theorem.full_name, theorem.path, theorem.start, context, positives)
                    )
        return out


def _queries(theorem: Theorem) -> list[tuple[str, tuple[str, ...]]]:
    """(query text, premise names) pairs of a theorem: per tactic when goals were traced."""
    traced = [(t.state_before, t.premises) for t in theorem.tactics if t.state_before and t.premises]
    if traced:
        return traced
    return [(theorem.statement, theorem.premises)] if theorem.premises else []


def _import_graph(trace: RepoTrace) -> nx.DiGraph:
    """Files of a repository, with an edge from each file to every file it imports."""
    by_module = {f.module: f.path for f in trace.files}
    graph = nx.DiGraph()
    for file in trace.files:
        graph.add_node(file.path)
        for module in file.imports:
            if module in by_module:
                graph.add_edge(file.path, by_module[module])
    return graph
