"""What a premise's code states, read from its text (retrieval/statements.py)."""

from __future__ import annotations

import pytest

from retrieval.statements import conclusion, converse, shape, sides

SUCC = "theorem succ_eq_add_one (n : Nat) : succ n = n + 1 := rfl"
ADD_ONE = "theorem add_one (n : Nat) : n + 1 = succ n := rfl"
ADD_COMM = "protected theorem add_comm : ∀ (n m : Nat), n + m = m + n"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        pytest.param(SUCC, "succ n = n + 1", id="after-the-binders"),
        pytest.param(ADD_COMM, "n + m = m + n", id="after-a-universal"),
        pytest.param(
            "theorem t {a : α} (h : a ∈ s) : ∀ x, x :: s ≠ [] := by simp", "x :: s ≠ []", id="cons-is-no-colon"
        ),
    ],
)
def test_conclusion(code: str, expected: str) -> None:
    assert conclusion(code) == expected


def test_sides_are_tokens_with_bound_names_blank_and_after_the_hypotheses() -> None:
    assert sides(SUCC) == (("succ", "_"), ("_", "+", "1"))
    assert sides("theorem t {a b : Nat} (h : a = b) : b = a → a + 0 = b") == (("_", "+", "0"), ("_",))
    assert sides("theorem t (p q : Prop) : p ∧ q ↔ q ∧ p") == (("_", "∧", "_"), ("_", "∧", "_"))
    assert sides("theorem lt (n : Nat) : n < n + 1") is None
    assert sides("def f (x : Nat) : Nat := x + 1") is None


def test_converse_is_one_equation_both_ways_round_and_never_a_symmetric_one() -> None:
    assert converse(SUCC, ADD_ONE) and converse(ADD_ONE, SUCC)
    assert not converse(ADD_COMM, ADD_COMM)  # `simp` orders a commutativity lemma
    assert not converse(SUCC, ADD_COMM)


def test_shape_ignores_names_but_not_numerals_or_notation() -> None:
    assert shape("x + (y + 1)") == shape("a + (b + 1)") != shape("a + (b + 2)")
    assert shape("f x = g y") == shape("h a = k b")
