"""The hyper-parameters of fine-tuning a tactic generator, in a module of their own that
imports no torch, so that the command line reads its defaults from them without slowing
``--help``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GeneratorTrainConfig:
    """Hyper-parameters of fine-tuning a tactic generator."""

    epochs: int = 1
    batch_size: int = 8
    # AdamW; ReProver fine-tunes its ByT5 generator at 5e-4. Tiny test models take 5e-3.
    learning_rate: float = 5e-4
    weight_decay: float = 0.0  # 0: AdamW is Adam, which the tests' few steps need
    seed: int = 0  # the example order and torch's global generator (dropout)
