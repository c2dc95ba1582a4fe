"""Proof text surgery: positions, sorry detection, tactic blocks and indentation."""

from __future__ import annotations

import pytest
from builders import theorem

from lean_env.proofs.text import (
    ProofTextError,
    offset_of,
    position_of,
    proof_problem,
    splice_proof,
    split_tactics,
    tactic_proof,
    uses_sorry,
)
from lean_env.records import Position

TEXT = "ab\n∀ x\n\nlast"


@pytest.mark.parametrize(
    ("position", "offset"),
    [
        pytest.param(Position(1, 1), 0, id="start"),
        pytest.param(Position(2, 3), 5, id="unicode-counts-one"),
        pytest.param(Position(3, 1), 7, id="empty-line"),
        pytest.param(Position(4, 5), 12, id="just-past-the-end"),
    ],
)
def test_offsets_and_positions_round_trip(position, offset):
    assert offset_of(TEXT, position) == offset
    assert position_of(TEXT, offset) == position


@pytest.mark.parametrize("position", [Position(5, 1), Position(1, 4)], ids=["line", "column"])
def test_positions_past_the_text_are_errors(position):
    with pytest.raises(ProofTextError, match="past the end"):
        offset_of(TEXT, position)


@pytest.mark.parametrize(
    ("proof", "expected"),
    [
        pytest.param("by sorry", True, id="sorry"),
        pytest.param("by\n  admit", True, id="admit"),
        pytest.param("by\n  exact (sorry : p)", True, id="term-sorry"),
        pytest.param("by simp -- sorry not needed", False, id="line-comment"),
        pytest.param("by /- sorry -/ simp", False, id="block-comment"),
        pytest.param("by exact sorry_lemma", False, id="identifier-prefix"),
        pytest.param("by exact Foo.sorry", False, id="qualified-name"),
        pytest.param('by simp [show "sorry" = "sorry" from rfl]', False, id="in-a-string"),
        pytest.param("by /- outer /- inner -/ sorry -/ simp", False, id="nested-block-comment"),
        pytest.param('by exact ("--", sorry).2', True, id="dashes-in-a-string-hide-nothing"),
        pytest.param('by exact ("/-", sorry, "-/").2.1', True, id="comment-opener-in-a-string"),
        pytest.param("by exact sorry /- unclosed", True, id="unclosed-comment"),
    ],
)
def test_uses_sorry(proof, expected):
    assert uses_sorry(proof) is expected


@pytest.mark.parametrize(
    ("proof", "needle"),
    [
        pytest.param("by\n  intro h\n  exact h", None, id="plain-proof"),
        pytest.param("by\n  open Nat in simp\n  set_option maxRecDepth 100 in rfl", None, id="in-modifiers"),
        pytest.param("by\n  simp [Finset.card_le, #s] -- #exit later", None, id="card-notation-and-comment"),
        pytest.param('by exact h "#exit theorem"', None, id="words-in-a-string"),
        pytest.param("by\n  trivial\n#exit", "`#exit`", id="exit"),
        pytest.param("by trivial\n\naxiom cheat : False", "`axiom`", id="axiom"),
        pytest.param("by\n  trivial\n  theorem imp_self' : True := trivial", "`theorem`", id="redefinition"),
        pytest.param("by\n  trivial\nend Demo\nnamespace Demo", "`end`", id="scope-change"),
        pytest.param("rfl\n#eval IO.println 1", "`#eval`", id="eval"),
        pytest.param("by\n  intro h\n  sorry", "`sorry`", id="sorry"),
    ],
)
def test_proof_problem(proof, needle):
    problem = proof_problem(proof)
    if needle is None:
        assert problem is None
    else:
        assert problem is not None and needle in problem


@pytest.mark.parametrize(
    ("tactics", "proof"),
    [
        pytest.param((), "by\n  skip", id="empty-is-skip"),
        pytest.param(("intro h", "exact h"), "by\n  intro h\n  exact h", id="two"),
        pytest.param(
            ("cases h with\n| inl a => exact a\n| inr b => exact b",),
            "by\n  cases h with\n  | inl a => exact a\n  | inr b => exact b",
            id="multi-line",
        ),
    ],
)
def test_tactic_proof_and_split_are_inverse(tactics, proof):
    assert tactic_proof(tactics) == proof
    if tactics:
        assert split_tactics(proof) == tactics


@pytest.mark.parametrize(
    ("proof", "expected"),
    [
        pytest.param("rfl", None, id="term"),
        pytest.param("by simp", ("simp",), id="one-line"),
        pytest.param("by\n    intro h\n      trivial\n    exact h", ("intro h\n  trivial", "exact h"), id="deeper"),
        pytest.param("byContra", None, id="not-by"),
    ],
)
def test_split_tactics(proof, expected):
    assert split_tactics(proof) == expected


NEXT_LINE = "namespace N\n  theorem t : True :=\n    sorry\nend N\n"


@pytest.mark.parametrize(
    ("proof_start", "expected"),
    [
        pytest.param(
            Position(3, 5),
            "namespace N\n  theorem t : True :=\n    by\n      skip\n      trivial\nend N\n",
            id="first-token-on-next-line",
        ),
        pytest.param(
            Position(2, 22),
            "namespace N\n  theorem t : True := by\n    skip\n    trivial\nend N\n",
            id="right-after-assign",
        ),
    ],
)
def test_splice_follows_the_block_for_either_proof_start(proof_start, expected):
    from lean_env.proofs.text import splice_proof

    record = theorem(
        "N.t", steps=None, path="N.lean", line=2, start=Position(2, 3), statement="theorem t : True",
        sorries=(), proof_start=proof_start,
    )  # fmt: skip
    text, body = splice_proof(NEXT_LINE, record, "by\n  skip\n  trivial")
    assert text == expected
    assert text[body:].startswith("by\n")


def test_equations_replaced_by_a_tactic_block_get_their_assignment() -> None:
    from lean_env.trace.source import extract_file

    text = "theorem symm' {α} : {a b : α} → a = b → b = a\n| _, _, rfl => rfl\n"
    (equations,) = extract_file(text, path="A.lean").theorems
    spliced, at = splice_proof(text, equations, "by\n  intro a b h\n  exact h.symm")
    assert spliced == "theorem symm' {α} : {a b : α} → a = b → b = a\n:= by\n  intro a b h\n  exact h.symm\n"
    assert spliced[at:].startswith("by")
    assert splice_proof(text, equations, "| _, _, rfl => rfl")[0] == text  # equations stay equations
