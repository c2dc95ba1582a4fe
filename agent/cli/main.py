"""The ``leanagent`` command line: parse, call the library, print, exit.

Every fault a user can cause ends here as one line on stderr and a non-zero exit code,
never a traceback (``-v`` adds the traceback for bug reports):

* 0 -- the command did what was asked (an UNSAT answer or an unproved theorem is a result);
* 1 -- the work failed for a reason outside the user's input (a backend crashed);
* 2 -- bad input: usage errors, a malformed repo list, a missing file, an unknown solver,
  or a Lean toolchain that is needed and not installed;
* 130 -- interrupted (Ctrl-C); finished work is already stored and a re-run resumes;
* 143 -- terminated (SIGTERM, as schedulers stop a job): the same as 130 but for the code;
* 141 -- the reader of the output went away (``leanagent ... | head``): nothing is said,
  as a Unix tool that SIGPIPE ends says nothing.

Output that cannot be written (a full disk behind ``> file``) is a failure (1) like any other.
With ``--json`` a fault is also one JSON object on stdout, ``{"error": MESSAGE, "exit":
CODE}``, so that a machine reading stdout sees it. The console script enters through
:mod:`agent.cli.entry`, which honours Ctrl-C and SIGTERM from the first instruction to the last.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from agent.cli.signals import EXIT_INTERRUPTED as EXIT_INTERRUPTED  # the codes, with those below
from agent.cli.signals import EXIT_TERMINATED as EXIT_TERMINATED
from agent.cli.signals import interrupt_exit, interrupt_line, raise_terminated, redeliver_swallowed_interrupts
from agent.reports.output import OutputClosed, writing
from agent.workspace.settings import DATA_DIR_ENV, DB_URL_ENV, Settings
from lean_env.errors import LeanAgentError, LeanNotFoundError, UserInputError
from verify.errors import VerifyError, VerifyInputError

# One module per command family; each has ``register(subparsers)``. Modules import their
# heavy dependencies (torch, pysmt, sqlalchemy) inside handlers so that ``--help`` is fast.
COMMAND_MODULES = (
    "agent.cli.commands.data",
    "agent.cli.commands.evaluate",
    "agent.cli.commands.generator",
    "agent.cli.commands.lean",
    "agent.cli.commands.prove",
    "agent.cli.commands.recheck",
    "agent.cli.commands.retrieval",
    "agent.cli.commands.run",
    "agent.cli.commands.verify",
)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
# 128 + SIGPIPE, the status of a Unix tool whose reader went away.
EXIT_OUTPUT_CLOSED = 141
# What an interrupted command says, unless it says what it keeps itself (a parser default
# `interrupted`): the jobs keep their finished work in the database and resume from it.
INTERRUPTED = "interrupted; finished work is saved, re-run to resume"

log = logging.getLogger("leanagent")


class UsageError(UserInputError):
    """The command line itself is wrong: an unknown command, a missing or bad option value."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line and exit 2 like every other user error
    (argparse would print the usage first and exit by itself); ``--help`` shows the usage."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="leanagent",
        description=(
            "A Lean 4 theorem-proving agent that learns across repositories (ingest them into "
            "a database, order them by a curriculum, open theorems in Lean, check and write "
            "back proofs) and an exact SMT verifier for quantized transformer encoders."
        ),
        epilog="Run 'leanagent COMMAND --help' for the options of one command.",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"where databases, caches and reports live (default: ${DATA_DIR_ENV} or ~/.local/share/leanagent)",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        default=None,
        help=f"SQLAlchemy database URL, e.g. postgresql+psycopg://user@host/db (default: "
        f"${DB_URL_ENV} or SQLite in the data dir)",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, *, standalone: bool = False) -> int:
    """Run one command; the exit code. ``standalone``: this is the process's own entry
    (:mod:`agent.cli.entry`), so once the command is done a late Ctrl-C or SIGTERM is
    ignored: it cannot undo finished work, and must not turn its exit code into 130 or 143."""
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv
    args = None
    try:
        if standalone:  # from here on, both are a KeyboardInterrupt that the except below ends
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, raise_terminated)
            redeliver_swallowed_interrupts()
        args = build_parser().parse_args(argv)
        logging.basicConfig(
            level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)],
            format="%(levelname)s %(name)s: %(message)s",
        )
        settings = Settings.resolve(data_dir=args.data_dir, db_url=args.db)
        code = int(args.handler(args, settings))
        if standalone:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return code
    except KeyboardInterrupt as e:
        # What an interruption keeps is the command's to say (verify keeps nothing).
        interrupted = interrupt_line(e, getattr(args, "interrupted", INTERRUPTED))
        return _fail(
            None, interrupt_exit(e), as_json=as_json, argv=argv, interrupted=interrupted, standalone=standalone
        )
    except OutputClosed:
        if standalone:
            _discard_output()
        return EXIT_OUTPUT_CLOSED
    except (UserInputError, LeanNotFoundError, VerifyInputError) as e:
        return _fail(e, EXIT_USAGE, as_json=as_json, argv=argv, standalone=standalone)
    except (LeanAgentError, VerifyError) as e:
        return _fail(e, EXIT_FAILURE, as_json=as_json, argv=argv, standalone=standalone)


def _fail(
    error: Exception | None,
    code: int,
    *,
    as_json: bool,
    argv: Sequence[str],
    interrupted: str = "",
    standalone: bool = False,
) -> int:
    """One line on stderr (``-v`` adds the traceback first), and with ``--json`` the same as
    a JSON object on stdout, where it can be written. ``error`` None: interrupted, which
    ``interrupted`` says."""
    if error is None:
        message = interrupted
        print(f"leanagent: {message}", file=sys.stderr)
    else:
        # Read from the words, not the parsed options: the parse itself may have failed.
        if any(a in ("-v", "-vv", "--verbose") for a in argv):
            log.error("details", exc_info=error)
        message = str(error)
        print(f"leanagent: error: {message}", file=sys.stderr)
    if as_json:
        try:
            with writing():
                print(json.dumps({"error": message, "exit": code}), flush=True)
        except (OutputClosed, LeanAgentError):  # the line on stderr has said it
            if standalone:
                _discard_output()
    return code


def _discard_output() -> None:
    """Point the process's stdout at /dev/null: what its buffer still holds cannot be
    written, and Python's flush at exit would report that with a traceback of its own."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main(standalone=True))
