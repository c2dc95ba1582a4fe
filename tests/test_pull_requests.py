"""``leanagent run --pull-request``: the branch of proofs is pushed (to the origin or a fork)
and a pull request is opened through GitHub's REST API, here a local server on 127.0.0.1 that
speaks its few endpoints (created, 422 "already exists", 401; a pull request read, commented
on and closed) for the whole command, and the API client alone through httpx's transport
seam for every answer; never the network. A refused pull request is opened by the run
started again, and the pull request of a proof that broke is closed (issue 44, item 9)."""

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

from agent.cli.main import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, main
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
    """What the API answers (``mode``: created, exists, 401; the repositories in ``refuse``
    get 401 whatever it is), the requests it got: (method, path, headers, JSON), and the
    state of each pull request it opened, by number (numbered in order, from 1)."""

    mode: str = "created"
    refuse: set[str] = field(default_factory=set)
    requests: list[tuple[str, str, dict[str, str], Any]] = field(default_factory=list)
    url: str = ""
    pulls: dict[int, str] = field(default_factory=dict)


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

        def _take(self, method: str) -> tuple[list[str], Any] | None:
            """The request's path segments and JSON, recorded; None when it was refused (answered)."""
            length = int(self.headers.get("Content-Length", 0))
            sent = json.loads(self.rfile.read(length)) if length else None
            fake.requests.append((method, self.path, dict(self.headers), sent))
            parts = self.path.partition("?")[0].strip("/").split("/")
            if fake.mode == "401" or parts[2] in fake.refuse:
                self._answer(401, {"message": "Bad credentials"})
                return None
            return parts, sent

        def do_POST(self) -> None:
            if (taken := self._take("POST")) is None:
                return
            (_, owner, name, kind, *rest), sent = taken
            if kind == "issues":  # issues/N/comments
                self._answer(201, {"id": 1, "body": sent["body"]})
            elif fake.mode == "exists":
                error = {"resource": "PullRequest", "message": f"A pull request already exists for {sent['head']}."}
                self._answer(422, {"message": "Validation Failed", "errors": [error]})
            else:
                number = len(fake.pulls) + 1
                fake.pulls[number] = "open"
                self._answer(
                    201, {"html_url": f"https://github.example/{owner}/{name}/pull/{number}", "number": number}
                )

        def do_PATCH(self) -> None:
            if (taken := self._take("PATCH")) is None:
                return
            parts, sent = taken
            fake.pulls[int(parts[-1])] = sent["state"]
            self._answer(200, {"number": int(parts[-1]), "state": sent["state"]})

        def do_GET(self) -> None:
            if (taken := self._take("GET")) is None:
                return
            parts, _ = taken
            if parts[-1].isdigit():  # one pull request
                self._answer(200, {"number": int(parts[-1]), "state": fake.pulls.get(int(parts[-1]), "open")})
            else:  # the open ones of a head
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


def _second_origin(tmp_path: Path) -> Path:
    """octo/other, a copy of octo/book, in repos.txt after it."""
    other = tmp_path / "remotes" / "octo" / "other.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(tmp_path / "work"), str(other)], check=True)
    with (tmp_path / "repos.txt").open("a", encoding="utf-8") as repos:
        repos.write(f"file://{other}\n")
    return other


def test_a_refused_pull_request_is_opened_by_the_run_started_again_and_its_report_keeps_everything(
    origin: Path, github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """GitHub opens book's pull request and refuses other's (401): the run fails. Started
    again (the token fixed), it is resumed: neither remote moved, so neither is fetched nor
    proved, yet other's recorded branch is pushed again and its pull request opened, book's
    is not asked for again, and the report has both, other's first refusal, the attempts
    of before, and the report it replaces, kept beside it."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    other = _second_origin(tmp_path)
    github.refuse = {"other"}
    code, _, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == EXIT_FAILURE and "401 Bad credentials" in err, err
    first = (tmp_path / "data" / "reports" / "run-1.md").read_text(encoding="utf-8")
    assert "https://github.example/octo/book/pull/1" in first and "401 Bad credentials" in first

    github.refuse, asked = set(), len(github.requests)
    code, payload, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == 0, err
    assert payload["run"] == 1 and payload["resumed"]
    assert [o["status"] for o in payload["ingest"]] == ["unchanged-remote", "unchanged-remote"]
    [(method, path, _, sent)] = github.requests[asked:]
    assert (method, path) == ("POST", "/repos/octo/other/pulls")
    book, again = f"file://{origin}", f"file://{other}"
    proving = payload["proving"]
    assert proving["pull_requests"] == {
        book: {"url": "https://github.example/octo/book/pull/1", "number": 1, "existed": False},
        again: {"url": "https://github.example/octo/other/pull/2", "number": 2, "existed": False},
    }
    branch = proving["branches"][again]
    assert sent["head"] == branch["branch"] and git(other, "rev-parse", branch["branch"]) == branch["commit"]
    assert "| `keep` | `Book.lean` |" in sent["body"]  # the body written when the branch was made
    [refused] = proving["write_back_retried"][again]
    assert refused.startswith("pull request: GitHub did not open the pull request") and "401" in refused
    assert proving["write_back_failed"] == {} and book not in proving["write_back_retried"]
    assert sorted((a["repository"], a["theorem"], a["outcome"]) for a in proving["attempts"]) == [
        (book, "keep", "proved"),
        (again, "keep", "proved"),
    ]
    reports = tmp_path / "data" / "reports"
    written = json.loads((reports / "run-1.json").read_text(encoding="utf-8"))
    assert written["earlier_reports"] == [str(reports / "run-1.1.json"), str(reports / "run-1.1.md")]
    assert written["proving"]["pull_requests"] == proving["pull_requests"]
    assert (reports / "run-1.1.md").read_text(encoding="utf-8") == first
    markdown = (reports / "run-1.md").read_text(encoding="utf-8")
    assert f"pull request of {book}: https://github.example/octo/book/pull/1" in markdown
    assert f"pull request of {again}: https://github.example/octo/other/pull/2" in markdown
    assert f"earlier tries of the write-back of {again} failed (the run was resumed): pull request:" in markdown
    assert "[run-1.1.md](run-1.1.md)" in markdown

    # Finished now: the next run is a new one, with nothing to open.
    asked = len(github.requests)
    code, payload, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == 0 and payload["run"] == 2 and github.requests[asked:] == [], err


def test_proofs_found_by_a_run_killed_before_writing_them_back_are_written_back_when_it_is_started_again(
    origin: Path, github: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """Killed after proving, before writing back: the remote did not move and every sorry
    was attempted, yet the resumed run fetches the repository and writes its proof back."""
    from agent.proving.repositories import RepositoryProver

    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    real = RepositoryProver.write_patches

    def killed(self: RepositoryProver, *args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(RepositoryProver, "write_patches", killed)
    code, _, _ = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == EXIT_INTERRUPTED and github.requests == []
    monkeypatch.setattr(RepositoryProver, "write_patches", real)
    code, payload, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == 0 and payload["resumed"], err
    assert [o["status"] for o in payload["ingest"]] == ["unchanged"]  # fetched, though it did not move
    url = f"file://{origin}"
    assert [(a["theorem"], a["outcome"]) for a in payload["proving"]["attempts"]] == [("keep", "proved")]
    assert payload["proving"]["pull_requests"][url]["number"] == 1 and url in payload["proving"]["patches"]


MORE = "\ntheorem more : True := by\n  sorry\n"


@pytest.mark.parametrize(
    ("exact_h", "extra", "closed", "said"),
    [
        pytest.param(
            {"error": "unknown identifier 'h'"},
            {"assumption": {"done": True}},
            "1 proof on it no longer holds at {commit}",
            ["- `keep` (`Book.lean`): its proof broke at {commit} (error in keep", "This run's pull request is #2"],
            id="broke-and-proved-again",
        ),
        pytest.param(
            {"error": "unknown identifier 'h'"},
            {},
            "1 proof on it no longer holds at {commit}",
            ["- `keep` (`Book.lean`): its proof broke at {commit} (error in keep", "This run's pull request is #2"],
            id="broke-and-not-proved",
        ),
        pytest.param(
            {"done": True},
            {},
            "superseded by #2",
            ["superseded by #2 (https://github.example/octo/book/pull/2), which holds every proof of this one"],
            id="superseded",
        ),
    ],
)
def test_the_pull_request_of_a_proof_that_broke_is_closed_saying_why(
    origin: Path,
    github: FakeGitHub,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch,
    exact_h: dict[str, Any],
    extra: dict[str, Any],
    closed: str,
    said: list[str],
) -> None:
    """Run 1 opens #1 with keep's proof `exact h`. A new commit adds the sorry `more` (which
    `trivial` proves); where Lean now rejects `exact h`, the proof carried over to it broke
    and is withdrawn, keep is searched again (`assumption` proves it, or nothing does), and
    #1 is closed with a comment saying which proof broke, where and why, naming the new pull
    request when there is one. Where `exact h` still holds, the new pull request holds all
    of #1's proofs: #1 is superseded. Closed once: the next run leaves it be."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    code, first, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == 0 and first["proving"]["pull_requests"][f"file://{origin}"]["number"] == 1, err
    work = tmp_path / "work"
    (work / "Book.lean").write_text(SOURCE + MORE, encoding="utf-8")
    git(work, "commit", "-qam", "another sorry")
    git(work, "push", "-q", str(origin), "HEAD:main")
    keep = {"goals": "p : Prop\nh : p\n⊢ p", "steps": {"exact h": exact_h, **extra}}
    more = {"goals": "⊢ True", "steps": {"trivial": {"done": True}}}
    fake_lean.activate(monkeypatch, tmp_path / "bin", {"theorems": {"keep": keep, "more": more}})

    asked = len(github.requests)
    code, second, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == 0, err
    commit = second["ingest"][0]["commit"][:12]
    url = f"file://{origin}"
    line = f"pull request #1 of {url} (https://github.example/octo/book/pull/1) closed: {closed.format(commit=commit)}"
    assert second["proving"]["pull_requests_closed"] == [line]
    assert line in Path(second["report"][1]).read_text(encoding="utf-8")
    requests = [(method, path) for method, path, _, _ in github.requests[asked:]]
    assert requests[-3:] == [
        ("GET", "/repos/octo/book/pulls/1"),
        ("POST", "/repos/octo/book/issues/1/comments"),
        ("PATCH", "/repos/octo/book/pulls/1"),
    ]
    assert github.pulls[1] == "closed" and github.requests[-1][3] == {"state": "closed"}
    comment = github.requests[-2][3]["body"]
    assert comment.startswith(f"leanagent closes this pull request: {closed.format(commit=commit)}")
    assert all(part.format(commit=commit) in comment for part in said), comment
    assert len(github.pulls) == 2

    work.joinpath("Book.lean").write_text(SOURCE + MORE + "\ntheorem last : True := by\n  sorry\n", encoding="utf-8")
    git(work, "commit", "-qam", "one more")
    git(work, "push", "-q", str(origin), "HEAD:main")
    asked = len(github.requests)
    code, third, err = _run(tmp_path, capsys, "--github-api", github.url)
    assert code == 0, err
    assert ("GET", "/repos/octo/book/pulls/1") not in [(m, p) for m, p, _, _ in github.requests[asked:]]


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


@pytest.mark.parametrize(
    ("answer", "state"),
    [
        pytest.param((200, {"number": 1, "state": "open"}), "open", id="open"),
        pytest.param((200, {"number": 1, "state": "closed", "merged": False}), "closed", id="closed"),
        pytest.param((200, {"number": 1, "state": "closed", "merged": True}), "merged", id="merged"),
    ],
)
def test_the_client_reads_what_became_of_a_pull_request(answer: tuple[int, Any], state: str) -> None:
    client, requests = _api([answer])
    with client:
        assert client.pull_request_state(BOOK, 1) == state
    assert [(r.method, r.url.path) for r in requests] == [("GET", "/repos/octo/book/pulls/1")]


@pytest.mark.parametrize(
    ("answers", "said", "asked"),
    [
        pytest.param([(201, {"id": 9}), (200, {"state": "closed"})], None, 2, id="commented-then-closed"),
        pytest.param(
            [(403, {"message": "Resource not accessible"})],
            "GitHub did not take a comment on #1 of octo/book: 403 Resource not accessible",
            1,
            id="comment-refused",
        ),
        pytest.param(
            [(201, {"id": 9}), (422, {"message": "Validation Failed"})],
            "GitHub did not close the pull request #1 of octo/book: 422 Validation Failed",
            2,
            id="close-refused",
        ),
    ],
)
def test_the_client_closes_a_pull_request_with_a_comment(
    answers: list[tuple[int, Any]], said: str | None, asked: int
) -> None:
    client, requests = _api(answers)
    with client:
        if said is None:
            client.close_pull_request(BOOK, 1, comment="why")
        else:
            with pytest.raises(PullRequestError, match=re.escape(said)):
                client.close_pull_request(BOOK, 1, comment="why")
    expected = [
        ("POST", "/repos/octo/book/issues/1/comments", {"body": "why"}),
        ("PATCH", "/repos/octo/book/pulls/1", {"state": "closed"}),
    ]
    assert [(r.method, r.url.path, json.loads(r.content)) for r in requests] == expected[:asked]
