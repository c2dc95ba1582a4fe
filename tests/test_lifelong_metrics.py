"""The lifelong-learning metrics on small matrices computed by hand (docs/lifelong.md has the
formulas), and the reason each gives where the matrix is too small for it."""

from __future__ import annotations

import pytest

from retrieval.lifelong_metrics import ScoreMatrix, Undefined, lifelong_metrics

# Three repositories learned one after the other. Averages after each step: 0.8, 0.75, 1.6/3.
THREE = ScoreMatrix.square(
    [
        [0.8, None, None],
        [0.6, 0.9, None],
        [0.5, 0.7, 0.4],
    ],
    before=[0.1, 0.3, 0.2],
    untrained=[0.1, 0.2, 0.25],
)

# One scored repository per step (the others have no held-out examples), so the average
# after step t is the diagonal: 0.2, 0.6, 0.4, 0.8, 0.5, 0.7.
SIX = ScoreMatrix.square(
    [[v if j == t else None for j in range(6)] for t, v in enumerate([0.2, 0.6, 0.4, 0.8, 0.5, 0.7])]
)

# Repository 0 learned again at a newer commit in the last step.
AGAIN = ScoreMatrix(
    scores=((0.8, None), (0.6, 0.9), (0.85, 0.5)),
    trained=(0, 1, 0),
    before=(0.1, 0.3, 0.55),
    untrained=(0.1, 0.2, 0.1),
)

ONE_STEP = "needs two steps (one repository learned after another)"


CASES = [
    pytest.param(
        THREE,
        5,
        {
            "plasticity": (0.8 + 0.9 + 0.4) / 3,
            "stability": (0.8 + 0.75 + 1.6 / 3) / 3,  # the averages after each step
            "retention": (0.6 + (0.5 + 0.7) / 2) / 2,  # the repositories learned before each step t >= 1
            "BWT": ((0.5 - 0.8) + (0.7 - 0.9)) / 2,
            "FWT": ((0.3 - 0.2) + (0.2 - 0.25)) / 2,  # the first repository has no earlier step to transfer from
            # per repository: 0.8 0.6 0.5 drops 0.3, 0.9 0.7 drops 0.2, 0.4 alone drops nothing
            "WF5": (0.3 + 0.2 + 0.0) / 3,
            "WP5": 0.0,
            "FM": ((0.8 - 0.5) + (0.9 - 0.7)) / 2,
            "CFR": (1.6 / 3) / 0.8,
            # the BWT after step 1, then after step 2
            "EBWT": ((0.6 - 0.8) + ((0.5 - 0.8) + (0.7 - 0.9)) / 2) / 2,
            "IP": ((0.9 - 0.8) + (0.4 - 0.9)) / 2,  # the trained repository's score, step to step
            "gain": ((0.8 - 0.1) + (0.9 - 0.3) + (0.4 - 0.2)) / 3,
        },
        id="three-repositories",
    ),
    pytest.param(
        THREE,
        3,
        {"WF3": (0.3 + 0.2 + 0.0) / 3, "WP3": 0.0},  # every repository's evaluations fit in a window
        id="three-repositories-window-of-3",
    ),
    pytest.param(
        THREE,
        2,
        {"WF2": (0.2 + 0.2 + 0.0) / 3, "WP2": 0.0},  # neighbours only: 0.8-0.6, 0.9-0.7
        id="three-repositories-window-of-2",
    ),
    pytest.param(
        SIX,
        5,
        {
            # the average rises and falls as repositories of other difficulty enter, but each
            # one is evaluated once: no repository forgets, none gains
            "WF5": 0.0,
            "WP5": 0.0,
            "CFR": 0.2 / 0.8,
            "plasticity": (0.2 + 0.6 + 0.4 + 0.8 + 0.5 + 0.7) / 6,
            "stability": (0.2 + 0.6 + 0.4 + 0.8 + 0.5 + 0.7) / 6,
            "retention": "no repository learned before another has held-out examples",
            "FM": "no repository learned before the last step has held-out examples",
            "FWT": "no repository learned after the first was scored before its step",
            "IP": ((0.6 - 0.2) + (0.4 - 0.6) + (0.8 - 0.4) + (0.5 - 0.8) + (0.7 - 0.5)) / 5,
            "gain": "no repository was scored before and after its step",
        },
        id="six-steps-a-new-repository-each",
    ),
    pytest.param(
        AGAIN,
        5,
        {
            "plasticity": (0.8 + 0.9 + 0.85) / 3,
            "stability": (0.8 + 0.75 + 0.675) / 3,
            # after step 1: repository 0; after step 2: repository 1 (0 is the one trained)
            "retention": (0.6 + 0.5) / 2,
            "BWT": 0.5 - 0.9,  # repository 1 only: 0 was learned again in the last step
            "FM": 0.9 - 0.5,
            "FWT": 0.3 - 0.2,  # the last step learned no new repository
            "EBWT": ((0.6 - 0.8) + (0.5 - 0.9)) / 2,
            "IP": ((0.9 - 0.8) + (0.85 - 0.9)) / 2,
            "gain": ((0.8 - 0.1) + (0.9 - 0.3) + (0.85 - 0.55)) / 3,
            # repository 0: 0.8 0.6 0.85 (drop 0.2, rise 0.25); repository 1: 0.9 0.5 (drop 0.4)
            "WF5": (0.2 + 0.4) / 2,
            "WP5": (0.25 + 0.0) / 2,
            "CFR": 0.675 / 0.8,
        },
        id="a-repository-learned-again",
    ),
    pytest.param(
        ScoreMatrix.square([[0.5]], before=[0.25], untrained=[0.25]),
        5,
        {
            "plasticity": 0.5,
            "gain": 0.25,
            "IP": ONE_STEP,
            "stability": 0.5,  # the repository just learned counts
            "retention": ONE_STEP,
            "BWT": ONE_STEP,
            "FWT": ONE_STEP,
            "FM": ONE_STEP,
            "EBWT": ONE_STEP,
            "CFR": "needs two steps with scores",
            "WF5": ONE_STEP,
            "WP5": ONE_STEP,
        },
        id="one-step",
    ),
    pytest.param(
        ScoreMatrix.square([]),
        5,
        {
            "plasticity": "no step yet",
            "gain": "no step yet",
            "stability": "no step yet",
            "IP": ONE_STEP,
            "retention": ONE_STEP,
            "WF5": ONE_STEP,
        },
        id="no-step",
    ),
    pytest.param(
        ScoreMatrix.square([[None, None], [None, 0.4]], before=[None, 0.1], untrained=[None, 0.2]),
        5,
        {
            "plasticity": 0.4,
            "stability": 0.4,
            "retention": "no repository learned before another has held-out examples",
            "BWT": "no repository learned before the last step has held-out examples",
            "FWT": 0.1 - 0.2,
            "CFR": "needs two steps with scores",
            "gain": 0.4 - 0.1,
            "IP": "no two consecutive steps have scores on the repositories they trained",
        },
        id="the-first-repository-without-held-out-examples",
    ),
    pytest.param(
        ScoreMatrix.square([[0.0, None], [0.0, 0.0]]),
        5,
        {"CFR": "the average score is 0 after every step", "FM": 0.0, "BWT": 0.0},
        id="nothing-retrieved",
    ),
    pytest.param(
        ScoreMatrix.square([[0.8, None], [0.6, 0.9]]),
        5,
        {
            "FWT": "no repository learned after the first was scored before its step",
            "gain": "no repository was scored before and after its step",
            "IP": 0.9 - 0.8,
            "FM": 0.8 - 0.6,
        },
        id="a-learner-without-scores-before-its-steps",
    ),
]


@pytest.mark.parametrize(("matrix", "window", "expected"), CASES)
def test_each_metric_by_hand(matrix: ScoreMatrix, window: int, expected: dict[str, float | str]) -> None:
    metrics = dict(lifelong_metrics(matrix, window=window).named())
    for name, want in expected.items():
        got = metrics[name]
        if isinstance(want, str):
            assert isinstance(got, Undefined) and got.reason.startswith(want), (name, got)
        else:
            assert got == pytest.approx(want, abs=1e-12), name


def test_every_metric_is_named_once_in_report_order() -> None:
    names = [name for name, _ in lifelong_metrics(THREE).named()]
    assert names == [
        "plasticity",
        "stability",
        "BWT",
        "FWT",
        "WF5",
        "WP5",
        "FM",
        "CFR",
        "EBWT",
        "IP",
        "gain",
        "retention",
    ]


def test_stability_is_the_papers_and_retention_leaves_the_new_repository_out() -> None:
    """LeanAgent's stability averages, after each step, every repository trained so far, the
    one just trained included: its data's second step is mean(73.33, 65.04) = 69.18; on
    R = [[.6171], [.5762, .7045]] that gives .6287, where leaving the new one out (what
    retention reports) gives .5762."""
    second_step = ScoreMatrix.square([[None, None], [0.7333, 0.6504]])  # the first step's scores are not given
    assert second_step.average(1) == pytest.approx(0.6918, abs=5e-5)
    metrics = dict(lifelong_metrics(ScoreMatrix.square([[0.6171, None], [0.5762, 0.7045]])).named())
    assert round(metrics["stability"], 4) == 0.6287
    assert metrics["retention"] == pytest.approx(0.5762)


def test_a_repository_that_ends_above_its_best_has_negative_forgetting() -> None:
    """FM's best is over the rows before the last: a final score above it is a gain (a
    maximum taken over the final row too would make it 0)."""
    matrix = ScoreMatrix.square([[0.5, None, None], [0.4, 0.6, None], [0.7, 0.6, 0.3]])
    assert dict(lifelong_metrics(matrix).named())["FM"] == pytest.approx(((0.5 - 0.7) + (0.6 - 0.6)) / 2)


def test_a_harder_repository_entering_the_average_is_no_forgetting() -> None:
    matrix = ScoreMatrix.square([[0.9, None, None], [0.9, 0.9, None], [0.9, 0.9, 0.1]])
    metrics = dict(lifelong_metrics(matrix).named())
    assert metrics["WF5"] == 0.0 and metrics["FM"] == 0.0 and metrics["EBWT"] == 0.0
    assert metrics["CFR"] == pytest.approx((1.9 / 3) / 0.9)  # the average did fall


@pytest.mark.parametrize("window", [0, 1, -3, 2.5, True])
def test_a_window_is_at_least_two_evaluations(window: object) -> None:
    with pytest.raises(ValueError, match="at least 2"):
        lifelong_metrics(THREE, window=window)  # type: ignore[arg-type]


# ---- against an implementation written from the papers' words --------------------------------


def _from_the_papers(r: list[list[float]], w: int) -> dict[str, float]:
    """Square matrices only (step t learns repository t, every score known), straight from
    the text: De Lange et al.'s windowed forgetting/plasticity (per task, the largest drop /
    rise between two of any w consecutive evaluations, the maximum over time, the mean over
    tasks); LeanAgent's EBWT ("the average of the BWT computed after each task") and IP
    ("rate of validation R@10 change per task": its code's mean of consecutive differences);
    Chaudhry et al.'s FM; LeanAgent's CFR (min over max of the average test score) and
    stability (the mean of that average over the steps)."""
    n = len(r)
    wf, wp = [], []
    for j in range(n):
        curve = [r[t][j] for t in range(j, n)]
        worst = best = 0.0
        for end in range(len(curve)):
            window = curve[max(0, end - w + 1) : end + 1]
            for a in range(len(window)):
                for b in range(a + 1, len(window)):
                    worst = max(worst, window[a] - window[b])
                    best = max(best, window[b] - window[a])
        wf.append(worst)
        wp.append(best)
    bwt_after = [sum(r[t][j] - r[j][j] for j in range(t)) / t for t in range(1, n)]
    averages = [sum(r[t][: t + 1]) / (t + 1) for t in range(n)]
    own = [r[t][t] for t in range(n)]
    return {
        f"WF{w}": sum(wf) / n,
        f"WP{w}": sum(wp) / n,
        "EBWT": sum(bwt_after) / len(bwt_after),
        "IP": sum(own[t + 1] - own[t] for t in range(n - 1)) / (n - 1),
        "FM": sum(max(r[t][j] for t in range(j, n - 1)) - r[n - 1][j] for j in range(n - 1)) / (n - 1),
        "CFR": min(averages) / max(averages),
        "stability": sum(averages) / n,
        "BWT": sum(r[n - 1][j] - r[j][j] for j in range(n - 1)) / (n - 1),
    }


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("window", [2, 3, 5])
def test_random_six_step_matrices_agree_with_the_papers(seed: int, window: int) -> None:
    import random

    rng = random.Random(seed)
    r = [[round(rng.random(), 3) for _ in range(6)] for _ in range(6)]
    square = [[r[t][j] if j <= t else None for j in range(6)] for t in range(6)]
    ours = dict(lifelong_metrics(ScoreMatrix.square(square), window=window).named())
    for name, value in _from_the_papers(r, window).items():
        assert ours[name] == pytest.approx(value, abs=1e-12), name
