"""The lifelong retrieval loop: repositories in curriculum order, one training step each,
and after every step the recall on every repository seen so far (LeanAgent's metrics
matrix), from which forgetting is read.

Each repository's examples are split by theorem (all steps of a theorem on one side),
deterministically: a theorem is held out when a seeded hash of its repository's identity
and its name falls below the test fraction, so a repository keeps its split whatever else
is trained, and wherever it is checked out.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import torch

from lean_env.errors import UserInputError
from lean_env.files import write_atomically
from lean_env.records import RepoSpec, RepoTrace
from retrieval.corpus import PremiseCorpus
from retrieval.encoder import TextEncoder
from retrieval.index import PremiseIndex, RecallScores, evaluate
from retrieval.train import ProgressiveTrainer, StepReport, TrainConfig

if TYPE_CHECKING:
    from retrieval.embeddings import PremiseIndexes

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
        digest = hashlib.blake2b(
            f"{seed}:{identities[example.repo]}:{example.theorem}".encode(), digest_size=8
        ).digest()
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
    indexes: PremiseIndexes | None = None,
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

    With ``indexes``, each step's index comes from it (embedded through its store, and kept
    for ``on_step``: proving right after the step searches the same index).
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
        index = indexes.index(seen, encoder, corpus=corpus) if indexes else PremiseIndex.build(corpus, encoder)
        scores = {}
        for earlier in seen:
            _, test = split(corpus.examples(earlier), test_fraction=test_fraction, seed=config.seed)
            scores[earlier.spec.location] = evaluate(index, encoder, test, ks=ks)
        rows.append(ProgressRow(location, trace.commit, len(train), step, scores))
        if checkpoint:
            _save(checkpoint, key, rows, encoder, trainer)
        if on_step:
            on_step(rows[-1])
    return ProgressiveReport(tuple(dict.fromkeys(row.repo for row in rows)), tuple(rows), picked_up)


def _learner_key(config: TrainConfig, ks: Sequence[int], test_fraction: float, model_id: str) -> dict[str, Any]:
    """What a checkpoint must match to be picked up: the same options and starting model.
    Named field by field (JSON-able, lists not tuples), so that the key, and the learner
    files that hold it, stay as they are when a TrainConfig field is renamed or moved; a
    new field must be added here (a test checks that every field is)."""
    return {
        "consolidation": config.consolidation.value,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "learning_rate": config.learning_rate,
        "temperature": config.temperature,
        "ewc_lambda": config.ewc_lambda,
        "ewc_decay": config.ewc_decay,
        "fisher_batches": config.fisher_batches,
        "replay_size": config.replay_size,
        "seed": config.seed,
        "ks": list(ks),
        "test_fraction": test_fraction,
        "model": model_id,
    }


def learner_id(
    config: TrainConfig, *, test_fraction: float, model_id: str, ks: Sequence[int] = (1, 10), place: str = ""
) -> str:
    """A short name for a learner (a file name): the hash of what :func:`run_progressive`
    requires of a checkpoint to pick it up, and of ``place`` (e.g. the database it learns from)."""
    key = json.dumps({"learner": _learner_key(config, ks, test_fraction, model_id), "place": place}, sort_keys=True)
    return hashlib.blake2b(key.encode(), digest_size=6).hexdigest()


class CheckpointError(UserInputError):
    """The checkpoint cannot be written where it was asked to go, or is a file this
    leanagent does not read (another format, or damaged)."""


def prepare_checkpoint(checkpoint: Path) -> None:
    """Make sure the checkpoint's directory exists, before any training is spent."""
    try:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CheckpointError(f"cannot keep the learner in {checkpoint.parent}: {error.strerror or error}") from error


# ---- the learner on disk ---------------------------------------------------------------
#
# One torch file: {"format": LEARNER_FORMAT, "meta": JSON text, "encoder": the model's
# state_dict, "trainer": ProgressiveTrainer.state_dict()["tensors"]}, read back with
# torch.load(weights_only=True), which loads tensors and plain containers and never runs
# pickled code. The JSON meta is {"learner": _learner_key(...), "rows": [_row_to_json(row)],
# "trainer": ProgressiveTrainer.state_dict()["meta"]}.

LEARNER_FORMAT = 1  # bump with every change to what _save writes; _read refuses other formats

_START_AGAIN = "move it away or delete it to start a new learner"


def _resume(
    checkpoint: Path, key: dict[str, Any], encoder: TextEncoder, trainer: ProgressiveTrainer
) -> list[ProgressRow]:
    if not checkpoint.exists():
        return []
    state, meta = _read(checkpoint)
    own = encoder.model.state_dict()
    fits = state["encoder"].keys() == own.keys() and all(v.shape == own[k].shape for k, v in state["encoder"].items())
    if meta.get("learner") != key or not fits:
        log.info("checkpoint %s belongs to another learner (options or model); starting afresh", checkpoint)
        return []
    try:
        rows = [_row_from_json(row) for row in meta["rows"]]
        trainer_state = {"tensors": state["trainer"], "meta": meta["trainer"]}
        encoder.model.load_state_dict(state["encoder"])
        trainer.load_state_dict(trainer_state)
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(
            f"the learner {checkpoint} is damaged ({type(error).__name__}: {error}); {_START_AGAIN}"
        ) from error
    log.info("resuming after %d finished step(s) from %s", len(rows), checkpoint)
    return rows


def _read(checkpoint: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's parts and its parsed meta, or one CheckpointError saying what the file is."""
    try:
        state = torch.load(checkpoint, weights_only=True)
    except OSError as error:
        raise CheckpointError(f"cannot read the learner {checkpoint}: {error.strerror or error}") from error
    except Exception as error:  # refused pickled classes, or a damaged file (zip reader, unpickler, anywhere)
        raise CheckpointError(_unreadable(checkpoint)) from error
    fmt = state.get("format") if isinstance(state, dict) else None
    if not isinstance(fmt, int):
        raise CheckpointError(
            f"{checkpoint} is not a learner file of leanagent (it has no format number); {_START_AGAIN}"
        )
    if fmt != LEARNER_FORMAT:
        by = "a newer" if fmt > LEARNER_FORMAT else "another"
        raise CheckpointError(
            f"the learner {checkpoint} was written by {by} leanagent (learner format {fmt}; "
            f"this one reads format {LEARNER_FORMAT}): use that leanagent, or {_START_AGAIN}"
        )
    try:
        meta = json.loads(state["meta"])
        if not (isinstance(meta, dict) and isinstance(state["encoder"], dict) and isinstance(state["trainer"], dict)):
            raise TypeError("its parts are not what this format holds")
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(
            f"the learner {checkpoint} is damaged ({type(error).__name__}: {error}); {_START_AGAIN}"
        ) from error
    return state, meta


def _unreadable(checkpoint: Path) -> str:
    """Why torch.load(weights_only=True) refused a file: it holds pickled classes (an older
    leanagent's learner pickled this package's records), or it is damaged."""
    try:
        classes = torch.serialization.get_unsafe_globals_in_checkpoint(checkpoint)
    except Exception:  # not even a torch file whose pickle can be listed
        classes = []
    if any(name.startswith(("retrieval.", "lean_env.")) for name in classes):
        return f"the learner {checkpoint} was written by an older leanagent (an unversioned learner); {_START_AGAIN}"
    if classes:
        return (
            f"{checkpoint} holds pickled Python objects ({classes[0]}, ...), "
            f"not a learner file of leanagent; {_START_AGAIN}"
        )
    return f"the learner {checkpoint} cannot be read (damaged or truncated); {_START_AGAIN}"


def _save(
    checkpoint: Path,
    key: dict[str, Any],
    rows: Sequence[ProgressRow],
    encoder: TextEncoder,
    trainer: ProgressiveTrainer,
) -> None:
    prepare_checkpoint(checkpoint)
    trainer_state = trainer.state_dict()
    meta = {"learner": key, "rows": [_row_to_json(row) for row in rows], "trainer": trainer_state["meta"]}
    state = {
        "format": LEARNER_FORMAT,
        "meta": json.dumps(meta),
        "encoder": encoder.model.state_dict(),
        "trainer": trainer_state["tensors"],
    }
    # Whole or not at all: a kill mid-write leaves the previous learner.
    try:
        write_atomically(checkpoint, lambda partial: torch.save(state, partial))
    except OSError as error:
        raise CheckpointError(f"cannot write the checkpoint {checkpoint}: {error.strerror or error}") from error


def _row_to_json(row: ProgressRow) -> dict[str, Any]:
    step = row.step
    return {
        "repo": row.repo,
        "commit": row.commit,
        "train_examples": row.train_examples,
        "step": {
            "examples": step.examples,
            "batches": step.batches,
            "mean_loss": step.mean_loss,
            "mean_penalty": step.mean_penalty,
        },
        # recall's keys are ints (k), which JSON objects cannot have: [k, value] pairs
        "scores": {
            repo: {"examples": s.examples, "recall": [[k, v] for k, v in s.recall.items()], "mrr": s.mrr}
            for repo, s in row.scores.items()
        },
    }


def _row_from_json(row: dict[str, Any]) -> ProgressRow:
    step = row["step"]
    return ProgressRow(
        row["repo"],
        row["commit"],
        row["train_examples"],
        StepReport(step["examples"], step["batches"], step["mean_loss"], step["mean_penalty"]),
        {
            repo: RecallScores(s["examples"], {k: v for k, v in s["recall"]}, s["mrr"])
            for repo, s in row["scores"].items()
        },
    )
