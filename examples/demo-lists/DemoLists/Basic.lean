/-!
# Lists of numbers

A sum, a length, two maps and a doubling, each with the facts the theorems of
`DemoLists.Uses` cite: every one of those proofs names the lemmas it rests on.
-/

namespace DemoLists

/-- The sum of a list. -/
def total : List Nat → Nat
  | [] => 0
  | x :: xs => x + total xs

/-- How many elements a list has. -/
def size : List Nat → Nat
  | [] => 0
  | _ :: xs => size xs + 1

/-- Every element doubled. -/
def twice : List Nat → List Nat
  | [] => []
  | x :: xs => (x + x) :: twice xs

/-- Every element plus one. -/
def bump : List Nat → List Nat
  | [] => []
  | x :: xs => (x + 1) :: bump xs

/-- The list followed by itself. -/
def repeatTwice (xs : List Nat) : List Nat := xs ++ xs

theorem total_nil : total [] = 0 := rfl

theorem total_cons (x : Nat) (xs : List Nat) : total (x :: xs) = x + total xs := rfl

theorem size_nil : size [] = 0 := rfl

theorem size_cons (x : Nat) (xs : List Nat) : size (x :: xs) = size xs + 1 := rfl

theorem total_append (xs ys : List Nat) : total (xs ++ ys) = total xs + total ys := by
  induction xs with
  | nil => simp [total]
  | cons x xs ih =>
    show x + total (xs ++ ys) = x + total xs + total ys
    rw [ih]
    omega

theorem size_append (xs ys : List Nat) : size (xs ++ ys) = size xs + size ys := by
  induction xs with
  | nil => simp [size]
  | cons x xs ih =>
    show size (xs ++ ys) + 1 = size xs + 1 + size ys
    rw [ih]
    omega

theorem total_twice (xs : List Nat) : total (twice xs) = total xs + total xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    show x + x + total (twice xs) = x + total xs + (x + total xs)
    rw [ih]
    omega

theorem size_twice (xs : List Nat) : size (twice xs) = size xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    show size (twice xs) + 1 = size xs + 1
    rw [ih]

theorem total_bump (xs : List Nat) : total (bump xs) = total xs + size xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    show x + 1 + total (bump xs) = x + total xs + (size xs + 1)
    rw [ih]
    omega

theorem size_bump (xs : List Nat) : size (bump xs) = size xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    show size (bump xs) + 1 = size xs + 1
    rw [ih]

theorem total_repeatTwice (xs : List Nat) : total (repeatTwice xs) = total xs + total xs :=
  total_append xs xs

theorem size_repeatTwice (xs : List Nat) : size (repeatTwice xs) = size xs + size xs :=
  size_append xs xs

theorem size_eq_length (xs : List Nat) : size xs = xs.length := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    show size xs + 1 = xs.length + 1
    rw [ih]

theorem twice_append (xs ys : List Nat) : twice (xs ++ ys) = twice xs ++ twice ys := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    show (x + x) :: twice (xs ++ ys) = (x + x) :: (twice xs ++ twice ys)
    rw [ih]

theorem bump_append (xs ys : List Nat) : bump (xs ++ ys) = bump xs ++ bump ys := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    show (x + 1) :: bump (xs ++ ys) = (x + 1) :: (bump xs ++ bump ys)
    rw [ih]

end DemoLists
