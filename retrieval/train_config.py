"""The hyper-parameters of a progressive training step of the premise retriever
(:mod:`retrieval.train` runs it), apart from the trainer: they import no torch, so the
command line reads its options' defaults from :class:`TrainConfig` while it builds its parsers.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from retrieval.formats import RETRIEVER_TRAIN_LENGTH
from retrieval.split import SPLIT_SEED


class Consolidation(enum.StrEnum):
    """How a training step protects what earlier steps learned."""

    EWC = "ewc"
    REPLAY = "replay"
    NONE = "none"


class Loss(enum.StrEnum):
    """What a batch teaches."""

    # Cross-entropy of each goal's similarities to the batch's premises over a temperature:
    # its own premise against the others (in-batch negatives).
    INFONCE = "infonce"
    # ReProver's: the mean squared error between each goal's cosine similarity to every
    # premise of the batch (in-batch and hard negatives) and 1 for a premise it used, else 0.
    MSE = "mse"


class Schedule(enum.StrEnum):
    """How the learning rate moves within one repository's step."""

    CONSTANT = "constant"
    # ReProver's and LeanAgent's (get_cosine_schedule_with_warmup): linear from 0 over
    # warmup_steps, then a cosine down to 0 at the step's last batch.
    COSINE = "cosine"


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Hyper-parameters of one progressive training step."""

    # Replay by default: on bench/retrieval_progressive.py it forgot least (0.02 recall@1)
    # while learning each new repository fully; EWC traded one for the other at every weight.
    consolidation: Consolidation = Consolidation.REPLAY
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 2e-5
    # Tokens of a goal or premise embedded in training (ReProver's retriever trained on 1024;
    # it embeds 2048 when proving, the encoder's own max_length).
    max_length: int = RETRIEVER_TRAIN_LENGTH
    # InfoNCE by default: on bench/retrieval_progressive.py it learned every repository fully
    # in its step, ReProver's MSE (with its cosine schedule) much less (docs/retrieval.md).
    loss: Loss = Loss.INFONCE
    temperature: float = 0.05  # of the InfoNCE loss
    # Hard negatives per example of the MSE loss, of which in_file_negatives come from the
    # used premise's file (ReProver's num_negatives 3, num_in_file_negatives 1): accessible
    # premises drawn at random (seeded).
    negatives: int = 3
    in_file_negatives: int = 1
    schedule: Schedule = Schedule.CONSTANT
    warmup_steps: int = 1000  # of the cosine schedule (LeanAgent's; ReProver's single run takes 2000)
    ewc_lambda: float = 1e10  # weight of the EWC penalty (MiniLM's Fisher values are tiny)
    ewc_decay: float = 1.0  # online EWC: how much of the older Fisher information is kept
    fisher_batches: int = 16  # batches used to estimate the Fisher information
    replay_size: int = 1024  # reservoir capacity (examples)
    seed: int = SPLIT_SEED  # the split's (retrieval.split) and the training's
