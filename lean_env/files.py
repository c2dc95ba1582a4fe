"""Writing a file whole or not at all, safely when several processes write the same one."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from lean_env.errors import UserInputError


def write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a temporary file beside ``path``, then move it into place: a kill mid-write
    leaves ``path`` as it was. The temporary name is unique per writer (pid and a random
    part), so two processes saving one file never write into one temporary and never move
    the other's away; it keeps ``path``'s suffix (savers choose the format by it). Raises
    ``OSError``; the temporary file is removed whatever happens."""
    partial = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial{path.suffix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def save_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """:func:`write_atomically`, where a file that cannot be written is the user's to fix (a
    full disk, a directory without permission): :class:`UserInputError`, one line."""
    try:
        write_atomically(path, write)
    except OSError as error:
        raise UserInputError(f"cannot write {path}: {error.strerror or error}") from error


def write_text_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole, or is left as it was (:func:`save_atomically`)."""
    save_atomically(path, lambda partial: partial.write_text(text, encoding="utf-8"))
