"""How to prove: the one configuration object, built at the CLI edge and passed down to every
Ray worker. Apart from the prover (:mod:`agent.proving.theorem`), which imports the tactic
generators: the command line reads its options' defaults from here while it builds its parsers.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.generators.premises import PREMISES_PER_GOAL
from agent.search.tree import SearchConfig
from lean_env.interactive.choice import ProofBackendChoice, open_backend
from lean_env.interactive.interface import TACTIC_TIMEOUT, ProofBackend
from lean_env.interactive.repl.pool import Recycling
from lean_env.lean.build import DEFAULT_BUILD_TIMEOUT
from lean_env.proofs.final_check import DEFAULT_TIMEOUT as FINAL_CHECK_TIMEOUT
from retrieval.formats import GENERATOR_INPUT_LENGTH, GENERATOR_OUTPUT_LENGTH
from retrieval.index_options import IndexOptions
from retrieval.model_files import model_key

# Language servers per theorem by default: two candidates checked at once where the machine
# has two cores. A search that runs out of time gets about 1.5 times the expansions, and the
# control corpus's dev half proved two theorems more at 20 s (docs/evaluate.md, session 43).
DEFAULT_SERVERS = min(2, os.cpu_count() or 1)

# The share of a theorem's time limit one tactic may take unless the user sets a tactic
# timeout. A tactic Lean does not finish (a `simp` that loops until Lean's own limit) then
# costs a quarter of the attempt, not the rest of it, and the search goes on: on the whole
# dev half of tests/lean/run at 20 s, five theorems more than with 20 s per tactic, none
# fewer, in 27% less wall time (docs/evaluate.md, session 45).
TACTIC_SHARE = 0.25


def default_tactic_timeout(time_limit: float) -> float:
    """Seconds per tactic for a theorem's ``time_limit`` when the user sets none."""
    return min(TACTIC_TIMEOUT, TACTIC_SHARE * time_limit)


@dataclass(frozen=True, slots=True)
class ProvingConfig:
    """How to prove: one object, built at the CLI edge and passed down to every Ray worker."""

    # A trained tactic generator (a local directory or a Hugging Face name); None: the
    # built-in suggester alone proposes tactics.
    generator: str | None = None
    # With a generator: also the suggester's candidates, merged with the model's.
    with_suggester: bool = False
    # Where the generator and the retriever run (retrieval.devices.placement). Not part of
    # the identity: a run resumed on another machine goes on (bfloat16 on a GPU may rank a
    # few beams differently from float32, as any other GPU would).
    device: str = "auto"
    # The proof environment that runs tactics.
    backend: ProofBackendChoice = ProofBackendChoice.AUTO
    # Candidates per expansion and the budgets of one theorem's search.
    search: SearchConfig = SearchConfig()
    # Premises per goal from the retriever (when there is one); ReProver's 100, of which those
    # that fit the generator's input are shown.
    premises: int = PREMISES_PER_GOAL
    # Tokens of the generator's input (also the premises' budget in bytes) and of a tactic.
    input_len: int = GENERATOR_INPUT_LENGTH
    tactic_len: int = GENERATOR_OUTPUT_LENGTH
    # Seconds one tactic may run in the proof environment; None: default_tactic_timeout of
    # the search's time limit (read tactic_seconds).
    tactic_timeout: float | None = None
    # Seconds for the final check's Lean run over the whole file.
    check_timeout: float = FINAL_CHECK_TIMEOUT
    # Seconds to build a Lake checkout (its imports, Mathlib's cache) before proving it
    # (lean_env.lean.build); None: no build, the user built it. Not part of the identity: it
    # decides whether Lean can check the files, not what a check says.
    build_timeout: float | None = DEFAULT_BUILD_TIMEOUT
    # 1: prove in this process; more: on that many Ray workers (the same attempts).
    workers: int = 1
    # When a Lean REPL process is replaced by a fresh one (after its uses, past its memory);
    # not part of the identity: the states are replayed, the answers the same.
    repl: Recycling = Recycling()
    # Language servers per theorem with the server backend, each checking a candidate at
    # once on its own core; not part of the identity, as for workers: the verdicts are the same.
    servers: int = DEFAULT_SERVERS
    # The premise index's options (its recall target); not part of the identity, as for the
    # device: the index is held to the target whatever it chose, and near ties may differ.
    index: IndexOptions = IndexOptions()
    # Whether a proof Lean accepted is learned before the next theorem (LeanAgent's online
    # learning). Evaluation turns it off: each theorem is then proved as if it were the only
    # one, so Pass@1 does not depend on the order, and no evaluated proof informs another.
    learn: bool = True
    # Whether the candidates are reweighted by a ranking learned from the tactics earlier
    # attempts tried (agent.generators.ranking), where enough are recorded. Off by default: on
    # the core-library corpora it proved one theorem fewer of 116 (docs/evaluate.md).
    ranking: bool = False

    def identity(self) -> dict[str, Any]:
        """What a resumed run must match: every option that changes the attempts (not the
        number of workers, which does not)."""
        return {
            "generator": model_key(self.generator) if self.generator else None,
            "suggester": self.suggests,
            "backend": str(self.backend),
            "premises": self.premises,
            "input_len": self.input_len,
            "tactic_len": self.tactic_len,
            "candidates": self.search.num_candidates,
            "max_expansions": self.search.max_expansions,
            "time_limit": self.search.time_limit,
            "tactic_timeout": self.tactic_seconds,
            "check_timeout": self.check_timeout,
            "learn": self.learn,
            # Only when on: the runs of before the ranking existed resume as they were.
            **({"ranking": True} if self.ranking else {}),
        }

    @property
    def tactic_seconds(self) -> float:
        """Seconds one tactic may run: the one set, else the time limit's share."""
        if self.tactic_timeout is not None:
            return self.tactic_timeout
        return default_tactic_timeout(self.search.time_limit)

    @property
    def suggests(self) -> bool:
        """Whether the built-in suggester proposes tactics (alone, or beside the model)."""
        return self.generator is None or self.with_suggester

    def backend_opener(self, data_dir: Path) -> Callable[[Path], ProofBackend]:
        """Opens this config's proof environment for a repository directory; picklable, so
        that Ray workers open their own."""
        return functools.partial(
            open_backend,
            self.backend,
            timeout=self.tactic_seconds,
            data_dir=data_dir,
            recycling=self.repl,
            servers=self.servers,
        )
