"""Lean's language server as a file checker: what ``lean FILE`` would say of successive
versions of a file, each elaborated only from the first command it changes.

``lean --server`` (``lake env lean --server`` in a Lake project, as the one-shot runner runs
``lake env lean FILE``) keeps the environment after every command of an open file. A
:class:`ServerRunner` opens a file's first version (``textDocument/didOpen``) and sends each
later one as a single edit, the span between the longest common prefix and suffix of the two
texts (``textDocument/didChange``): the file's imports and every declaration before the
edit are not elaborated again. ``textDocument/waitForDiagnostics`` answers when every
command of the version is elaborated; the last ``textDocument/publishDiagnostics`` of the
version holds all of its diagnostics (the server sends the whole list each time).

Protocol notes (Lean 4's ``src/Lean/Server``, June 2021 and since):

* The watchdog applies an edit ``editDelay`` ms after the last one (200 by default: an
  editor's debounce, which alone made each check take 0.2 s); the initialize request asks for 0.
* Positions are LSP's: 0-based lines and UTF-16 code units. Lean's command line counts
  columns in codepoints and :class:`~lean_env.records.Position` is 1-based; both are
  converted with the text of the version.
* An edit cancels the elaboration of later commands only between commands, so a tactic that
  does not end is not interrupted: on a timeout the server's process tree is killed (it runs
  in a session of its own), and the next check starts a new server.

Several servers of one project check several versions at once, one each: a check is sent
(:meth:`LeanServer.send`) and its answer read later (:meth:`LeanServer.receive`), so that
the caller waits on whichever answers first while the others elaborate on their own cores.

JSON-RPC over stdio with ``Content-Length`` frames is a few lines here; the Python LSP
clients (pygls, leanclient) are asynchronous or start ``lake serve`` themselves.
"""

from __future__ import annotations

import json
import logging
import math
import os
import select
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lean_env.closing import ClosesOnExit
from lean_env.lean import budget
from lean_env.lean.diagnostics import Diagnostic, ParsedOutput, Severity
from lean_env.lean.runner import FinishedRun, LeanRun, LeanRunError, LeanRunner, PendingRun, spent_run
from lean_env.process import Child, tail
from lean_env.records import Position

log = logging.getLogger(__name__)

# Seconds for the server to answer `initialize` (it loads nothing before a file is opened).
START_TIMEOUT = 60.0
# Files kept open per server: a session checks one file; the one before may still be asked for.
OPEN_FILES = 2
_READ_CHUNK = 1 << 16
_SEVERITY = {1: Severity.ERROR, 2: Severity.WARNING, 3: Severity.INFO, 4: Severity.INFO}
# JSON-RPC's "method not found": the answer to a request from the server we do not serve.
_METHOD_NOT_FOUND = -32601


@dataclass(frozen=True, slots=True)
class SentCheck:
    """A check sent to a server and not answered yet: what :meth:`LeanServer.receive` needs."""

    path: Path
    text: str
    version: int
    request: int  # the id of its waitForDiagnostics request
    deadline: float  # time.monotonic() at which it counts as timed out


@dataclass(slots=True)
class _Document:
    """An open file as the server has it."""

    version: int
    text: str


class LeanServer(ClosesOnExit):
    """One running language server. Create with :meth:`start`; ``close()`` is idempotent."""

    def __init__(self, command: tuple[str, ...], cwd: Path, child: Child) -> None:
        self.command = command
        self.cwd = cwd
        self._child: Child | None = child  # None once closed
        self._buffer = b""
        self._next_id = 0
        self._documents: dict[str, _Document] = {}  # uri -> what the server holds, oldest first
        self._published: dict[str, tuple[int, list[dict[str, Any]]]] = {}  # uri -> (version, diagnostics)
        self._answers: dict[Any, dict[str, Any]] = {}  # request id -> the server's answer, until taken

    @classmethod
    def start(cls, command: tuple[str, ...], cwd: Path, *, timeout: float = START_TIMEOUT) -> LeanServer:
        """Start ``command`` in ``cwd`` and initialize it; LeanRunError when it cannot."""
        try:
            # In a session of its own: killing its group reaches the file workers.
            child = Child.spawn(command, cwd=cwd)
        except OSError as e:
            raise LeanRunError(f"could not start {' '.join(command)}: {e}") from e
        os.set_blocking(child.stdout.fileno(), False)
        log.debug("started %s (pid %d) in %s", " ".join(command), child.pid, cwd)
        server = cls(command, cwd, child)
        try:
            server._request("initialize", _initialize_params(cwd), deadline=time.monotonic() + timeout)
            server._notify("initialized", {})
        except BaseException:
            server.close()
            raise
        return server

    @property
    def alive(self) -> bool:
        return self._child is not None and self._child.alive

    def check(self, path: Path, text: str, *, timeout: float) -> tuple[list[Diagnostic], bool]:
        """The diagnostics of ``text`` as the file ``path`` (absolute), and whether the server
        answered in time (False: it was killed, and is dead now)."""
        return self.receive(self.send(path, text, timeout=timeout))

    def send(self, path: Path, text: str, *, timeout: float) -> SentCheck:
        """Send ``text`` as the file ``path`` and ask for its diagnostics, without waiting:
        the server elaborates it while the caller does something else (reads another server);
        :meth:`receive` waits for the answer. One check at a time per server."""
        uri = path.as_uri()
        deadline = time.monotonic() + timeout
        document = self._documents.get(uri)
        if document is None:
            document = self._open(uri, text)
        elif document.text != text:
            self._change(uri, document, text)
        request = self._send_request("textDocument/waitForDiagnostics", {"uri": uri, "version": document.version})
        return SentCheck(path, text, document.version, request, deadline)

    def receive(self, sent: SentCheck) -> tuple[list[Diagnostic], bool]:
        """The answer to ``sent``, as :meth:`check` gives it."""
        uri = sent.path.as_uri()
        try:
            self._await_answer(sent.request, "textDocument/waitForDiagnostics", sent.deadline)
        except TimeoutError:
            self.close()
            return [], False
        version, published = self._published.get(uri, (0, []))
        if version != sent.version and sent.version > 1:
            # No command of this version was elaborated again, so none published: open it
            # anew (rare: an edit after the last command).
            self._close_document(uri)
            return self.check(sent.path, sent.text, timeout=max(1e-3, sent.deadline - time.monotonic()))
        lines = sent.text.split("\n")
        return [_diagnostic(str(sent.path), entry, lines) for entry in published if version == sent.version], True

    def _open(self, uri: str, text: str) -> _Document:
        while len(self._documents) >= OPEN_FILES:
            self._close_document(next(iter(self._documents)))
        document = self._documents[uri] = _Document(1, text)
        self._notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "lean", "version": 1, "text": text}}
        )
        return document

    def _change(self, uri: str, document: _Document, text: str) -> None:
        old = document.text
        start = _common_prefix(old, text)
        end = _common_suffix(old, text, limit=min(len(old), len(text)) - start)
        edit = {
            "range": {"start": _lsp_position(old, start), "end": _lsp_position(old, len(old) - end)},
            "text": text[start : len(text) - end],
        }
        document.version += 1
        document.text = text
        self._notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": document.version}, "contentChanges": [edit]},
        )

    def _close_document(self, uri: str) -> None:
        self._documents.pop(uri, None)
        self._published.pop(uri, None)
        self._notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    # ---- the wire ----------------------------------------------------------------------

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _request(self, method: str, params: dict[str, Any], deadline: float) -> Any:
        """Send a request and read messages until its answer; TimeoutError at ``deadline``."""
        return self._await_answer(self._send_request(method, params), method, deadline)

    def _send_request(self, method: str, params: dict[str, Any]) -> int:
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def _await_answer(self, number: int, method: str, deadline: float) -> Any:
        """Read messages until the answer to request ``number``; TimeoutError at ``deadline``."""
        while number not in self._answers:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self._read(remaining)
        message = self._answers.pop(number)
        if "error" in message:
            raise LeanRunError(f"the Lean server refused {method}: {message['error']}")
        return message.get("result")

    def has_answer(self, sent: SentCheck) -> bool:
        """Whether the answer to ``sent`` has come (takes in what the server sent, without waiting)."""
        self._read(0.0)
        return sent.request in self._answers

    def fileno(self) -> int:
        """The server's output, for ``select``."""
        if self._child is None:
            raise self._crash("the Lean server is not running")
        return self._child.stdout.fileno()

    def _handle(self, message: dict[str, Any]) -> None:
        """Keep published diagnostics; refuse the server's own requests (none is needed)."""
        method, params = message["method"], message.get("params") or {}
        if method == "textDocument/publishDiagnostics":
            self._published[params["uri"]] = (params.get("version", 0), params.get("diagnostics", []))
        elif "id" in message:
            error = {"code": _METHOD_NOT_FOUND, "message": f"{method} is not served"}
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": error})

    def _send(self, message: dict[str, Any]) -> None:
        if not self.alive:
            raise self._crash("the Lean server is not running")
        assert self._child is not None
        # Raw UTF-8, not \\u escapes: the 2021 server misreads escaped non-ASCII characters.
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        try:
            self._child.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            self._child.stdin.flush()
        except BrokenPipeError as e:
            raise self._crash("the Lean server closed its input") from e

    def _read(self, timeout: float) -> None:
        """Take in what the server sends within ``timeout`` seconds: answers are kept by their
        request's id, the rest handled."""
        fd = self.fileno()
        readable, _, _ = select.select([fd], [], [], max(0.0, timeout))
        if readable:
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                raise self._crash("the Lean server exited")
            self._buffer += chunk or b""
        while (message := self._frame()) is not None:
            if "method" in message:
                self._handle(message)
            elif "id" in message:
                self._answers[message["id"]] = message

    def _frame(self) -> dict[str, Any] | None:
        """The first whole message in the buffer, taken out of it, or None."""
        head_end = self._buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return None
        length = None
        for line in self._buffer[:head_end].split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise self._crash(f"the Lean server sent a frame without a length: {self._buffer[:head_end]!r}")
        start = head_end + 4
        if len(self._buffer) < start + length:
            return None
        body, self._buffer = self._buffer[start : start + length], self._buffer[start + length :]
        try:
            message = json.loads(body)
        except ValueError as e:
            raise self._crash(f"the Lean server sent malformed JSON: {tail(body.decode('utf-8', 'replace'))}") from e
        if not isinstance(message, dict):
            raise self._crash(f"the Lean server sent {tail(repr(message))}, not a JSON-RPC message")
        return message

    def _crash(self, why: str) -> LeanRunError:
        stderr = "" if self._child is None else self._child.stderr_tail()
        self.close()
        return LeanRunError(f"{why} ({' '.join(self.command)}); stderr: {stderr or '(empty)'}")

    def close(self) -> None:
        """Kill the server's process tree and release its pipes; safe to call twice."""
        child, self._child = self._child, None
        if child is not None:
            child.close()
        self._documents.clear()
        self._published.clear()
        self._answers.clear()


class ServerRunner(ClosesOnExit):
    """Answers :meth:`LeanRunner.run <lean_env.lean.runner.LeanRunner.run>` through
    language servers for the project, each started at its first check and again after one
    that timed out. A server that cannot start, exits or speaks garbage is logged once, and
    ``runner`` answers from then on, one ``lean`` run each: the same answers, slower.

    With ``workers`` servers, :meth:`submit` sends a check to a free one and returns at once:
    the servers elaborate on as many cores while the caller waits for the first answer. A
    submit that finds every server busy first waits for the oldest check (its answer is
    kept for whoever asks)."""

    def __init__(self, runner: LeanRunner, *, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"a server runner needs at least one worker, got {workers}")
        self.runner = runner
        self.command = (*runner.command, "--server")
        self.workers = workers
        self._servers: list[LeanServer | None] = [None] * workers
        self._sent: list[ServerCheck] = []  # checks not answered yet, oldest first
        self._failed = False  # a server failed: every run is the one-shot runner's
        self._closed = False

    @classmethod
    def for_project(cls, project_dir: Path, *, workers: int = 1) -> ServerRunner:
        """The servers of ``project_dir``'s Lean (LeanNotFoundError when there is none)."""
        return cls(LeanRunner.for_project(project_dir), workers=workers)

    def run(self, file: Path, *, timeout: float) -> LeanRun:
        """What ``lean FILE`` says of ``file`` as it is now, or a timed-out run."""
        return self.submit(file, timeout=timeout).result()

    def submit(self, file: Path, *, timeout: float) -> PendingRun:
        """Start checking ``file`` as it is now (its text is read before this returns); the
        answer, :meth:`run`'s, comes from ``result()``."""
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"a Lean run needs a finite positive timeout, got {timeout!r}")
        if self._closed:
            raise LeanRunError("the Lean server runner is closed")
        slot = self._free_slot()  # waiting for a check may find its server failed
        if self._failed:
            return FinishedRun(self.runner.run(file, timeout=timeout))
        timeout = budget.clamp(timeout)
        if timeout <= 0:
            return FinishedRun(spent_run(self.command))
        path = file.resolve()
        text = path.read_text(encoding="utf-8")
        started = time.monotonic()
        try:
            server = self._servers[slot]
            if server is None or not server.alive:
                server = LeanServer.start(self.command, self.runner.project_dir, timeout=budget.clamp(START_TIMEOUT))
                self._servers[slot] = server
            sent = server.send(path, text, timeout=timeout)
        except TimeoutError:
            # Only a start can time out here, and only by the attempt's budget (a server that
            # does not start within its own START_TIMEOUT is a fault, below): no failed server.
            if not budget.spent():
                self._fail(LeanRunError(f"{' '.join(self.command)} did not start within {START_TIMEOUT:g} s"))
                return FinishedRun(self.runner.run(file, timeout=timeout))
            return FinishedRun(spent_run(self.command))
        except LeanRunError as error:
            self._fail(error)
            return FinishedRun(self.runner.run(file, timeout=timeout))
        check = ServerCheck(self, slot, sent, started, timeout)
        self._sent.append(check)
        return check

    @property
    def idle_workers(self) -> int:
        """How many checks :meth:`submit` would start without waiting for one."""
        if self._failed or self._closed:
            return 0
        return self.workers - sum(1 for check in self._sent if not check.done)

    def wait_any(self) -> None:
        """Wait until some sent check is answered or past its deadline, at once when one is
        already (or none is sent). Answered checks are read first, their answers kept for
        whoever asks: one whose answer came in while another was asked about must not leave
        this waiting on the others."""
        answered = [check for check in self._sent if check.done]
        for check in answered:
            check.result()
        waiting = list(self._sent)
        if answered or not waiting:
            return
        deadline = min(check.sent.deadline for check in waiting)
        servers = [self._servers[check.slot] for check in waiting]  # running: `done` was False
        descriptors = [server.fileno() for server in servers if server is not None]
        select.select(descriptors, [], [], max(0.0, deadline - time.monotonic()))

    def _answered(self, check: ServerCheck) -> bool:
        """Whether ``check.result()`` would answer without waiting."""
        server = self._servers[check.slot]
        if self._failed or self._closed or server is None:
            return True
        try:
            return server.has_answer(check.sent) or time.monotonic() >= check.sent.deadline
        except LeanRunError as error:
            self._fail(error)
            return True

    def _free_slot(self) -> int:
        """A server without a check in flight, once the oldest check is answered if need be
        (0 when the servers failed meanwhile: none is used any more)."""
        for check in [check for check in self._sent if check.done]:
            if self._failed:
                break  # the checks left are read, if ever, by one `lean` run each
            check.result()  # answered: its answer is kept, its server free
        while not self._failed:
            busy = {check.slot for check in self._sent}
            free = [slot for slot in range(self.workers) if slot not in busy]
            if free:
                return free[0]
            self._sent[0].result()  # every server is busy: wait for the oldest check
        return 0

    def _answer(self, check: ServerCheck) -> LeanRun:
        """Wait for ``check``'s answer (called once, by ``check.result()``)."""
        if self._closed:
            raise LeanRunError("the Lean server runner was closed before its server answered")
        self._sent.remove(check)
        server = self._servers[check.slot]
        if self._failed or server is None:
            return self._one_shot(check)
        try:
            diagnostics, answered = server.receive(check.sent)
        except LeanRunError as error:
            self._fail(error)
            return self._one_shot(check)
        seconds = time.monotonic() - check.started
        if not answered:
            self._servers[check.slot] = None
            log.debug("%s timed out after %.1fs; the server was stopped", check.sent.path, seconds)
        output = ParsedOutput(tuple(diagnostics))
        returncode = None if not answered else (1 if output.errors else 0)
        return LeanRun(self.command, returncode, output, "", "", seconds, timed_out=not answered)

    def _one_shot(self, check: ServerCheck) -> LeanRun:
        """``check`` by the one-shot runner: its file may hold a later text by now."""
        check.sent.path.write_text(check.sent.text, encoding="utf-8")
        return self.runner.run(check.sent.path, timeout=check.timeout)

    def _fail(self, error: LeanRunError) -> None:
        log.warning("Lean's server failed (%s); checking with one `lean` run each from now on", error)
        self._stop_servers()
        self._failed = True

    def _stop_servers(self) -> None:
        for index, server in enumerate(self._servers):
            if server is not None:
                server.close()
            self._servers[index] = None

    def close(self) -> None:
        self._closed = True
        self._stop_servers()
        self._sent.clear()


@dataclass(slots=True, eq=False)
class ServerCheck:
    """A check a :class:`ServerRunner` sent to one of its servers; ``result()`` waits for it."""

    runner: ServerRunner
    slot: int
    sent: SentCheck
    started: float
    timeout: float
    _run: LeanRun | None = None

    @property
    def done(self) -> bool:
        return self._run is not None or self.runner._answered(self)

    def result(self) -> LeanRun:
        if self._run is None:
            self._run = self.runner._answer(self)
        return self._run


def _initialize_params(cwd: Path) -> dict[str, Any]:
    return {
        "processId": os.getpid(),
        "rootUri": cwd.resolve().as_uri(),
        "capabilities": {},
        # Edits apply at once: the watchdog's default 200 ms waits for an editor's next keystroke.
        "initializationOptions": {"editDelay": 0},
    }


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (slices compared in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, *, limit: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``limit``."""
    low, high = 0, max(0, limit)
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low


def _utf16_length(text: str) -> int:
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _lsp_position(text: str, offset: int) -> dict[str, int]:
    """The LSP position (0-based line, UTF-16 column) of the codepoint ``offset`` of ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return {"line": text.count("\n", 0, offset), "character": _utf16_length(text[line_start:offset])}


def _position(lines: list[str], lsp: dict[str, int]) -> Position:
    """Our 1-based, codepoint position of an LSP position in the text split into ``lines``."""
    line = int(lsp["line"])
    units = int(lsp["character"])
    text = lines[line] if 0 <= line < len(lines) else ""
    column = 0
    while column < len(text) and units > 0:
        units -= 2 if ord(text[column]) > 0xFFFF else 1
        column += 1
    return Position(line + 1, column + units + 1)  # units left: past the line's end, as sent


def _diagnostic(path: str, entry: dict[str, Any], lines: list[str]) -> Diagnostic:
    where = entry["range"]
    return Diagnostic(
        path=path,
        start=_position(lines, where["start"]),
        severity=_SEVERITY.get(int(entry.get("severity", 1)), Severity.ERROR),
        message=str(entry.get("message", "")),
        end=_position(lines, where["end"]),
    )
