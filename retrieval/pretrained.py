"""Loading a Hugging Face model from a local directory or a hub name, with one clear error.

Shared by the retriever's encoder and the prover's tactic generator: both accept a local
directory (one we saved, or any ``transformers`` checkpoint) or a Hugging Face name (needs
the network once, then the local cache).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from safetensors import SafetensorError
from transformers import (
    AutoConfig,
    AutoTokenizer,
    PretrainedConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.utils import logging as hf_logging

from lean_env.errors import UserInputError, first_line

log = logging.getLogger(__name__)

# Seconds to wait for the hub to answer a connection before calling it unreachable.
_HUB_PROBE_SECONDS = 5.0


class ModelLoadError(UserInputError):
    """A model name or directory that cannot be loaded."""


class ModelClass(Protocol):
    """What ``load_pretrained``'s ``model_class`` picks: a class that loads a checkpoint, an
    Auto class (``AutoModel``, ...) or a model class. A protocol, not ``type``: what matters is
    ``from_pretrained``, which the Auto classes have without subclassing PreTrainedModel."""

    def from_pretrained(self, source: str | Path, /, *, config: PretrainedConfig) -> PreTrainedModel: ...


@dataclass(frozen=True, slots=True)
class Loaded:
    config: PretrainedConfig
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase

    @property
    def max_positions(self) -> int | None:
        """How many input tokens the model has positions for (None: relative positions)."""
        return getattr(self.config, "max_position_embeddings", None)


def load_pretrained(source: str | Path, what: str, model_class: Callable[[PretrainedConfig], ModelClass]) -> Loaded:
    """Config, model and tokenizer at ``source``; ``model_class(config)`` picks the model
    class (e.g. an encoder-only class for an encoder-decoder checkpoint)."""
    text = str(source)
    if text.startswith(("/", ".", "~")):
        source = Path(text).expanduser()
        if source.is_file():
            raise ModelLoadError(
                f"cannot load the {what} {text!r}: it is a file; "
                "a model is a directory (config.json, weights, tokenizer)"
            )
        if not source.is_dir():
            raise ModelLoadError(f"cannot load the {what} {text!r}: no such directory")
    elif not Path(text).exists():
        _reachable_or_cached(text, what)
    try:
        with _no_weight_bars():
            config = AutoConfig.from_pretrained(source)
            model = model_class(config).from_pretrained(source, config=config)
            tokenizer = AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError, RuntimeError, SafetensorError) as error:  # missing, malformed or mismatched files
        where = (
            "a local directory"
            if Path(text).exists()
            else "a local directory or a Hugging Face model reachable from here"
        )
        raise ModelLoadError(f"cannot load the {what} {text!r} (expected {where}): {first_line(error)}") from error
    log.info("loaded %s %s (%s)", what, text, type(model).__name__)
    return Loaded(config, model, tokenizer)


def _reachable_or_cached(name: str, what: str) -> None:
    """Fail at once, with one line, for a Hugging Face name that can only be downloaded
    (not in the local cache) where nothing can be: offline by ``HF_HUB_OFFLINE``, or the hub
    (``HF_ENDPOINT``) unreachable. Otherwise transformers retries for half a minute, logging
    each retry, before the same conclusion."""
    from huggingface_hub import constants, try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(name, "config.json")
    except ValueError as error:  # huggingface_hub's HFValidationError: no repository id
        raise ModelLoadError(
            f"cannot load the {what} {name!r}: no such directory, and not a Hugging Face model name "
            f"({first_line(error)})"
        ) from error
    if isinstance(cached, str):
        return  # cached: transformers finds it offline too
    if constants.HF_HUB_OFFLINE:
        raise ModelLoadError(
            f"cannot load the {what} {name!r}: it is not in the local Hugging Face cache, and "
            "HF_HUB_OFFLINE is set (give a local directory, or download it where there is a network)"
        )
    endpoint = urllib.parse.urlsplit(constants.ENDPOINT)
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((endpoint.hostname or "", port), timeout=_HUB_PROBE_SECONDS).close()
    except OSError as error:
        raise ModelLoadError(
            f"cannot load the {what} {name!r}: it is not in the local Hugging Face cache, and "
            f"{endpoint.hostname} cannot be reached from here ({error.strerror or error}); "
            "give a local directory, or download it where there is a network"
        ) from error


def save_pretrained(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, directory: Path) -> None:
    """Write a model and its tokenizer so that :func:`load_pretrained` reads them back."""
    directory.mkdir(parents=True, exist_ok=True)
    with _no_weight_bars():
        model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)


@contextlib.contextmanager
def _no_weight_bars() -> Iterator[None]:
    """transformers draws a bar per weight file it loads or writes: in a second it would only
    break our one-line messages and sit among our own progress bars. Downloads keep theirs
    (huggingface_hub's own bars)."""
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()
