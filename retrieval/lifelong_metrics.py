"""How well a lifelong learner learns and keeps: the metrics of continual learning, read from
its score matrix (``R[t][j]``: the score on repository ``j`` after step ``t``).

The formulas, their sources and where each one is undefined are in docs/lifelong.md
("Lifelong-learning metrics"). A metric that the matrix is too small for (or that lacks the
scores it needs) is an :class:`Undefined` with the reason, never a number: 0 would read as
"no forgetting".

A step trains one repository, the column ``trained[t]``; a repository may be trained again
at a newer commit, so steps and columns are told apart throughout. Where a metric compares a
repository's score with the score "when it was learned", that is the score after the latest
step that trained it before the row compared.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

WINDOW = 5  # evaluations per window of WF and WP (LeanAgent's WF5 and WP5)
# The metrics that are a ratio of two scores; every other one is a score, or a difference of
# scores, in the scores' unit (a fraction of 1: the paper prints it x100, percentage points).
RATIOS = frozenset({"CFR"})


@dataclass(frozen=True, slots=True)
class Undefined:
    """A metric the matrix cannot give, and why."""

    reason: str


Value = float | Undefined


@dataclass(frozen=True, slots=True)
class ScoreMatrix:
    """One score (recall@10, MRR, ...) of a lifelong run, step by step."""

    # scores[t][j]: repository j after step t (None: not learned yet, or no held-out examples)
    scores: tuple[tuple[float | None, ...], ...]
    # trained[t]: the column of the repository step t trained on
    trained: tuple[int, ...]
    # before[t]: that repository's score just before step t, by the encoder the earlier
    # steps left (None: not known, e.g. a step of a learner written before it was kept)
    before: tuple[float | None, ...]
    # untrained[t]: that repository's score by the starting encoder (FWT's baseline)
    untrained: tuple[float | None, ...]

    def __post_init__(self) -> None:
        steps = len(self.scores)
        assert len(self.trained) == len(self.before) == len(self.untrained) == steps, "one entry per step"
        assert all(len(row) == len(self.scores[0]) for row in self.scores), "rows of one length"

    @classmethod
    def square(
        cls,
        scores: Sequence[Sequence[float | None]],
        *,
        before: Sequence[float | None] | None = None,
        untrained: Sequence[float | None] | None = None,
    ) -> ScoreMatrix:
        """The usual case: step ``t`` trained repository ``t`` (each repository once)."""
        steps = len(scores)
        return cls(
            tuple(tuple(row) for row in scores),
            tuple(range(steps)),
            tuple(before) if before is not None else (None,) * steps,
            tuple(untrained) if untrained is not None else (None,) * steps,
        )

    def average(self, t: int) -> float | None:
        """The mean score after step ``t`` over the repositories learned so far that have one."""
        values = [v for v in self.scores[t] if v is not None]
        return sum(values) / len(values) if values else None

    def earlier(self, t: int) -> Iterator[tuple[int, int]]:
        """(column, the latest step before ``t`` that trained it) for every repository learned
        before step ``t`` other than the one step ``t`` trains."""
        latest: dict[int, int] = {}
        for s in range(t):
            latest[self.trained[s]] = s
        for column, s in sorted(latest.items()):
            if column != self.trained[t]:
                yield column, s


@dataclass(frozen=True, slots=True)
class LifelongMetrics:
    """The metrics of one score matrix (docs/lifelong.md has the formulas)."""

    plasticity: Value  # mean over steps of R[t][trained t]: the repository just learned
    stability: Value  # mean over steps of the mean R[t][j] over the repositories learned so far (LeanAgent)
    bwt: Value  # backward transfer (GEM): mean final change since each repository was learned
    fwt: Value  # forward transfer (GEM): mean R[t-1][t] - untrained score, for each new repository
    wf: Value  # windowed forgetting (De Lange et al.): per repository, its largest drop within a window
    wp: Value  # windowed plasticity: the same with rises
    fm: Value  # forgetting measure (Chaudhry et al.): mean of best earlier - final score
    cfr: Value  # catastrophic-forgetting resilience: lowest over highest average score
    ebwt: Value  # expanded backward transfer (LeanAgent): the mean of the BWT after each step
    ip: Value  # incremental plasticity (LeanAgent): mean change of R[t][trained t] from step to step
    gain: Value  # mean rise of a repository's score over its own step (ours)
    # mean over steps t >= 1 of the mean R[t][j] over the repositories learned before step t,
    # the one just trained left out (ours; it was called stability before)
    retention: Value
    window: int = WINDOW

    def named(self) -> list[tuple[str, Value]]:
        """(name, value) in the order reports show them."""
        w = self.window
        return [
            ("plasticity", self.plasticity),
            ("stability", self.stability),
            ("BWT", self.bwt),
            ("FWT", self.fwt),
            (f"WF{w}", self.wf),
            (f"WP{w}", self.wp),
            ("FM", self.fm),
            ("CFR", self.cfr),
            ("EBWT", self.ebwt),
            ("IP", self.ip),
            ("gain", self.gain),
            ("retention", self.retention),
        ]


def lifelong_metrics(matrix: ScoreMatrix, *, window: int = WINDOW) -> LifelongMetrics:
    """Every metric of ``matrix``; ``window``: evaluations per window of WF and WP (at least
    2: a window of one evaluation compares nothing)."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 2:
        raise ValueError(f"the window of WF and WP is a number of evaluations, at least 2; got {window!r}")
    wf, wp = windowed(matrix, window)
    return LifelongMetrics(
        plasticity=plasticity(matrix),
        stability=stability(matrix),
        bwt=backward_transfer(matrix),
        fwt=forward_transfer(matrix),
        wf=wf,
        wp=wp,
        fm=forgetting_measure(matrix),
        cfr=forgetting_resilience(matrix),
        ebwt=expanded_backward_transfer(matrix),
        ip=incremental_plasticity(matrix),
        gain=step_gain(matrix),
        retention=retention(matrix),
        window=window,
    )


def _mean(values: Sequence[float | None], undefined: str) -> Value:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else Undefined(undefined)


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


NO_STEP = "no step yet"
ONE_STEP = "needs two steps (one repository learned after another)"


def plasticity(m: ScoreMatrix) -> Value:
    """Mean over steps of ``R[t][trained t]`` (LeanAgent's plasticity)."""
    if not m.scores:
        return Undefined(NO_STEP)
    return _mean([m.scores[t][c] for t, c in enumerate(m.trained)], "no repository learned has held-out examples")


def stability(m: ScoreMatrix) -> Value:
    """LeanAgent's stability: the mean over steps of ``A_t``, the average score after step
    ``t`` over every repository learned so far, the one step ``t`` trained included (its
    data's second step: mean(73.33, 65.04) = 69.18)."""
    if not m.scores:
        return Undefined(NO_STEP)
    return _mean([m.average(t) for t in range(len(m.scores))], "no repository learned has held-out examples")


def retention(m: ScoreMatrix) -> Value:
    """Mean over steps ``t >= 1`` of the mean of ``R[t][j]`` over the repositories learned
    before step ``t``, the one it trained left out: how well the earlier ones are kept
    (ours; called stability before, which LeanAgent's is not)."""
    if len(m.scores) < 2:
        return Undefined(ONE_STEP)
    rows: list[float | None] = []
    for t in range(1, len(m.scores)):
        # Filter on a bound name: mypy does not narrow an indexed expression like m.scores[t][j].
        values = [v for v in (m.scores[t][j] for j, _ in m.earlier(t)) if v is not None]
        rows.append(sum(values) / len(values) if values else None)
    return _mean(rows, "no repository learned before another has held-out examples")


def backward_transfer(m: ScoreMatrix) -> Value:
    """GEM's BWT: mean over the repositories learned before the last step of
    ``R[T-1][j] - R[l][j]``, ``l`` the latest step that trained ``j``."""
    if len(m.scores) < 2:
        return Undefined(ONE_STEP)
    last = len(m.scores) - 1
    return _mean(
        [_difference(m.scores[last][j], m.scores[s][j]) for j, s in m.earlier(last)],
        "no repository learned before the last step has held-out examples",
    )


def forward_transfer(m: ScoreMatrix) -> Value:
    """GEM's FWT: mean over the steps ``t >= 1`` that learn a new repository of its score
    just before its step minus the starting encoder's score on it."""
    if len(m.scores) < 2:
        return Undefined(ONE_STEP)
    new = [t for t in range(1, len(m.scores)) if m.trained[t] not in m.trained[:t]]
    if not new:
        return Undefined("no step after the first learned a new repository")
    return _mean(
        [_difference(m.before[t], m.untrained[t]) for t in new],
        "no repository learned after the first was scored before its step (with held-out examples)",
    )


def forgetting_measure(m: ScoreMatrix) -> Value:
    """Chaudhry et al.'s forgetting measure: mean over the repositories other than the last
    step's of (best score before the last step - final score)."""
    if len(m.scores) < 2:
        return Undefined(ONE_STEP)
    last = len(m.scores) - 1
    drops: list[float | None] = []
    for j, _ in m.earlier(last):
        earlier = [v for v in (row[j] for row in m.scores[:last]) if v is not None]
        drops.append(_difference(max(earlier), m.scores[last][j]) if earlier else None)
    return _mean(drops, "no repository learned before the last step has held-out examples")


def forgetting_resilience(m: ScoreMatrix) -> Value:
    """CFR: the lowest average score over the highest, across the steps."""
    averages = [a for a in (m.average(t) for t in range(len(m.scores))) if a is not None]
    if len(averages) < 2:
        return Undefined("needs two steps with scores")
    if max(averages) == 0:
        return Undefined("the average score is 0 after every step")
    return min(averages) / max(averages)


def expanded_backward_transfer(m: ScoreMatrix) -> Value:
    """LeanAgent's EBWT, "the average of the BWT computed after each task": the mean over
    steps ``t >= 1`` of ``BWT_t``, the mean over repositories ``j`` learned before step ``t``
    of ``R[t][j] - R[l][j]``, ``l`` the latest step before ``t`` that trained ``j``."""
    if len(m.scores) < 2:
        return Undefined(ONE_STEP)
    after_each = []
    for t in range(1, len(m.scores)):
        changes = [d for j, s in m.earlier(t) if (d := _difference(m.scores[t][j], m.scores[s][j])) is not None]
        after_each.append(sum(changes) / len(changes) if changes else None)
    return _mean(after_each, "no repository learned before another has held-out examples")


def incremental_plasticity(m: ScoreMatrix) -> Value:
    """LeanAgent's IP, the "rate of validation R@10 change per task": the mean change, from
    one step to the next, of the score on the repository each step trains (``R[t][trained
    t]``), as its code computes it (``np.mean(np.diff(...))``; it telescopes to the last
    minus the first over the steps between them). Negative: a later repository is learned
    less well than an earlier one."""
    if len(m.scores) < 2:
        return Undefined(ONE_STEP)
    own = [m.scores[t][c] for t, c in enumerate(m.trained)]
    return _mean(
        [_difference(b, a) for a, b in itertools.pairwise(own)],
        "no two consecutive steps have scores on the repositories they trained",
    )


def step_gain(m: ScoreMatrix) -> Value:
    """Mean over steps of how much a step raised its own repository's score: ``R[t][trained
    t]`` minus the score just before the step (ours; it was called IP before)."""
    if not m.scores:
        return Undefined(NO_STEP)
    return _mean(
        [_difference(m.scores[t][c], m.before[t]) for t, c in enumerate(m.trained)],
        "no repository was scored before and after its step (with held-out examples)",
    )


def windowed(m: ScoreMatrix, window: int) -> tuple[Value, Value]:
    """(WF, WP) as De Lange et al. define them (ContinualEvaluation's windowed forgetting
    and plasticity, averaged over tasks): for each repository, over its evaluations from the
    step that first learned it on, the largest drop (an earlier score minus a later one) and
    the largest rise within any ``window`` consecutive evaluations (shorter at the start), 0
    when there is none; then the mean over the repositories. A new, harder repository
    entering the average is no one's forgetting."""
    if len(m.scores) < 2:
        why = Undefined(ONE_STEP)
        return why, why
    drops: list[float] = []
    rises: list[float] = []
    for j in sorted(set(m.trained)):
        first = m.trained.index(j)
        seen = [v for v in (row[j] for row in m.scores[first:]) if v is not None]
        if not seen:
            continue
        pairs = [(a, b) for q, b in enumerate(seen) for a in seen[max(0, q - window + 1) : q]]
        drops.append(max([0.0, *(a - b for a, b in pairs)]))
        rises.append(max([0.0, *(b - a for a, b in pairs)]))
    if not drops:
        why = Undefined("no repository learned has held-out examples")
        return why, why
    return sum(drops) / len(drops), sum(rises) / len(rises)
