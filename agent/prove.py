"""Proving one stored theorem: best-first search in a proof environment, premises from the
retriever, then Lean's final check of the whole file; the outcome as a value.

A proof counts only when the final check (:func:`lean_env.proofs.final_check.check_proof`)
compiled the file with it and Lean reported no error and no ``sorry``; a search result
alone never does. Nothing here imports SQLAlchemy: Ray workers run it without a database.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent.search import (
    SearchConfig,
    SearchResult,
    SearchStatus,
    TacticGenerator,
    best_first_search,
)
from lean_env.errors import BackendError, LeanAgentError
from lean_env.interactive.choice import ProofBackendChoice, open_backend
from lean_env.interactive.interface import ProofBackend
from lean_env.lean.runner import LeanRunner
from lean_env.proofs.final_check import FinalCheckResult, Verdict, check_proof
from lean_env.proofs.text import tactic_proof
from lean_env.records import AttemptOutcome, RepoTrace, Theorem
from retrieval.model_files import model_key

if TYPE_CHECKING:
    from retrieval.embeddings import EmbeddingStore
    from retrieval.encoder import TextEncoder


@dataclass(frozen=True, slots=True)
class ProvingConfig:
    """How to prove: one object, built at the CLI edge and passed down to every Ray worker."""

    # The tactic generator: a local directory or a Hugging Face name.
    generator: str
    # The proof environment that runs tactics.
    backend: ProofBackendChoice = ProofBackendChoice.AUTO
    # Candidates per expansion and the budgets of one theorem's search.
    search: SearchConfig = SearchConfig()
    # Premises per goal from the retriever (when there is one).
    premises: int = 10
    # Seconds one tactic may run in the proof environment.
    tactic_timeout: float = 60.0
    # Seconds for the final check's Lean run over the whole file.
    check_timeout: float = 600.0
    # 1: prove in this process; more: on that many Ray workers (the same attempts).
    workers: int = 1

    def identity(self) -> dict[str, Any]:
        """What a resumed run must match: every option that changes the attempts (not the
        number of workers, which does not)."""
        return {
            "generator": model_key(self.generator),
            "backend": str(self.backend),
            "premises": self.premises,
            "candidates": self.search.num_candidates,
            "max_expansions": self.search.max_expansions,
            "time_limit": self.search.time_limit,
            "tactic_timeout": self.tactic_timeout,
            "check_timeout": self.check_timeout,
        }

    def backend_opener(self, data_dir: Path) -> Callable[[Path], ProofBackend]:
        """Opens this config's proof environment for a repository directory; picklable, so
        that Ray workers open their own."""
        return functools.partial(open_backend, self.backend, timeout=self.tactic_timeout, data_dir=data_dir)


class PremiseSource(Protocol):
    """The retriever seam: the premises to condition the generator on, for the goals of one
    theorem of one repository (only premises accessible from the theorem)."""

    def premises_for(self, location: str, theorem: Theorem) -> Callable[[str], Sequence[str]]:
        """goal text -> premise texts, best first."""
        ...


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
    premises: Callable[[str], Sequence[str]] | None = None,
    search: SearchConfig = SearchConfig(),
    check_timeout: float = 600.0,
) -> ProofAttempt:
    """Search for a proof of ``theorem`` (a theorem of the repository at ``repo_dir``) with
    ``premises`` (goal -> premises) for the generator, and have Lean check the file with it."""
    try:
        with backend.open(repo_dir, theorem) as session:
            result = best_first_search(session, generator, search, premises_for=premises)
    except BackendError as error:
        return ProofAttempt(AttemptOutcome.ERROR, None, None, None, f"{backend.name}: {error}")
    if result.status is not SearchStatus.PROVED:
        timed_out = result.status is SearchStatus.OUT_OF_BUDGET and result.seconds >= search.time_limit
        outcome = AttemptOutcome.TIMEOUT if timed_out else AttemptOutcome.FAILED
        detail = f"search {result.status.value} after {result.expansions} expansions, {result.tactics_run} tactics"
        return ProofAttempt(outcome, None, result, None, detail)
    assert result.proof is not None
    proof = tactic_proof(result.proof)
    try:
        check = check_proof(repo_dir, theorem, proof, runner=runner, timeout=check_timeout)
    except LeanAgentError as error:  # e.g. the file could not be read or Lean could not run
        return ProofAttempt(AttemptOutcome.ERROR, proof, result, None, f"the final check could not run: {error}")
    if check.accepted:
        return ProofAttempt(
            AttemptOutcome.PROVED,
            proof,
            result,
            check,
            f"proved in {len(result.proof)} tactics; Lean accepted the file",
        )
    if check.verdict is Verdict.TIMEOUT:
        return ProofAttempt(
            AttemptOutcome.TIMEOUT, proof, result, check, "search found a proof; the final check ran out of time"
        )
    reasons = "; ".join(check.reasons) or check.verdict
    return ProofAttempt(
        AttemptOutcome.FAILED, proof, result, check, f"search found a proof, the final check rejected it: {reasons}"
    )


class TheoremProver:
    """Proves theorems one after another with one generator, keeping one proof environment
    per repository open (the REPL's processes, with their imports loaded, are reused) until
    :meth:`close`."""

    def __init__(
        self,
        generator: TacticGenerator,
        *,
        open_backend: Callable[[Path], ProofBackend],
        search: SearchConfig = SearchConfig(),
        check_timeout: float = 600.0,
    ) -> None:
        self.generator = generator
        self.search = search
        self.check_timeout = check_timeout
        self._open_backend = open_backend
        self._backends: dict[Path, ProofBackend] = {}

    @classmethod
    def load(cls, config: ProvingConfig, *, data_dir: Path) -> TheoremProver:
        """The prover ``config`` describes, its generator loaded (a bad name or directory is
        the user's error); proof environments open on first use."""
        from agent.generator import HFTacticGenerator

        return cls(
            HFTacticGenerator.load(config.generator),
            open_backend=config.backend_opener(data_dir),
            search=config.search,
            check_timeout=config.check_timeout,
        )

    def prove(
        self, location: str, repo_dir: Path, theorem: Theorem, *, premises: PremiseSource | None = None
    ) -> tuple[ProofAttempt, str]:
        """The attempt at ``theorem`` of the repository ``location`` checked out at
        ``repo_dir`` (with ``premises`` for the generator, if given), and the name of the
        proof environment that made it."""
        backend = self._backends.get(repo_dir)
        if backend is None:
            backend = self._backends[repo_dir] = self._open_backend(repo_dir)
        attempt = prove_theorem(
            theorem,
            repo_dir=repo_dir,
            backend=backend,
            generator=self.generator,
            runner=LeanRunner.for_project(repo_dir),
            search=self.search,
            check_timeout=self.check_timeout,
            premises=premises.premises_for(location, theorem) if premises else None,
        )
        return attempt, backend.name

    def close(self) -> None:
        backends, self._backends = self._backends, {}
        for backend in backends.values():
            backend.close()


def premise_source(
    traces: Sequence[RepoTrace], encoder: TextEncoder, *, k: int, store: EmbeddingStore | None = None
) -> PremiseSource:
    """The ``k`` premises ``encoder`` ranks first for a goal, among those of ``traces``
    accessible from the theorem; with ``store``, only premises it has not embedded with
    these weights are embedded."""
    from retrieval.corpus import PremiseCorpus
    from retrieval.index import PremiseIndex, PremiseRetriever

    return PremiseRetriever(PremiseIndex.build(PremiseCorpus(traces), encoder, store=store), encoder, k=k)
