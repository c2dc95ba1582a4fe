"""A tiny BERT encoder built from a config (random weights, seeded) with the bundled MiniLM
tokenizer: the real code path of :class:`retrieval.encoder.TextEncoder`, in milliseconds."""

from __future__ import annotations

import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from retrieval.encoder import TextEncoder, default_model_path


def tiny_encoder(seed: int = 0, *, hidden: int = 32) -> TextEncoder:
    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(default_model_path())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=128,
    )
    return TextEncoder(BertModel(config), tokenizer, max_length=64)
