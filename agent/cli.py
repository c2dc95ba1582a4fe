"""The ``leanagent`` command line: parse, call the library, print, exit.

Every fault a user can cause ends here as one line on stderr and a non-zero exit code,
never a traceback (``-v`` adds the traceback for bug reports):

* 0 -- the command did what was asked (an UNSAT answer or an unproved theorem is a result);
* 1 -- the work failed for a reason outside the user's input (a backend crashed);
* 2 -- bad input: usage errors, a malformed repo list, a missing file, an unknown solver,
  or a Lean toolchain that is needed and not installed;
* 130 -- interrupted; finished work is already stored and a re-run resumes.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from agent.settings import DATA_DIR_ENV, DB_URL_ENV, Settings
from lean_env.errors import LeanAgentError, LeanNotFoundError, UserInputError
from verify.errors import VerifyError, VerifyInputError

# One module per command family; each has ``register(subparsers)``. Modules import their
# heavy dependencies (torch, pysmt, sqlalchemy) inside handlers so that ``--help`` is fast.
COMMAND_MODULES = (
    "agent.commands.data",
    "agent.commands.generator",
    "agent.commands.lean",
    "agent.commands.prove",
    "agent.commands.retrieval",
    "agent.commands.run",
    "agent.commands.verify",
)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

log = logging.getLogger("leanagent")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        help=f"where databases, caches and reports live (default: ${DATA_DIR_ENV} or "
        "~/.local/share/leanagent)",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        default=None,
        help=f"SQLAlchemy database URL, e.g. postgresql+psycopg://user@host/db (default: "
        f"${DB_URL_ENV} or SQLite in the data dir)",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s",
    )
    settings = Settings.resolve(data_dir=args.data_dir, db_url=args.db)
    try:
        return int(args.handler(args, settings))
    except KeyboardInterrupt:
        print("leanagent: interrupted; finished work is saved, re-run to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (UserInputError, LeanNotFoundError, VerifyInputError) as e:
        _report(e, args.verbose)
        return EXIT_USAGE
    except (LeanAgentError, VerifyError) as e:
        _report(e, args.verbose)
        return EXIT_FAILURE


def _report(error: Exception, verbose: int) -> None:
    if verbose:
        log.exception("details")
    print(f"leanagent: error: {error}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
