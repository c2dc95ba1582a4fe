"""Found proofs that only restate a premise of the repository (agent/proving/restatements.py)."""

from __future__ import annotations

import pytest
from builders import premise, theorem

from agent.proving.restatements import restated

LEMMAS = [
    premise("Book.add_comm'", code="theorem add_comm' (a b : Nat) : a + b = b + a"),
    premise("Book.inv_cancel", code="theorem inv_cancel [Group α] (x y : α) : x⁻¹ * (x * y) = y := by simp"),
    premise("Book.weaker", code="theorem weaker (a b : Nat) : a + b = b + a ∨ False"),
]
TARGET = theorem("Book.Exercises.add_comm", statement="theorem add_comm (x y : Nat) : x + y = y + x")
GROUP = theorem("Book.cancel", statement="theorem cancel [Group β] (a b : β) : a⁻¹ * (a * b) = b")


@pytest.mark.parametrize(
    ("proof", "target", "expected"),
    [
        pytest.param("by exact add_comm'", TARGET, "Book.add_comm'", id="exact"),
        pytest.param("by\n  apply Book.add_comm'", TARGET, "Book.add_comm'", id="apply-full-name"),
        pytest.param("add_comm' x y", TARGET, "Book.add_comm'", id="term-with-its-binders"),
        pytest.param("@add_comm' _ _", TARGET, "Book.add_comm'", id="explicit-holes"),
        pytest.param("by exact inv_cancel", GROUP, "Book.inv_cancel", id="auto-bound-variables-renamed"),
        pytest.param("by exact weaker", TARGET, None, id="another-statement"),
        pytest.param("by exact add_comm' y x", TARGET, None, id="other-arguments-are-not-the-binders"),
        pytest.param("by\n  rw [add_comm']", TARGET, None, id="not-a-single-invocation"),
        pytest.param("by exact Nat.add_comm", TARGET, None, id="a-library-lemma-is-not-known"),
        pytest.param(None, TARGET, None, id="no-proof"),
    ],
)
def test_a_proof_that_only_invokes_a_lemma_with_the_same_statement_restates_it(proof, target, expected) -> None:
    assert restated(proof, target, LEMMAS) == expected
