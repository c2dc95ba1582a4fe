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

JSON-RPC over stdio with ``Content-Length`` frames is a few lines here; the Python LSP
clients (pygls, leanclient) are asynchronous or start ``lake serve`` themselves.
"""

from __future__ import annotations

import json
import logging
import math
import os
import select
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lean_env.closing import ClosesOnExit
from lean_env.lean.diagnostics import Diagnostic, ParsedOutput, Severity
from lean_env.lean.runner import LeanRun, LeanRunError, LeanRunner, tail
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


@dataclass(slots=True)
class _Document:
    """An open file as the server has it."""

    version: int
    text: str


class LeanServer(ClosesOnExit):
    """One running language server. Create with :meth:`start`; ``close()`` is idempotent."""

    def __init__(self, command: tuple[str, ...], cwd: Path) -> None:
        self.command = command
        self.cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""
        self._next_id = 0
        self._documents: dict[str, _Document] = {}  # uri -> what the server holds, oldest first
        self._published: dict[str, tuple[int, list[dict[str, Any]]]] = {}  # uri -> (version, diagnostics)

    @classmethod
    def start(cls, command: tuple[str, ...], cwd: Path, *, timeout: float = START_TIMEOUT) -> LeanServer:
        """Start ``command`` in ``cwd`` and initialize it; LeanRunError when it cannot."""
        server = cls(command, cwd)
        server._spawn()
        try:
            server._request("initialize", _initialize_params(cwd), deadline=time.monotonic() + timeout)
            server._notify("initialized", {})
        except BaseException:
            server.close()
            raise
        return server

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def check(self, path: Path, text: str, *, timeout: float) -> tuple[list[Diagnostic], bool]:
        """The diagnostics of ``text`` as the file ``path`` (absolute), and whether the server
        answered in time (False: it was killed, and is dead now)."""
        uri = path.as_uri()
        deadline = time.monotonic() + timeout
        document = self._documents.get(uri)
        if document is None:
            document = self._open(uri, text)
        elif document.text != text:
            self._change(uri, document, text)
        try:
            self._request("textDocument/waitForDiagnostics", {"uri": uri, "version": document.version}, deadline)
        except TimeoutError:
            self.close()
            return [], False
        version, published = self._published.get(uri, (0, []))
        if version != document.version and document.version > 1:
            # No command of this version was elaborated again, so none published: open it
            # anew (rare: an edit after the last command).
            self._close_document(uri)
            return self.check(path, text, timeout=max(1e-3, deadline - time.monotonic()))
        lines = text.split("\n")
        return [_diagnostic(str(path), entry, lines) for entry in published if version == document.version], True

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

    def _spawn(self) -> None:
        self._stderr = tempfile.TemporaryFile(prefix="leanagent-server-stderr-")
        try:
            self._proc = subprocess.Popen(
                list(self.command),
                cwd=self.cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                start_new_session=True,  # its own process group: killpg reaches the file workers
            )
        except OSError as e:
            self._stderr.close()
            raise LeanRunError(f"could not start {' '.join(self.command)}: {e}") from e
        assert self._proc.stdout is not None
        os.set_blocking(self._proc.stdout.fileno(), False)
        log.debug("started %s (pid %d) in %s", " ".join(self.command), self._proc.pid, self.cwd)

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _request(self, method: str, params: dict[str, Any], deadline: float) -> Any:
        """Send a request and read messages until its answer; TimeoutError at ``deadline``."""
        self._next_id += 1
        number = self._next_id
        self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        while True:
            message = self._receive(deadline)
            if "method" in message:
                self._handle(message)
            elif message.get("id") == number:
                if "error" in message:
                    raise LeanRunError(f"the Lean server refused {method}: {message['error']}")
                return message.get("result")

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
        assert self._proc is not None and self._proc.stdin is not None
        # Raw UTF-8, not \\u escapes: the 2021 server misreads escaped non-ASCII characters.
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        try:
            self._proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            self._proc.stdin.flush()
        except BrokenPipeError as e:
            raise self._crash("the Lean server closed its input") from e

    def _receive(self, deadline: float) -> dict[str, Any]:
        """The next message, reading until ``deadline`` (TimeoutError after it)."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while True:
            message = self._frame()
            if message is not None:
                return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            readable, _, _ = select.select([fd], [], [], remaining)
            if not readable:
                continue
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                raise self._crash("the Lean server exited")
            self._buffer += chunk

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
        stderr = self._stderr_tail()
        self.close()
        return LeanRunError(f"{why} ({' '.join(self.command)}); stderr: {stderr or '(empty)'}")

    def _stderr_tail(self) -> str:
        if self._stderr is None or self._stderr.closed:
            return ""
        self._stderr.seek(0)
        return tail(self._stderr.read().decode("utf-8", errors="replace"))

    def close(self) -> None:
        """Kill the server's process tree and release its pipes; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # it exited between poll() and killpg()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass  # the pipe is already broken; nothing left to release
        if self._stderr is not None:
            self._stderr.close()
        self._documents.clear()
        self._published.clear()


class ServerRunner(ClosesOnExit):
    """Answers :meth:`LeanRunner.run <lean_env.lean.runner.LeanRunner.run>` through one
    language server for the project, started at the first run and again after one that
    timed out. A server that cannot start, exits or speaks garbage is logged once, and
    ``runner`` answers from then on, one ``lean`` run each: the same answers, slower."""

    def __init__(self, runner: LeanRunner) -> None:
        self.runner = runner
        self.command = (*runner.command, "--server")
        self._server: LeanServer | None = None
        self._failed = False  # the server failed: every run is the one-shot runner's

    @classmethod
    def for_project(cls, project_dir: Path) -> ServerRunner:
        """The server of ``project_dir``'s Lean (LeanNotFoundError when there is none)."""
        return cls(LeanRunner.for_project(project_dir))

    def run(self, file: Path, *, timeout: float) -> LeanRun:
        """What ``lean FILE`` says of ``file`` as it is now, or a timed-out run."""
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"a Lean run needs a finite positive timeout, got {timeout!r}")
        if self._failed:
            return self.runner.run(file, timeout=timeout)
        path = file.resolve()
        text = path.read_text(encoding="utf-8")
        started = time.monotonic()
        try:
            if self._server is None or not self._server.alive:
                self._server = LeanServer.start(self.command, self.runner.project_dir)
            diagnostics, answered = self._server.check(path, text, timeout=timeout)
        except LeanRunError as error:
            log.warning("Lean's server failed (%s); checking with one `lean` run each from now on", error)
            self.close()
            self._failed = True
            return self.runner.run(file, timeout=timeout)
        seconds = time.monotonic() - started
        if not answered:
            self._server = None
            log.debug("%s timed out after %.1fs; the server was stopped", file, seconds)
        output = ParsedOutput(tuple(diagnostics))
        returncode = None if not answered else (1 if output.errors else 0)
        return LeanRun(self.command, returncode, output, "", "", seconds, timed_out=not answered)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


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
