"""The ``leanagent`` console script: Ctrl-C and SIGTERM are honoured from the first
instruction to the last. While the CLI's modules are still importing, either ends the process
at once (exit 130 or 143, one line, no traceback: nothing has started); from then on
:func:`agent.cli.main.main` turns it into the same line after storing what is finished
(:mod:`agent.cli.signals`); once the command is done it is ignored.
"""

import os
import signal
import sys

from agent.cli.signals import EXIT_INTERRUPTED, EXIT_TERMINATED, INTERRUPTED_WORD, TERMINATED_WORD

_STARTING = {signal.SIGINT: (INTERRUPTED_WORD, EXIT_INTERRUPTED), signal.SIGTERM: (TERMINATED_WORD, EXIT_TERMINATED)}


def _ended_while_starting(signum: int, frame: object) -> None:
    word, code = _STARTING[signal.Signals(signum)]
    os.write(2, f"leanagent: {word} before any work began\n".encode())
    os._exit(code)


def run() -> None:
    for signum in _STARTING:
        signal.signal(signum, _ended_while_starting)
    from agent.cli.main import main

    sys.exit(main(standalone=True))  # it takes Ctrl-C and SIGTERM over
