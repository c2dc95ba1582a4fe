"""The built-in tactic suggester's cost, without Lean.

A synthetic memory of ``--steps`` stored tactic steps (goals and statements over ``Nat``,
``Prop`` and ``List``, with random variable names; half of them traced goals, half
source statements with the step before) stands in for a large database. Measured, on one
thread:

* **build** -- making the index from the memory (once per prover, at the start of a run);
* **candidates** -- :meth:`TacticSuggester.suggest` for one goal not in the memory: features,
  the k nearest steps, renaming each to the goal, premise templates for ten retrieved
  premises, closers, scores (median and p95 over ``--queries`` goals);
* **learn** -- adding one checked proof's steps to the index;
* **search overhead** -- best-first search per expansion with a generator that answers at
  once and a session that answers at once (every tactic a new state), through the session
  recorder the prover puts between them: what the search adds around Lean and the
  generator; and the same with the suggester as the generator.

    python bench/suggester.py [--quick] [--json OUT] [--steps 100000] [--queries 300]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread, as the requirement is stated

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent.generators.suggester import StepMemory, StoredStep, TacticSuggester  # noqa: E402
from agent.reports.output import table  # noqa: E402
from agent.search.online import RecordingSession  # noqa: E402
from agent.search.tree import Candidate, SearchConfig, best_first_search  # noqa: E402
from lean_env.interactive.interface import TacticResult, TacticState  # noqa: E402
from lean_env.records import Position, Theorem, TheoremStatus, TracedTactic  # noqa: E402

NAMES = ["n", "m", "k", "a", "b", "c", "x", "y", "i", "j"]
HYPS = ["h", "h1", "h2", "hab", "hx", "hn"]
FUNS = ["f", "g", "double", "sumTo", "List.length", "List.reverse", "succ", "pred"]
RELATIONS = ["=", "≤", "<", "≠", "∣"]
TACTICS = [
    "exact Nat.le_refl {0}",
    "rw [Nat.add_comm {0} {1}]",
    "simp [{f}]",
    "omega",
    "induction {0} with\n| zero => rfl\n| succ k ih => simp [ih]",
    "exact {h}",
    "apply Nat.le_trans {h}",
    "cases {h} with\n| inl hp => exact hp\n| inr hq => exact hq",
    "unfold {f}",
    "rw [{p}]",
    "exact {p} {0} {1}",
    "constructor",
    "intro {h}",
]


def term(rng: random.Random, names: Sequence[str], depth: int = 0) -> str:
    roll = rng.random()
    if depth > 2 or roll < 0.35:
        return rng.choice([*names, "0", "1", "2"])
    if roll < 0.7:
        return f"{term(rng, names, depth + 1)} {rng.choice(['+', '*', '-', '++'])} {term(rng, names, depth + 1)}"
    return f"{rng.choice(FUNS)} ({term(rng, names, depth + 1)})"


def goal(rng: random.Random) -> tuple[list[tuple[str, str]], str]:
    names = rng.sample(NAMES, rng.randint(1, 3))
    locals_ = [(n, rng.choice(["Nat", "Nat", "List Nat", "Prop"])) for n in names]
    for h in rng.sample(HYPS, rng.randint(0, 2)):
        locals_.append((h, f"{term(rng, names)} {rng.choice(RELATIONS)} {term(rng, names)}"))
    return locals_, f"{term(rng, names)} {rng.choice(RELATIONS)} {term(rng, names)}"


def pp(locals_: list[tuple[str, str]], target: str) -> str:
    return "".join(f"{n} : {t}\n" for n, t in locals_) + f"⊢ {target}"


def tactic(rng: random.Random, locals_: list[tuple[str, str]], premises: Sequence[str]) -> str:
    names = [n for n, t in locals_ if t in ("Nat", "List Nat", "Prop")] or ["n"]
    hyps = [n for n, t in locals_ if t not in ("Nat", "List Nat", "Prop")] or ["h"]
    return rng.choice(TACTICS).format(
        names[0], names[-1], f=rng.choice(FUNS), h=rng.choice(hyps), p=rng.choice(premises)
    )


def memory(steps: int, seed: int) -> tuple[StepMemory, list[str]]:
    rng = random.Random(seed)
    premises = [f"Bench.lemma_{i}" for i in range(5000)]
    out = []
    while len(out) < steps:
        locals_, target = goal(rng)
        if rng.random() < 0.5:  # a traced goal
            out.append(StoredStep(tactic(rng, locals_, premises), pp(locals_, target), True, None, ()))
        else:  # source: the statement, and a few steps of the proof
            binders = " ".join(f"({n} : {t})" for n, t in locals_)
            statement = f"theorem t{len(out)} {binders} : {target}"
            previous = None
            for _ in range(rng.randint(1, 4)):
                step = tactic(rng, locals_, premises)
                out.append(StoredStep(step, statement, False, previous, (rng.choice(premises),)))
                previous = step
    return StepMemory(tuple(out[:steps]), tuple(premises)), premises


def timed(fn: Callable[[], object], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


class InstantSession:
    """Answers every tactic at once with a new state: the search never finishes early."""

    def __init__(self) -> None:
        self._states = itertools.count()

    @property
    def initial_state(self) -> TacticState:
        return TacticState("n : Nat\n⊢ n + 0 = n", handle=())

    def run_tactic(self, state: TacticState, tactic: str) -> TacticResult:
        return TacticState(f"n : Nat\n⊢ n + {next(self._states)} = n", handle=())

    def close(self) -> None:
        pass

    def __enter__(self) -> InstantSession:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class FixedGenerator:
    """Answers at once with the same candidates: the search's own cost, not a generator's."""

    def __init__(self, n: int) -> None:
        self._candidates = [Candidate(f"tactic{i}", -0.1 * (i + 1)) for i in range(n)]

    def generate(self, state: str, *, premises: Sequence[str] = (), n: int) -> list[Candidate]:
        return self._candidates[:n]

    def observe(self, state: TacticState, tactic: str, outcome: TacticResult) -> None:
        pass


def per_expansion(generator_for: Callable[[], object], expansions: int, candidates: int) -> float:
    """Seconds per expansion of a search over :class:`InstantSession`."""
    episode = generator_for()
    config = SearchConfig(num_candidates=candidates, max_expansions=expansions, time_limit=1e9)
    start = time.perf_counter()
    result = best_first_search(RecordingSession(InstantSession(), episode), episode, config)
    assert result.expansions == expansions, result
    return (time.perf_counter() - start) / expansions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller memory and fewer queries (seconds)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the numbers here")
    parser.add_argument("--steps", type=int, default=100_000, help="stored tactic steps")
    parser.add_argument("--queries", type=int, default=300, help="goals asked for candidates")
    parser.add_argument("--candidates", type=int, default=8, help="candidates per goal (the search's default)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps = 20_000 if args.quick else args.steps
    queries = 60 if args.quick else args.queries
    expansions = 200 if args.quick else 1000

    stored, premise_names = memory(steps, args.seed)
    start = time.perf_counter()
    suggester = TacticSuggester(stored)
    build = time.perf_counter() - start

    rng = random.Random(args.seed + 1)
    goals = [pp(*goal(rng)) for _ in range(queries)]
    retrieved = [[f"<a>{p}</a>" for p in rng.sample(premise_names, 10)] for _ in range(queries)]
    asked = iter(range(10**9))

    def candidates() -> None:
        i = next(asked) % queries
        suggester.suggest(goals[i], previous=None, premises=retrieved[i], n=args.candidates)

    for _ in range(5):  # warm the caches of the statement and goal readers
        candidates()
    suggest = timed(candidates, queries)
    proof = Theorem(
        "Bench.found", "B.lean", Position(1, 1), Position(2, 1), "theorem found : True", "by", TheoremStatus.SORRY
    )
    learned = iter(range(10**9))
    learn = timed(
        lambda: suggester.learn("bench", proof, [TracedTactic("omega", f"k : Nat\n⊢ k + {next(learned)} = k")]), 100
    )
    fixed = per_expansion(lambda: FixedGenerator(args.candidates), expansions, args.candidates)
    with_suggester = per_expansion(
        lambda: suggester.episode("bench", proof), max(50, expansions // 10), args.candidates
    )

    def ms(samples: list[float], q: float) -> float:
        return statistics.quantiles(samples, n=100)[int(q * 100) - 1] * 1e3

    rows = [
        ["build the index", steps, "", build * 1e3, ""],
        ["candidates for one goal", steps, queries, statistics.median(suggest) * 1e3, ms(suggest, 0.95)],
        ["learn one proof step", steps, 100, statistics.median(learn) * 1e3, ms(learn, 0.95)],
        ["search overhead per expansion (no Lean, no generator)", "", expansions, fixed * 1e3, ""],
        [
            "search per expansion with the suggester (no Lean)",
            steps,
            max(50, expansions // 10),
            with_suggester * 1e3,
            "",
        ],
    ]
    print(table(["measure", "stored steps", "samples", "median ms", "p95 ms"], rows))
    print(f"\n{args.candidates} candidates per goal; one thread; requirements: candidates < 10 ms, overhead < 1 ms")
    payload = {
        "steps": steps,
        "queries": queries,
        "candidates": args.candidates,
        "build_ms": build * 1e3,
        "candidates_ms": {"median": statistics.median(suggest) * 1e3, "p95": ms(suggest, 0.95)},
        "learn_ms": {"median": statistics.median(learn) * 1e3, "p95": ms(learn, 0.95)},
        "search_overhead_ms_per_expansion": fixed * 1e3,
        "search_with_suggester_ms_per_expansion": with_suggester * 1e3,
    }
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
