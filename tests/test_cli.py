"""The CLI frame: help, exit codes, and how faults become one line on stderr."""

import argparse
import subprocess
import sys

import pytest

from agent import cli
from lean_env.errors import BackendError, RepoSpecError
from verify.errors import SolverError, VerifyInputError


def test_help_lists_every_command_family():
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    for command in ("ingest", "curriculum", "run", "check", "env", "prove", "retrieval", "verify"):
        assert command in done.stdout


def test_unknown_command_is_a_usage_error(capsys):
    assert cli.main(["no-such-command"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice" in err and "see 'leanagent --help'" in err


def _parser_with(handler):
    def build() -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog="leanagent")
        parser.add_argument("-v", "--verbose", action="count", default=0)
        parser.add_argument("--data-dir", default=None)
        parser.add_argument("--db", default=None)
        sub = parser.add_subparsers(dest="command", required=True)
        sub.add_parser("boom").set_defaults(handler=handler)
        return parser

    return build


def _raiser(error: BaseException):
    def handler(args, settings):
        raise error

    return handler


@pytest.mark.parametrize(
    ("error", "code"),
    [
        pytest.param(RepoSpecError("repos.txt:3: no location"), cli.EXIT_USAGE, id="user-input"),
        pytest.param(VerifyInputError("layers[0].heads: shape"), cli.EXIT_USAGE, id="verify-input"),
        pytest.param(BackendError("REPL died; stderr: oom"), cli.EXIT_FAILURE, id="backend"),
        pytest.param(SolverError("cvc5 is not installed"), cli.EXIT_FAILURE, id="solver"),
        pytest.param(KeyboardInterrupt(), cli.EXIT_INTERRUPTED, id="interrupt"),
    ],
)
def test_faults_become_one_line_and_an_exit_code(monkeypatch, capsys, error, code):
    monkeypatch.setattr(cli, "build_parser", _parser_with(_raiser(error)))
    assert cli.main(["boom"]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    if not isinstance(error, KeyboardInterrupt):
        assert str(error) in err


def test_handler_exit_code_is_returned(monkeypatch):
    monkeypatch.setattr(cli, "build_parser", _parser_with(lambda args, settings: 3))
    assert cli.main(["boom"]) == 3
