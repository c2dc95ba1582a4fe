"""Writing a file whole or not at all, safely when several processes write the same one."""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from lean_env.errors import DiskFullError, LeanAgentError, UserInputError

# What a write fails with when the disk, or the user's quota on it, is full.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


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


def unwritable(message: str, error: OSError, *, fix: type[LeanAgentError] = UserInputError) -> LeanAgentError:
    """The error to raise for a write that failed with ``error``: a full disk or quota is
    :class:`DiskFullError` (no fault of the input), anything else (no permission, a read-only
    file system, a path that is a directory) ``fix``, the user's to fix; ``message`` says
    what could not be written where, and gets the system's reason."""
    kind = DiskFullError if error.errno in _FULL else fix
    return kind(f"{message}: {error.strerror or error}")


def save_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """:func:`write_atomically`, raising :func:`unwritable`'s error, one line, where the file
    cannot be written (a full disk, a directory without permission)."""
    try:
        write_atomically(path, write)
    except OSError as error:
        raise unwritable(f"cannot write {path}", error) from error


def write_text_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole, or is left as it was (:func:`save_atomically`)."""
    save_atomically(path, lambda partial: partial.write_text(text, encoding="utf-8"))
