"""Pull requests of a run's proofs (``run --pull-request``): the branch that write-back made in
each URL repository's clone, on the newest commit of its branch, is pushed to the origin or
to a fork and opened on GitHub (:mod:`lean_env.proofs.github`), with a body that lists each
theorem, the commit Lean checked it at, the axioms it uses and the search that found it.

A pull request that cannot be opened is a failed write-back of its repository: the run is
reported, left unfinished, and started again it tries again (GitHub answers an open pull
request of the same branch with that one)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from agent.proving.attempts import AttemptReport
from agent.proving.patches import WrittenBack
from agent.proving.theorem import ProvingConfig
from agent.reports.tables import plural
from lean_env.errors import LeanAgentError
from lean_env.proofs.github import GITHUB_API, GitHub, GitHubRepository
from lean_env.proofs.writeback import FreshBranch, StaleProof

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PullRequestOptions:
    """Where and how ``run --pull-request`` opens its pull requests."""

    token: str  # GitHub's token: pushes the branch and opens the pull request
    fork: str | None = None  # the owner whose fork (which must exist) gets the branch; None: the origin
    api: str = GITHUB_API  # GitHub's REST API (GitHub Enterprise: https://HOST/api/v3)


def open_pull_requests(
    written: WrittenBack,
    attempts: Sequence[AttemptReport],
    config: ProvingConfig,
    options: PullRequestOptions,
    *,
    transport: httpx.BaseTransport | None = None,
) -> WrittenBack:
    """``written`` with a pull request for each of its branches; a repository whose branch
    cannot be pushed or whose pull request GitHub refuses is a failed write-back."""
    opened, failed = dict(written.pull_requests), dict(written.failed)
    with GitHub(options.token, api=options.api, transport=transport) as github:
        for location, branch in written.branches.items():
            on_branch = set(branch.theorems)
            proofs = [a for a in attempts if a.repository == location and (a.path, a.theorem) in on_branch]
            try:
                origin = GitHubRepository.of_url(location)
                to = origin if options.fork is None else origin.fork(options.fork)
                github.push(branch.clone, branch.branch, to)
                opened[location] = github.open_pull_request(
                    origin,
                    head=branch.branch if options.fork is None else f"{options.fork}:{branch.branch}",
                    base=branch.onto,
                    title=f"leanagent: proofs of {plural(len(proofs), 'theorem', 'theorems')}",
                    body=pull_request_body(branch, proofs, written.stale.get(location, ()), config),
                )
                log.info("pull request of %s: %s", location, opened[location].url)
            except LeanAgentError as error:
                log.error("the pull request of %s could not be opened: %s", location, error)
                failed[location] = f"pull request: {error}"
    return dataclasses.replace(written, pull_requests=opened, failed=failed)


def pull_request_body(
    branch: FreshBranch, proofs: Sequence[AttemptReport], stale: Sequence[StaleProof], config: ProvingConfig
) -> str:
    """Markdown: what the branch proves, how each proof was checked and found, what was left out."""
    search = config.search
    prover = f"the generator {config.generator}" if config.generator else "the built-in tactic suggester"
    lines = [
        f"This branch replaces {plural(len(proofs), 'sorry', 'sorries')} with proofs found by "
        f"leanagent (best-first search, tactics from {prover}; at most {search.max_expansions} expansions "
        f"and {search.time_limit:g} s per theorem).",
        "",
        f"Each proof passed Lean's check of its whole file at {branch.checked[:12]}, with the axioms it "
        f"depends on audited; its theorem's statement and sorry are unchanged at {branch.base[:12]}, the head "
        f"of `{branch.onto}` this branch is on.",
        "",
        "| theorem | file | axioms | found by |",
        "|---|---|---|---|",
    ]
    for attempt in proofs:
        axioms = ", ".join(attempt.axioms) if attempt.axioms else "none"
        if attempt.nonstandard_axioms:
            axioms += f" (**nonstandard: {', '.join(attempt.nonstandard_axioms)}**)"
        found = (
            "carried over from an earlier version and checked again"
            if attempt.carried
            else f"search: {plural(attempt.expansions, 'expansion', 'expansions')}, {attempt.seconds:.1f} s, "
            f"{plural(attempt.tactics or 0, 'tactic', 'tactics')}"
        )
        lines.append(f"| `{attempt.theorem}` | `{attempt.path}` | {axioms} | {found} |")
    if stale:
        lines += ["", "Left out, because the sorry changed on the branch since the proof was checked:"]
        lines += [f"- `{p.theorem}` (`{p.path}`): {p.reason}" for p in stale]
    return "\n".join(lines) + "\n"
