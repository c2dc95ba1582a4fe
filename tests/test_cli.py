"""The CLI frame: help, exit codes, and how faults become one line on stderr."""

import argparse
import re
import subprocess
import sys

import pytest

from agent.cli import main as cli
from agent.cli.signals import Terminated
from lean_env.errors import BackendError, DiskFullError, RepoSpecError
from verify.errors import SolverError, VerifyInputError

TOP_LEVEL = {
    "ingest", "db", "curriculum", "export", "run", "retrieval", "prove", "recheck", "evaluate", "generator", "check",
    "env", "verify",
}  # fmt: skip


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The commands ``parser`` dispatches to, by name ({} for a command without any)."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) <= 1, f"{parser.prog} has {len(actions)} groups of subcommands"
    return dict(actions[0].choices) if actions else {}


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        pytest.param((), TOP_LEVEL, id="leanagent"),
        pytest.param(("ingest",), set(), id="ingest"),
        pytest.param(("db",), {"stats"}, id="db"),
        pytest.param(("curriculum",), set(), id="curriculum"),
        pytest.param(("export",), set(), id="export"),
        pytest.param(("run",), set(), id="run"),
        pytest.param(("retrieval",), {"train", "eval", "search"}, id="retrieval"),
        pytest.param(("prove",), set(), id="prove"),
        pytest.param(("recheck",), set(), id="recheck"),
        pytest.param(("evaluate",), set(), id="evaluate"),
        pytest.param(("generator",), {"train"}, id="generator"),
        pytest.param(("check",), set(), id="check"),
        pytest.param(("env",), {"doctor"}, id="env"),
        pytest.param(("verify",), {"trsat", "robust", "equiv", "export-smt", "eval", "train-example"}, id="verify"),
    ],
)
def test_the_parser_has_exactly_these_commands(command, expected):
    parser = cli.build_parser()
    for name in command:
        parser = _subcommands(parser)[name]
    assert set(_subcommands(parser)) == expected


def test_help_lists_every_command():
    done = subprocess.run([sys.executable, "-m", "agent.cli", "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    # build_parser names the choices COMMAND, so there is no `{a,b,...}` line: argparse lists
    # one command per row, indented four spaces (options two, wrapped help text further).
    listed = {line.split()[0] for line in done.stdout.splitlines() if re.match(r" {4}\S", line)}
    assert listed == TOP_LEVEL, done.stdout


def _every_parser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every command below it."""
    return [parser, *(p for sub in _subcommands(parser).values() for p in _every_parser(sub))]


def test_every_commands_help_renders():
    """argparse %-formats each option's help: a bare `%` in one breaks that command's --help."""
    for parser in _every_parser(cli.build_parser()):
        assert "usage:" in parser.format_help(), parser.prog


REPO = ("repos.txt",)
CHECK = (".", "A.lean", "A.t", "--proof", "rfl")


@pytest.mark.parametrize(
    ("argv", "expected", "warning"),
    [
        pytest.param(("ingest", ".", "--tracer", "source"), {"tracer": "source"}, "", id="ingest"),
        pytest.param(
            ("ingest", ".", "--backend", "dojo"),
            {"tracer": "dojo"},
            "--backend is deprecated, use --tracer",
            id="ingest-old",
        ),
        pytest.param(
            ("run", *REPO, "--tracer", "source", "--proof-backend", "file"),
            {"tracer": "source", "proof_backend": "file"},
            "",
            id="run",
        ),
        pytest.param(
            ("run", *REPO, "--backend", "source"),
            {"tracer": "source", "proof_backend": "auto"},
            "use --tracer",
            id="run-old",
        ),
        pytest.param(("prove", "--proof-backend", "server"), {"proof_backend": "server"}, "", id="prove"),
        pytest.param(("prove", "--backend", "file"), {"proof_backend": "file"}, "use --proof-backend", id="prove-old"),
        pytest.param(
            ("evaluate", "--backend", "repl"), {"proof_backend": "repl"}, "use --proof-backend", id="evaluate-old"
        ),
        pytest.param(("check", *CHECK, "--proof-backend", "file"), {"proof_backend": "file"}, "", id="check"),
        pytest.param(("check", *CHECK), {"proof_backend": "none"}, "", id="check-default"),
        pytest.param(
            ("check", *CHECK, "--backend", "file"), {"proof_backend": "file"}, "use --proof-backend", id="check-old"
        ),
    ],
)
def test_the_tracer_and_the_proof_backend_have_one_name_each(argv, expected, warning, capsys) -> None:
    """``--tracer`` traces, ``--proof-backend`` proves; ``--backend``, which meant either,
    still works for a release, with a one-line warning."""
    args = cli.build_parser().parse_args(argv)
    assert {name: getattr(args, name) for name in expected} == expected
    err = capsys.readouterr().err
    assert (warning in err and len(err.splitlines()) == 1) if warning else err == ""


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
        pytest.param(Terminated(), cli.EXIT_TERMINATED, id="sigterm"),
        pytest.param(DiskFullError("cannot write /d/learner.pt: No space left on device"), 1, id="disk-full"),
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


def test_an_interrupted_command_says_what_it_keeps(monkeypatch, capsys) -> None:
    """The jobs resume from the database; verify keeps nothing it did not report (a query
    that decided lengths names them itself: tests/test_verify_cli.py)."""
    import agent.cli.commands.verify as verify_commands

    monkeypatch.setattr(verify_commands, "run_trsat", _raiser(KeyboardInterrupt()))
    assert cli.main(["verify", "trsat", "model.json", "--max-len", "2"]) == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err == "leanagent: interrupted before any length was decided; nothing is kept\n"
    monkeypatch.setattr(cli, "build_parser", _parser_with(_raiser(KeyboardInterrupt())))
    assert cli.main(["boom"]) == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err == f"leanagent: {cli.INTERRUPTED}\n"


def test_sigterm_says_terminated_and_what_is_kept(monkeypatch, capsys) -> None:
    monkeypatch.setattr(cli, "build_parser", _parser_with(_raiser(Terminated())))
    assert cli.main(["boom"]) == cli.EXIT_TERMINATED == 143
    assert capsys.readouterr().err == "leanagent: terminated (SIGTERM); finished work is saved, re-run to resume\n"
