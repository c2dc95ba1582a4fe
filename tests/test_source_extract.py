"""Source extraction of single files: names, spans, proof split, steps, sorries, premises,
and recovery from malformed input."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lean_env.records import DeclKind, Position, TheoremStatus
from lean_env.trace.source import extract_file
from lean_env.trace.source.extract import FileExtract


def _extract(source: str) -> FileExtract:
    return extract_file(textwrap.dedent(source).lstrip("\n"), path="T.lean")


def _names(source: str) -> list[str]:
    return [p.full_name for p in _extract(source).premises]


def _theorem(source: str, name: str):
    (found,) = [t for t in _extract(source).theorems if t.full_name == name]
    return found


# --- names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "names"),
    [
        pytest.param("theorem a : True := trivial", ["a"], id="root"),
        pytest.param("namespace A\ntheorem a : True := trivial\nend A", ["A.a"], id="namespace"),
        pytest.param(
            "namespace A.B\ndef f := 1\nend A.B\ndef g := 2",
            ["A.B.f", "g"],
            id="dotted-namespace-closed",
        ),
        pytest.param(
            "namespace A\nnamespace B\ndef f := 1\nend B\ndef g := 2\nend A",
            ["A.B.f", "A.g"],
            id="nested-namespaces",
        ),
        pytest.param("namespace A\nsection S\ndef f := 1\nend S\nend A", ["A.f"], id="section-keeps-namespace"),
        pytest.param("namespace A\ntheorem _root_.top : True := trivial\nend A", ["top"], id="root-prefix"),
        pytest.param("namespace A\ntheorem Foo.bar : True := trivial\nend A", ["A.Foo.bar"], id="dotted-decl-name"),
        pytest.param("theorem «my thm» : True := trivial", ["«my thm»"], id="guillemets-kept"),
        pytest.param("theorem «plain» : True := trivial", ["plain"], id="guillemets-dropped"),
        pytest.param(
            "namespace A\n@[simp] private theorem p : True := trivial\nprotected theorem q : True := trivial\nend A",
            ["A.p", "A.q"],
            id="private-protected-keep-names",
        ),
        pytest.param(
            "noncomputable def f : Nat := 1\npartial def g : Nat → Nat := g\nunsafe def h := 1\nabbrev k := 2",
            ["f", "g", "h", "k"],
            id="modifiers",
        ),
        pytest.param("@[simp,\n  reducible]\ndef f := 1", ["f"], id="multiline-attribute"),
        pytest.param("axiom ax : False\nopaque o : Nat", ["ax", "o"], id="axiom-opaque"),
        pytest.param("example : True := trivial\ndef f := 1", ["f"], id="example-declares-nothing"),
        pytest.param("variable (n : Nat)\nuniverse u\ndef f := n", ["f"], id="variable-universe"),
        pytest.param("set_option maxHeartbeats 0 in\ntheorem t : True := trivial", ["t"], id="set-option-in"),
        pytest.param(
            "mutual\n  def e : Nat → Bool\n    | _ => true\n  def o : Nat → Bool\n    | _ => false\nend\ndef z := 1",
            ["e", "o", "z"],
            id="mutual",
        ),
        pytest.param("noncomputable section\ndef f := 1\nend", ["f"], id="noncomputable-section"),
        pytest.param(
            'def f := 1\nscoped[Foo] notation "𝔽" => Nat\nlocal notation "x" => 1\n#check f\ndef g := 2',
            ["f", "g"],
            id="notation-and-hash-commands",
        ),
        pytest.param(
            'namespace A\nalias LE.le.trans := le_trans\n@[deprecated (since := "2025-01-01")] alias old := x\n'
            "alias ⟨mp, _⟩ := foo_iff\nend A",
            ["A.LE.le.trans", "A.old", "A.mp"],
            id="aliases",
        ),
    ],
)
def test_declaration_names(source: str, names: list[str]) -> None:
    extract = _extract(source)
    assert [p.full_name for p in extract.premises] == names
    assert extract.problems == ()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            "structure Point where\n  x : Nat\n  y z : Nat := 0\n  deriving Repr",
            [
                ("Point", DeclKind.STRUCTURE),
                ("Point.mk", DeclKind.STRUCTURE),
                ("Point.x", DeclKind.STRUCTURE),
                ("Point.y", DeclKind.STRUCTURE),
                ("Point.z", DeclKind.STRUCTURE),
            ],
            id="structure-fields",
        ),
        pytest.param(
            "structure P where\n  mkP ::\n  (a : Nat)\n  b : Nat",
            [
                ("P", DeclKind.STRUCTURE),
                ("P.mkP", DeclKind.STRUCTURE),
                ("P.a", DeclKind.STRUCTURE),
                ("P.b", DeclKind.STRUCTURE),
            ],
            id="custom-constructor",
        ),
        pytest.param(
            "structure Q extends P where\n  c : Nat\n  a := 5",
            [("Q", DeclKind.STRUCTURE), ("Q.mk", DeclKind.STRUCTURE), ("Q.c", DeclKind.STRUCTURE)],
            id="extends-and-default-override",
        ),
        pytest.param(
            "class Shape (α : Type) where\n  area : α → Nat\n  name (x : α) : String",
            [
                ("Shape", DeclKind.CLASS),
                ("Shape.mk", DeclKind.CLASS),
                ("Shape.area", DeclKind.CLASS),
                ("Shape.name", DeclKind.CLASS),
            ],
            id="class-fields",
        ),
        pytest.param(
            "inductive Color | red | green (n : Nat)\n  deriving Repr",
            [
                ("Color", DeclKind.INDUCTIVE),
                ("Color.red", DeclKind.INDUCTIVE),
                ("Color.green", DeclKind.INDUCTIVE),
            ],
            id="inductive-inline",
        ),
        pytest.param(
            "namespace N\ninductive T : Type where\n  | leaf : T\n  | node (l r : T) : T\nend N",
            [
                ("N.T", DeclKind.INDUCTIVE),
                ("N.T.leaf", DeclKind.INDUCTIVE),
                ("N.T.node", DeclKind.INDUCTIVE),
            ],
            id="inductive-where",
        ),
        pytest.param(
            "class inductive Good : Prop where\n  | ok",
            [("Good", DeclKind.INDUCTIVE), ("Good.ok", DeclKind.INDUCTIVE)],
            id="class-inductive",
        ),
        pytest.param(
            "theorem t : True := go\nwhere\n  go : True := trivial\n  other : True := go",
            [("t", DeclKind.THEOREM), ("t.go", DeclKind.THEOREM), ("t.other", DeclKind.THEOREM)],
            id="theorem-where",
        ),
        pytest.param(
            "def f (n : Nat) : Nat := loop n\nwhere loop : Nat → Nat\n  | _ => 0",
            [("f", DeclKind.DEF), ("f.loop", DeclKind.DEF)],
            id="def-where-same-line",
        ),
    ],
)
def test_constructors_fields_and_where_items(source: str, expected: list[tuple[str, DeclKind]]) -> None:
    assert [(p.full_name, p.kind) for p in _extract(source).premises] == expected


@pytest.mark.parametrize(
    ("source", "name"),
    [
        pytest.param("instance : Add Point := ⟨f⟩", "instAddPoint", id="anonymous"),
        pytest.param(
            "instance [Inhabited α] : Inhabited (List α) := ⟨[]⟩",
            "instInhabitedList",
            id="binders-left-out",
        ),
        pytest.param(
            # Long class names in binders once made the binder regex backtrack exponentially
            # (seconds for this one, minutes for longer Mathlib names).
            "instance {C : Type} [PreservesLimitsOfShape C] [HasFiniteCoproductsAndMono C] : "
            "Inhabited (List C) := ⟨[]⟩",
            "instInhabitedList",
            id="long-class-binders",
        ),
        pytest.param("instance (priority := low) myInst : Add Nat := ⟨f⟩", "myInst", id="named-with-priority"),
        pytest.param(
            'namespace A\ninstance : ToString Nat where\n  toString _ := ""\nend A',
            "A.instToStringNat",
            id="where-fields-are-not-names",
        ),
    ],
)
def test_instance_names(source: str, name: str) -> None:
    assert _names(source) == [name]


def test_commands_after_a_declaration_end_it() -> None:
    extract = _extract('def f := 1\nscoped[Foo] notation "𝔽" => Nat\n#eval f\nattribute [simp] f\ndef g := 2')
    assert [p.code for p in extract.premises] == ["def f := 1", "def g := 2"]


@pytest.mark.parametrize(
    "command", ["unif_hint (n : Nat) where\n  |- n =?= 1", "universes u v"], ids=["unification-hint", "universes"]
)
def test_a_command_at_column_one_ends_the_proof_before_it(command: str) -> None:
    extract = _extract(f"theorem t : True := by\n  trivial\n\n{command}\ndef g := 2")
    assert next(t for t in extract.theorems if t.full_name == "t").proof == "by\n  trivial"
    assert [p.full_name for p in extract.premises] == ["t", "g"]


def test_deriving_clause_at_column_one_stays_with_its_type() -> None:
    extract = _extract("structure P where\n  x : Nat\nderiving Repr\n\nderiving instance BEq for P\ndef f := 1")
    assert extract.premises[0].code == "structure P where\n  x : Nat\nderiving Repr"
    assert [p.full_name for p in extract.premises] == ["P", "P.mk", "P.x", "f"]


def test_open_in_prefix_is_not_part_of_the_declaration() -> None:
    extract = _extract("""
        open Nat in
        /-- doc -/
        theorem t : True := trivial
        """)
    (premise,) = extract.premises
    assert premise.start == Position(2, 1)  # at its doc comment, which its code leaves out
    assert premise.code == "theorem t : True"


def test_mathlib_style_commands() -> None:
    extract = _extract("""
        variable {α : Type*} [LE α] {a b : α}
        attribute [ext] LE
        @[inherit_doc] infixl:80 " ⁻¹'o " => Order.Preimage
        lemma le_imp (h : a ≤ b) : (a ≤ b → b = a) ↔ (a ≤ b → b ≤ a) where
          mp h hab := (h hab).le
          mpr h hab := h hab
        theorem eq_iff : a = b ↔ b = a := open scoped Classical in
          eq_comm
        lemma exists_and :
            (∃ i, p i) → ∃ i, p i
          | ⟨a, ha⟩ => ⟨a, ha⟩
        """)
    assert [(t.full_name, t.proof.split()[0]) for t in extract.theorems] == [
        ("le_imp", "where"),
        ("eq_iff", "open"),
        ("exists_and", "|"),
    ]
    assert extract.problems == ()


# --- spans and the proof split -----------------------------------------------------------


def test_spans_proof_split_and_positions() -> None:
    source = """
    namespace Demo

    /-- Adding zero. -/
    @[simp] theorem add_zero' (a : Nat) :
        a + 0 = a := by
      simp -- closes it
      -- trailing comment, not part of the proof

    end Demo
    """
    extract = _extract(source)
    (thm,) = extract.theorems
    assert thm.full_name == "Demo.add_zero'"
    assert thm.path == "T.lean"
    assert thm.start == Position(3, 1)  # the doc comment
    assert thm.statement == "theorem add_zero' (a : Nat) :\n    a + 0 = a"
    assert thm.proof_start == Position(5, 18)  # the proof's first token, `by`
    assert thm.proof == "by\n  simp"
    assert thm.end == Position(6, 7)  # after the last proof character; comments after it excluded
    assert thm.status is TheoremStatus.PROVEN
    assert [t.tactic for t in thm.tactics] == ["simp"]
    assert all(t.state_before is None and t.state_after is None for t in thm.tactics)
    (premise,) = extract.premises
    assert (premise.start, premise.end) == (Position(3, 1), Position(6, 7))
    assert premise.kind is DeclKind.THEOREM


def test_equation_proof_starts_at_first_bar() -> None:
    thm = _theorem(
        """
        theorem t : ∀ n : Nat, n = n
          | 0 => rfl
          | _ + 1 => rfl
        """,
        "t",
    )
    assert thm.proof_start == Position(2, 3)
    assert thm.proof.startswith("| 0 => rfl")
    assert thm.statement == "theorem t : ∀ n : Nat, n = n"
    assert thm.tactics == () and thm.num_steps == 1


def test_equations_at_column_one() -> None:
    extract = _extract("private def f : Nat → Nat\n| 0 => 1\n| n + 1 => f n\ntheorem t : f 0 = 1 := rfl")
    assert extract.problems == ()
    assert [p.code.splitlines()[-1] for p in extract.premises] == [
        "| n + 1 => f n",
        "theorem t : f 0 = 1",
    ]


@pytest.mark.parametrize("opener", ["fun", "λ", "match r with"])
def test_alternatives_in_the_statement_are_no_equations(opener: str) -> None:
    """The 2021 core library's `ExceptT.run_bind` states a `fun` by alternatives, one per line."""
    statement = (
        f"theorem t (r : Option Nat)\n    : (r.bind {opener}\n         | some x => some x\n         | none => none) = r"
    )
    thm = _theorem(f"{statement} :=\n  rfl", "t")
    assert thm.statement == statement
    assert thm.proof == "rfl"
    bare = f"theorem u : Option Nat → Option Nat = {opener}\n  | some x => some x\n  | none => none :=\n  rfl"
    assert _theorem(bare, "u").proof == "rfl"


def test_where_clause_is_outside_the_proof() -> None:
    thm = _theorem(
        """
        theorem t : True := by
          exact go
        where
          go : True := sorry
        """,
        "t",
    )
    assert thm.proof == "by\n  exact go"
    assert thm.end == Position(2, 11)
    assert thm.status is TheoremStatus.PROVEN  # the sorry belongs to `t.go`
    assert thm.premises == ("t.go",)


def test_statement_may_hold_absolute_value_bars_and_named_arguments() -> None:
    thm = _theorem("theorem t (f : (x : Nat) → Nat := id) : |a| = |a| := rfl", "t")
    assert thm.statement == "theorem t (f : (x : Nat) → Nat := id) : |a| = |a|"
    assert thm.proof == "rfl"


def test_a_let_in_the_statement_keeps_its_own_assignment() -> None:
    thm = _theorem("theorem ex : let x := 1; let y : Nat := x; y < 2 := by\n  intro x y\n  decide", "ex")
    assert thm.statement == "theorem ex : let x := 1; let y : Nat := x; y < 2"
    assert thm.proof == "by\n  intro x y\n  decide"
    assert _extract("def f : Nat := let x := 1; x").premises[0].code == "def f : Nat := let x := 1; x"


# --- tactic steps ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("proof", "steps"),
    [
        pytest.param("by\n  intro h\n  exact h", ["intro h", "exact h"], id="layout"),
        pytest.param("by intro h; exact h", ["intro h", "exact h"], id="semicolon-splits"),
        pytest.param("by simp <;> omega", ["simp <;> omega"], id="all-goals-combinator-joins"),
        pytest.param(
            "by\n  constructor\n  · intro h\n    · exact h\n  · simp",
            ["constructor", "· intro h\n    · exact h", "· simp"],
            id="bullets-top-level-only",
        ),
        pytest.param(
            "by\n  induction n with\n  | zero => simp\n  | succ k ih => simp [ih]",
            ["induction n with\n  | zero => simp\n  | succ k ih => simp [ih]"],
            id="induction-alternatives-continue",
        ),
        pytest.param(
            "by\n  have h : True := by simp; trivial\n  exact h",
            ["have h : True := by simp; trivial", "exact h"],
            id="semicolon-inside-nested-by",
        ),
        pytest.param("by\n  rw [a,\n    b]\n  simp", ["rw [a,\n    b]", "simp"], id="multiline-step"),
        pytest.param("by (simp; ring)", ["(simp; ring)"], id="semicolon-in-parens"),
        pytest.param("by\n  try simp; ring\n  done", ["try simp; ring", "done"], id="try-takes-sequence"),
        pytest.param(
            "by\n  simp -- note\n  -- a comment line\n\n  omega",
            ["simp", "omega"],
            id="comments-and-blank-lines",
        ),
        pytest.param(
            "by\n  calc 1 = 1 := rfl\n    _ = 1 := rfl",
            ["calc 1 = 1 := rfl\n    _ = 1 := rfl"],
            id="calc-chain",
        ),
        pytest.param("by\n  cases h\n  <;> simp", ["cases h\n  <;> simp"], id="leading-combinator-continues"),
        pytest.param("by simp\n", ["simp"], id="same-line"),
        pytest.param(
            "by\n  case zero => rfl\n  case succ => simp",
            ["case zero => rfl", "case succ => simp"],
            id="case-steps",
        ),
        pytest.param("by\n  next => simp; rfl", ["next => simp; rfl"], id="next-takes-sequence"),
        pytest.param(
            "by {\n  induction xs;\n  exact rfl;\n  exact absurd rfl $ h _ _\n}",
            ["induction xs", "exact rfl", "exact absurd rfl $ h _ _"],
            id="braced-block-is-its-sequence",
        ),
        pytest.param("by { simp }", ["simp"], id="braced-one-line"),
        pytest.param("by\n  { simp }\n  rfl", ["{ simp }", "rfl"], id="braced-step-of-a-block"),
        pytest.param("by { simp } <;> rfl", ["{ simp } <;> rfl"], id="braced-then-more"),
    ],
)
def test_top_level_tactic_steps(proof: str, steps: list[str]) -> None:
    thm = _theorem(f"theorem t : True := {proof}", "t")
    assert [t.tactic for t in thm.tactics] == steps
    assert thm.num_steps == len(steps)


@pytest.mark.parametrize(
    "proof",
    [
        pytest.param("fun h => h", id="lambda"),
        pytest.param("⟨by simp, by simp⟩", id="anonymous-constructor-with-by"),
        pytest.param("\n  Nat.le_refl _", id="next-line-term"),
    ],
)
def test_term_proofs_have_no_steps_and_count_as_one(proof: str) -> None:
    thm = _theorem(f"theorem t : True := {proof}", "t")
    assert thm.tactics == ()
    assert thm.num_steps == 1


# --- sorries -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "positions"),
    [
        pytest.param("theorem t : True := by sorry", [(1, 24)], id="tactic"),
        pytest.param("theorem t : True := sorry", [(1, 21)], id="term"),
        pytest.param(
            "theorem t : True ∧ True := by\n  constructor\n  · sorry\n  · exact sorry",
            [(3, 5), (4, 11)],
            id="several",
        ),
        pytest.param(
            'theorem t : True := by\n  -- sorry\n  /- sorry -/ trivial -- "sorry"\n  have := "sorry"\n  trivial',
            [],
            id="comments-and-strings-ignored",
        ),
        pytest.param("theorem t : True := by exact sorryAx _ false", [], id="longer-identifier"),
        pytest.param("theorem t : True := by\n  admit", [(2, 3)], id="admit-counts-as-sorry"),
    ],
)
def test_sorries(source: str, positions: list[tuple[int, int]]) -> None:
    thm = _theorem(source, "t")
    assert thm.sorries == tuple(Position(*p) for p in positions)
    assert thm.status is (TheoremStatus.SORRY if positions else TheoremStatus.PROVEN)


def test_sorry_steps_and_num_steps() -> None:
    thm = _theorem("theorem t (a : Nat) : a + 0 = a := by\n  simp\n  sorry", "t")
    assert [t.tactic for t in thm.tactics] == ["simp", "sorry"]
    assert thm.num_steps == 0  # sorry theorems are the curriculum's "no proof" case


# --- premises ----------------------------------------------------------------------------

_LIB = """
namespace A
def foo : Nat := 1
theorem foo_eq : foo = 1 := rfl
protected theorem prot : True := trivial
private theorem priv : True := trivial
structure Pt where
  x : Nat
inductive Color | red | blue
end A
"""


@pytest.mark.parametrize(
    ("use", "premises"),
    [
        pytest.param(
            "namespace A\ntheorem t : True := by\n  simp [foo, foo_eq]\nend A",
            ["A.foo", "A.foo_eq"],
            id="namespace",
        ),
        pytest.param("open A\ntheorem t : True := by simp [foo]", ["A.foo"], id="open"),
        pytest.param("open A in\ntheorem t : True := by simp [foo]", ["A.foo"], id="open-in"),
        pytest.param(
            "open A (foo_eq)\ntheorem t : True := by simp [foo_eq, foo]",
            ["A.foo_eq"],
            id="open-explicit",
        ),
        pytest.param("open A renaming foo → bar\ntheorem t : True := by simp [bar]", ["A.foo"], id="open-renaming"),
        pytest.param("section\nopen A\nend\ntheorem t : True := by simp [foo]", [], id="open-ends-with-section"),
        pytest.param("namespace A\ntheorem t : True := by exact prot\nend A", [], id="protected-needs-qualifier"),
        pytest.param("open A\ntheorem t : True := by exact A.prot", ["A.prot"], id="protected-qualified"),
        pytest.param("theorem t : True := A.priv", ["A.priv"], id="private-same-file"),
        pytest.param("theorem t : True := A.foo_eq.symm ▸ rfl", ["A.foo_eq"], id="field-access-on-constant"),
        pytest.param(
            "namespace B\ntheorem foo : True := _root_.A.foo_eq ▸ trivial\nend B",
            ["A.foo_eq"],
            id="root-reference",
        ),
        pytest.param(
            "theorem t : True := ⟨A.Pt.mk 1, A.Pt.x p, A.Color.red⟩",
            ["A.Pt.mk", "A.Pt.x", "A.Color.red"],
            id="constructors-fields",
        ),
        pytest.param("open A\ntheorem t : True := by cases c <;> exact .red", [], id="dot-notation-unseen"),
        pytest.param('theorem t : True := by\n  -- A.foo\n  exact "A.foo"', [], id="comments-strings"),
        pytest.param("theorem t : True := by\n  intro foo\n  exact h", [], id="locals"),
        pytest.param(
            "namespace A\ntheorem t : True := by\n  induction n\n  case red => exact foo\nend A",
            ["A.foo"],
            id="case-tag-not-a-premise",
        ),
        pytest.param("theorem t : True := t", [], id="self-reference"),
        pytest.param("theorem t : True := later\ntheorem later : True := trivial", [], id="later-declaration"),
        pytest.param(
            "theorem t : True := by\n  rw [A.foo_eq]\n  exact A.foo_eq ▸ A.foo_eq",
            ["A.foo_eq"],
            id="deduplicated",
        ),
    ],
)
def test_premises(use: str, premises: list[str]) -> None:
    extract = _extract(_LIB + use)
    (thm,) = [t for t in extract.theorems if t.full_name in ("t", "A.t", "B.foo")]
    assert list(thm.premises) == premises


def test_step_premises_and_order() -> None:
    thm = _theorem(
        textwrap.dedent(_LIB).lstrip("\n")
        + "open A\ntheorem t : True := by\n  rw [foo_eq]\n  simp [foo, foo_eq]\n  trivial",
        "t",
    )
    assert [t.premises for t in thm.tactics] == [("A.foo_eq",), ("A.foo", "A.foo_eq"), ()]
    assert thm.premises == ("A.foo_eq", "A.foo")


# --- malformed input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "line", "reason"),
    [
        pytest.param(
            "/- never closed\ntheorem ok : True := trivial",
            1,
            "unterminated block comment",
            id="comment",
        ),
        pytest.param(
            'def s := "never closed\ntheorem ok : True := trivial',
            1,
            "unterminated string literal",
            id="string",
        ),
        pytest.param(
            "theorem := nonsense\ntheorem ok : True := trivial",
            1,
            "theorem without a name",
            id="no-name",
        ),
        pytest.param(
            "theorem bad : (True := trivial\ntheorem ok : True := trivial",
            1,
            "unbalanced bracket",
            id="unbalanced",
        ),
        pytest.param("end Nope\ntheorem ok : True := trivial", 1, "'end Nope' closes no open", id="stray-end"),
        pytest.param("theorem bad : True\ntheorem ok : True := trivial", 1, "no ':='", id="no-proof"),
    ],
)
def test_malformed_input_is_recorded_and_reading_goes_on(source: str, line: int, reason: str) -> None:
    extract = extract_file(source, path="Bad.lean")
    assert any(p.line == line and reason in p.reason and p.path == "Bad.lean" for p in extract.problems), (
        extract.problems
    )
    ok = [t for t in extract.theorems if t.full_name == "ok"]
    assert len(ok) == 1 and ok[0].proof == "trivial" and ok[0].start == Position(2, 1)


def test_theorem_without_proof_is_kept_without_one() -> None:
    extract = extract_file("theorem bad : True\n", path="Bad.lean")
    (thm,) = extract.theorems
    assert thm.proof is None and thm.proof_start is None and thm.num_steps == 0


def test_garbage_does_not_raise() -> None:
    garbage = "@@@ ((( ]]] := := | | theorem\n/-\n\"\n'\n#eval ⟨\nend\nend\n" * 5
    extract = extract_file(garbage + "theorem ok : True := trivial\n", path="G.lean")
    assert [t.full_name for t in extract.theorems][-1] == "ok"
    assert extract.problems


_LEAN_ALPHABET = list("ab h'x·;|:=()[]{}⟨⟩\"'-/!#@«»\n\n  ") + [
    "theorem ",
    "def ",
    "by ",
    "sorry",
    "namespace A\n",
    "end ",
    "where ",
    "structure S where\n",
    "open A in ",
    "/-",
    "-/",
    "--",
    "instance : ",
    "mutual\n",
    "@[simp] ",
    "case z => ",
    "\n  ",
]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(_LEAN_ALPHABET), max_size=80).map("".join))
def test_arbitrary_text_never_raises(text: str) -> None:
    extract = extract_file(text, path="F.lean")
    for thm in extract.theorems:
        assert thm.start <= thm.end
        if thm.proof_start is not None:
            assert thm.start <= thm.proof_start <= thm.end
    for premise in extract.premises:
        assert premise.start <= premise.end
    for problem in extract.problems:
        assert 1 <= problem.line <= text.count("\n") + 1


def test_extraction_is_deterministic() -> None:
    source = textwrap.dedent(_LIB) + "open A\ntheorem t : True := by simp [foo]\n"
    assert extract_file(source, path="T.lean") == extract_file(source, path="T.lean")
