import DemoLogic.Basic

namespace DemoLogic

/-- A three-valued answer. -/
inductive Answer where
  | yes
  | no
  | maybe
  deriving Repr, DecidableEq

namespace Answer

/-- Swap `yes` and `no`; `maybe` stays. -/
def flip : Answer → Answer
  | yes => no
  | no => yes
  | maybe => maybe

@[simp] theorem flip_flip (a : Answer) : a.flip.flip = a := by
  cases a <;> rfl

theorem flip_yes : yes.flip = no := rfl

theorem flip_maybe : flip maybe = maybe := by rfl

theorem flip_no : Answer.no.flip = Answer.yes := by
  sorry

end Answer

/-- Two values of one type. -/
structure Pair (α : Type) where
  fst : α
  snd : α
  deriving Repr

namespace Pair

variable {α : Type}

/-- Exchange the two components. -/
def swap (p : Pair α) : Pair α := ⟨p.snd, p.fst⟩

@[simp] theorem swap_fst (p : Pair α) : p.swap.fst = p.snd := rfl

theorem swap_swap (p : Pair α) : p.swap.swap = p := by
  cases p; rfl

theorem mk_swap (a b : α) : (Pair.mk a b).swap = Pair.mk b a := rfl

end Pair

end DemoLogic
