"""The ``leanagent`` console script: Ctrl-C is honoured from the first instruction to the
last. While the CLI's modules are still importing, it ends the process at once (exit 130,
one line, no traceback: nothing has started); from then on :func:`agent.cli.main.main` turns it
into the same line after storing what is finished; once the command is done it is ignored.
"""

import os
import signal
import sys

EXIT_INTERRUPTED = 130


def _interrupted_while_starting(signum: int, frame: object) -> None:
    os.write(2, b"leanagent: interrupted before any work began\n")
    os._exit(EXIT_INTERRUPTED)


def run() -> None:
    signal.signal(signal.SIGINT, _interrupted_while_starting)
    from agent.cli.main import main

    sys.exit(main(standalone=True))  # it takes Ctrl-C over
