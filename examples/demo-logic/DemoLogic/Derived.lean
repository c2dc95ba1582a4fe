import DemoLogic.Basic
import DemoLogic.Answer
import DemoLogic.Quantifiers

/-! Facts derived from the lemmas of the other files: every proof cites one or two of them,
so a premise retriever has something of this project's own to learn. -/

namespace DemoLogic

theorem or_swap_twice {p q : Prop} (h : p ∨ q) : p ∨ q := or_swap (or_swap h)

theorem and_imp_left {p q r : Prop} (h : p ∧ q) (hpr : p → r) : r := modus_ponens (and_left h) hpr

theorem and_imp_right {p q r : Prop} (h : p ∧ q) (hqr : q → r) : r := modus_ponens (and_right h) hqr

theorem swap_then_left {p q : Prop} (h : p ∧ q) : q := and_left (and_swap h)

theorem imp_trans_three {p q r s : Prop} (hpq : p → q) (hqr : q → r) (hrs : r → s) : p → s :=
  imp_trans (imp_trans hpq hqr) hrs

theorem not_not_of_and_right {p q : Prop} (h : p ∧ q) : ¬¬q := not_not_intro (and_right h)

theorem not_not_of_and_left {p q : Prop} (h : p ∧ q) : ¬¬p := not_not_intro (and_left h)

theorem or_of_and_left {p q r : Prop} (h : p ∧ q) : p ∨ r := or_left (and_left h)

theorem or_of_and_right {p q r : Prop} (h : p ∧ q) : q ∨ r := or_left (and_right h)

theorem and_comm_of_and {p q : Prop} (h : p ∧ q) : q ∧ p := by
  exact and_swap h

theorem imp_refl_apply {p : Prop} (hp : p) : p := imp_refl p hp

theorem modus_ponens_twice {p q r : Prop} (hp : p) (hpq : p → q) (hqr : q → r) : r :=
  modus_ponens (modus_ponens hp hpq) hqr

theorem flip_flip_flip (a : Answer) : a.flip.flip.flip = a.flip := Answer.flip_flip a.flip

theorem flip_flip_yes : Answer.yes.flip.flip = Answer.yes := Answer.flip_flip Answer.yes

theorem swap_swap_mk {α : Type} (a b : α) : (Pair.mk a b).swap.swap = Pair.mk a b :=
  Pair.swap_swap (Pair.mk a b)

theorem swap_fst_mk {α : Type} (a b : α) : (Pair.mk a b).swap.fst = b := Pair.swap_fst (Pair.mk a b)

theorem forall_and_right {α : Type} (p q : α → Prop) (h : ∀ x, p x ∧ q x) : ∀ x, q x :=
  fun x => and_right (h x)

theorem forall_right_of_swap {α : Type} (p q : α → Prop) (h : ∀ x, p x ∧ q x) : ∀ x, q x :=
  forall_left q p (forall_swap_and p q h)

theorem exists_of_forall_and {α : Type} [Inhabited α] (p q : α → Prop) (h : ∀ x, p x ∧ q x) : ∃ x, p x :=
  exists_of_forall p (forall_left p q h)

theorem exists_or_of_exists {α : Type} (p q : α → Prop) (h : ∃ x, p x) : ∃ x, p x ∨ q x :=
  exists_or_left p q h

end DemoLogic
