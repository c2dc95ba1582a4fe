"""The verifier's exceptions. ``verify`` stands alone, so it has its own root.

::

    VerifyError
     ├── VerifyInputError (ValueError)     a malformed model spec, bad query options
     │    └── (spec errors name the offending field)
     ├── SolverError (RuntimeError)        the solver crashed or answered oddly
     │    └── SolverUnavailableError (also VerifyInputError)  not installed / not on PATH:
     │                                     the user can fix it, so the CLI exits 2
     └── WitnessMismatchError (AssertionError)  a SAT witness the interpreter does not
                                           confirm: an internal error, never a silent answer

    KeyboardInterrupt
     └── Interrupted                       Ctrl-C during a query, carrying what was decided so
                                           far; not a VerifyError, so that ``except Exception``
                                           cannot swallow it

An ``unknown`` from the solver (timeout, incompleteness) is a result value, not an error,
and is never turned into "unsat".
"""

from __future__ import annotations


class VerifyError(Exception):
    """Root of every exception the verifier raises on purpose."""


class VerifyInputError(VerifyError, ValueError):
    """Input the user can fix: a malformed model file, an unknown solver, bad options."""


class SolverError(VerifyError, RuntimeError):
    """The SMT solver is unavailable or failed."""


class WitnessMismatchError(VerifyError, AssertionError):
    """The solver's witness does not replay through the reference interpreter."""


class SolverUnavailableError(SolverError, VerifyInputError):
    """The chosen solver is not installed (or its binary is not on PATH): fixable by the user."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a query, after its solver processes were killed.

    ``partial`` is the query's result so far (``complete`` False, verdict UNKNOWN, the lengths
    decided before the interrupt in its checks), or None when nothing was decided.
    """

    def __init__(self, partial: object | None) -> None:
        super().__init__("interrupted")
        self.partial = partial
