import DemoLogic.Basic

/-! Quantifiers, with the conjunction lemmas of `DemoLogic.Basic` as premises. -/

namespace DemoLogic

section Quantifiers

variable {α : Type} (p q : α → Prop)

theorem forall_left (h : ∀ x, p x ∧ q x) : ∀ x, p x := fun x => (h x).1

theorem forall_swap_and (h : ∀ x, p x ∧ q x) : ∀ x, q x ∧ p x := by
  intro x
  exact and_swap (h x)

theorem exists_of_forall [Inhabited α] (h : ∀ x, p x) : ∃ x, p x :=
  ⟨default, h default⟩

theorem exists_or_left (h : ∃ x, p x) : ∃ x, p x ∨ q x := by
  cases h with
  | intro x hx => exact ⟨x, or_left hx⟩

theorem forall_or_left (h : ∀ x, p x) : ∀ x, p x ∨ q x := by
  intro x; exact Or.inl (h x)

-- Easy for a prover: `exact ⟨default, Or.inl (h default)⟩`.
theorem exists_or_of_forall [Inhabited α] (h : ∀ x, p x) : ∃ x, p x ∨ q x := by
  sorry

end Quantifiers

end DemoLogic
