/-!
# Basic propositional logic

Small facts about `∧`, `∨`, `→` and `¬`, most of them one or two steps long.
/- A nested comment inside the module doc: `theorem not_a_theorem : False` is not read. -/
-/

namespace DemoLogic

/-- Conjunction is commutative. -/
theorem and_swap {p q : Prop} (h : p ∧ q) : q ∧ p :=
  ⟨h.2, h.1⟩

/-- Disjunction is commutative. -/
theorem or_swap {p q : Prop} (h : p ∨ q) : q ∨ p := by
  cases h with
  | inl hp => exact Or.inr hp
  | inr hq => exact Or.inl hq

theorem imp_refl (p : Prop) : p → p := fun h => h

theorem modus_ponens {p q : Prop} (hp : p) (hpq : p → q) : q := hpq hp

theorem not_not_intro {p : Prop} (hp : p) : ¬¬p := fun hn => hn hp

@[simp] theorem and_self_iff' (p : Prop) : p ∧ p ↔ p := by
  constructor
  · intro h; exact h.1
  · intro h; exact ⟨h, h⟩

theorem and_left {p q : Prop} (h : p ∧ q) : p := by exact h.1

theorem and_right {p q : Prop} (h : p ∧ q) : q := h.2

theorem or_left {p q : Prop} (hp : p) : p ∨ q := by
  exact Or.inl hp

theorem imp_trans {p q r : Prop} (hpq : p → q) (hqr : q → r) : p → r :=
  fun hp => hqr (hpq hp)

/- A block comment /- with a nested one -/ between declarations. -/

theorem and_swap_swap {p q : Prop} (h : p ∧ q) : p ∧ q := by
  exact and_swap (and_swap h)

-- An easy one left for the prover: `exact ⟨and_swap, and_swap⟩` closes it.
theorem and_comm_iff (p q : Prop) : p ∧ q ↔ q ∧ p := by
  sorry

theorem or_self_iff' (p : Prop) : p ∨ p ↔ p := by sorry

private theorem true_intro' : True := trivial

theorem not_false' : ¬False := fun h => h

end DemoLogic
