"""Opening a pull request on GitHub for a branch of proofs that write-back made in a clone:
push the branch (to the origin, or to a fork), then ask GitHub's REST API for the pull
request (``POST /repos/{owner}/{repo}/pulls``), through httpx. A pull request is read
(``GET .../pulls/{number}``) and closed with a comment saying why (``POST
.../issues/{number}/comments``, then ``PATCH .../pulls/{number}`` with ``state: closed``).

The token never appears on a command line or in a message: git gets it as an HTTP header
through ``GIT_CONFIG_*`` variables (as ``actions/checkout`` does), and the API as a bearer
token. ``api`` is GitHub's (``https://api.github.com``), a GitHub Enterprise server's
(``https://HOST/api/v3``), or in tests a local server; ``transport`` is httpx's seam.

Errors::

    PullRequestError (BackendError)   the push or the API failed: 401, 404, 422, no answer
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from lean_env.errors import BackendError, UserInputError
from lean_env.proofs.writeback import push_branch

GITHUB_API = "https://api.github.com"
_TIMEOUT = 30.0


class PullRequestError(BackendError):
    """A branch could not be pushed, or GitHub did not open its pull request."""


@dataclass(frozen=True, slots=True)
class GitHubRepository:
    """``owner/name`` on GitHub, and the URL git pushes to."""

    owner: str
    name: str
    url: str

    @classmethod
    def of_url(cls, url: str) -> GitHubRepository:
        """The repository of a clone URL: its path's last two segments are owner and name
        (``https://github.com/o/n.git``, ``git@github.com:o/n``, any other host alike)."""
        if "://" in url:
            path = urlsplit(url).path
        else:  # scp-like: git@host:owner/name
            path = url.partition(":")[2]
        parts = [part for part in path.strip("/").removesuffix(".git").split("/") if part]
        if len(parts) < 2:
            raise UserInputError(f"{url} does not name a GitHub repository (OWNER/NAME): no pull request for it")
        return cls(parts[-2], parts[-1], url)

    def fork(self, owner: str) -> GitHubRepository:
        """The same repository under ``owner``, at the URL with the owner's segment replaced."""
        if "://" in self.url:
            parts = urlsplit(self.url)
            head, _, tail = parts.path.rstrip("/").rpartition("/")
            path = f"{head.rpartition('/')[0]}/{owner}/{tail}"
            return GitHubRepository(owner, self.name, urlunsplit(parts._replace(path=path)))
        host, _, path = self.url.partition(":")
        tail = path.rstrip("/").rpartition("/")[2]
        return GitHubRepository(owner, self.name, f"{host}:{owner}/{tail}")

    def __str__(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True, slots=True)
class PullRequest:
    url: str  # its page, for people
    number: int
    existed: bool  # GitHub had one open for this branch already (422): that one


def read_token(token_file: Path | None) -> str | None:
    """The token in ``token_file`` (its first line), else ``GITHUB_TOKEN``; None: neither."""
    if token_file is not None:
        try:
            lines = token_file.read_text(encoding="utf-8").split()
        except OSError as error:
            raise UserInputError(f"cannot read the token file {token_file}: {error.strerror or error}") from error
        if not lines:
            raise UserInputError(f"the token file {token_file} is empty")
        return lines[0]
    return os.environ.get("GITHUB_TOKEN") or None


class GitHub:
    """GitHub's REST API with one token; close it (or use ``with``) when done."""

    def __init__(self, token: str, *, api: str = GITHUB_API, transport: httpx.BaseTransport | None = None) -> None:
        self._token = token
        self._client = httpx.Client(
            base_url=api.rstrip("/"),
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "leanagent",
            },
            timeout=_TIMEOUT,
            transport=transport,
        )

    def __enter__(self) -> GitHub:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def push(self, clone: Path, branch: str, to: GitHubRepository) -> None:
        """Push ``branch`` of ``clone`` to the repository ``to``, authenticated by the token."""
        basic = base64.b64encode(f"x-access-token:{self._token}".encode()).decode()
        header = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }
        try:
            push_branch(clone, branch, to.url, env=header)
        except BackendError as error:
            raise PullRequestError(f"could not push {branch} to {to}: {error}") from error

    def open_pull_request(
        self, repository: GitHubRepository, *, head: str, base: str, title: str, body: str
    ) -> PullRequest:
        """Open a pull request of ``head`` (``branch``, or ``owner:branch`` from a fork) into
        ``base``; one already open for ``head`` is returned as it is (``existed``)."""
        path = f"/repos/{repository.owner}/{repository.name}/pulls"
        answer = self._request("POST", path, json={"title": title, "head": head, "base": base, "body": body})
        if answer.status_code == 201:
            return _pull_request(answer.json(), existed=False)
        if answer.status_code == 422 and "already exists" in answer.text:
            owner = head.partition(":")[0] if ":" in head else repository.owner
            branch = head.rpartition(":")[2]
            found = self._request("GET", path, params={"head": f"{owner}:{branch}", "state": "open"})
            if found.status_code == 200 and found.json():
                return _pull_request(found.json()[0], existed=True)
        raise PullRequestError(
            f"GitHub did not open the pull request of {head} into {repository}:{base}: {_why(answer)}"
        )

    def pull_request_state(self, repository: GitHubRepository, number: int) -> str:
        """``open``, ``closed`` or ``merged``: what became of pull request ``number``."""
        answer = self._request("GET", f"/repos/{repository.owner}/{repository.name}/pulls/{number}")
        if answer.status_code != 200:
            raise PullRequestError(f"GitHub did not show the pull request #{number} of {repository}: {_why(answer)}")
        payload = answer.json()
        return "merged" if payload.get("merged") else str(payload.get("state", "open"))

    def close_pull_request(self, repository: GitHubRepository, number: int, *, comment: str) -> None:
        """Say ``comment`` on pull request ``number``, then close it."""
        path = f"/repos/{repository.owner}/{repository.name}"
        said = self._request("POST", f"{path}/issues/{number}/comments", json={"body": comment})
        if said.status_code != 201:
            raise PullRequestError(f"GitHub did not take a comment on #{number} of {repository}: {_why(said)}")
        closed = self._request("PATCH", f"{path}/pulls/{number}", json={"state": "closed"})
        if closed.status_code != 200:
            raise PullRequestError(f"GitHub did not close the pull request #{number} of {repository}: {_why(closed)}")

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._client.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise PullRequestError(f"no answer from GitHub's API at {self._client.base_url}: {error}") from error


def _pull_request(payload: dict[str, Any], *, existed: bool) -> PullRequest:
    return PullRequest(str(payload["html_url"]), int(payload["number"]), existed)


def _why(answer: httpx.Response) -> str:
    """One line for a refusal: the status, GitHub's message and its first error."""
    try:
        payload = answer.json()
    except ValueError:
        payload = {}
    message = payload.get("message", answer.reason_phrase) if isinstance(payload, dict) else answer.reason_phrase
    errors = payload.get("errors") if isinstance(payload, dict) else None
    if errors and isinstance(errors[0], dict) and errors[0].get("message"):
        message = f"{message} ({errors[0]['message']})"
    hint = {
        401: "; the token is not valid (from the token file, else GITHUB_TOKEN)",
        403: "; the token may lack the pull-requests or contents permission",
        404: "; the repository does not exist or the token cannot see it",
    }.get(answer.status_code, "")
    return f"{answer.status_code} {message}{hint}"
