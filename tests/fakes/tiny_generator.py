"""Tiny tactic generators built from a config (seeded random weights) with the ByT5 byte
tokenizer, which needs no vocabulary file: the real code path of
:class:`agent.generators.model.HFTacticGenerator`, trained in seconds on CPU."""

from __future__ import annotations

import torch
from transformers import (
    ByT5Tokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    T5Config,
    T5ForConditionalGeneration,
)

from agent.generators.model import HFTacticGenerator
from agent.generators.training import GeneratorTrainConfig, TacticExample, train_generator


def tiny_t5(seed: int = 0) -> HFTacticGenerator:
    torch.manual_seed(seed)
    tokenizer = ByT5Tokenizer()
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=2,
        decoder_start_token_id=tokenizer.pad_token_id,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return HFTacticGenerator(T5ForConditionalGeneration(config), tokenizer, max_input_tokens=256, max_tactic_tokens=24)


def tiny_gpt2(seed: int = 0) -> HFTacticGenerator:
    torch.manual_seed(seed)
    tokenizer = ByT5Tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=320,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return HFTacticGenerator(GPT2LMHeadModel(config), tokenizer, max_input_tokens=256, max_tactic_tokens=24)


def teach(generator: HFTacticGenerator, pairs: list[tuple[str, str]], *, steps: int = 80, lr: float = 5e-3) -> None:
    """Fit (goal, tactic) pairs by teacher forcing, all in one batch: enough for the model
    to say them back."""
    examples = [TacticExample("", "", goal, tactic) for goal, tactic in pairs]
    train_generator(generator, examples, GeneratorTrainConfig(epochs=steps, batch_size=len(examples), learning_rate=lr))
