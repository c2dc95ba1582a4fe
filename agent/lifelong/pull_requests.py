"""Pull requests of a run's proofs (``run --pull-request``): the branch that write-back made in
each URL repository's clone, on the newest commit of its branch, is pushed to the origin or
to a fork and opened on GitHub (:mod:`lean_env.proofs.github`), with a body that lists each
theorem, the commit Lean checked it at, the axioms it uses and the search that found it.

A pull request that cannot be opened is a failed write-back of its repository: the run is
reported, left unfinished, and started again it pushes the same branch and asks again
(:mod:`agent.lifelong.write_backs`; GitHub answers an open pull request of the same branch
with that one).

A pull request of an earlier run that holds a proof which no longer holds (Lean rejected it
at a newer commit, or it is no longer the theorem's found proof) is closed, with a comment
saying which proof and why, and naming this run's pull request, if there is one
(:func:`close_outdated`); so is one whose every proof this run's pull request holds
(superseded). Closed, not updated by pushing to its branch: a reviewer's comments stay on
the commits they were made on, the new pull request's body says what it holds at which
commit, and it is what bots that refresh their pull requests do (Dependabot closes the old
one as "superseded by #N")."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent.proving.attempts import AttemptReport
from agent.proving.config import ProvingConfig
from agent.reports.tables import plural
from curriculum.store import Store
from lean_env.errors import LeanAgentError
from lean_env.proofs.github import GITHUB_API, GitHub, GitHubRepository, PullRequest
from lean_env.proofs.writeback import FreshBranch, StaleProof

log = logging.getLogger(__name__)

# (path, full name, proof) of a proof on a branch
HeldProof = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class PullRequestOptions:
    """Where and how ``run --pull-request`` opens its pull requests."""

    token: str  # GitHub's token: pushes the branch and opens the pull request
    fork: str | None = None  # the owner whose fork (which must exist) gets the branch; None: the origin
    api: str = GITHUB_API  # GitHub's REST API (GitHub Enterprise: https://HOST/api/v3)


def open_pull_request(
    github: GitHub, location: str, branch: FreshBranch, options: PullRequestOptions, *, title: str, body: str
) -> PullRequest:
    """Push ``branch`` of ``location``'s clone (to the origin, or the fork) and open its pull
    request into the branch it is on; raises :class:`~lean_env.errors.LeanAgentError`."""
    origin = GitHubRepository.of_url(location)
    to = origin if options.fork is None else origin.fork(options.fork)
    github.push(branch.clone, branch.branch, to)
    opened = github.open_pull_request(
        origin,
        head=branch.branch if options.fork is None else f"{options.fork}:{branch.branch}",
        base=branch.onto,
        title=title,
        body=body,
    )
    log.info("pull request of %s: %s", location, opened.url)
    return opened


def pull_request_title(proofs: Sequence[AttemptReport]) -> str:
    return f"leanagent: proofs of {plural(len(proofs), 'theorem', 'theorems')}"


def close_outdated(
    github: GitHub,
    store: Store,
    location: str,
    *,
    keep: int | None,
    opened: PullRequest | None,
    held: Sequence[HeldProof],
    broke: Mapping[tuple[str, str], str],
) -> list[str]:
    """Close the open pull requests of the write-backs of ``location`` the database recorded
    (but ``keep``'s: this run's newest, whose pull request is ``opened``) that hold a proof
    which is not the theorem's found proof at the newest stored version any more (``broke``:
    why Lean rejected it, by (path, full name), when this run saw it), or whose every proof
    ``opened`` holds too (``held``); each gets a comment saying why. One line per pull
    request closed, or that could not be (the next run tries again)."""
    open_before = [
        (record, record.pull_request)
        for record in store.write_backs(location=location)
        if record.id != keep and record.pull_request is not None and record.closed is None
    ]
    if not open_before:
        return []
    found = {(f.stored.theorem.path, f.stored.theorem.full_name): f.proof for f in store.found_proofs(location)}
    commit = store.newest_commit(location) or ""
    lines = []
    for record, pull in open_before:
        number, url = int(pull["number"]), str(pull["url"])
        if opened is not None and opened.number == number:
            continue
        on_it = [(str(p), str(n), str(proof)) for p, n, proof in record.written.get("proofs", [])]
        outdated = [(path, name) for path, name, proof in on_it if found.get((path, name)) != proof]
        superseded = opened is not None and bool(on_it) and set(on_it) <= set(held)
        if not outdated and not superseded:
            continue
        comment, why = _closing(outdated, on_it, opened=opened, held=held, broke=broke, found=found, commit=commit)
        try:
            origin = GitHubRepository.of_url(location)
            state = github.pull_request_state(origin, number)
            if state == "open":
                github.close_pull_request(origin, number, comment=comment)
        except LeanAgentError as error:
            log.warning("pull request #%d of %s could not be closed: %s", number, location, error)
            lines.append(f"pull request #{number} ({url}) could not be closed: {error}; the next run tries again")
            continue
        said = why if state == "open" else f"{state} on GitHub already"
        store.close_pull_request(record.id, said)
        if state == "open":
            log.info("closed the pull request #%d of %s: %s", number, location, why)
            lines.append(f"pull request #{number} of {location} ({url}) closed: {why}")
    return lines


def _closing(
    outdated: Sequence[tuple[str, str]],
    on_it: Sequence[HeldProof],
    *,
    opened: PullRequest | None,
    held: Sequence[HeldProof],
    broke: Mapping[tuple[str, str], str],
    found: Mapping[tuple[str, str], str],
    commit: str,
) -> tuple[str, str]:
    """The comment that closes a pull request holding ``on_it``, and why in one line: the
    ``outdated`` proofs on it, each with its reason, the new pull request ``opened``, and
    the proofs on it that still hold but that ``opened`` lacks."""
    at = commit[:12]
    if not outdated:
        assert opened is not None, "a pull request is superseded by another"
        why = f"superseded by #{opened.number}"
        every = f"which holds every proof of this one, checked again at {at}"
        return f"leanagent closes this pull request: {why} ({opened.url}), {every}.\n", why
    verb = "holds" if len(outdated) == 1 else "hold"
    why = f"{plural(len(outdated), 'proof', 'proofs')} on it no longer {verb} at {at}"
    lines = [f"leanagent closes this pull request: {why}.", ""]
    lines += [
        f"- `{name}` (`{path}`): {broke.get((path, name)) or _gone(found, path, name, at)}" for path, name in outdated
    ]
    left = [
        (path, name) for path, name, proof in on_it if (path, name) not in outdated and (path, name, proof) not in held
    ]
    if opened is not None:
        lines += [
            "",
            f"This run's pull request is #{opened.number} ({opened.url}), with the proofs Lean accepts at {at}.",
        ]
    if left:
        lines += [
            "",
            f"These proofs of this pull request still hold at {at}"
            + (f", but are not in #{opened.number}:" if opened else ":"),
        ]
        lines += [f"- `{name}` (`{path}`)" for path, name in left]
        lines += ["leanagent proposes them again once it has checked them at a new commit of the repository."]
    return "\n".join(lines) + "\n", why


def _gone(found: Mapping[tuple[str, str], str], path: str, name: str, at: str) -> str:
    """Why a proof that this run did not see break is no longer the theorem's found proof."""
    if (path, name) in found:
        return f"another proof of it was found since (a check withdrew this one, by {at})"
    return (
        f"it is not proved by leanagent at {at} (a check withdrew its proof, or its statement changed, or it is gone)"
    )


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
