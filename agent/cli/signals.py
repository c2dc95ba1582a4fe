"""The signals that end a command early, and the exit codes they end it with.

Ctrl-C (SIGINT) and SIGTERM (what cron's ``timeout``, systemd and container schedulers send
a job they stop) end a command the same way: Python raises :class:`KeyboardInterrupt` for
Ctrl-C, and :func:`raise_terminated` raises :class:`Terminated`, a ``KeyboardInterrupt``, for
SIGTERM, so every cleanup written for Ctrl-C (killing solver and Lean processes, storing
finished work) runs for both. Only the exit code and the first word of the line differ:
130 "interrupted" and 143 "terminated", 128 plus the signal's number, as a shell reports a
process the signal killed.

Light on purpose (no imports but the standard library's): the console script installs these
handlers before anything else is imported.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, NoReturn

EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143
# The word an interrupted command's line starts with (every such line starts with it).
INTERRUPTED_WORD = "interrupted"
TERMINATED_WORD = "terminated (SIGTERM)"
# Seconds before a swallowed interrupt is sent again: long enough for the main thread to
# have left the callback that swallowed it.
REDELIVERY_DELAY = 0.01


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: unwinds as Ctrl-C does, and ends the command with exit 143."""


def raise_terminated(signum: int, frame: object) -> NoReturn:
    """The SIGTERM handler while a command works (see the module docs)."""
    raise Terminated


def was_terminated(error: BaseException) -> bool:
    """Whether the interrupt ``error`` (or the interrupt it was raised from, as a query's
    ``verify.errors.Interrupted`` is) came from SIGTERM."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, Terminated):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def interrupt_exit(error: BaseException) -> int:
    """The exit code of a command ended by the interrupt ``error``: 143 or 130."""
    return EXIT_TERMINATED if was_terminated(error) else EXIT_INTERRUPTED


def interrupt_line(error: BaseException, line: str) -> str:
    """``line`` (an interrupted command's, starting with "interrupted") as the interrupt
    ``error`` ends it: said as "terminated (SIGTERM)" when SIGTERM sent it."""
    if not was_terminated(error):
        return line
    return TERMINATED_WORD + line.removeprefix(INTERRUPTED_WORD)


def redeliver_swallowed_interrupts() -> None:
    """Make sure an interrupt that Python swallows still ends the command.

    A signal's handler runs wherever the main thread is, and the exception it raises inside
    a weakref callback, a ``__del__`` or a garbage collector's finaliser (an import lock's,
    say) cannot propagate: Python prints "Exception ignored in ..." and goes on, and the
    command would finish with exit 0. Installed as :data:`sys.unraisablehook` while a
    command works, this sends the main thread the same signal again a moment later, from a
    thread of its own (sent from here, its handler would run inside this hook and be
    swallowed again), so that it is raised where the main thread goes on; should that one
    be swallowed too, it comes back here. Any other unraisable exception goes to the hook
    before."""
    before = sys.unraisablehook
    main_thread = threading.main_thread().ident
    assert main_thread is not None  # the main thread is running: it is calling this

    def hook(unraisable: Any) -> None:
        kind = unraisable.exc_type
        if not (isinstance(kind, type) and issubclass(kind, KeyboardInterrupt)):
            before(unraisable)
            return
        signum = signal.SIGTERM if issubclass(kind, Terminated) else signal.SIGINT
        again = threading.Timer(REDELIVERY_DELAY, signal.pthread_kill, (main_thread, signum))
        again.daemon = True
        again.start()

    sys.unraisablehook = hook
