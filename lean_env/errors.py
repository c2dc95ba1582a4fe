"""The project's exception root and the faults shared by every layer of the prover.

Expected outcomes (a tactic error, a proof found, a timeout of one tactic) are returned
values, never exceptions. Exceptions are for faults: bad input the user can fix, a missing
tool, a backend process that died. Each layer adds its own leaves under this root, in the
module that raises them::

    LeanAgentError
     ├── UserInputError (ValueError)     bad input a user can fix: repo list, paths, options
     │    └── RepoSpecError              a repository spec or repos file line that is malformed
     ├── LeanNotFoundError (RuntimeError) no Lean toolchain where one is needed
     └── BackendError (RuntimeError)     an external process or library failed
          ├── DiskFullError               a file or database could not be written for want of space
          └── (backend-specific leaves: REPL crash, REPL protocol error, ...)

The CLI catches ``LeanAgentError`` and prints its message: so messages are one clear
sentence with context (repo, file, theorem, stderr tail), never a bare "failed".
"""

from __future__ import annotations


class LeanAgentError(Exception):
    """Root of every exception this project raises on purpose."""

    def __reduce__(self) -> tuple[object, ...]:
        # Errors cross process boundaries (Ray workers pickle them back to the driver).
        # Default pickling calls the class with ``args``, which breaks constructors that
        # take other arguments or format their message: rebuild with the message as it is.
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[LeanAgentError], args: tuple[object, ...], state: dict[str, object]) -> LeanAgentError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class UserInputError(LeanAgentError, ValueError):
    """Input the user can fix: a bad path, a malformed file, an unknown option value."""


class RepoSpecError(UserInputError):
    """A repository spec (or a line of a repos file) that cannot be used."""


class LeanNotFoundError(LeanAgentError, RuntimeError):
    """A Lean toolchain is needed and none was found."""

    INSTALL_HINT = (
        "install it with elan (https://github.com/leanprover/elan): "
        "curl https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh -sSf | sh"
    )

    def __init__(self, what: str = "lean") -> None:
        super().__init__(f"No Lean toolchain found ({what} is not on PATH); {self.INSTALL_HINT}")


class BackendError(LeanAgentError, RuntimeError):
    """An external process or library failed in a way that is not a proof outcome."""


class DiskFullError(BackendError):
    """A file or a database could not be written because its disk (or the user's quota) is
    full: no fault of the input, and nothing finished is lost (every write is whole or not at
    all); free space and run again."""


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none): what goes
    into our one-sentence messages when a library's error is the cause."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
