import DemoArith.Defs

/-! Lemmas about `double`, `sumTo` and `Counter`: proofs by induction, several steps long. -/

namespace DemoArith

theorem double_eq_two_mul (n : Nat) : double n = 2 * n := by
  unfold double
  omega

theorem double_add (a b : Nat) : double (a + b) = double a + double b := by
  have h1 : double (a + b) = a + b + (a + b) := rfl
  have h2 : double a = a + a := rfl
  have h3 : double b = b + b := rfl
  rw [h1, h2, h3]
  omega

theorem sumTo_succ (n : Nat) : sumTo (n + 1) = sumTo n + (n + 1) := rfl

/-- Every number is at most its triangular sum. -/
theorem le_sumTo (n : Nat) : n ≤ sumTo n := by
  induction n
  case zero => exact Nat.zero_le _
  case succ k ih =>
    rw [sumTo_succ]
    omega

/-- Triangular sums grow with their argument. -/
theorem sumTo_mono {m n : Nat} (h : m ≤ n) : sumTo m ≤ sumTo n := by
  induction n
  case zero =>
    have hm : m = 0 := by omega
    subst hm
    exact Nat.le_refl _
  case succ k ih =>
    by_cases hmk : m ≤ k
    · have h1 := ih hmk
      rw [sumTo_succ]
      omega
    · have hm : m = k + 1 := by omega
      subst hm
      exact Nat.le_refl _

theorem sumTo_le_sumTo_double (n : Nat) : sumTo n ≤ sumTo (double n) := by
  have h1 : n ≤ double n := by
    unfold double
    omega
  exact sumTo_mono h1

theorem sumTo_add_le (m n : Nat) : sumTo m + sumTo n ≤ sumTo (m + n) + sumTo (m + n) := by
  have h1 : m ≤ m + n := Nat.le_add_right m n
  have h2 : n ≤ m + n := Nat.le_add_left n m
  have h3 := sumTo_mono h1
  have h4 := sumTo_mono h2
  omega

theorem double_sumTo_succ (n : Nat) :
    double (sumTo (n + 1)) = double (sumTo n) + double (n + 1) := by
  rw [sumTo_succ]
  exact double_add (sumTo n) (n + 1)

theorem double_pos {n : Nat} (h : 0 < n) : 0 < double n := aux n h
where
  aux (k : Nat) (hk : 0 < k) : 0 < double k := by
    unfold double
    omega

set_option maxRecDepth 2000 in
theorem sumTo_ten : sumTo 10 = 55 := rfl

theorem «double two is four» : double 2 = 4 := rfl

theorem _root_.Nat.demo_double_eq (n : Nat) : DemoArith.double n = n + n := rfl

protected theorem zero_add (a : Nat) : 0 + a = a := Nat.zero_add a

namespace Counter

theorem tick_value (c : Counter) : (tick c).value = c.value + 1 := rfl

theorem tick_steps (c : Counter) : (tick c).steps = c.steps + 1 := rfl

theorem tickN_value (n : Nat) : ∀ c : Counter, (tickN n c).value = c.value + n := by
  induction n
  case zero =>
    intro c
    rfl
  case succ k ih =>
    intro c
    show (tickN k (tick c)).value = c.value + (k + 1)
    rw [ih (tick c), tick_value]
    omega

theorem tickN_add (m n : Nat) (c : Counter) :
    (tickN m (tickN n c)).value = c.value + n + m := by
  have h1 := tickN_value m (tickN n c)
  have h2 := tickN_value n c
  rw [h1, h2]

theorem value_le_tickN (n : Nat) (c : Counter) : c.value ≤ (tickN n c).value := by
  have h := tickN_value n c
  rw [h]
  exact Nat.le_add_right c.value n

theorem add_value (c d : Counter) : (c + d).value = c.value + d.value := rfl

end Counter

open Counter in
theorem tick_tick_value (c : Counter) : (tick (tick c)).value = c.value + 2 := by
  have h1 := tick_value (tick c)
  have h2 := tick_value c
  omega

/- Left for the prover. The first three are easy (`rfl`, `simp`, `decide`); the last two
   need real work. -/

theorem double_zero : double 0 = 0 := by
  sorry

theorem add_zero' (a : Nat) : a + 0 = a := by sorry

theorem sumTo_two : sumTo 2 = 3 := by
  sorry

theorem tickN_steps (n : Nat) : ∀ c : Counter, (tickN n c).steps = c.steps + n := by
  sorry

theorem two_mul_sumTo (n : Nat) : 2 * sumTo n = n * (n + 1) := by
  induction n
  case zero => rfl
  case succ k ih =>
    rw [sumTo_succ, Nat.mul_add 2 (sumTo k) (k + 1), ih]
    sorry

end DemoArith
