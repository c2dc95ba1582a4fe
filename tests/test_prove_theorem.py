"""``prove_theorem``: the final check runs inside the search, so a proof it rejects does not
end the search; against the fake ``lean`` (file check and final check)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fakes import fake_lean

from agent.proving.theorem import REJECTIONS, ProvingConfig, prove_theorem
from agent.search.tree import Candidate, SearchConfig
from lean_env.interactive.filecheck import FileCheckBackend
from lean_env.interactive.interface import TacticResult, TacticState
from lean_env.lean.mock import MockLean
from lean_env.lean.runner import LeanRunner
from lean_env.records import AttemptOutcome

GOALS = {"start": "p : Prop\n⊢ p → p", "intro": "p : Prop\nh : p\n⊢ p"}
# `rename List α => xs` finishes the proof without an error and without the theorem, as the
# 2021 Lean does; the final check finds the theorem missing and rejects it.
SCRIPT = {
    "theorems": {
        "Demo.imp_self'": {
            "goals": GOALS["start"],
            "steps": {
                "intro h": {"goals": GOALS["intro"]},
                "intro h\nrename List α => xs": {"done": True, "undeclared": True},
                "intro h\nrename Nat => n": {"done": True, "undeclared": True},
                "intro h\nrename Bool => b": {"done": True, "undeclared": True},
                "intro h\nexact h": {"done": True},
            },
            "terms": {"by\n  intro h\n  exact h": {"done": True}},
        }
    }
}


class Scripted:
    """An episode proposing fixed tactics per goal, best first."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    def generate(self, state: str, *, n: int) -> list[Candidate]:
        return [Candidate(t, math.log(0.9 - 0.1 * i)) for i, t in enumerate(self.table.get(state, []))][:n]

    def observe(self, state: TacticState, tactic: str, outcome: TacticResult) -> None:
        """Nothing to learn here."""


@pytest.mark.parametrize(
    ("silent", "outcome", "proof"),
    [
        pytest.param(1, AttemptOutcome.PROVED, "by\n  intro h\n  exact h", id="the-next-proof-counts"),
        pytest.param(REJECTIONS, AttemptOutcome.FAILED, "by\n  intro h\n  rename Bool => b", id="the-search-gives-up"),
    ],
)
def test_a_proof_the_final_check_rejects_does_not_end_the_search(
    tmp_path: Path, monkeypatch, silent: int, outcome: AttemptOutcome, proof: str
) -> None:
    repo = fake_lean.demo_repo(tmp_path, monkeypatch, SCRIPT)
    theorem = fake_lean.theorem_record(fake_lean.DEMO_SOURCE, "Demo.imp_self'", "Demo.lean")
    dropping = ["rename List α => xs", "rename Nat => n", "rename Bool => b"][:silent]
    episode = Scripted({GOALS["start"]: ["intro h"], GOALS["intro"]: [*dropping, "exact h"]})
    attempt = prove_theorem(
        theorem,
        repo_dir=repo,
        backend=FileCheckBackend(timeout=20),
        generator=episode,
        runner=LeanRunner.for_project(repo),
        config=ProvingConfig(search=SearchConfig(num_candidates=8), check_timeout=20),
    )
    assert attempt.outcome is outcome and attempt.proof == proof
    assert attempt.search is not None and attempt.search.rejected == (1 if silent == 1 else REJECTIONS - 1)
    if outcome is AttemptOutcome.PROVED:
        assert attempt.detail.endswith("(after 1 proof(s) the final check rejected)")
    else:
        assert "is not declared after the file" in attempt.detail


def test_the_final_checks_lean_is_injected(tmp_path: Path, monkeypatch) -> None:
    """An in-memory Lean (lean_env.lean.mock) stands for the final check's: it rejects the
    first proof the search finds, which the search then drops for the next one, and it is
    given each found proof spliced into the file with the axiom audit after it."""

    def lean(path: str, text: str) -> str:
        if "exact h" not in text:
            return f"{path}:5:2: error: unknown constant 'xs'\n"
        return "'Demo.imp_self'' does not depend on any axioms\n"

    mock = MockLean(lean)
    repo = fake_lean.demo_repo(tmp_path, monkeypatch, SCRIPT)
    theorem = fake_lean.theorem_record(fake_lean.DEMO_SOURCE, "Demo.imp_self'", "Demo.lean")
    episode = Scripted({GOALS["start"]: ["intro h"], GOALS["intro"]: ["rename List α => xs", "exact h"]})
    attempt = prove_theorem(
        theorem,
        repo_dir=repo,
        backend=FileCheckBackend(timeout=20),
        generator=episode,
        runner=mock.for_project(repo),
        config=ProvingConfig(search=SearchConfig(num_candidates=8), check_timeout=20),
    )
    assert (attempt.outcome, attempt.proof) == (AttemptOutcome.PROVED, "by\n  intro h\n  exact h")
    assert attempt.check is not None and attempt.check.axioms == ()
    assert [("rename List α => xs" in t, "exact h" in t) for t in mock.texts] == [(True, False), (False, True)]
    assert all(t.rstrip().endswith("#print axioms Demo.imp_self'") for t in mock.texts)
