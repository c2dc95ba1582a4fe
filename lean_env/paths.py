"""Paths as a user gives them (a command line word, a repos file line, a database URL),
refused with one line where no system call could ever use them.

The operating system refuses a path with a NUL byte (Python raises ``ValueError`` before
asking it) and one whose name, or a component of it, is longer than the file system allows
(``ENAMETOOLONG``). Both would surface deep inside the first ``stat`` as a traceback; asked
here first, they are the user's input errors, said where the path came from.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from lean_env.errors import UserInputError

# How much of a path a message shows: a 5,000-character path would make the line unreadable.
_SHOWN = 80


def shown(text: str) -> str:
    """``text`` as a message shows it: whole when short, else its start and its length."""
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text)} characters)"


def check_path(path: Path | str, *, where: str, error: type[UserInputError] = UserInputError) -> None:
    """Raise ``error`` when ``path`` holds a NUL byte or a name too long for the operating
    system; a path that merely does not exist (yet) passes. ``where`` says where the path came
    from (a repos file's line, the command line's word) and leads the message."""
    text = os.fspath(path)
    if "\x00" in text:
        raise error(f"{where}: a path holds a NUL byte, which no file name can")
    try:
        os.lstat(text)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise error(f"{where}: the path is too long for the file system ({len(text)} characters)") from e
