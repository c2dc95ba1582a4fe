"""Writing a file whole or not at all, safely when several processes write the same one."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


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
