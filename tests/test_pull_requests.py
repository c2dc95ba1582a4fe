"""``leanagent run --pull-request``: the branch of proofs is pushed (to the origin or a fork)
and a pull request is opened through GitHub's REST API, here a local server on 127.0.0.1 that
speaks its few endpoints (created, 422 "already exists", 401) for the whole command, and the
API client alone through httpx's transport seam for every answer; never the network."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakes import fake_lean
from projects import git

from agent.cli.main import EXIT_FAILURE, EXIT_USAGE, main
from lean_env.errors import UserInputError
from lean_env.proofs.github import GitHub, GitHubRepository, PullRequest, PullRequestError

SOURCE = """\
theorem keep (p : Prop) (h : p) : p := by
  sorry
"""
SCRIPT = {"theorems": {"keep": {"goals": "p : Prop\nh : p\n⊢ p", "steps": {"exact h": {"done": True}}}}}
SEARCH = ["--candidates", "8", "--max-expansions", "2", "--tactic-timeout", "20", "--check-timeout", "20"]
TOKEN = "ghp_secret_of_the_test"


@dataclass
class FakeGitHub:
    """What the API answers (``mode``), and the requests it got: (method, path, headers, JSON)."""

    mode: str = "created"
    requests: list[tuple[str, str, dict[str, str], Any]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _answer(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            sent = json.loads(self.rfile.read(length))
            fake.requests.append(("POST", self.path, dict(self.headers), sent))
            if fake.mode == "401":
                self._answer(401, {"message": "Bad credentials"})
            elif fake.mode == "exists":
                error = {"resource": "PullRequest", "message": f"A pull request already exists for {sent['head']}."}
                self._answer(422, {"message": "Validation Failed", "errors": [error]})
            else:
                self._answer(201, {"html_url": "https://github.example/octo/book/pull/1", "number": 1})

        def do_GET(self) -> None:
            fake.requests.append(("GET", self.path, dict(self.headers), None))
            self._answer(200, [{"html_url": "https://github.example/octo/book/pull/7", "number": 7}])

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def origin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """octo/book: a bare repository (file:// URL in repos.txt) with one sorry; me/book, its fork."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)
    work = tmp_path / "work"
    work.mkdir()
    (work / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    (work / "Book.lean").write_text(SOURCE, encoding="utf-8")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "a sorry")
    remotes = tmp_path / "remotes"
    for owner in ("octo", "me"):
        (remotes / owner).mkdir(parents=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(remotes / owner / "book.git")], check=True)
    (tmp_path / "repos.txt").write_text(f"file://{remotes / 'octo' / 'book.git'}\n", encoding="utf-8")
    return remotes / "octo" / "book.git"


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    argv = ["--data-dir", str(tmp_path / "data"), "run", str(tmp_path / "repos.txt"), "--tracer", "source"]
    code = main([*argv, "--no-train", *SEARCH, "--pull-request", "--json", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def test_the_branch_is_pushed_to_the_origin_and_its_pull_request_opened(
    origin: Path, github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    code, payload, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == 0, err
    url = f"file://{origin}"
    written = payload["proving"]
    assert written["pull_requests"] == {
        url: {"url": "https://github.example/octo/book/pull/1", "number": 1, "existed": False}
    }
    branch = written["branches"][url]
    assert git(origin, "rev-parse", f"refs/heads/{branch['branch']}") == branch["commit"]

    [(method, path, headers, sent)] = github.requests
    assert (method, path, headers["Authorization"]) == ("POST", "/repos/octo/book/pulls", f"Bearer {TOKEN}")
    assert (sent["head"], sent["base"], sent["title"]) == (branch["branch"], "main", "leanagent: proofs of 1 theorem")
    body = sent["body"]
    assert "| `keep` | `Book.lean` |" in body and f"check of its whole file at {branch['checked'][:12]}" in body
    assert "search: " in body and "expansion" in body and "built-in tactic suggester" in body
    markdown = Path(payload["report"][1]).read_text(encoding="utf-8")
    assert "pull request of " + url + ": https://github.example/octo/book/pull/1" in markdown


def test_with_a_fork_the_branch_goes_there_and_the_head_names_its_owner(
    origin: Path, github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n", encoding="utf-8")
    extra = ["--token-file", str(tmp_path / "token"), "--fork", "me", "--github-api", github.url]
    code, payload, err = _run(tmp_path, capsys, *extra)
    assert code == 0, err
    branch = payload["proving"]["branches"][f"file://{origin}"]["branch"]
    fork = origin.parent.parent / "me" / "book.git"
    assert git(fork, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    assert subprocess.run(["git", "-C", str(origin), "rev-parse", "--verify", "--quiet", branch]).returncode != 0
    [(_, path, _, sent)] = github.requests
    assert (path, sent["head"]) == ("/repos/octo/book/pulls", f"me:{branch}")


def test_an_open_pull_request_of_the_branch_is_the_one_reported(
    origin: Path, github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    github.mode = "exists"
    code, payload, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == 0, err
    [opened] = payload["proving"]["pull_requests"].values()
    assert opened == {"url": "https://github.example/octo/book/pull/7", "number": 7, "existed": True}
    branch = payload["proving"]["branches"][f"file://{origin}"]["branch"]
    (method, path, _, _) = github.requests[1]
    assert method == "GET" and path == f"/repos/octo/book/pulls?head=octo%3A{branch.replace('/', '%2F')}&state=open"
    assert "(open already)" in Path(payload["report"][1]).read_text(encoding="utf-8")


def test_a_refused_pull_request_is_a_failed_write_back_in_one_line(
    origin: Path, github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """Each refusal's message is checked through the client's transport below; here, that one
    reaches the user as one line and the report."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    github.mode = "401"
    code, _, err = _run(tmp_path, capsys, "--github-api", github.url)
    said = "401 Bad credentials; the token is not valid"
    assert code == EXIT_FAILURE and len(err.strip().splitlines()) == 1 and said in err, err
    report = (tmp_path / "data" / "reports" / "run-1.md").read_text(encoding="utf-8")
    assert "could not be written back: pull request: GitHub did not open the pull request" in report
    assert TOKEN not in err and TOKEN not in report


def test_without_a_token_it_says_what_it_needs_before_any_work(
    origin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    code, _, err = _run(tmp_path, capsys)
    assert code == EXIT_USAGE and len(err.strip().splitlines()) == 1, err
    assert "--pull-request needs a GitHub token" in err and "GITHUB_TOKEN or pass --token-file" in err
    assert not (tmp_path / "data" / "reports").exists()


@pytest.mark.parametrize(
    ("url", "owner", "name", "fork"),
    [
        ("https://github.com/octo/book.git", "octo", "book", "https://github.com/me/book.git"),
        ("https://github.com/octo/book", "octo", "book", "https://github.com/me/book"),
        ("git@github.com:octo/book.git", "octo", "book", "git@github.com:me/book.git"),
        ("https://ghe.example/org/octo/book/", "octo", "book", "https://ghe.example/org/me/book"),
    ],
)
def test_a_repository_and_its_fork_are_read_from_the_url(url: str, owner: str, name: str, fork: str) -> None:
    repository = GitHubRepository.of_url(url)
    assert (repository.owner, repository.name) == (owner, name)
    assert repository.fork("me") == GitHubRepository("me", name, fork)


def test_a_url_without_owner_and_name_is_the_users_error() -> None:
    with pytest.raises(UserInputError, match="does not name a GitHub repository"):
        GitHubRepository.of_url("https://example.org/book.git")


# --- the API client alone, through httpx's transport seam -------------------------------------

BOOK = GitHubRepository("octo", "book", "https://github.com/octo/book.git")
CREATED = (201, {"html_url": "https://github.com/octo/book/pull/1", "number": 1})
EXISTS = (422, {"message": "Validation Failed", "errors": [{"message": "A pull request already exists for x."}]})
OPEN_ONE = (200, [{"html_url": "https://github.com/octo/book/pull/7", "number": 7}])


def _api(answers: list[tuple[int, Any]]) -> tuple[GitHub, list[httpx.Request]]:
    """A client whose API answers ``answers`` in turn; and the requests it got."""
    requests: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        status, payload = answers[len(requests) - 1]
        return httpx.Response(status, json=payload)

    return GitHub(TOKEN, transport=httpx.MockTransport(answer)), requests


NEW = PullRequest("https://github.com/octo/book/pull/1", 1, False)
FOUND = PullRequest("https://github.com/octo/book/pull/7", 7, True)


@pytest.mark.parametrize(
    ("head", "answers", "opened", "looked_up"),
    [
        pytest.param("proofs", [CREATED], NEW, None, id="created"),
        pytest.param("proofs", [EXISTS, OPEN_ONE], FOUND, "octo:proofs", id="open-already-on-the-origin"),
        pytest.param("me:proofs", [EXISTS, OPEN_ONE], FOUND, "me:proofs", id="open-already-from-a-fork"),
    ],
)
def test_the_client_opens_or_finds_the_pull_request(
    head: str, answers: list[tuple[int, Any]], opened: PullRequest, looked_up: str | None
) -> None:
    client, requests = _api(answers)
    with client:
        assert client.open_pull_request(BOOK, head=head, base="main", title="t", body="b") == opened
    post, *gets = requests
    auth = post.headers["Authorization"]
    assert (post.method, post.url.path, auth) == ("POST", "/repos/octo/book/pulls", f"Bearer {TOKEN}")
    assert json.loads(post.content) == {"title": "t", "head": head, "base": "main", "body": "b"}
    expected = [] if looked_up is None else [("GET", "/repos/octo/book/pulls", {"head": looked_up, "state": "open"})]
    assert [(g.method, g.url.path, dict(g.url.params)) for g in gets] == expected


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        pytest.param([(401, {"message": "Bad credentials"})], "401 Bad credentials; the token is not valid", id="401"),
        pytest.param(
            [(403, {"message": "Resource not accessible"})],
            "403 Resource not accessible; the token may lack the pull-requests or contents permission",
            id="403",
        ),
        pytest.param(
            [(404, {"message": "Not Found"})],
            "404 Not Found; the repository does not exist or the token cannot see it",
            id="404",
        ),
        pytest.param(
            [(422, {"message": "Validation Failed", "errors": [{"message": "No commits between main and proofs"}]})],
            "422 Validation Failed (No commits between main and proofs)",
            id="422-another-refusal",
        ),
        pytest.param(
            [EXISTS, (200, [])], "422 Validation Failed (A pull request already exists", id="exists-but-none-open"
        ),
    ],
)
def test_a_refusal_is_one_error_naming_the_status_and_why(answers: list[tuple[int, Any]], said: str) -> None:
    client, _ = _api(answers)
    with client, pytest.raises(PullRequestError, match=re.escape(said)):
        client.open_pull_request(BOOK, head="proofs", base="main", title="t", body="b")


def test_no_answer_from_the_api_is_one_error_naming_it() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with (
        GitHub(TOKEN, api="https://ghe.example/api/v3", transport=httpx.MockTransport(refuse)) as client,
        pytest.raises(PullRequestError, match="no answer from GitHub's API at https://ghe.example/api/v3"),
    ):
        client.open_pull_request(BOOK, head="proofs", base="main", title="t", body="b")
