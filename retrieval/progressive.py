"""The lifelong retrieval loop: repositories in curriculum order, one training step each,
and after every step the recall on every repository seen so far (LeanAgent's metrics
matrix), from which forgetting is read.

Each repository's examples are split by theorem (all steps of a theorem on one side),
deterministically: a theorem is held out when a seeded hash of its repository's identity
and its name falls below the test fraction, so a repository keeps its split whatever else
is trained, and wherever it is checked out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import torch

from lean_env.errors import UserInputError
from lean_env.records import RepoSpec, RepoTrace
from retrieval.corpus import PremiseCorpus
from retrieval.encoder import TextEncoder
from retrieval.index import PremiseIndex, RecallScores, evaluate
from retrieval.train import ProgressiveTrainer, StepReport, TrainConfig

log = logging.getLogger(__name__)


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
    train, test = [], []
    identities: dict[str, str] = {}
    for example in examples:
        if example.repo not in identities:
            identities[example.repo] = RepoSpec(example.repo).identity
        # blake2b, not crc32: a CRC of names that differ in a character or two is far from uniform
        digest = hashlib.blake2b(f"{seed}:{identities[example.repo]}:{example.theorem}".encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest, "big") / 2**64
        (test if bucket < test_fraction else train).append(example)
    return train, test


@dataclass(frozen=True, slots=True)
class ProgressRow:
    """One step of the loop: the repository (at a commit) trained on, and the scores on every
    repository seen so far."""

    repo: str
    commit: str
    train_examples: int
    step: StepReport
    scores: dict[str, RecallScores]  # repository -> scores on its held-out examples


@dataclass(frozen=True, slots=True)
class ProgressiveReport:
    repos: tuple[str, ...]  # in the order they were first learned
    rows: tuple[ProgressRow, ...]
    picked_up: int = 0  # how many of the rows a checkpoint gave (steps taken before this call)

    def matrix(self, metric: Callable[[RecallScores], float]) -> list[list[float | None]]:
        """``matrix[i][j]``: the metric on repository ``j`` after step ``i`` (None before ``j``
        was seen, or when it has no held-out examples)."""
        return [[_value(row.scores.get(r), metric) for r in self.repos] for row in self.rows]

    def forgetting(self, metric: Callable[[RecallScores], float]) -> float:
        """Mean over the repositories other than the one trained last of (best earlier value -
        final value): how much of what was learned on them the later steps lost (0 with one
        repository). The one trained last is the last row's, which is not the last column
        when a newer commit of an earlier repository was learned."""
        if not self.rows:
            return 0.0
        matrix = self.matrix(metric)
        last = self.repos.index(self.rows[-1].repo)
        drops = []
        for j in range(len(self.repos)):
            if j == last:
                continue
            earlier = [row[j] for row in matrix[:-1] if row[j] is not None]
            final = matrix[-1][j]
            if earlier and final is not None:
                drops.append(max(earlier) - final)
        return sum(drops) / len(drops) if drops else 0.0


def _value(scores: RecallScores | None, metric: Callable[[RecallScores], float]) -> float | None:
    return None if scores is None or scores.examples == 0 else metric(scores)


def run_progressive(
    traces: Sequence[RepoTrace],
    encoder: TextEncoder,
    config: TrainConfig = TrainConfig(),
    *,
    ks: Sequence[int] = (1, 10),
    test_fraction: float = 0.2,
    on_step: Callable[[ProgressRow], None] | None = None,
    checkpoint: Path | None = None,
    model_id: str = "",
) -> ProgressiveReport:
    """Train ``encoder`` one step per repository of ``traces``, in the given (curriculum)
    order; after every step, re-embed the corpus of every repository seen and score each
    one's held-out examples.

    With ``checkpoint`` (a file), the learner (encoder, trainer and the steps taken) is
    written there atomically after every step. A checkpoint of the same learner (config,
    split, metrics and the starting model named by ``model_id``) is picked up: a repository
    already learned at the same commit is not trained again. So a killed run resumes after
    its last finished step, a finished run returns its report without training, and a later
    run over more repositories, or a newer commit of one, takes only the new steps (the
    lifelong learner of ``leanagent run``; its report holds the earlier steps too).
    ``on_step`` sees every row, the picked-up ones first.
    """
    trainer = ProgressiveTrainer(encoder, config)
    key = _learner_key(config, ks, test_fraction, model_id)
    rows: list[ProgressRow] = _resume(checkpoint, key, encoder, trainer) if checkpoint else []
    picked_up = len(rows)
    for row in rows:
        if on_step:
            on_step(row)
    latest = {t.spec.location: t for t in traces}
    learned = {(row.repo, row.commit) for row in rows}
    for trace in traces:
        location = trace.spec.location
        if (location, trace.commit) in learned:
            continue
        # Every repository learned so far, at its newest version, and this one.
        seen = [latest[loc] for loc in dict.fromkeys([*(row.repo for row in rows), location]) if loc in latest]
        corpus = PremiseCorpus(seen)
        train, _ = split(corpus.examples(trace), test_fraction=test_fraction, seed=config.seed)
        step = trainer.step(corpus, train)
        index = PremiseIndex.build(corpus, encoder)
        scores = {}
        for earlier in seen:
            _, test = split(corpus.examples(earlier), test_fraction=test_fraction, seed=config.seed)
            scores[earlier.spec.location] = evaluate(index, encoder, test, ks=ks)
        rows.append(ProgressRow(location, trace.commit, len(train), step, scores))
        if checkpoint:
            _save(checkpoint, {"key": key, "rows": rows, "encoder": encoder.model.state_dict(), "trainer": trainer.state_dict()})
        if on_step:
            on_step(rows[-1])
    return ProgressiveReport(tuple(dict.fromkeys(row.repo for row in rows)), tuple(rows), picked_up)


def _learner_key(config: TrainConfig, ks: Sequence[int], test_fraction: float, model_id: str) -> str:
    """What a checkpoint must match to be picked up: the same options and starting model."""
    return repr((dataclasses.astuple(config), tuple(ks), test_fraction, model_id))


def learner_id(config: TrainConfig, *, test_fraction: float, model_id: str, ks: Sequence[int] = (1, 10), place: str = "") -> str:
    """A short name for a learner (a file name): the hash of what :func:`run_progressive`
    requires of a checkpoint to pick it up, and of ``place`` (e.g. the database it learns from)."""
    key = _learner_key(config, ks, test_fraction, model_id) + place
    return hashlib.blake2b(key.encode(), digest_size=6).hexdigest()


def _resume(checkpoint: Path, key: str, encoder: TextEncoder, trainer: ProgressiveTrainer) -> list[ProgressRow]:
    if not checkpoint.exists():
        return []
    # Our own file in the data directory; it holds pickled records besides tensors.
    state = torch.load(checkpoint, weights_only=False)
    own = encoder.model.state_dict()
    fits = state["encoder"].keys() == own.keys() and all(v.shape == own[k].shape for k, v in state["encoder"].items())
    if state["key"] != key or not fits:
        log.info("checkpoint %s belongs to another learner (options or model); starting afresh", checkpoint)
        return []
    encoder.model.load_state_dict(state["encoder"])
    trainer.load_state_dict(state["trainer"])
    log.info("resuming after %d finished step(s) from %s", len(state["rows"]), checkpoint)
    return list(state["rows"])


class CheckpointError(UserInputError):
    """The checkpoint cannot be written where it was asked to go."""


def prepare_checkpoint(checkpoint: Path) -> None:
    """Make sure the checkpoint's directory exists, before any training is spent."""
    try:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CheckpointError(f"cannot keep the learner in {checkpoint.parent}: {error.strerror or error}") from error


def _save(checkpoint: Path, state: dict[str, object]) -> None:
    prepare_checkpoint(checkpoint)
    partial = checkpoint.with_name(checkpoint.name + ".partial")
    try:
        torch.save(state, partial)
        os.replace(partial, checkpoint)  # a kill mid-write leaves the previous checkpoint whole
    except OSError as error:
        raise CheckpointError(f"cannot write the checkpoint {checkpoint}: {error.strerror or error}") from error
