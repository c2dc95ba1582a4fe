"""``leanagent run``: the lifelong job over a repos file.

Ingest every repository of the file (stored commits are not traced again), order the
database by the curriculum, take one retriever training step for every repository (at its
newest commit) the learner has not learned yet, scoring every repository seen after each
step, and search proofs for the ``sorry`` theorems of the file's repositories, each right
after its repository's step, with the built-in suggester (or ``--generator``) and premises
from the retriever as trained so far. Found proofs count only after Lean's final check;
without a Lean toolchain proving is skipped with one line saying what it needs. A report (JSON and
Markdown) goes to DATA_DIR/reports. Everything is resumable: the learner is kept in
DATA_DIR/learner after every step, attempts are recorded per run, and a run that was killed,
interrupted or failed is resumed under its own id when started again with the same options.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cli.options import (
    add_prove_options,
    add_train_options,
    device_option,
    include_exercises_option,
    index_options,
    json_option,
    proving_config,
    recall_target_option,
    retriever_length_option,
    skip_option,
    tracer_option,
    train_config,
    wait_option,
)
from agent.reports.output import emit
from agent.workspace.joblock import refuse_if_in_use
from agent.workspace.settings import Settings

if TYPE_CHECKING:
    from agent.lifelong.pull_requests import PullRequestOptions


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = subparsers.add_parser(
        "run",
        help="the lifelong job over a repos file: ingest, order, train the retriever, prove sorries, report",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    run.add_argument(
        "repos", type=Path, metavar="FILE", help="a repos file: one 'LOCATION [COMMIT] [skip=GLOB ...]' per line"
    )
    tracer_option(run)
    run.add_argument(
        "--no-train",
        action="store_true",
        help="ingest and order only, no retriever training (proving then runs without premises)",
    )
    run.add_argument("--no-prove", action="store_true", help="no proof search (ingest, order and train only)")
    add_train_options(run)
    add_prove_options(run, backend_alias=False)
    retriever_length_option(run)
    recall_target_option(run)
    device_option(run)
    skip_option(run)
    include_exercises_option(run)
    run.add_argument(
        "--keep-restatements",
        action="store_true",
        help="write back proofs that only invoke a lemma of the repository with the theorem's own statement "
        "(`exact X`: reported as 'restates X', left out by default)",
    )
    pulls = run.add_argument_group("pull requests")
    pulls.add_argument(
        "--pull-request",
        action="store_true",
        help="push each URL repository's branch of proofs and open a pull request on GitHub, listing each "
        "theorem, the commit it was checked at, its axioms and the search that found it (needs a token: "
        "GITHUB_TOKEN or --token-file)",
    )
    pulls.add_argument("--token-file", type=Path, metavar="FILE", help="a file holding the GitHub token")
    pulls.add_argument(
        "--fork", metavar="OWNER", help="push the branch to OWNER's fork (it must exist); default: the origin"
    )
    pulls.add_argument(
        "--github-api",
        metavar="URL",
        default=None,
        help="GitHub's REST API (default: $GITHUB_API_URL or https://api.github.com; GitHub Enterprise: "
        "https://HOST/api/v3)",
    )
    wait_option(run)
    json_option(run)
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    if not args.wait:  # refused now, not after the seconds the imports below take
        refuse_if_in_use(settings, "run")
    from agent.lifelong.job import LifelongJob, LifelongOptions, RetrieverTraining
    from agent.lifelong.report import report_payload, report_sections
    from lean_env.trace.choice import TracerChoice

    options = LifelongOptions(
        repos=args.repos,
        tracer=TracerChoice(args.tracer),
        training=None
        if args.no_train
        else RetrieverTraining(
            args.model,
            train_config(args),
            args.test_fraction,
            embed_length=args.retriever_len,
            device=args.device,
            index=index_options(args),
        ),
        proving=None if args.no_prove else proving_config(args),
        # Asked for a model, the user means to prove: a missing Lean is then an error.
        lean_optional=args.generator is None,
        skip=tuple(args.skip or ()),
        keep_restatements=args.keep_restatements,
        include_exercises=args.include_exercises,
        pull_requests=_pull_request_options(args),
    )
    result = LifelongJob(settings, options, wait=args.wait).run()
    payload = {**report_payload(result), "report": [str(p) for p in result.report]}
    header = f"run {result.run_id}" + (" (resumed)" if result.resumed else "")
    sections = [text for _, text in report_sections(result)]
    human = "\n\n".join([header, *sections, f"report: {', '.join(map(str, result.report))}"])
    emit(payload, human, as_json=args.json)
    return 0


def _pull_request_options(args: argparse.Namespace) -> PullRequestOptions | None:
    """The pull request options asked for; a missing token is said before any work."""
    from agent.lifelong.pull_requests import PullRequestOptions
    from lean_env.errors import UserInputError
    from lean_env.proofs.github import GITHUB_API, read_token

    if not args.pull_request:
        if args.token_file or args.fork or args.github_api:
            raise UserInputError("--token-file, --fork and --github-api go with --pull-request")
        return None
    if args.no_prove:
        raise UserInputError("--pull-request opens pull requests of found proofs; --no-prove finds none")
    token = read_token(args.token_file)
    if token is None:
        raise UserInputError(
            "--pull-request needs a GitHub token that can push and open pull requests: "
            "set GITHUB_TOKEN or pass --token-file FILE"
        )
    api = args.github_api or os.environ.get("GITHUB_API_URL") or GITHUB_API
    return PullRequestOptions(token, fork=args.fork, api=api)
