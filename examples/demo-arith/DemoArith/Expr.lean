import DemoArith.Defs

/-! Arithmetic expressions, their value, and a transformation that preserves it. -/

namespace DemoArith

/-- Expressions over `Nat` with `+` and `*`. -/
inductive Expr where
  | num : Nat → Expr
  | add : Expr → Expr → Expr
  | mul : Expr → Expr → Expr
  deriving Repr

namespace Expr

/-- The value of an expression. -/
def eval : Expr → Nat
  | num n => n
  | add a b => eval a + eval b
  | mul a b => eval a * eval b

/-- Swap the operands of every operation. -/
def comm : Expr → Expr
  | num n => num n
  | add a b => add (comm b) (comm a)
  | mul a b => mul (comm b) (comm a)

/-- Swapping operands keeps the value. -/
theorem eval_comm (e : Expr) : eval (comm e) = eval e := by
  induction e
  case num n => rfl
  case add a b iha ihb =>
    simp only [comm, eval, iha, ihb]
    exact Nat.add_comm _ _
  case mul a b iha ihb =>
    simp only [comm, eval, iha, ihb]
    exact Nat.mul_comm _ _

theorem eval_add (a b : Expr) : eval (add a b) = eval a + eval b := rfl

theorem eval_double (e : Expr) : eval (add e e) = double (eval e) := by
  rw [eval_add, double]

theorem comm_comm (e : Expr) : comm (comm e) = e := by
  sorry

end Expr

end DemoArith
