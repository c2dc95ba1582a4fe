"""Faults of the Lean REPL backend: what can go wrong around Lean, not inside a proof.

Tactic errors and tactic timeouts are returned values (see :mod:`lean_env.interactive.interface`);
these exceptions are for the infrastructure. The tree::

    BackendError (lean_env.errors)
     └── ReplError                    anything the REPL backend raises on purpose
          ├── ReplStartError          the REPL program could not be started
          ├── ReplProtocolError       output that is not the REPL's JSON protocol (raw text attached)
          ├── ReplCrashError          the process died (exit code and stderr tail attached)
          ├── ReplTimeoutError        a request ran past its time limit; the process tree was killed
          ├── ReplOpenError           Lean could not elaborate a theorem's statement to a goal
          ├── ReplStateLostError      a state could not be rebuilt after a restart (backend.py)
          └── ReplBuildError          cloning or building the REPL failed (find.py)
    LeanNotFoundError (lean_env.errors)
     └── ReplNotFoundError            no REPL binary anywhere; the message says how to get one
    UserInputError (lean_env.errors)
     ├── TheoremSourceError           the theorem's file is missing or its positions do not fit it
     │                                (lean_env.proofs.theorem_source, shared with the other backends)
     └── ReplPathError                a REPL binary named by --repl or $LEANAGENT_REPL that cannot run
                                      (find.py)
"""

from __future__ import annotations

from lean_env.errors import BackendError, LeanAgentError, LeanNotFoundError
from lean_env.process import tail

# How much of a process's stderr (or of a malformed response) an error message carries.
TAIL_CHARS = 2000


class ReplError(BackendError):
    """Root of the REPL backend's faults."""


class ReplStartError(ReplError):
    """The REPL program could not be started (missing file, not executable, died at once)."""


class ReplProtocolError(ReplError):
    """The REPL printed something that is not a well-formed response; ``raw`` is what it printed."""

    def __init__(self, message: str, *, raw: str) -> None:
        super().__init__(f"{message}; raw output: {tail(raw, TAIL_CHARS)!r}")
        self.reason = message
        self.raw = raw


class ReplCrashError(ReplError):
    """The REPL process exited (or closed its output) while we expected an answer."""

    def __init__(self, message: str, *, returncode: int | None, stderr_tail: str) -> None:
        detail = f" (exit code {returncode})" if returncode is not None else ""
        stderr_note = f"; stderr: {stderr_tail}" if stderr_tail else ""
        super().__init__(f"{message}{detail}{stderr_note}")
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class ReplTimeoutError(ReplError):
    """A request did not finish in time; the whole process tree has been killed."""

    def __init__(self, message: str, *, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


class ReplOpenError(ReplError):
    """Lean could not turn a theorem's statement into a proof state."""


class ReplNotFoundError(LeanNotFoundError):
    """No Lean REPL binary was found; the message says where we looked and how to get one."""

    def __init__(self, detail: str) -> None:
        LeanAgentError.__init__(self, detail)
