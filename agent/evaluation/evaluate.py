"""Pass@1 on held-out theorems that have proofs (``leanagent evaluate``), ReProver's protocol.

For each chosen theorem that the repository proves, that proof alone is hidden (the file's
other theorems keep theirs), the search runs as ``prove`` runs it, and Lean checks the file
with the proof found. Nothing of an evaluated proof reaches the prover:

* the suggester's memory (the stored proofs' steps) leaves out the steps of every theorem
  being evaluated, not only of the one being proved;
* found proofs are not learned during the evaluation (``ProvingConfig.learn`` off), so each
  theorem is proved as if it were the only one and Pass@1 does not depend on the order;
* the retriever, when there is one, offers only premises accessible at the theorem (as for
  proving): the evaluated theorem is not among them; ``--split test`` evaluates on the
  retriever's own held-out split, so a retriever that ``run`` trained never sees the
  theorems it is evaluated on.

The axiom audit compares with the original: Lean prints the axioms of each evaluated theorem
with the file's own proofs (one run per file), and a found proof is vacuous when it depends
on ``sorryAx`` or a non-standard axiom that the original proof does not; one that needs
``sorryAx`` where the original needs it too (Lean 4 of 2021 compiles array-literal ``match``
through it) is no worse than the original, and counts.

Attempts are recorded under an evaluation run (resumable like ``prove``): the theorems are
proved already, so nothing is marked proved and nothing is written back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.proving.attempts import AttemptReport
from agent.proving.config import ProvingConfig
from agent.proving.repositories import RepositoryProver
from agent.proving.scale import ProofDone
from agent.proving.targets import JobTargets, checkout_all
from agent.proving.theorem import ProofAttempt
from agent.proving.theorem_refs import read_theorem_refs, resolve_refs
from curriculum.difficulty import Bucket, bucket
from curriculum.results import StoredTheorem, TheoremKey, theorem_key
from curriculum.store import Store
from lean_env.data_layout import DataLayout
from lean_env.errors import LeanAgentError, UserInputError
from lean_env.lean.runner import FileRunner, LeanRunner
from lean_env.proofs.axioms import SORRY_AXIOM, nonstandard
from lean_env.records import AttemptOutcome, RepoSpec, TheoremStatus
from retrieval.formats import RETRIEVER_LENGTH
from retrieval.split import SPLIT_SEED, TEST_FRACTION, split

if TYPE_CHECKING:
    from retrieval.calibration import IndexQuality

log = logging.getLogger(__name__)

# The confidence of the interval around each Pass@1.
CONFIDENCE = 0.95
# Budgets (seconds) at which the report reads the Pass@1-against-time curve.
BUDGET_MARKS = (1.0, 5.0, 10.0, 20.0, 60.0, 300.0, 600.0)


@dataclass(frozen=True, slots=True)
class Selection:
    """Which stored theorems with proofs to evaluate."""

    repo: str | None = None  # a repository spec; None: every stored repository
    theorems: Path | None = None  # a file: one NAME or PATH:NAME per line
    # The retriever's held-out split (retrieval.split, with its fraction and seed).
    split_test: bool = False
    test_fraction: float = TEST_FRACTION
    split_seed: int = SPLIT_SEED
    # A LeanDojo Benchmark 4 directory whose `test` split of this strategy is evaluated.
    benchmark: Path | None = None
    benchmark_split: str = "random"
    sample: int | None = None  # a seeded sample of this many (of the split, with split_test)
    seed: int = 0

    def identity(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "theorems": None if self.theorems is None else str(self.theorems.resolve()),
            "split": {"test_fraction": self.test_fraction, "seed": self.split_seed} if self.split_test else None,
            "benchmark": None
            if self.benchmark is None
            else {"directory": str(self.benchmark.resolve()), "split": self.benchmark_split},
            "sample": None if self.sample is None else {"n": self.sample, "seed": self.seed},
        }


@dataclass(frozen=True, slots=True)
class PassRate:
    """Proved of attempted, with a Wilson score interval at :data:`CONFIDENCE`."""

    proved: int
    total: int
    low: float
    high: float

    @classmethod
    def of(cls, proved: int, total: int) -> PassRate:
        if total == 0:
            return cls(0, 0, 0.0, 1.0)
        from scipy.stats import binomtest

        interval = binomtest(proved, total).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
        return cls(proved, total, float(interval.low), float(interval.high))

    @property
    def rate(self) -> float:
        return self.proved / self.total if self.total else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "proved": self.proved,
            "total": self.total,
            "pass_at_1": round(self.rate, 4),
            "interval": [round(self.low, 4), round(self.high, 4)],
        }

    def text(self) -> str:
        return f"{100 * self.rate:.1f}% ({self.proved}/{self.total}; {100 * self.low:.1f}-{100 * self.high:.1f}%)"


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """What one evaluation run found: one attempt per chosen theorem, in selection order."""

    run_id: int
    resumed: bool
    attempts: tuple[AttemptReport, ...]
    buckets: Mapping[TheoremKey, Bucket]  # each evaluated theorem's curriculum bucket
    time_limit: float  # the search's wall-clock budget per theorem
    # The retriever's premise index: its kind and measured recall, served queries included
    # (None: no retriever, or Ray workers').
    index: IndexQuality | None = None

    @property
    def overall(self) -> PassRate:
        return PassRate.of(sum(a.proved for a in self.attempts), len(self.attempts))

    def by(self, group: Callable[[AttemptReport], str]) -> dict[str, PassRate]:
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for attempt in self.attempts:
            counts[group(attempt)][0] += attempt.proved
            counts[group(attempt)][1] += 1
        return {name: PassRate.of(proved, total) for name, (proved, total) in counts.items()}

    @property
    def by_repository(self) -> dict[str, PassRate]:
        return self.by(lambda a: a.repository)

    @property
    def by_bucket(self) -> dict[str, PassRate]:
        return self.by(lambda a: self.buckets.get(a.key, Bucket.UNKNOWN).value)

    def curve(self) -> list[tuple[float, float]]:
        """Pass@1 against the time budget: (t, share of the theorems proved within t
        seconds, opening, search and final check), one point per proved theorem, in order of t."""
        total = len(self.attempts)
        times = sorted(a.seconds for a in self.attempts if a.proved)
        return [(t, (i + 1) / total) for i, t in enumerate(times)]

    def pass_at(self, budget: float) -> float:
        """The share of theorems proved within ``budget`` seconds."""
        within = sum(a.proved and a.seconds <= budget for a in self.attempts)
        return within / len(self.attempts) if self.attempts else 0.0

    def outcomes(self) -> dict[str, int]:
        return {o.value: sum(a.outcome is o for a in self.attempts) for o in AttemptOutcome}

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "resumed": self.resumed,
            "pass_at_1": self.overall.to_json(),
            "confidence": CONFIDENCE,
            "outcomes": self.outcomes(),
            "by_repository": {name: rate.to_json() for name, rate in self.by_repository.items()},
            "by_bucket": {name: rate.to_json() for name, rate in self.by_bucket.items()},
            "pass_at_budget": {f"{t:g}": round(self.pass_at(t), 4) for t in budget_marks(self.time_limit)},
            "premise_index": None if self.index is None else self.index.to_json(),
            "theorems": [
                {
                    "path": a.path,
                    "theorem": a.theorem,
                    "repository": a.repository,
                    "bucket": self.buckets.get(a.key, Bucket.UNKNOWN).value,
                    "outcome": a.outcome.value,
                    "proof": a.proof,
                    "seconds": round(a.seconds, 3),
                    "expansions": a.expansions,
                    "lean_seconds": None if a.lean_seconds is None else round(a.lean_seconds, 3),
                    "axioms": None if a.axioms is None else list(a.axioms),
                    "detail": a.detail,
                }
                for a in self.attempts
            ],
        }


def select_theorems(store: Store, selection: Selection) -> list[StoredTheorem]:
    """The stored theorems ``selection`` chooses, each proved by its repository with a proof
    whose text can be replaced, in trace order (or the theorems file's order)."""
    from lean_env.repos import parse_spec

    location = parse_spec(selection.repo).location if selection.repo else None
    if selection.repo and not store.theorems(location=location):
        raise UserInputError(f"no stored repository is {location}")
    candidates = [
        t
        for t in store.theorems(status=TheoremStatus.PROVEN, location=location)
        if t.theorem.proof_start is not None and t.theorem.proof is not None
    ]
    if selection.theorems is not None:
        refs = read_theorem_refs(selection.theorems)
        return resolve_refs(refs, candidates, what="stored theorem with a proof", whats="stored theorems with a proof")
    chosen = candidates
    if selection.benchmark is not None:
        chosen = benchmark_test(chosen, selection.benchmark, selection.benchmark_split)
    if selection.split_test:
        chosen = held_out(chosen, test_fraction=selection.test_fraction, seed=selection.split_seed)
    if selection.sample is not None and selection.sample < len(chosen):
        picked = set(random.Random(selection.seed).sample(sorted(t.key for t in chosen), selection.sample))
        chosen = [t for t in chosen if t.key in picked]
    if not chosen:
        raise UserInputError("no stored theorem with a proof to evaluate" + (f" in {location}" if location else ""))
    return chosen


def benchmark_test(theorems: Sequence[StoredTheorem], directory: Path, strategy: str) -> list[StoredTheorem]:
    """The theorems in the ``test`` split of ``strategy`` of the benchmark ``directory``
    (matched by repository, file and full name)."""
    from lean_env.benchmark.read import split_members

    members = {(RepoSpec(url).location, path, name) for url, path, name in split_members(directory, strategy)}
    return [t for t in theorems if t.key in members]


def held_out(theorems: Sequence[StoredTheorem], *, test_fraction: float, seed: int) -> list[StoredTheorem]:
    """The theorems on the test side of the retriever's split (the same function, fraction
    and seed that training holds theorems out with)."""

    @dataclass(frozen=True, slots=True)
    class _Example:
        repo: str
        theorem: str
        stored: StoredTheorem

    _, test = split(
        [_Example(t.location, t.theorem.full_name, t) for t in theorems], test_fraction=test_fraction, seed=seed
    )
    return [e.stored for e in test]


def judged_against(attempt: ProofAttempt, original: tuple[str, ...] | None) -> ProofAttempt:
    """``attempt`` judged against the axioms of the original proof (``original``; None: not
    known, and the attempt is judged as the final check judged it)."""
    check = attempt.check
    if original is None or check is None or check.axioms is None:
        return attempt
    extra = [a for a in nonstandard(check.axioms) if a not in original]
    if attempt.outcome is AttemptOutcome.VACUOUS and not extra:
        detail = f"Lean accepted the file; the proof depends on {SORRY_AXIOM} as the original proof does"
        return dataclasses.replace(attempt, outcome=AttemptOutcome.PROVED, detail=detail)
    if attempt.outcome is AttemptOutcome.PROVED and extra:
        detail = f"Lean accepted the file, but the proof depends on {', '.join(extra)}, which the original does not"
        return dataclasses.replace(attempt, outcome=AttemptOutcome.VACUOUS, detail=detail)
    return attempt


def audit_originals(
    targets: Sequence[StoredTheorem],
    checkouts: Mapping[str, Path],
    *,
    runner_for: Callable[[Path], FileRunner],
    timeout: float,
) -> dict[TheoremKey, tuple[str, ...] | None]:
    """The axioms of each target with its own proof: one Lean run per file; None for the
    theorems of a file Lean could not be run on (their found proofs are judged as the final
    check judges them)."""
    from tqdm import tqdm

    from lean_env.proofs.final_check import audit_original

    files: dict[tuple[str, str], list[StoredTheorem]] = defaultdict(list)
    for t in targets:
        files[(t.location, t.theorem.path)].append(t)
    found: dict[TheoremKey, tuple[str, ...] | None] = {}
    for (location, path), group in tqdm(files.items(), desc="auditing originals", unit="file", disable=None):
        directory, names = checkouts[location], [t.theorem.full_name for t in group]
        try:
            axioms = audit_original(directory, path, names, runner=runner_for(directory), timeout=timeout)
        except LeanAgentError as error:
            log.warning("the original proofs of %s were not audited: %s", path, error)
            axioms = dict.fromkeys(names)
        found |= {t.key: axioms[t.theorem.full_name] for t in group}
    return found


def evaluate(
    store: Store,
    selection: Selection,
    config: ProvingConfig,
    *,
    data_dir: Path,
    retriever: str | None = None,
    retriever_len: int = RETRIEVER_LENGTH,
    runner_for: Callable[[Path], FileRunner] = LeanRunner.for_project,
) -> EvaluationResult:
    """Evaluate the theorems ``selection`` chooses under ``config`` (learning turned off),
    with premises from ``retriever`` when given; resumes an unfinished evaluation of the same
    options. ``runner_for`` finds Lean for a checkout (the original proofs' audit)."""
    from agent.proving.scale import ProofRunner, ProverRecipe
    from curriculum.ordering import curriculum_of
    from curriculum.runs import tracked_run

    config = dataclasses.replace(config, learn=False)
    targets = select_theorems(store, selection)
    checkouts = checkout_all(targets, cache_dir=DataLayout(data_dir).cache)
    for directory in checkouts.values():
        runner_for(directory)  # a missing Lean is said before any work
    traces = tuple(store.latest_traces())
    thresholds = curriculum_of(store).thresholds
    buckets = {t.key: bucket(t.theorem.status, t.theorem.num_steps, thresholds) for t in targets}
    # The suggester never sees an evaluated proof, the one being proved or any other, nor
    # the ranking what earlier attempts at an evaluated theorem tried.
    recipe = ProverRecipe.of_store(
        store,
        config,
        data_dir,
        traces=traces,
        retriever=retriever,
        retriever_len=retriever_len,
        leave_out=targets,
        runner_for=runner_for,
    )
    identity = {"command": "evaluate", **recipe.identity(), **selection.identity()}
    by_location: dict[str, list[StoredTheorem]] = {}
    for t in targets:
        by_location.setdefault(t.location, []).append(t)
    job = JobTargets(by_location, {}, {}, list(targets), checkouts)
    originals: dict[TheoremKey, tuple[str, ...] | None] = {}

    def judged(finished: ProofDone) -> ProofDone:
        original = originals.get(theorem_key(finished.job.location, finished.job.theorem))
        return dataclasses.replace(finished, attempt=judged_against(finished.attempt, original))

    with (
        contextlib.closing(ProofRunner.start(recipe)) as runner,
        tracked_run(store, identity) as (run, resumed),
    ):
        # The pipeline `prove` and `run` prove with, each attempt judged before it is recorded.
        prover = RepositoryProver(store, run.id, runner, job, traces, data_dir=data_dir, judge=judged)
        unbuilt = [f"{loc}: {b.text()}" for loc in prover.locations if (b := prover.build(loc)) and not b.usable]
        if unbuilt:
            raise LeanAgentError(
                "the theorems of a checkout that does not build cannot be evaluated (every check would fail on "
                f"its imports): {'; '.join(unbuilt)}"
            )
        done = {a.theorem_id for a in store.attempts(run_id=run.id)}
        waiting = [t for t in targets if t.id not in done]
        originals |= audit_originals(waiting, checkouts, runner_for=runner_for, timeout=config.check_timeout)
        for location in prover.locations:
            prover.prove(location, retriever=None)
        index = runner.index_quality
    by_key = {a.key: a for a in prover.attempts}
    attempts = tuple(by_key[t.key] for t in targets if t.key in by_key)
    return EvaluationResult(run.id, resumed, attempts, buckets, config.search.time_limit, index)


def budget_marks(time_limit: float) -> list[float]:
    """The budgets a report reads Pass@1 at: the usual marks below the limit, and the limit."""
    return sorted({t for t in BUDGET_MARKS if t < time_limit} | {time_limit})


def repository_name(location: str) -> str:
    """A short name for a repository in tables: its last path component (URL or path)."""
    return Path(RepoSpec(location).location.rstrip("/")).name or location
