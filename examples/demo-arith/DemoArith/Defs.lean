/-!
# Definitions for the arithmetic demo

Doubling, triangular sums, a step counter and a list sum with a `where` helper.
-/

namespace DemoArith

/-- `double n = n + n`. -/
def double (n : Nat) : Nat := n + n

/-- The triangular sum `0 + 1 + ... + n`. -/
def sumTo : Nat → Nat
  | 0 => 0
  | n + 1 => sumTo n + (n + 1)

/-- A value together with the number of steps that produced it. -/
structure Counter where
  value : Nat
  steps : Nat
  deriving Repr

namespace Counter

/-- One step: both fields go up by one. -/
def tick (c : Counter) : Counter := { value := c.value + 1, steps := c.steps + 1 }

/-- `n` steps. -/
def tickN : Nat → Counter → Counter
  | 0, c => c
  | n + 1, c => tickN n (tick c)

instance : Add Counter where
  add a b := ⟨a.value + b.value, a.steps + b.steps⟩

instance instInhabitedCounter : Inhabited Counter := ⟨⟨0, 0⟩⟩

end Counter

/-- The sum of a list, through an accumulator. -/
def sumList (xs : List Nat) : Nat := go 0 xs
where
  -- the accumulating loop
  go : Nat → List Nat → Nat
    | acc, [] => acc
    | acc, x :: rest => go (acc + x) rest

mutual
  /-- Parity, by mutual recursion. -/
  def isEven : Nat → Bool
    | 0 => true
    | n + 1 => isOdd n
  def isOdd : Nat → Bool
    | 0 => false
    | n + 1 => isEven n
end

end DemoArith
