"""The suggester's help without a trained retriever: the premises a goal names and its
file's lemmas about them (retrieval/lexical.py), and the candidates a goal's shape asks for
(agent.generators.suggester.structural)."""

from __future__ import annotations

import dataclasses

import pytest
from builders import premise, repo_trace, theorem

from agent.generators.goals import goal_view
from agent.generators.suggester import chains, sortings, structural
from lean_env.records import DeclKind, LeanFile, Position, Premise
from retrieval.corpus import PremiseCorpus
from retrieval.formats import PremisesFor
from retrieval.lexical import LexicalRetriever
from retrieval.statements import declares_proposition, field_signature, states_fact

REPO = "/repo"
PREMISES = [
    premise("Ex.Expr", line=1, code="inductive Expr", kind=DeclKind.INDUCTIVE),  # a type: never offered
    premise("Ex.flat", line=2, code="def flat : Expr → Expr"),
    premise("Ex.denote", line=4, code="def denote (ctx : Context) : Expr → Nat"),
    premise("Ex.denote_concat", line=7, code="theorem denote_concat : denote ctx (concat a b) = denote ctx a"),
    premise("Ex.unrelated", line=10, code="theorem unrelated : 1 + 1 = 2"),
    premise("Ex.flat_flat", line=13, code="theorem flat_flat : flat (flat e) = flat e"),
    premise("Ex.later", line=40, code="theorem later : denote ctx (flat e) = 0"),  # after the theorem
    premise("Lib.helper", path="Lib.lean", line=1, code="theorem helper : True"),  # not imported
]
TARGET = theorem("Ex.denote_flat", line=20, path="A.lean")


@pytest.fixture
def premises_for():
    corpus = PremiseCorpus([repo_trace(REPO, premises=PREMISES, theorems=[TARGET])])
    return LexicalRetriever(corpus, k=4).premises_for(REPO, TARGET)


def test_the_goal_s_names_then_the_file_s_lemmas_about_them(premises_for) -> None:
    names = [name for name, _ in premises_for("ctx : Context\ne : Expr\n⊢ denote ctx (flat e) = denote ctx e")]
    # Named by the goal, in its order; then the file's lemmas about them, nearest first.
    assert names == ["Ex.denote", "Ex.flat", "Ex.flat_flat", "Ex.denote_concat"]


def test_nothing_after_the_theorem_nor_unreachable_and_nothing_for_library_names(premises_for) -> None:
    assert premises_for("⊢ later = helper") == []
    assert premises_for("p q : Prop\n⊢ p ∧ q ↔ q ∧ p") == []  # no declaration of the file is named
    assert len(premises_for("⊢ denote ctx (flat e) = flat e")) == 4  # k


def test_an_instance_hypothesis_s_class_makes_no_lemma_about_the_goal() -> None:
    """Every lemma of a file about monads takes `[LawfulMonad m]`: that the goal's instance
    hypotheses name the class says nothing; the goal's `*>` does."""
    declared = [
        premise("LawfulMonad", line=1, code="class LawfulMonad (m : Type → Type) : Prop", kind=DeclKind.CLASS),
        premise("bind_pure", line=3, code="theorem bind_pure [Monad m] [LawfulMonad m] (x : m α) : x >>= pure = x"),
        premise("seqRight_eq", line=5, code="theorem seqRight_eq [LawfulMonad m] (x : m α) : x *> y = id <$> x <*> y"),
    ]
    premises_for = _premises_for_file(declared)
    lemmas = {"bind_pure", "seqRight_eq"}
    names = [name for name, _ in premises_for("inst✝¹ : Monad m\ninst✝ : LawfulMonad m\nx : m α\n⊢ x *> y = y")]
    assert [name for name in names if name in lemmas] == ["seqRight_eq"]
    # Named outside an instance hypothesis, the class is the goal's subject again.
    names = [name for name, _ in premises_for("h : LawfulMonad m\n⊢ x *> y = y")]
    assert [name for name in names if name in lemmas] == ["seqRight_eq", "bind_pure"]


def test_then_the_file_s_lemmas_with_the_goal_s_rarer_notation(premises_for) -> None:
    # `+` is in one lemma of the file; `=` in most, and it counts for nothing.
    assert [name for name, _ in premises_for("n : Nat\n⊢ n + 0 = n")] == ["Ex.unrelated"]


def test_a_double_negation_is_notation_not_a_comment() -> None:
    """Lean prints `-(-a)` as `--a`: in a goal that is two negations, not a comment that
    blanks the target, and the file's lemma with `-` is the goal's."""
    declared = [
        premise("neg_add", line=1, code="theorem neg_add (a : α) : -a + a = 0"),
        premise("mul_one", line=2, code="theorem mul_one (a : α) : a * 1 = a"),
    ]
    assert [name for name, _ in _premises_for_file(declared)("a : α\n⊢ --a = a")] == ["neg_add"]


def _premises_for_file(declared: list[Premise]) -> PremisesFor:
    """The retriever's goal -> premises function for a theorem after ``declared``."""
    target = theorem("after", line=20)
    corpus = PremiseCorpus([repo_trace(REPO, premises=declared, theorems=[target])])
    return LexicalRetriever(corpus, k=10).premises_for(REPO, target)


def _type_declaration(name: str, code: str, fields: list[str], *, kind: DeclKind) -> list[Premise]:
    """A structure or class on line 1 as a trace lists it: the type and its constructor
    at its position, then each field on a line of its own."""
    at_type = [premise(name, line=1, code=code, kind=kind), premise(f"{name}.mk", line=1, code=code, kind=kind)]
    return at_type + [premise(f"{name}.{field}", line=2 + i, code=code, kind=kind) for i, field in enumerate(fields)]


def test_instances_and_types_are_no_premises_but_fields_are() -> None:
    group = "class Group (α : Type u) where\n  mul_left_inv (a : α) : a⁻¹ * a = 1"
    declared = [
        *_type_declaration("Group", group, ["mul_left_inv"], kind=DeclKind.CLASS),
        premise("instGroup", line=4, code="instance : Group Int := ⟨Int.neg_add⟩", kind=DeclKind.INSTANCE),
        premise("inv_inv", line=6, code="theorem inv_inv (a : α) : a⁻¹⁻¹ = a"),
        premise("add_zero", line=7, code="theorem add_zero (a : α) : a + 0 = a"),
    ]
    names = [name for name, _ in _premises_for_file(declared)("inst : Group α\na b : α\n⊢ (a * b)⁻¹ = b⁻¹ * a⁻¹")]
    # The field, about the named `Group`; then, by `⁻¹`, the lemma; nothing shares `+`.
    assert names == ["Group.mul_left_inv", "inv_inv"]


def test_a_goal_s_variables_name_no_declaration_of_the_file() -> None:
    magma = "structure Magma where\n  α : Type u\n  mul : α → α → α"
    declared = [
        *_type_declaration("Magma", magma, ["α", "mul"], kind=DeclKind.STRUCTURE),
        premise("mul_self", line=5, code="theorem mul_self (M : Magma) (a : M.α) : M.mul a a = M.mul a a"),
    ]
    premises_for = _premises_for_file(declared)
    # `α` is the goal's own type, not the field `Magma.α`; `Magma` is the file's.
    assert premises_for("α : Type\na : α\n⊢ a = a") == []
    names = [name for name, _ in premises_for("M : Magma\na : M.α\n⊢ M.mul a a = M.mul a a")]
    assert names == ["mul_self", "Magma.mul", "Magma.α"]


def test_last_the_library_s_lemmas_about_the_goal_s_types_shaped_like_its_target() -> None:
    """The core library's lemmas on `Nat`, most alike in shape first (names do not count:
    `x + y + (z + w)` is `(n + m) + k = n + (m + k)` more than `n + m = m + n`); a lemma
    that looks nothing like the target, in another namespace, or unimported, is not one."""
    init = ".lake/packages/lean4/src/lean/Init/Nat.lean"
    library = [
        premise("Nat.add_comm", path=init, line=1, code="protected theorem add_comm : ∀ (n m : Nat), n + m = m + n"),
        premise(
            "Nat.add_assoc",
            path=init,
            line=3,
            code="protected theorem add_assoc (n m k : Nat) : n + m + k = n + (m + k) := by",
        ),
        premise("Nat.lt_irrefl", path=init, line=5, code="theorem lt_irrefl (n : Nat) : ¬n < n"),
        premise("Nat.add_def", path=init, line=7, code="def add_def : Nat := 0", kind=DeclKind.DEF),
        premise(
            "List.append_assoc", path=init, line=9, code="theorem append_assoc : (as ++ bs) ++ cs = as ++ (bs ++ cs)"
        ),
        premise("Nat.unimported", path="Other.lean", line=1, code="theorem unimported : n + (m + k) = 0"),
    ]
    target = theorem("after", line=20)
    files = [LeanFile("A.lean", ("Init.Nat",)), LeanFile(init), LeanFile("Other.lean")]
    corpus = PremiseCorpus([repo_trace(REPO, premises=library, theorems=[target], files=files)])
    premises_for = LexicalRetriever(corpus, k=10).premises_for(REPO, target)
    names = [name for name, _ in premises_for("x y z w : Nat\n⊢ x + y + (z + w) = x + y + z + w")]
    assert names == ["Nat.add_assoc", "Nat.add_comm"]


def test_numerals_make_a_goal_about_nat_and_a_greater_than_is_a_less_than() -> None:
    """`2 ^ k > 0` names no type, but its numerals are `Nat`s: the library's `Nat` lemmas
    count, and `0 < n ^ m` is its shape; a private lemma of another file never does, nor
    does a `^` in a string or an attribute of the file's own declarations."""
    init = ".lake/packages/lean4/src/lean/Init/Nat.lean"
    declared = [
        premise("Nat.pos_pow", path=init, line=1, code="theorem pos_pow {n : Nat} (m : Nat) (h : 0 < n) : 0 < n^m"),
        premise("Nat.pow_succ", path=init, line=3, code="theorem pow_succ (n m : Nat) : n^(m+1) = n^m * n"),
        premise("Nat.secret", path=init, line=5, code="private theorem secret {n : Nat} : 0 < 2 ^ n"),
        premise("Platform.bits", line=1, code="def bits : Nat := 64"),
        premise("UInt.xor", line=3, code='@[extern c inline "#1 ^ #2"] def UInt.xor (a b : UInt) : UInt := a'),
    ]
    target = theorem("after", line=20)
    files = [LeanFile("A.lean", ("Init.Nat",)), LeanFile(init)]
    corpus = PremiseCorpus([repo_trace(REPO, premises=declared, theorems=[target], files=files)])
    premises_for = LexicalRetriever(corpus, k=10).premises_for(REPO, target)
    assert [name for name, _ in premises_for("⊢ 2 ^ Platform.bits > 0")] == [
        "Platform.bits",
        "Nat.pos_pow",
        "Nat.pow_succ",
    ]
    assert [name for name, _ in premises_for("x₂ : Foo\n⊢ x₂ = x₂")] == []  # a subscript is no numeral


def test_a_field_that_states_a_fact_is_a_lemma_of_its_class_stated_by_its_own_line() -> None:
    """A class of `Prop` in an imported file: its fields are lemmas about it (the goal's
    instance names the class), shaped by their own statements, given as theorems; a data
    structure's field is no lemma."""
    init = ".lake/packages/lean4/src/lean/Init/Control/Lawful.lean"
    lawful = (
        "class LawfulApplicative (f : Type u → Type v) [Applicative f] : Prop where\n"
        "  seqLeft_eq  (x : f α) (y : f β)     : x <* y = const β <$> x <*> y\n"
        "  pure_seq    (g : α → β) (x : f α)\n    : pure g <*> x = g <$> x\n"
        "  comp_map g h x := by\n    simp"
    )
    point = "structure LawfulPoint where\n  x : Nat\n  y : Nat"
    library = [
        *(
            dataclasses.replace(p, path=init)
            for p in _type_declaration(
                "LawfulApplicative", lawful, ["seqLeft_eq", "pure_seq", "comp_map"], kind=DeclKind.CLASS
            )
        ),
        *(
            dataclasses.replace(p, path=init, start=Position(p.start.line + 10, 1))
            for p in _type_declaration("LawfulPoint", point, ["x", "y"], kind=DeclKind.STRUCTURE)
        ),
    ]
    target = theorem("pure_id_seq", line=20)
    files = [LeanFile("A.lean", ("Init.Control.Lawful",)), LeanFile(init)]
    corpus = PremiseCorpus([repo_trace(REPO, premises=library, theorems=[target], files=files)])
    premises_for = LexicalRetriever(corpus, k=10).premises_for(REPO, target)
    goal = "f : Type u_1 → Type u_2\ninst✝ : LawfulApplicative f\nx : f α\nq : LawfulPoint\n⊢ pure id <*> x = x"
    found = premises_for(goal)
    assert [name for name, _ in found] == ["LawfulApplicative.pure_seq", "LawfulApplicative.seqLeft_eq"]
    assert found[0][1] == "theorem LawfulApplicative.pure_seq (g : α → β) (x : f α) : pure g <*> x = g <$> x"


def test_a_fact_field_of_the_file_is_about_its_class() -> None:
    """`mul_comm` shares no notation with `b⁻¹ * a⁻¹ = a⁻¹ * b⁻¹` beyond `*`, which every
    lemma of the file has: it is found as a lemma about `CommGroup`, which the goal names."""
    comm = "class CommGroup (α : Type u) extends Group α where\n  mul_comm (a b : α) : a * b = b * a"
    declared = [
        *_type_declaration("CommGroup", comm, ["mul_comm"], kind=DeclKind.CLASS),
        premise("mul_one", line=6, code="theorem mul_one (a : α) : a * 1 = a"),
    ]
    goal = "α : Type u_1\ninst✝ : CommGroup α\na b : α\n⊢ b⁻¹ * a⁻¹ = a⁻¹ * b⁻¹"
    assert [name for name, _ in _premises_for_file(declared)(goal)][:1] == ["CommGroup.mul_comm"]


def test_a_fact_field_of_a_class_the_goal_has_no_instance_of_comes_after_those_that_apply() -> None:
    """A goal about a `Group`: `CommGroup.mul_comm` (declared nearer) shares its `*` but needs
    an instance the goal lacks, so `Semigroup.mul_assoc`, a field of a class `Group` extends,
    comes first among the lemmas alike in notation."""
    semigroup = "class Semigroup (α : Type u) extends Mul α where\n  mul_assoc (a b c : α) : a * b * c = a * (b * c)"
    group = "class Group (α : Type u) extends Semigroup α, Inv α where\n  mul_left_inv (a : α) : a⁻¹ * a = 1"
    comm = "class CommGroup (α : Type u) extends Group α where\n  mul_comm (a b : α) : a * b = b * a"
    declared = [
        *_type_declaration("Semigroup", semigroup, ["mul_assoc"], kind=DeclKind.CLASS),
        *(
            dataclasses.replace(p, start=Position(p.start.line + 4, 1), end=Position(p.end.line + 4, 1))
            for p in _type_declaration("Group", group, ["mul_left_inv"], kind=DeclKind.CLASS)
        ),
        *(
            dataclasses.replace(p, start=Position(p.start.line + 8, 1), end=Position(p.end.line + 8, 1))
            for p in _type_declaration("CommGroup", comm, ["mul_comm"], kind=DeclKind.CLASS)
        ),
        # Declarations without `*`, as a file has: `*` is rarer than in every one.
        *(
            premise(f"unrelated{i}", line=12 + i, code=f"def unrelated{i} : Nat := {i}", kind=DeclKind.DEF)
            for i in range(6)
        ),
    ]
    goal = "α : Type u_1\ninst✝ : Group α\na b : α\n⊢ a⁻¹ * (a * b) = b"
    names = [name for name, _ in _premises_for_file(declared)(goal)]
    assert names == ["Group.mul_left_inv", "Semigroup.mul_assoc", "CommGroup.mul_comm"]


def test_a_fact_field_of_a_class_the_instance_s_class_extends_is_about_the_goal() -> None:
    """`LawfulMonad extends LawfulApplicative`: with `[LawfulMonad m]`, the goal's `*>` is
    rewritten by `LawfulApplicative.seqRight_eq`, a field of the class extended with the
    goal's rarest notation; among the fields that the instance makes about the goal, those
    with the goal's rarer notation come first."""
    applicative = (
        "class LawfulApplicative (f : Type u → Type v) [Applicative f] extends LawfulFunctor f : Prop where\n"
        "  seqRight_eq (x : f α) (y : f β) : x *> y = const α id <$> x <*> y\n"
        "  pure_seq (g : α → β) (x : f α) : pure g <*> x = g <$> x"
    )
    monad = (
        "class LawfulMonad (m : Type u → Type v) [Monad m] extends LawfulApplicative m : Prop where\n"
        "  pure_bind (x : α) (f : α → m β) : pure x >>= f = f x"
    )
    declared = [
        *_type_declaration("LawfulApplicative", applicative, ["seqRight_eq", "pure_seq"], kind=DeclKind.CLASS),
        *(
            dataclasses.replace(p, start=Position(p.start.line + 5, 1), end=Position(p.end.line + 5, 1))
            for p in _type_declaration("LawfulMonad", monad, ["pure_bind"], kind=DeclKind.CLASS)
        ),
    ]
    goal = "inst✝¹ : Monad m\ninst✝ : LawfulMonad m\nx : m α\ny : m β\n⊢ x *> y = do\n  x\n  y"
    # `pure_seq` has nothing of the goal's rarest notation: inheritance alone is no reason.
    assert [name for name, _ in _premises_for_file(declared)(goal)] == [
        "LawfulApplicative.seqRight_eq",
        "LawfulMonad.pure_bind",
    ]


@pytest.mark.parametrize(
    ("code", "field", "signature", "fact"),
    [
        pytest.param("class C (α : Type) : Prop where\n  refl (a : α) : a ≍ a", "refl", "(a : α) : a ≍ a", True),
        pytest.param(
            "structure S where\n  le_total (a b : Nat) : a ≤ b ∨ b ≤ a", "le_total", None, True, id="relation"
        ),
        pytest.param("structure S where\n  size : Nat\n  size_pos : 0 < size", "size", ": Nat", False, id="data"),
        pytest.param("class C : Prop where\n  comp g h := by simp", "comp", None, False, id="default-only"),
        pytest.param("def size : Nat := 0", "size", None, False, id="no-where"),
    ],
)
def test_a_fields_own_signature_and_whether_it_states_a_fact(
    code: str, field: str, signature: str | None, fact: bool
) -> None:
    found = field_signature(code, field)
    if signature is not None:
        assert found == signature
    assert (found is not None and states_fact(found, in_proposition=declares_proposition(code))) is fact


def test_a_short_name_of_another_namespace_comes_after_every_other_tier() -> None:
    """`pure` in a goal is `Pure.pure`, not `Except.pure` (unless a namespace is open): the
    declarations of another namespace that a short name could mean come last; the theorem's
    own namespace's come first."""
    declared = [
        premise("Except.pure", line=1, code="def Except.pure (a : α) : Except ε α", kind=DeclKind.DEF),
        premise("M.pure", line=2, code="def M.pure (a : α) : M α", kind=DeclKind.DEF),
        premise("M.pure_bind", line=3, code="theorem M.pure_bind : pure a >>= f = f a"),
    ]
    target = theorem("M.bind_pure", line=20)
    corpus = PremiseCorpus([repo_trace(REPO, premises=declared, theorems=[target])])
    premises_for = LexicalRetriever(corpus, k=10).premises_for(REPO, target)
    names = [name for name, _ in premises_for("x : M α\n⊢ x >>= pure = x")]
    assert names == ["M.pure", "M.pure_bind", "Except.pure"]


@pytest.mark.parametrize(
    ("goal", "premises", "wanted", "unwanted"),
    [
        pytest.param(
            "ctx : Context\ne : Expr\n⊢ denote ctx (flat e) = denote ctx e",
            ["Ex.denote", "Ex.flat"],
            ["simp [Ex.denote, Ex.flat]", "induction e <;> simp_all [Ex.denote, Ex.flat]", "cases ctx"],
            ["constructor", "intros"],
            id="data-locals",
        ),
        pytest.param(
            "p q : Prop\nh : p ∧ q\n⊢ q ∧ p",
            [],
            ["cases h", "constructor"],
            ["induction h", "induction p", "simp_all []"],
            id="a-conjunction",
        ),
        pytest.param("a b : Nat\nh : a = b\n⊢ a = b", [], ["exact h"], ["cases h"], id="a-local-is-the-target"),
        pytest.param("⊢ ∀ (n : Nat), n = n", [], ["intros", "intro n"], ["constructor"], id="a-universal"),
        pytest.param(
            "p q r : Prop\nh : p\n⊢ p ∨ q → r → q ∧ r ∨ p ∧ r",
            [],
            ["intro h₁", "intros"],
            ["constructor", "apply Or.inl"],
            id="an-implication-of-a-disjunction",
        ),
        pytest.param(
            "h : p\n⊢ q ∧ r ∨ p ∧ r", [], ["apply Or.inl", "apply Or.inr"], ["constructor"], id="a-disjunction"
        ),
        pytest.param(
            "p q r : Prop\n⊢ (Or _uniq.1 _uniq.2) -> _uniq.3 -> (Or (And _uniq.2 _uniq.3) (And _uniq.1 _uniq.3))",
            [],
            ["intro h"],
            ["apply Or.inl"],
            id="the-2021-lean-prints-connectives-applied",
        ),
        pytest.param("⊢ (Or (And a b) c)", [], ["apply Or.inl"], ["intro h"], id="an-applied-disjunction"),
        pytest.param("n : Nat\n⊢ n + 1 ≠ 0", [], ["intro h"], ["constructor"], id="a-disequality-assumes-its-equation"),
        pytest.param("xs : List α\n⊢ (xs ≠ []) = True", [], [], ["intro h"], id="a-disequality-inside"),
        pytest.param(
            "α : Type\ns t : Set α\nx : α\n⊢ s ⊓ t ≤ s",
            [],
            ["intro x₁", "intro x₁ h"],
            ["intros"],
            id="an-order-that-may-unfold-to-a-universal",
        ),
        pytest.param("f : α → β\n⊢ Injective f", [], ["intro x h"], ["intros"], id="a-predicate-applied"),
        pytest.param(
            "s t : Set α\nx : α\nh : x ∈ s ⊓ t\n⊢ x ∈ s", [], ["cases h"], ["intro x₁"], id="a-membership-unfolds"
        ),
        pytest.param("n : Nat\n⊢ n ≤ n + 1 ∧ n = n", [], [], ["intro x"], id="a-conjunction-of-an-order"),
        pytest.param(
            "h₁ : (a → b) → (b → a) → c\nh₂ : a ↔ b\n⊢ c",
            [],
            ["apply h₁", "exact h₂.1", "exact h₂.2"],
            ["apply h₂", "exact h₁.1"],
            id="hypotheses-that-imply-the-target",
        ),
        pytest.param("α : Type\nxs : List α\n⊢ xs = xs", ["X.p"], ["induction xs"], ["induction α"], id="a-universe"),
        pytest.param(
            "x : Nat\n⊢ (fun (y x : Nat) => y + x + 0) = fun (x y : Nat) => y + x",
            [],
            ["funext y", "funext y x₁"],
            ["funext x", "intros"],
            id="functions-equal-pointwise",
        ),
        pytest.param(
            "⊢ (fun ((a, b) : Nat × Nat) => a) = Prod.fst", [], ["funext x"], ["funext x : Nat × Nat"], id="a-pattern"
        ),
        pytest.param(
            "x : m α\nf g : α → m β\nh : ∀ (a : α), f a = g a\nk : ∀ (a : α), f a → g a\n⊢ x >>= f = x >>= g",
            [],
            ["simp [funext h]", "exact funext h"],
            ["simp [funext k]", "exact funext k"],
            id="a-hypothesis-equal-at-every-argument",
        ),
        pytest.param(
            "α : Sort u\na a' : α\nh : a = a'\n⊢ a ≅ a'",
            [],
            ["subst h", "exact HEq.refl _"],
            ["cases h", "funext x"],
            id="a-local-equal-to-a-term",
        ),
        pytest.param(
            "n : Nat\nh : n + 1 = 2\n⊢ (fun k => k) n = 1",
            [],
            [],
            ["subst h", "funext k"],
            id="no-local-side-no-lambda-side",
        ),
        pytest.param(
            "α β : Sort u\na : α\nb : β\nh : a ≅ b\n⊢ b ≅ a",
            [],
            ["cases h", "exact HEq.refl _"],
            ["induction h"],
            id="a-heterogeneous-equality",
        ),
        pytest.param(
            "α : Type\nz : α\nzs : List α\nh : ∀ (a : α) (as : List α), z :: zs ≠ a :: as\n⊢ z :: zs = []",
            [],
            ["exact absurd rfl (h _ _)", "apply h"],
            ["injection h"],
            id="a-universal-that-ends-in-a-disequality",
        ),
        pytest.param(
            "as bs : List α\nh : ∀ (x y : List α), x = y\nh' : as = bs -> False\n⊢ as = bs",
            [],
            ["apply h", "apply h'"],
            ["exact absurd rfl (h _ _)", "exact absurd rfl (h' _)"],
            id="premises-then-a-proposition",
        ),
        pytest.param(
            "f : Nat → Nat\nh : a :: as = b :: bs\nh₂ : n + 1 = m\n⊢ as = bs",
            [],
            ["injection h"],
            ["apply f", "injection h₂"],
            id="applications-equal",
        ),
        pytest.param("α : Type\nx : α\n⊢ Nonempty α", [], ["constructor"], ["intros"], id="a-type-applied"),
        pytest.param(
            "α : Sort u\nn : Nat\na b : α\nh : a = b\n⊢ ∃ (x : α), x = b ∧ True",
            [],
            ["exists a", "exists b", "constructor"],
            ["exists n", "exists h", "intros"],
            id="an-existential-and-locals-of-its-type",
        ),
        pytest.param(
            "α : Sort u\nval✝ : α\n⊢ ∃ (x : α), True",
            [],
            ["refine ⟨‹α›, ?_⟩"],
            ["exists val✝"],
            id="an-inaccessible-witness-named-by-its-type",
        ),
        pytest.param(
            "α : Type u\nh : α\n⊢ ∀ {x y : Option α}, (∀ (z : α), x = some z ↔ y = some z) → ¬x = y",
            [],
            ["intro x y h₁ h₂", "intro x"],
            ["intro x y h h"],
            id="every-binder-and-premise-by-a-name",
        ),
        pytest.param("⊢ ∀ [Monad m] (x : m α), x = x", [], ["intros"], ["intro x"], id="an-instance-has-no-name"),
        pytest.param(
            "x : Nat\n⊢ (∃ (x : α), p x ∧ q x) → q x", [], ["intro ⟨x₁, h, h₁⟩"], [], id="an-existential-taken-apart"
        ),
        pytest.param("⊢ ¬(a ∧ b ∧ c)", [], ["intro ⟨h, h₁, h₂⟩"], [], id="a-negated-conjunction-taken-apart"),
        pytest.param(
            "σ α : Type\nm : Type → Type\ns : σ\nx : m α\np : α × σ\n⊢ f s x = p",
            [],
            ["cases p", "induction p <;> simp_all"],
            ["cases s", "induction s", "cases x", "cases s <;> cases p <;> simp_all"],
            id="a-local-of-an-abstract-type-has-no-cases",
        ),
        pytest.param("⊢ a ∨ b → c", [], ["intro h"], ["intro ⟨h, h₁⟩"], id="a-disjunction-is-not-taken-apart"),
        pytest.param(
            "a b c : Option Nat\nh : a = b\n⊢ a = c",
            [],
            [
                "cases a <;> cases b <;> simp_all",
                "cases a <;> cases c <;> simp_all",
                "cases b <;> cases c <;> simp_all",
            ],
            ["cases a <;> cases h <;> simp_all"],
            id="two-data-locals-split",
        ),
        pytest.param(
            "n m : Nat\nh : n < m\n⊢ ∃ k, n + k = m",
            [],
            ["exists n", "exists m"],
            ["exists h"],
            id="an-existential-printed-without-a-type",
        ),
        pytest.param(
            "a b : Expr\nh : sort (flat a) = sort (flat b)\n⊢ denote ctx a = denote ctx b",
            [],
            ["have h₁ := congrArg (denote ctx) h"],
            ["constructor"],
            id="one-function-of-both-sides",
        ),
        pytest.param(
            "h : a = b\n⊢ f a + c = f b + c", [], [], ["have h₁ := congrArg (f) h"], id="operands-are-no-function"
        ),
        pytest.param(
            "p q : Prop\nh : ¬p → False\n⊢ p",
            [],
            ["cases Classical.em p <;> simp_all", "cases Classical.em p"],
            ["cases Classical.em q", "cases Classical.em h"],
            id="a-proposition-of-the-target-true-or-false",
        ),
    ],
)
def test_structural_candidates(goal: str, premises: list[str], wanted: list[str], unwanted: list[str]) -> None:
    offered = dict(structural(goal_view(goal), premises))
    assert set(wanted) <= set(offered), offered
    assert not set(unwanted) & set(offered), offered
    assert all(0 < weight <= 1 for weight in offered.values())


def test_the_newest_hypothesis_is_rewritten_by_the_lemmas_alone() -> None:
    view = goal_view("n : Nat\nh : f a = f b\nh₁ : g (f a) = g (f b)\n⊢ a = b")
    offered = dict(structural(view, ["f", "g_f"], ["g_f"]))
    assert [tactic for tactic in offered if " at " in tactic] == ["simp [g_f] at h₁"]
    assert not [tactic for tactic in dict(structural(view, ["f", "g"])) if " at " in tactic]  # no lemmas
    data_last = goal_view("h : f a = f b\nn : Nat\n⊢ a = b")
    assert not [tactic for tactic in dict(structural(data_last, ["f", "g_f"], ["g_f"])) if " at " in tactic]


@pytest.mark.parametrize(
    ("goal", "wanted"),
    [
        pytest.param(
            "n : Nat\nh : n < 55296\n⊢ n < UInt32.size",
            ["apply Nat.ltTrans h", "apply Nat.lt_of_lt_of_le h"],
            id="the-hypothesis-first",
        ),
        pytest.param(
            "a b c : Nat\nh₁ : a ≤ b\nh₂ : b < c\n⊢ a < c",
            [
                "apply Nat.lt_of_le_of_lt h₁",
                "apply Nat.ltOfLeOfLt h₁",
                "refine Nat.ltTrans ?_ h₂",
                "refine Nat.lt_of_le_of_lt ?_ h₂",
                "refine Nat.ltOfLeOfLt ?_ h₂",
            ],
            id="either-hypothesis",
        ),
        pytest.param(
            "n : Nat\nh✝ : n < 55296\n⊢ n < 4294967296",
            ["apply Nat.ltTrans ‹n < 55296›", "apply Nat.lt_of_lt_of_le ‹n < 55296›"],
            id="an-inaccessible-hypothesis-by-its-type",
        ),
        pytest.param(
            "n : Nat\nh✝ : 57343 < n ∧ n < 1114112\n⊢ n < 4294967296",
            ["apply Nat.ltTrans ‹57343 < n ∧ n < 1114112›.2", "apply Nat.lt_of_lt_of_le ‹57343 < n ∧ n < 1114112›.2"],
            id="a-part-of-a-conjunction",
        ),
        pytest.param("n✝ : Nat\nh✝ : n✝ < 55296\n⊢ n✝ < 65536", [], id="a-type-that-cannot-be-written"),
        pytest.param("h : n < m\n⊢ n + 1 < m + 1", [], id="no-side-in-common"),
        pytest.param("h : a < b\n⊢ f <$> x = y", [], id="no-relation"),
        pytest.param("h : a = b\n⊢ a ≤ c", [], id="an-equation-is-no-step"),
    ],
)
def test_a_hypothesis_on_the_way_to_an_order_target_is_chained(goal: str, wanted: list[str]) -> None:
    """Transitivity lemmas of either spelling, those the premises have only."""
    known = {"Nat.ltTrans", "Nat.ltOfLeOfLt", "Nat.lt_of_lt_of_le", "Nat.lt_of_le_of_lt"}
    offered = [tactic for tactic, _ in chains(goal_view(goal), lambda name: name if name in known else None)]
    assert offered == wanted


@pytest.mark.parametrize(
    ("goal", "wanted"),
    [
        pytest.param(
            "x₁ x₂ x₃ x₄ : Nat\n⊢ x₁ + x₂ + (x₃ + x₄) = x₃ + x₁ + x₂ + x₄",
            ["simp [Nat.add_comm, Nat.add_assoc, Nat.add_left_comm]"],
            id="a-sum",
        ),
        pytest.param(
            "n m o : Nat\n⊢ n * (m * o) = m * (n * o)",
            ["simp [Nat.mulComm, Nat.mul_assoc]"],
            id="a-product-in-the-names-known",
        ),
        pytest.param(
            "a b : Nat\n⊢ a * (b + 1) = a * b + a",
            [
                "simp [Nat.add_comm, Nat.add_assoc, Nat.add_left_comm]",
                "simp [Nat.mulComm, Nat.mul_assoc]",
                "simp [Nat.add_comm, Nat.add_assoc, Nat.add_left_comm, Nat.mulComm, Nat.mul_assoc]",
            ],
            id="both",
        ),
        pytest.param("a b : α\n⊢ a + b = b + a", [], id="no-nat-local"),
        pytest.param("n : Nat\nxs : List Nat\n⊢ xs ++ [n] = n :: xs", [], id="no-operation"),
    ],
)
def test_a_sum_of_nats_is_sorted_by_the_lemmas_known(goal: str, wanted: list[str]) -> None:
    """Commutativity and associativity (and left commutativity where known), in either spelling."""
    known = {"Nat.add_comm", "Nat.add_assoc", "Nat.add_left_comm", "Nat.addComm", "Nat.mulComm", "Nat.mul_assoc"}
    offered = [tactic for tactic, _ in sortings(goal_view(goal), lambda name: name if name in known else None)]
    assert offered == wanted
