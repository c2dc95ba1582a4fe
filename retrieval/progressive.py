"""The lifelong retrieval loop: repositories in curriculum order, one training step each,
and after every step the recall on every repository seen so far (LeanAgent's metrics
matrix), from which the lifelong-learning metrics are read (:mod:`retrieval.lifelong_metrics`).
Each repository is also scored just before its step and by the starting encoder, which
forward transfer and incremental plasticity compare with. Each repository's examples are
split by theorem (:mod:`retrieval.split`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from lean_env.errors import UserInputError
from lean_env.files import unwritable, write_atomically
from lean_env.records import RepoTrace
from retrieval.corpus import PremiseCorpus
from retrieval.encoder import TextEncoder
from retrieval.index import PremiseIndex, RecallScores, evaluate
from retrieval.lifelong_metrics import LifelongMetrics, ScoreMatrix, lifelong_metrics
from retrieval.split import TEST_FRACTION, split
from retrieval.train import ProgressiveTrainer, StepReport
from retrieval.train_config import TrainConfig

if TYPE_CHECKING:
    from retrieval.embeddings import PremiseIndexes

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ProgressRow:
    """One step of the loop: the repository (at a commit) trained on, and the scores on every
    repository seen so far."""

    repo: str
    commit: str
    train_examples: int
    step: StepReport
    scores: dict[str, RecallScores]  # repository -> scores on its held-out examples
    # This repository's scores just before the step, by the encoder the earlier steps left
    # (None: a step of a learner file written before they were kept, format 1).
    before: RecallScores | None = None
    # This repository's scores by the starting encoder, untrained (None: as ``before``).
    untrained: RecallScores | None = None


@dataclass(frozen=True, slots=True)
class ProgressiveReport:
    repos: tuple[str, ...]  # in the order they were first learned
    rows: tuple[ProgressRow, ...]
    picked_up: int = 0  # how many of the rows a checkpoint gave (steps taken before this call)

    def matrix(self, metric: Callable[[RecallScores], float]) -> list[list[float | None]]:
        """``matrix[i][j]``: the metric on repository ``j`` after step ``i`` (None before ``j``
        was seen, or when it has no held-out examples)."""
        return [[_value(row.scores.get(r), metric) for r in self.repos] for row in self.rows]

    def score_matrix(self, metric: Callable[[RecallScores], float]) -> ScoreMatrix:
        """The matrix with, for each step, the column it trained (a newer commit of a learned
        repository trains that repository's column again) and its scores before the step."""
        return ScoreMatrix(
            tuple(tuple(row) for row in self.matrix(metric)),
            tuple(self.repos.index(row.repo) for row in self.rows),
            tuple(_value(row.before, metric) for row in self.rows),
            tuple(_value(row.untrained, metric) for row in self.rows),
        )

    def metrics(self, metric: Callable[[RecallScores], float]) -> LifelongMetrics:
        """The lifelong-learning metrics of ``metric``'s matrix (docs/lifelong.md)."""
        return lifelong_metrics(self.score_matrix(metric))


def _value(scores: RecallScores | None, metric: Callable[[RecallScores], float]) -> float | None:
    return None if scores is None or scores.examples == 0 else metric(scores)


@dataclass(frozen=True, slots=True)
class Learner:
    """What a progressive learner is, all that a checkpoint must match to be picked up (with
    the length the encoder embeds at): how it trains, how each repository's examples are
    split and scored, and the encoder it started from."""

    config: TrainConfig = TrainConfig()
    test_fraction: float = TEST_FRACTION  # each repository's share of examples held out for the scores
    ks: tuple[int, ...] = (1, 10)  # the recall@k scored
    model_id: str = ""  # the starting encoder (retrieval.model_files.model_key)

    def key(self, embed_length: int) -> dict[str, Any]:
        """What a checkpoint must match (:func:`_learner_key`)."""
        return _learner_key(self.config, self.ks, self.test_fraction, self.model_id, embed_length)


def run_progressive(
    traces: Sequence[RepoTrace],
    encoder: TextEncoder,
    learner: Learner = Learner(),
    *,
    on_step: Callable[[ProgressRow], None] | None = None,
    checkpoint: Path | None = None,
    indexes: PremiseIndexes | None = None,
) -> ProgressiveReport:
    """Train ``encoder`` one step per repository of ``traces``, in the given (curriculum)
    order; after every step, re-embed the corpus of every repository seen and score each
    one's held-out examples. Each repository is also scored just before its step, and by
    ``encoder`` as given (the starting encoder, before a checkpoint's weights replace it).

    With ``checkpoint`` (a file), the learner (encoder, trainer and the steps taken) is
    written there atomically after every step. A checkpoint of the same ``learner`` (config,
    split, metrics and starting model) is picked up: a repository
    already learned at the same commit is not trained again. So a killed run resumes after
    its last finished step, a finished run returns its report without training, and a later
    run over more repositories, or a newer commit of one, takes only the new steps (the
    lifelong learner of ``leanagent run``; its report holds the earlier steps too).
    ``on_step`` sees every row, the picked-up ones first.

    With ``indexes``, each step's index comes from it (embedded through its store, and kept
    for ``on_step``: proving right after the step searches the same index).
    """
    config, test_fraction, ks = learner.config, learner.test_fraction, learner.ks
    trainer = ProgressiveTrainer(encoder, config)
    key = learner.key(encoder.max_length)
    saved = _picked_up(checkpoint, key, encoder) if checkpoint else None
    rows: list[ProgressRow] = list(saved.rows) if saved else []
    picked_up = len(rows)
    learned = {(row.repo, row.commit) for row in rows}
    pending = [t for t in traces if (t.spec.location, t.commit) not in learned]

    def score(corpus: PremiseCorpus, of: Sequence[RepoTrace]) -> dict[str, RecallScores]:
        return _score(encoder, corpus, of, test_fraction=test_fraction, seed=config.seed, ks=ks, indexes=indexes)

    def alone(trace: RepoTrace) -> RecallScores:
        # A repository's scores do not depend on other repositories' premises (none is
        # accessible from its theorems): scored before its step, it needs no other's embedded.
        return score(PremiseCorpus([trace]), [trace])[trace.spec.location]

    # The baseline of forward transfer, before the learner's weights replace the starting ones.
    untrained = {(t.spec.location, t.commit): alone(t) for t in pending}
    if saved:
        saved.load_into(encoder, trainer)
    for row in rows:
        if on_step:
            on_step(row)
    latest = {t.spec.location: t for t in traces}
    for trace in pending:
        location = trace.spec.location
        # Until a first step, the encoder is the starting one: its scores are the baseline's.
        before = alone(trace) if rows else untrained[(location, trace.commit)]
        # Every repository learned so far, at its newest version, and this one.
        seen = [latest[loc] for loc in dict.fromkeys([*(row.repo for row in rows), location]) if loc in latest]
        corpus = PremiseCorpus(seen)
        train, _ = split(corpus.examples(trace), test_fraction=test_fraction, seed=config.seed)
        log.info("step %d: training on %s at %s (%d examples)", len(rows) + 1, location, trace.commit, len(train))
        step = trainer.step(corpus, train)
        scores = score(corpus, seen)
        rows.append(
            ProgressRow(location, trace.commit, len(train), step, scores, before, untrained[(location, trace.commit)])
        )
        if checkpoint:
            _save(checkpoint, key, rows, encoder, trainer)
            log.info("step %d: learner saved to %s", len(rows), checkpoint)
        if on_step:
            on_step(rows[-1])
    return ProgressiveReport(tuple(dict.fromkeys(row.repo for row in rows)), tuple(rows), picked_up)


def _score(
    encoder: TextEncoder,
    corpus: PremiseCorpus,
    traces: Sequence[RepoTrace],
    *,
    test_fraction: float,
    seed: int,
    ks: Sequence[int],
    indexes: PremiseIndexes | None,
) -> dict[str, RecallScores]:
    """Each of ``traces``'s held-out examples scored by ``encoder`` as it is now, through an
    index of ``corpus`` (``traces``'s premises; embedded only if there is an example to
    score, and through ``indexes`` when given, which keeps it)."""
    tests = {t.spec.location: split(corpus.examples(t), test_fraction=test_fraction, seed=seed)[1] for t in traces}
    if not any(tests.values()):
        return {location: RecallScores(0, dict.fromkeys(ks, 0.0), 0.0) for location in tests}  # evaluate's, for none
    index = indexes.index(traces, encoder, corpus=corpus) if indexes else PremiseIndex.build(corpus, encoder)
    return {location: evaluate(index, encoder, test, ks=ks) for location, test in tests.items()}


def _learner_key(
    config: TrainConfig, ks: Sequence[int], test_fraction: float, model_id: str, embed_length: int
) -> dict[str, Any]:
    """What a checkpoint must match to be picked up: the same options and starting model,
    and the length the corpus is embedded at for the scores. Named field by field (JSON-able,
    lists not tuples), so that the key, and the learner files that hold it, stay as they are
    when a TrainConfig field is renamed or moved; a new field must be added here (a test
    checks that every field is)."""
    return {
        "consolidation": config.consolidation.value,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "learning_rate": config.learning_rate,
        "max_length": config.max_length,
        "loss": config.loss.value,
        "temperature": config.temperature,
        "negatives": config.negatives,
        "in_file_negatives": config.in_file_negatives,
        "schedule": config.schedule.value,
        "warmup_steps": config.warmup_steps,
        "ewc_lambda": config.ewc_lambda,
        "ewc_decay": config.ewc_decay,
        "fisher_batches": config.fisher_batches,
        "replay_size": config.replay_size,
        "seed": config.seed,
        "ks": list(ks),
        "test_fraction": test_fraction,
        "model": model_id,
        "embed_length": embed_length,
    }


def learner_id(learner: Learner, *, embed_length: int, place: str = "") -> str:
    """A short name for a learner (a file name): the hash of what :func:`run_progressive`
    requires of a checkpoint to pick it up (``embed_length``: the encoder's ``max_length``),
    and of ``place`` (e.g. the database it learns from)."""
    key = json.dumps({"learner": learner.key(embed_length), "place": place}, sort_keys=True)
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

LEARNER_FORMAT = 2  # bump with every change to what _save writes; _read refuses all but READABLE_FORMATS
# Format 1 had no scores before each step ("before", "untrained"): its steps read back
# without them, and the metrics that need them leave those steps out.
READABLE_FORMATS = (1, 2)

_START_AGAIN = "move it away or delete it to start a new learner"


@dataclass(frozen=True, slots=True)
class _Saved:
    """A learner file of this learner, read and checked, not yet loaded."""

    checkpoint: Path
    rows: tuple[ProgressRow, ...]
    encoder: dict[str, torch.Tensor]
    trainer: dict[str, Any]  # ProgressiveTrainer.state_dict()'s shape

    def load_into(self, encoder: TextEncoder, trainer: ProgressiveTrainer) -> None:
        try:
            encoder.model.load_state_dict(self.encoder)
            trainer.load_state_dict(self.trainer)
        except (KeyError, TypeError, ValueError) as error:
            raise _damaged(self.checkpoint, error) from error
        log.info("resuming after %d finished step(s) from %s", len(self.rows), self.checkpoint)


def _picked_up(checkpoint: Path, key: dict[str, Any], encoder: TextEncoder) -> _Saved | None:
    """The learner at ``checkpoint`` if it is one of ``key`` with weights that fit ``encoder``."""
    if not checkpoint.exists():
        return None
    state, meta = _read(checkpoint)
    own = encoder.model.state_dict()
    fits = state["encoder"].keys() == own.keys() and all(v.shape == own[k].shape for k, v in state["encoder"].items())
    if meta.get("learner") != key or not fits:
        log.info("checkpoint %s belongs to another learner (options or model); starting afresh", checkpoint)
        return None
    try:
        rows = tuple(_row_from_json(row) for row in meta["rows"])
        trainer = {"tensors": state["trainer"], "meta": meta["trainer"]}
    except (KeyError, TypeError, ValueError) as error:
        raise _damaged(checkpoint, error) from error
    return _Saved(checkpoint, rows, state["encoder"], trainer)


def _damaged(checkpoint: Path, error: Exception) -> CheckpointError:
    return CheckpointError(f"the learner {checkpoint} is damaged ({type(error).__name__}: {error}); {_START_AGAIN}")


def _read(checkpoint: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's parts and its parsed meta, or one CheckpointError saying what the file is."""
    try:
        # On the CPU whatever device wrote it: the encoder and trainer move what they load.
        state = torch.load(checkpoint, weights_only=True, map_location="cpu")
    except OSError as error:
        raise CheckpointError(f"cannot read the learner {checkpoint}: {error.strerror or error}") from error
    except Exception as error:  # refused pickled classes, or a damaged file (zip reader, unpickler, anywhere)
        raise CheckpointError(_unreadable(checkpoint)) from error
    fmt = state.get("format") if isinstance(state, dict) else None
    if not isinstance(fmt, int):
        raise CheckpointError(
            f"{checkpoint} is not a learner file of leanagent (it has no format number); {_START_AGAIN}"
        )
    if fmt not in READABLE_FORMATS:
        by = "a newer" if fmt > LEARNER_FORMAT else "another"
        raise CheckpointError(
            f"the learner {checkpoint} was written by {by} leanagent (learner format {fmt}; "
            f"this one reads formats {', '.join(map(str, READABLE_FORMATS))}): use that leanagent, or {_START_AGAIN}"
        )
    try:
        meta = json.loads(state["meta"])
        if not (isinstance(meta, dict) and isinstance(state["encoder"], dict) and isinstance(state["trainer"], dict)):
            raise TypeError("its parts are not what this format holds")
    except (KeyError, TypeError, ValueError) as error:
        raise _damaged(checkpoint, error) from error
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
        write_atomically(checkpoint, lambda partial: _save_tensors(state, partial))
    except OSError as error:
        raise unwritable(f"cannot write the learner {checkpoint}", error, fix=CheckpointError) from error


def _save_tensors(state: dict[str, Any], path: Path) -> None:
    """``torch.save`` through an open file: given a path, torch names the archive's folder
    after the file, and the partial file's name is unique per writer, so two learners of
    equal content would differ in bytes; given a file it names the folder ``archive``."""
    with path.open("wb") as file:
        try:
            torch.save(state, file)
        except RuntimeError as error:
            # torch's archive writer, when a write fails, fails again closing the archive
            # ("unexpected pos"): the write's OSError (a full disk) is what went wrong.
            if isinstance(error.__context__, OSError):
                raise error.__context__ from None
            raise


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
        "scores": {repo: _scores_to_json(s) for repo, s in row.scores.items()},
        "before": None if row.before is None else _scores_to_json(row.before),
        "untrained": None if row.untrained is None else _scores_to_json(row.untrained),
    }


def _scores_to_json(scores: RecallScores) -> dict[str, Any]:
    # recall's keys are ints (k), which JSON objects cannot have: [k, value] pairs
    return {"examples": scores.examples, "recall": [[k, v] for k, v in scores.recall.items()], "mrr": scores.mrr}


def _scores_from_json(scores: dict[str, Any]) -> RecallScores:
    return RecallScores(scores["examples"], dict(scores["recall"]), scores["mrr"])


def _optional_scores(scores: dict[str, Any] | None) -> RecallScores | None:
    return None if scores is None else _scores_from_json(scores)


def _row_from_json(row: dict[str, Any]) -> ProgressRow:
    step = row["step"]
    return ProgressRow(
        row["repo"],
        row["commit"],
        row["train_examples"],
        StepReport(step["examples"], step["batches"], step["mean_loss"], step["mean_penalty"]),
        {repo: _scores_from_json(s) for repo, s in row["scores"].items()},
        _optional_scores(row.get("before")),  # format 1 has neither
        _optional_scores(row.get("untrained")),
    )
