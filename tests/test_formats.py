"""ReProver's exact texts: a premise as its retriever embeds it, the generator's input of
retrieved premises and goal, and the marks taken out of tactics. The cases named golden
are the issue's; every expected text was computed by running ReProver's own functions,
except for the name that is no valid pattern (ReProver's serialize raises there)."""

from __future__ import annotations

import pytest

from retrieval.formats import augmented_state, premise_text, remove_marks

ADD_ZERO = ("Nat.add_zero_eq", "@[simp] theorem add_zero_eq (n : Nat) : n + 0 = n")
SUCC_NE = ("Nat.succ_ne_zero'", "theorem succ_ne_zero' (n : Nat) : n.succ ≠ 0")


@pytest.mark.parametrize(
    ("full_name", "code", "expected"),
    [
        pytest.param(*ADD_ZERO, "@[simp] theorem <a>Nat.add_zero_eq</a> (n : Nat) : n + 0 = n", id="golden-namespace"),
        pytest.param(
            "Counter.step",
            "structure Counter where\n  step : Nat",
            "structure Counter where\n  <a>Counter.step</a> : Nat",
            id="golden-field",
        ),
        pytest.param("_root_.foo", "theorem _root_.foo : True", "theorem <a>_root_.foo</a> : True", id="golden-root"),
        pytest.param("foo", "theorem _root_.foo : True", "theorem <a>foo</a> : True", id="root-prefix-of-a-plain-name"),
        pytest.param(
            "Nat.Prime.two_le",
            "theorem Prime.two_le {p : Nat} (hp : p.Prime) : 2 ≤ p",
            "theorem <a>Nat.Prime.two_le</a> {p : Nat} (hp : p.Prime) : 2 ≤ p",
            id="longest-suffix-first",
        ),
        pytest.param("«my thm»", "theorem «my thm» : True", "theorem <a>«my thm»</a> : True", id="guillemet-name"),
        pytest.param("Foo.plain", "theorem «plain» : True", "theorem <a>Foo.plain</a> : True", id="guillemets-in-code"),
        pytest.param(
            "X.double",
            "def double : Nat → Nat\n  | n => double n",
            "def <a>X.double</a> : Nat → Nat\n  | n => <a>X.double</a> n",
            id="every-occurrence-after-space",
        ),
        pytest.param("X.f", "def g := (f 0)", "def g := (f 0)", id="not-after-space-unmarked"),
        pytest.param(
            "Foo.mk", "structure Foo where\n  x : Nat", "structure Foo where\n  x : Nat", id="absent-unmarked"
        ),
        pytest.param("A.b", "theorem AXb : T", "theorem <a>A.b</a> : T", id="quirk-dot-matches-any-character"),
        pytest.param(
            "List.get?",
            "def get? (l : List α) : Option α",
            "def <a>List.get?</a>? (l : List α) : Option α",
            id="quirk-question-mark-is-a-quantifier",
        ),
        pytest.param("Set.ℕα", "def ℕα : Type", "def <a>Set.ℕα</a> : Type", id="non-ascii-name"),
        pytest.param("A.«x(»", "def «x(» : T", "def <a>A.«x(»</a> : T", id="no-valid-pattern-taken-literally"),
    ],
)
def test_premise_text(full_name: str, code: str, expected: str) -> None:
    assert premise_text(full_name, code) == expected


GOAL = "n : Nat\n⊢ n + 0 = n"
LONG = ("A.long", "theorem long : " + "x" * 100)
SHORT = ("A.short", "theorem short : T")
SHORT_TEXT = "theorem <a>A.short</a> : T\n\n"


@pytest.mark.parametrize(
    ("state", "premises", "max_len", "expected"),
    [
        pytest.param(
            GOAL,
            [ADD_ZERO, SUCC_NE],
            2048,
            "theorem <a>Nat.succ_ne_zero'</a> (n : Nat) : n.succ ≠ 0\n\n"
            "@[simp] theorem <a>Nat.add_zero_eq</a> (n : Nat) : n + 0 = n\n\n"
            "n : Nat\n⊢ n + 0 = n",
            id="golden-best-next-to-the-goal",
        ),
        pytest.param(GOAL, [], 2048, GOAL, id="no-premises"),
        pytest.param(
            "⊢ T",
            [LONG, SHORT],
            len("⊢ T".encode()) + len(SHORT_TEXT),
            SHORT_TEXT + "⊢ T",
            id="an-overflowing-premise-is-skipped-a-later-shorter-one-fits",
        ),
        pytest.param(
            "⊢ T",
            [SHORT, SHORT],
            len("⊢ T".encode()) + 2 * len(SHORT_TEXT) - 1,
            SHORT_TEXT + "⊢ T",
            id="one-byte-short-of-the-second",
        ),
        pytest.param("⊢ T" * 10, [SHORT], 5, "⊢ T" * 10, id="a-state-over-the-budget-comes-alone-uncut"),
        # ⊢ and ℕ are 3 bytes each: the state is 7 bytes, the premise's text 20 characters and 22 bytes.
        pytest.param(
            "⊢ ℕ", [("A.b", "def b : ℕ")], 7 + 22, "def <a>A.b</a> : ℕ\n\n⊢ ℕ", id="non-ascii-bytes-fit-exactly"
        ),
        pytest.param("⊢ ℕ", [("A.b", "def b : ℕ")], 7 + 21, "⊢ ℕ", id="non-ascii-counted-in-bytes-not-characters"),
    ],
)
def test_augmented_state(state: str, premises: list[tuple[str, str]], max_len: int, expected: str) -> None:
    assert augmented_state(state, premises, max_len) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("rw [<a>Nat.add_comm</a>]", "rw [Nat.add_comm]", id="marked"),
        pytest.param("simp [<a>f</a>, <a>g</a>] at h", "simp [f, g] at h", id="several"),
        pytest.param("exact h", "exact h", id="unmarked"),
    ],
)
def test_remove_marks(text: str, expected: str) -> None:
    assert remove_marks(text) == expected
