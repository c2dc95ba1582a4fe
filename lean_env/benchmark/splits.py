"""LeanDojo's two ways of splitting theorems into train/val/test, seeded and scaled to
small corpora.

Both return indices into the theorem sequence they are given, per split name, so callers
keep whatever they attached to each theorem. ``docs/benchmark-format.md`` explains the
sizes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from lean_env.records import Theorem

# LeanDojo Benchmark 4 holds out 2000 val and 2000 test theorems out of ~117k; small
# corpora get a fraction instead (see holdout_size).
LEANDOJO_HOLDOUT = 2000
HOLDOUT_PERCENT = 10


def holdout_size(num_theorems: int) -> int:
    """How many theorems go to val (and as many to test) out of ``num_theorems``.

    LeanDojo Benchmark 4 holds out 2000 each of ~117k theorems; on a small corpus that would
    leave nothing to train on, so we hold out 10% each (80/10/10), at least one theorem
    each once there are three, and never more than LeanDojo's 2000.
    """
    if num_theorems < 3:
        return 0
    return min(LEANDOJO_HOLDOUT, max(1, num_theorems * HOLDOUT_PERCENT // 100))


def split_randomly(theorems: Sequence[Theorem], rng: random.Random) -> dict[str, list[int]]:
    """LeanDojo's random split: shuffle, then train | val | test in sequence.

    Returns indices into ``theorems`` per split name.
    """
    order = list(range(len(theorems)))
    rng.shuffle(order)
    k = holdout_size(len(order))
    num_train = len(order) - 2 * k
    return {
        "train": order[:num_train],
        "val": order[num_train : num_train + k],
        "test": order[num_train + k :],
    }


def split_by_premise(theorems: Sequence[Theorem], rng: random.Random) -> dict[str, list[int]]:
    """LeanDojo's novel-premises split: every val/test theorem uses a premise train never does.

    Premises (``Theorem.premises``) are taken rarest first; all theorems using one go to
    val+test together, until val+test holds at least ``2 * holdout_size``. The last group may
    overshoot, and as in LeanDojo the overshoot lands in test. Unlike LeanDojo (which
    shuffles a ``set``), held-out theorems are kept in first-seen order before the seeded
    shuffle, so the split depends only on the input order and the seed. Returns indices
    into ``theorems`` per split name.
    """
    k = holdout_size(len(theorems))
    by_premise: dict[str, list[int]] = {}
    for i, thm in enumerate(theorems):
        for name in dict.fromkeys(thm.premises):
            by_premise.setdefault(name, []).append(i)
    held: dict[int, None] = {}
    for _, users in sorted(by_premise.items(), key=lambda item: len(item[1])):
        if len(held) >= 2 * k:
            break
        held.update(dict.fromkeys(users))
    held_out = list(held)
    rng.shuffle(held_out)
    return {
        "train": [i for i in range(len(theorems)) if i not in held],
        "val": held_out[:k],
        "test": held_out[k:],
    }
