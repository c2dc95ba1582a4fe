import DemoLists.Basic

/-! Facts about compositions of the maps of `DemoLists.Basic`, each by rewriting with the
lemmas proved there: what a premise retriever should learn to find from the statement. -/

namespace DemoLists

theorem total_append_three (xs ys zs : List Nat) :
    total (xs ++ ys ++ zs) = total xs + total ys + total zs := by
  rw [total_append, total_append]

theorem size_append_three (xs ys zs : List Nat) :
    size (xs ++ ys ++ zs) = size xs + size ys + size zs := by
  rw [size_append, size_append]

theorem total_twice_append (xs ys : List Nat) :
    total (twice (xs ++ ys)) = total (twice xs) + total (twice ys) := by
  rw [twice_append, total_append]

theorem size_twice_append (xs ys : List Nat) : size (twice (xs ++ ys)) = size xs + size ys := by
  rw [size_twice, size_append]

theorem total_twice_twice (xs : List Nat) :
    total (twice (twice xs)) = total xs + total xs + (total xs + total xs) := by
  rw [total_twice, total_twice]

theorem size_twice_twice (xs : List Nat) : size (twice (twice xs)) = size xs := by
  rw [size_twice, size_twice]

theorem total_bump_twice (xs : List Nat) : total (bump (twice xs)) = total xs + total xs + size xs := by
  rw [total_bump, total_twice, size_twice]

theorem size_bump_bump (xs : List Nat) : size (bump (bump xs)) = size xs := by
  rw [size_bump, size_bump]

theorem total_repeatTwice_twice (xs : List Nat) :
    total (repeatTwice (twice xs)) = total xs + total xs + (total xs + total xs) := by
  rw [total_repeatTwice, total_twice]

theorem size_repeatTwice_bump (xs : List Nat) : size (repeatTwice (bump xs)) = size xs + size xs := by
  rw [size_repeatTwice, size_bump]

theorem length_twice (xs : List Nat) : (twice xs).length = xs.length := by
  rw [← size_eq_length, ← size_eq_length, size_twice]

theorem length_bump (xs : List Nat) : (bump xs).length = xs.length := by
  rw [← size_eq_length, ← size_eq_length, size_bump]

theorem total_cons_append (x : Nat) (xs ys : List Nat) : total (x :: xs ++ ys) = x + total xs + total ys := by
  rw [total_append, total_cons]

theorem size_cons_append (x : Nat) (xs ys : List Nat) : size (x :: xs ++ ys) = size xs + 1 + size ys := by
  rw [size_append, size_cons]

theorem total_singleton (x : Nat) : total [x] = x := by
  rw [total_cons, total_nil, Nat.add_zero]

theorem size_singleton (x : Nat) : size [x] = 1 := by
  rw [size_cons, size_nil, Nat.zero_add]

theorem total_pair (x y : Nat) : total [x, y] = x + y := by
  rw [total_cons, total_cons, total_nil, Nat.add_zero]

theorem total_twice_singleton (x : Nat) : total (twice [x]) = x + x := by
  rw [total_twice, total_singleton]

theorem size_twice_singleton (x : Nat) : size (twice [x]) = 1 := by
  rw [size_twice, size_singleton]

theorem total_bump_singleton (x : Nat) : total (bump [x]) = x + 1 := by
  rw [total_bump, total_singleton, size_singleton]

theorem total_repeatTwice_singleton (x : Nat) : total (repeatTwice [x]) = x + x := by
  rw [total_repeatTwice, total_singleton]

theorem size_repeatTwice_twice (xs : List Nat) : size (repeatTwice (twice xs)) = size xs + size xs := by
  rw [size_repeatTwice, size_twice]

theorem total_bump_append (xs ys : List Nat) :
    total (bump (xs ++ ys)) = total xs + total ys + size (xs ++ ys) := by
  rw [total_bump, total_append]

theorem twice_twice_append (xs ys : List Nat) :
    twice (twice (xs ++ ys)) = twice (twice xs) ++ twice (twice ys) := by
  rw [twice_append, twice_append]

theorem size_append_length (xs ys : List Nat) : size (xs ++ ys) = xs.length + ys.length := by
  rw [size_append, size_eq_length, size_eq_length]

theorem bump_twice_append (xs ys : List Nat) : bump (twice (xs ++ ys)) = bump (twice xs) ++ bump (twice ys) := by
  rw [twice_append, bump_append]

theorem total_bump_bump (xs : List Nat) : total (bump (bump xs)) = total xs + size xs + size xs := by
  rw [total_bump, total_bump, size_bump]

theorem size_twice_bump (xs : List Nat) : size (twice (bump xs)) = size xs := by
  rw [size_twice, size_bump]

-- Left for the prover: `rw [size_bump, size_twice]` closes it.
theorem size_bump_twice (xs : List Nat) : size (bump (twice xs)) = size xs := by
  sorry

end DemoLists
