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


def _windows(n: int) -> str:
    return f"needs 5 steps with scores, has {n}"


CASES = [
    pytest.param(
        THREE,
        5,
        {
            "plasticity": (0.8 + 0.9 + 0.4) / 3,
            "stability": (0.6 + (0.5 + 0.7) / 2) / 2,
            "BWT": ((0.5 - 0.8) + (0.7 - 0.9)) / 2,
            "FWT": ((0.3 - 0.2) + (0.2 - 0.25)) / 2,  # the first repository has no earlier step to transfer from
            "WF5": _windows(3),
            "WP5": _windows(3),
            "FM": ((0.8 - 0.5) + (0.9 - 0.7)) / 2,
            "CFR": (1.6 / 3) / 0.8,
            "EBWT": ((0.6 - 0.8) + (0.5 - 0.8) + (0.7 - 0.9)) / 3,
            "IP": ((0.8 - 0.1) + (0.9 - 0.3) + (0.4 - 0.2)) / 3,
        },
        id="three-repositories",
    ),
    pytest.param(
        THREE,
        3,
        {"WF3": 0.8 - 1.6 / 3, "WP3": 0.0},  # one window: the average only falls
        id="three-repositories-window-of-3",
    ),
    pytest.param(
        THREE,
        2,
        {"WF2": ((0.8 - 0.75) + (0.75 - 1.6 / 3)) / 2, "WP2": 0.0},
        id="three-repositories-window-of-2",
    ),
    pytest.param(
        SIX,
        5,
        {
            # windows 0.2 0.6 0.4 0.8 0.5 and 0.6 0.4 0.8 0.5 0.7: largest drops 0.8-0.5 in both,
            # largest rises 0.8-0.2 and 0.8-0.4
            "WF5": 0.3,
            "WP5": (0.6 + 0.4) / 2,
            "CFR": 0.2 / 0.8,
            "plasticity": (0.2 + 0.6 + 0.4 + 0.8 + 0.5 + 0.7) / 6,
            "stability": "no repository learned before another has held-out examples",
            "FM": "no repository learned before the last step has held-out examples",
            "FWT": "no repository learned after the first was scored before its step",
            "IP": "no repository was scored before and after its step",
        },
        id="six-steps-two-windows",
    ),
    pytest.param(
        AGAIN,
        5,
        {
            "plasticity": (0.8 + 0.9 + 0.85) / 3,
            # after step 1: repository 0; after step 2: repository 1 (0 is the one trained)
            "stability": (0.6 + 0.5) / 2,
            "BWT": 0.5 - 0.9,  # repository 1 only: 0 was learned again in the last step
            "FM": 0.9 - 0.5,
            "FWT": 0.3 - 0.2,  # the last step learned no new repository
            "EBWT": ((0.6 - 0.8) + (0.5 - 0.9)) / 2,
            "IP": ((0.8 - 0.1) + (0.9 - 0.3) + (0.85 - 0.55)) / 3,
            "CFR": 0.675 / 0.8,
        },
        id="a-repository-learned-again",
    ),
    pytest.param(
        ScoreMatrix.square([[0.5]], before=[0.25], untrained=[0.25]),
        5,
        {
            "plasticity": 0.5,
            "IP": 0.25,
            "stability": ONE_STEP,
            "BWT": ONE_STEP,
            "FWT": ONE_STEP,
            "FM": ONE_STEP,
            "EBWT": ONE_STEP,
            "CFR": "needs two steps with scores",
            "WF5": _windows(1),
            "WP5": _windows(1),
        },
        id="one-step",
    ),
    pytest.param(
        ScoreMatrix.square([]),
        5,
        {"plasticity": "no step yet", "IP": "no step yet", "stability": ONE_STEP, "WF5": _windows(0)},
        id="no-step",
    ),
    pytest.param(
        ScoreMatrix.square([[None, None], [None, 0.4]], before=[None, 0.1], untrained=[None, 0.2]),
        5,
        {
            "plasticity": 0.4,
            "stability": "no repository learned before another has held-out examples",
            "BWT": "no repository learned before the last step has held-out examples",
            "FWT": 0.1 - 0.2,
            "CFR": "needs two steps with scores",
            "IP": 0.4 - 0.1,
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
            "IP": "no repository was scored before and after its step",
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
    assert names == ["plasticity", "stability", "BWT", "FWT", "WF5", "WP5", "FM", "CFR", "EBWT", "IP"]
