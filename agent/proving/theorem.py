"""Proving one stored theorem: best-first search in a proof environment, tactics from a
generator that retrieves its own premises, then Lean's final check of the whole file; the
outcome as a value.

A proof counts only when the final check (:func:`lean_env.proofs.final_check.check_proof`)
compiled the file with it and Lean reported no error and no ``sorry``; a search result
alone never does. Nothing here imports SQLAlchemy: Ray workers run it without a database.

Tactics come from a :class:`~agent.generators.blend.Blend`: the built-in suggester
(:mod:`agent.generators.suggester`), a trained model, or both merged. A proof Lean accepted is learned
at once (its steps, with the states they ran in), so the next theorem can use it.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.generators.blend import Blend
from agent.generators.premises import PremiseSource
from agent.proving.config import ProvingConfig
from agent.search.online import Episode, RecordingSession
from agent.search.tree import (
    SearchResult,
    SearchStatus,
    best_first_search,
)
from lean_env.errors import BackendError, LeanAgentError
from lean_env.interactive.interface import ProofBackend
from lean_env.lean import budget
from lean_env.lean.runner import FileRunner, LeanRunner
from lean_env.proofs.final_check import FinalCheckResult, Verdict, check_proof
from lean_env.proofs.text import tactic_proof
from lean_env.records import AttemptOutcome, Theorem, TracedTactic, TriedTactic

if TYPE_CHECKING:
    from agent.generators.ranking import TacticRanking
    from agent.generators.suggester import StepMemory

# The suggester's share of the probability when its candidates are merged with a model's.
SUGGESTER_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class ProofAttempt:
    """How proving one theorem ended."""

    outcome: AttemptOutcome
    proof: str | None  # the checked proof text (PROVED), or the rejected candidate
    search: SearchResult | None  # None when the theorem could not be opened
    check: FinalCheckResult | None  # the final check of a found proof
    detail: str  # one line for people: why it ended so
    # The found proof's steps with the goals they ran in (and, once learned, the premises
    # they use); () without a found proof.
    steps: tuple[TracedTactic, ...] = ()
    # Wall seconds in Lean: opening the theorem, running the search's tactics, the final check.
    lean_seconds: float = 0.0
    # Wall seconds to open the theorem in the proof environment (or to fail to).
    opening_seconds: float = 0.0
    # Every tactic the search ran, with what it did (the accepted proof's steps marked).
    tried: tuple[TriedTactic, ...] = ()

    @property
    def seconds(self) -> float:
        """The whole attempt's wall time: opening, then the search, whose time holds the final
        checks (they run inside it, on each path Lean says finishes)."""
        return self.opening_seconds + (self.search.seconds if self.search else 0.0)


def prove_theorem(
    theorem: Theorem,
    *,
    repo_dir: Path,
    backend: ProofBackend,
    generator: Episode,
    runner: FileRunner,
    config: ProvingConfig = ProvingConfig(),
) -> ProofAttempt:
    """Search for a proof of ``theorem`` (a theorem of the repository at ``repo_dir``) with
    ``generator`` (which retrieves its own premises) within ``config``'s search budgets, and
    have ``runner``'s Lean check the file with it. The generator sees every tactic's outcome.

    The search's time limit bounds the whole attempt: opening the theorem, the search and
    the final check, each Lean call cut to what is left of it (:mod:`lean_env.lean.budget`).

    The final check runs inside the search, on each path the proof environment says
    finishes: a proof the check rejects (Lean reports an error, or the theorem is not
    declared after it: the 2021 Lean drops some theorems without a word) does not end the
    search, which goes on to the next candidate, up to :data:`REJECTIONS` of them; an
    accepted, vacuous or timed-out check ends it."""
    started = time.monotonic()
    recorded: RecordingSession | None = None
    checks: list[tuple[str, FinalCheckResult]] = []  # (proof text, its check), in the order run

    def accept(path: tuple[str, ...]) -> bool:
        proof = tactic_proof(path)
        try:
            check = check_proof(repo_dir, theorem, proof, runner=runner, timeout=config.check_timeout)
        except LeanAgentError as error:  # e.g. the file could not be read or Lean could not run
            raise _CheckFailed(proof, path, error) from error
        checks.append((proof, check))
        rejected = _judge_check(theorem, path, check)[0] is AttemptOutcome.FAILED
        return not rejected or len(checks) >= REJECTIONS

    try:
        with budget.time_budget(config.search.time_limit), backend.open(repo_dir, theorem) as session:
            opening = time.monotonic() - started
            recorded = RecordingSession(session, generator)
            # The search has what opening left of the attempt's time.
            searching = dataclasses.replace(config.search, time_limit=max(0.0, budget.remaining()))
            result = best_first_search(recorded, generator, searching, accept=accept)
    except BackendError as error:
        if time.monotonic() - started >= config.search.time_limit:
            # A Lean call the budget cut short, reported by the backend as its fault.
            failed = ProofAttempt(AttemptOutcome.TIMEOUT, None, None, None, f"out of time ({backend.name}: {error})")
        else:
            failed = ProofAttempt(AttemptOutcome.ERROR, None, None, None, f"{backend.name}: {error}")
        if recorded is None:  # it could not be opened
            spent = time.monotonic() - started
            return dataclasses.replace(failed, opening_seconds=spent, lean_seconds=spent)
        return dataclasses.replace(
            failed, opening_seconds=opening, lean_seconds=opening + recorded.lean_seconds, tried=recorded.tried()
        )
    except _CheckFailed as failure:
        assert recorded is not None
        detail = f"the final check could not run: {failure.error}"
        return ProofAttempt(
            AttemptOutcome.ERROR,
            failure.proof,
            None,
            None,
            detail,
            recorded.steps(failure.path),
            lean_seconds=opening + recorded.lean_seconds + sum(c.seconds for _, c in checks),
            opening_seconds=opening,
            tried=recorded.tried(),
        )
    lean_seconds = opening + recorded.lean_seconds + sum(check.seconds for _, check in checks)
    if result.status is not SearchStatus.PROVED:
        outcome = AttemptOutcome.TIMEOUT if result.status is SearchStatus.OUT_OF_TIME else AttemptOutcome.FAILED
        detail = f"search {result.status.value} after {result.expansions} expansions, {result.tactics_run} tactics"
        if checks:
            reasons = "; ".join(checks[-1][1].reasons) or checks[-1][1].verdict
            detail += f"; the final check rejected {len(checks)} proof(s) it found, the last: {reasons}"
        proof = checks[-1][0] if checks else None
        return ProofAttempt(
            outcome,
            proof,
            result,
            None,
            detail,
            lean_seconds=lean_seconds,
            opening_seconds=opening,
            tried=recorded.tried(),
        )
    assert result.proof is not None
    proof, check = checks[-1]
    outcome, detail = _judge_check(theorem, result.proof, check)
    if len(checks) > 1:
        detail += f" (after {len(checks) - 1} proof(s) the final check rejected)"
    return ProofAttempt(
        outcome,
        proof,
        result,
        check,
        detail,
        recorded.steps(result.proof),
        lean_seconds=lean_seconds,
        opening_seconds=opening,
        tried=recorded.tried(result.proof if outcome is AttemptOutcome.PROVED else ()),
    )


# Proofs the final check may reject before a search gives up: each costs a run of the whole
# file, and a search that keeps finding rejected proofs is finding one flaw again and again.
REJECTIONS = 3


class _CheckFailed(Exception):
    """The final check could not run on a path the search found (it ends the attempt)."""

    def __init__(self, proof: str, path: tuple[str, ...], error: LeanAgentError) -> None:
        super().__init__(str(error))
        self.proof, self.path, self.error = proof, path, error


def _judge_check(theorem: Theorem, path: tuple[str, ...], check: FinalCheckResult) -> tuple[AttemptOutcome, str]:
    """The outcome of a found proof (the tactics ``path``), by the final check's verdict, and
    why, for people."""
    if check.accepted:
        beyond = check.nonstandard_axioms
        return AttemptOutcome.PROVED, f"proved in {len(path)} tactics; Lean accepted the file" + (
            f"; non-standard axioms: {', '.join(beyond)}" if beyond else ""
        )
    if check.verdict is Verdict.VACUOUS:
        # Steps are kept for the record only: the theorem is not proved, so nothing is learned.
        return (
            AttemptOutcome.VACUOUS,
            f"Lean accepted the file, but {theorem.full_name} depends on sorryAx (a sorry in its statement "
            "or in what the proof uses): no proof, not written back",
        )
    if check.verdict is Verdict.TIMEOUT:
        return AttemptOutcome.TIMEOUT, "search found a proof; the final check ran out of time"
    reasons = "; ".join(check.reasons) or check.verdict
    return AttemptOutcome.FAILED, f"search found a proof, the final check rejected it: {reasons}"


class TheoremProver:
    """Proves theorems one after another with one generator, keeping one proof environment
    per repository open (the REPL's processes, with their imports loaded, are reused) until
    :meth:`close`; every proof Lean accepts is learned by the generator before the next
    theorem."""

    def __init__(
        self,
        generator: Blend,
        config: ProvingConfig = ProvingConfig(),
        *,
        open_backend: Callable[[Path], ProofBackend],
        runner_for: Callable[[Path], FileRunner] = LeanRunner.for_project,
    ) -> None:
        self.generator = generator
        self.config = config  # the search budgets, the final check's time, whether to learn
        self._open_backend = open_backend
        self._runner_for = runner_for  # the final check's Lean for a checkout
        self._backends: dict[Path, ProofBackend] = {}

    @classmethod
    def load(
        cls,
        config: ProvingConfig,
        *,
        data_dir: Path,
        memory: StepMemory | None = None,
        premises: PremiseSource | None = None,
        ranking: TacticRanking | None = None,
        runner_for: Callable[[Path], FileRunner] = LeanRunner.for_project,
    ) -> TheoremProver:
        """The prover ``config`` describes: the suggester started from ``memory`` (the
        stored proofs' steps), the generator model loaded if there is one (a bad name or
        directory is the user's error), both conditioned on ``premises``, their candidates
        reweighted by ``ranking``; proof environments open on first use."""
        from agent.generators.suggester import StepMemory, TacticSuggester

        suggester = TacticSuggester(memory or StepMemory())
        model = None
        if config.generator:
            from agent.generators.model import HFTacticGenerator

            model = HFTacticGenerator.load(
                config.generator,
                device=config.device,
                max_input_tokens=config.input_len,
                max_tactic_tokens=config.tactic_len,
            )
        share = 1.0 if model is None else SUGGESTER_SHARE if config.with_suggester else 0.0
        return cls(
            Blend(suggester, model, share=share, premises=premises, ranking=ranking),
            config,
            open_backend=config.backend_opener(data_dir),
            runner_for=runner_for,
        )

    @property
    def premises(self) -> PremiseSource | None:
        """Where its generator's premises come from (None: none)."""
        return self.generator.premises

    def with_premises(self, premises: PremiseSource | None) -> TheoremProver:
        """This prover with its generator conditioned on ``premises``; it shares this one's
        proof environments (close this one, not it)."""
        twin = copy.copy(self)
        twin.generator = self.generator.with_premises(premises)
        return twin

    def prove(self, location: str, repo_dir: Path, theorem: Theorem) -> tuple[ProofAttempt, str]:
        """The attempt at ``theorem`` of the repository ``location`` checked out at
        ``repo_dir``, and the name of the proof environment that made it."""
        backend = self._backends.get(repo_dir)
        if backend is None:
            backend = self._backends[repo_dir] = self._open_backend(repo_dir)
        attempt = prove_theorem(
            theorem,
            repo_dir=repo_dir,
            backend=backend,
            generator=self.generator.episode(location, theorem),
            runner=self._runner_for(repo_dir),
            config=self.config,
        )
        if self.config.learn and attempt.outcome is AttemptOutcome.PROVED:
            attempt = dataclasses.replace(attempt, steps=self.generator.learn(location, theorem, attempt.steps))
        return attempt, backend.name

    def close(self) -> None:
        backends, self._backends = self._backends, {}
        for backend in backends.values():
            backend.close()
