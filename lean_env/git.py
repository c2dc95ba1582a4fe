"""Running git, with one policy for every call: reading repositories, building the REPL,
writing proofs back, pushing a branch.

* git never asks anything: not for a user name or a password (no terminal prompt, an
  askpass that answers nothing), not for an ssh passphrase or an unknown host key (ssh in
  batch mode, unless the user set ``GIT_SSH_COMMAND``). A private or mistyped URL fails at
  once instead of hanging until the timeout; credentials come with the call's ``env`` (an
  HTTP header for a push) or from an ssh agent.
* git speaks English (``LC_ALL=C``): callers read the reason of a failure in its stderr.
* Every call has a timeout, :data:`DEFAULT_TIMEOUT` unless it names another; past it git's
  whole process group (its ssh and remote helpers too) is killed and :class:`GitError` raised.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from lean_env import process
from lean_env.errors import BackendError

# Generous: a first clone of a big repository over a slow link takes minutes.
DEFAULT_TIMEOUT = 900.0
# Writing proofs back: plumbing in a local clone and the push of one small commit; a git
# that takes longer is stuck (a lock held, a remote that does not answer).
WRITE_BACK_TIMEOUT = 60.0


class GitError(BackendError):
    """git could not run, ran past its timeout, or failed where it had to succeed."""


def run_git(
    repo: Path | None,
    *args: str,
    timeout: float = DEFAULT_TIMEOUT,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
) -> process.Finished:
    """Run ``git -C REPO ARGS`` (plain ``git ARGS`` when ``repo`` is None) under the policy,
    with ``env`` added to our environment and ``input`` on its stdin (none: an empty one).

    Returns what git did, whatever its exit code (never timed out): the caller knows what a
    failure means.
    Raises :class:`GitError` when git is missing, cannot start, or runs past ``timeout``."""
    command = ["git", *(["-C", str(repo)] if repo is not None else []), *args]
    policy = {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "true",
        "GIT_SSH_COMMAND": os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes"),
        "LC_ALL": "C",
    }
    try:
        done = process.run(command, timeout=timeout, env={**os.environ, **policy, **(env or {})}, input=input)
    except FileNotFoundError as e:
        raise GitError("git is not installed; it is needed to read and write repositories") from e
    except OSError as e:
        raise GitError(f"could not run {' '.join(command)}: {e}") from e
    if done.timed_out:
        raise GitError(f"git {args[0]} timed out after {timeout:.0f}s in {repo or Path.cwd()}")
    return done
