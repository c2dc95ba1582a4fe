"""How each repository's examples are split into training and held-out ones: by theorem (all
steps of a theorem on one side), deterministically. A theorem is held out when a seeded hash
of its repository's identity and its name falls below the test fraction, so a repository
keeps its split whatever else is trained, and wherever it is checked out. Retriever training
(:mod:`retrieval.progressive`), the generator's training and evaluation's ``--split test``
all split this way; nothing here imports torch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, TypeVar

from lean_env.records import RepoSpec

# Each repository's share of theorems held out by default: the retriever's scores, and the
# theorems evaluation's --split test proves, are those.
TEST_FRACTION = 0.2
# The seed of the split (and of the training that holds theorems out with it): the one that
# an evaluation of a trained retriever's held-out theorems must use too.
SPLIT_SEED = 0


class _OfTheorem(Protocol):
    @property
    def repo(self) -> str: ...
    @property
    def theorem(self) -> str: ...


Example = TypeVar("Example", bound=_OfTheorem)


def split(examples: Sequence[Example], *, test_fraction: float, seed: int) -> tuple[list[Example], list[Example]]:
    """(train, test) with every theorem's examples on one side (retrieval and tactic
    examples alike: anything with a ``repo`` location and a ``theorem``).

    The side hashes the seed, the repository's :attr:`~lean_env.records.RepoSpec.identity`
    and the theorem's name: not the location, which for a local project is where it is
    checked out, so that every clone of a repository gets the same split."""
    train: list[Example] = []
    test: list[Example] = []
    identities: dict[str, str] = {}
    for example in examples:
        if example.repo not in identities:
            identities[example.repo] = RepoSpec(example.repo).identity
        # blake2b, not crc32: a CRC of names that differ in a character or two is far from uniform
        digest = hashlib.blake2b(
            f"{seed}:{identities[example.repo]}:{example.theorem}".encode(), digest_size=8
        ).digest()
        bucket = int.from_bytes(digest, "big") / 2**64
        (test if bucket < test_fraction else train).append(example)
    return train, test
