"""Proving one stored theorem: best-first search in a proof environment, premises from the
retriever, then Lean's final check of the whole file; the outcome as a value.

A proof counts only when the final check (:func:`lean_env.proofs.final_check.check_proof`)
compiled the file with it and Lean reported no error and no ``sorry``; a search result
alone never does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.search import (
    SearchConfig,
    SearchResult,
    SearchStatus,
    TacticGenerator,
    best_first_search,
)
from curriculum.db import AttemptOutcome
from lean_env.errors import BackendError, LeanAgentError
from lean_env.interactive.interface import ProofBackend
from lean_env.lean.runner import LeanRunner
from lean_env.proofs.final_check import FinalCheckResult, Verdict, check_proof
from lean_env.proofs.text import tactic_proof
from lean_env.records import RepoTrace, Theorem

if TYPE_CHECKING:
    from retrieval.encoder import TextEncoder

# For a theorem: goal text -> premises to condition the generator on.
PremiseSource = Callable[[Theorem], Callable[[str], Sequence[str]]]
# The same for a theorem of any repository, by its location.
PremisesByRepo = Callable[[str, Theorem], Callable[[str], Sequence[str]]]


@dataclass(frozen=True, slots=True)
class ProveConfig:
    search: SearchConfig = SearchConfig()
    check_timeout: float = 600.0  # seconds for the final check's Lean run


@dataclass(frozen=True, slots=True)
class ProofAttempt:
    """How proving one theorem ended."""

    outcome: AttemptOutcome
    proof: str | None  # the checked proof text (PROVED), or the rejected candidate
    search: SearchResult | None  # None when the theorem could not be opened
    check: FinalCheckResult | None  # the final check of a found proof
    detail: str  # one line for people: why it ended so

    @property
    def seconds(self) -> float:
        return (self.search.seconds if self.search else 0.0) + (self.check.seconds if self.check else 0.0)


def prove_theorem(
    theorem: Theorem,
    *,
    repo_dir: Path,
    backend: ProofBackend,
    generator: TacticGenerator,
    runner: LeanRunner,
    premises: PremiseSource | None = None,
    config: ProveConfig = ProveConfig(),
) -> ProofAttempt:
    """Search for a proof of ``theorem`` (a theorem of the repository at ``repo_dir``) and
    have Lean check the file with it."""
    try:
        with backend.open(repo_dir, theorem) as session:
            result = best_first_search(session, generator, config.search, premises_for=premises(theorem) if premises else None)
    except BackendError as error:
        return ProofAttempt(AttemptOutcome.ERROR, None, None, None, f"{backend.name}: {error}")
    if result.status is not SearchStatus.PROVED:
        timed_out = result.status is SearchStatus.OUT_OF_BUDGET and result.seconds >= config.search.time_limit
        outcome = AttemptOutcome.TIMEOUT if timed_out else AttemptOutcome.FAILED
        detail = f"search {result.status.value} after {result.expansions} expansions, {result.tactics_run} tactics"
        return ProofAttempt(outcome, None, result, None, detail)
    assert result.proof is not None
    proof = tactic_proof(result.proof)
    try:
        check = check_proof(repo_dir, theorem, proof, runner=runner, timeout=config.check_timeout)
    except LeanAgentError as error:  # e.g. the file could not be read or Lean could not run
        return ProofAttempt(AttemptOutcome.ERROR, proof, result, None, f"the final check could not run: {error}")
    if check.accepted:
        return ProofAttempt(AttemptOutcome.PROVED, proof, result, check, f"proved in {len(result.proof)} tactics; Lean accepted the file")
    if check.verdict is Verdict.TIMEOUT:
        return ProofAttempt(AttemptOutcome.TIMEOUT, proof, result, check, "search found a proof; the final check ran out of time")
    reasons = "; ".join(check.reasons) or check.verdict
    return ProofAttempt(AttemptOutcome.FAILED, proof, result, check, f"search found a proof, the final check rejected it: {reasons}")


class TheoremProver:
    """Proves theorems one after another with one generator, keeping one proof environment
    per repository open (the REPL's processes, with their imports loaded, are reused) until
    :meth:`close`. ``premises`` may be replaced between theorems (a retriever trained further)."""

    def __init__(
        self,
        generator: TacticGenerator,
        *,
        open_backend: Callable[[Path], ProofBackend],
        premises: PremisesByRepo | None = None,
        config: ProveConfig = ProveConfig(),
    ) -> None:
        self.generator = generator
        self.premises = premises
        self.config = config
        self._open_backend = open_backend
        self._backends: dict[Path, ProofBackend] = {}

    def prove(self, location: str, repo_dir: Path, theorem: Theorem) -> tuple[ProofAttempt, str]:
        """The attempt at ``theorem`` of the repository ``location`` checked out at
        ``repo_dir``, and the name of the proof environment that made it."""
        backend = self._backends.get(repo_dir)
        if backend is None:
            backend = self._backends[repo_dir] = self._open_backend(repo_dir)
        premises = self.premises
        attempt = prove_theorem(
            theorem, repo_dir=repo_dir, backend=backend, generator=self.generator,
            runner=LeanRunner.for_project(repo_dir), config=self.config,
            premises=(lambda t: premises(location, t)) if premises else None,
        )
        return attempt, backend.name

    def close(self) -> None:
        backends, self._backends = self._backends, {}
        for backend in backends.values():
            backend.close()


def premise_source(traces: Sequence[RepoTrace], encoder: TextEncoder, *, k: int) -> PremisesByRepo:
    """(repository, theorem) -> (goal -> the ``k`` premises ``encoder`` ranks first among
    those accessible from the theorem), over the premises of ``traces``."""
    from retrieval.corpus import PremiseCorpus
    from retrieval.index import PremiseIndex, PremiseRetriever

    retriever = PremiseRetriever(PremiseIndex.build(PremiseCorpus(traces), encoder), encoder, k=k)
    return lambda location, theorem: retriever.for_theorem(location, theorem.path, theorem.start)
