#!/usr/bin/env python3
"""The fake ``lean`` (fake_lean.py) with a barrier in its language server, for tests of
servers that check candidates at once: a server elaborating a candidate (a document version
after the first, which is the empty proof of the opening) answers only once ``parties``
servers are elaborating candidates. A client that sends the next candidate only after the
first is answered never gets there: after ``BARRIER_DEADLINE`` seconds the waiting server
logs ``{"barrier": "timed out"}`` and answers anyway, so that the test fails on what it
asserts rather than hanging.

The order is read from the fake's own log (``FAKE_LEAN_LOG``, which the barrier needs): each
server logs ``{"elaborate": version}`` before it elaborates. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# Run as a script only its own directory is on sys.path: add tests/, the root every import of
# the stand-ins starts from.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fakes import fake_lean  # noqa: E402

BARRIER_DEADLINE = 10.0  # seconds; well under the tests' 20 s tactic timeout
_POLL = 0.01  # seconds between reads of the log while waiting at the barrier


def _candidate_elaborations(log: Path) -> dict[int, int]:
    """pid -> the version each server elaborates last, for the servers past their first."""
    latest: dict[int, int] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "elaborate" in entry.get("server", {}):
            latest[entry["pid"]] = entry["server"]["elaborate"]
    return {pid: version for pid, version in latest.items() if version >= 2}


def _gated(diagnostics):
    def gated(text: str, script: dict) -> list:
        log, parties = Path(os.environ["FAKE_LEAN_LOG"]), script["barrier"]
        if os.getpid() in _candidate_elaborations(log):  # this server checks a candidate now
            deadline = time.monotonic() + BARRIER_DEADLINE
            while len(_candidate_elaborations(log)) < parties:
                if time.monotonic() > deadline:
                    fake_lean.log_event({"barrier": "timed out"})
                    break
                time.sleep(_POLL)
        return diagnostics(text, script)

    return gated


def activate(monkeypatch, bin_dir: Path, script: dict, *, parties: int, log: Path) -> None:
    """This fake as ``lean`` on PATH for one test, with a barrier of ``parties`` servers,
    logging to ``log``."""
    fake_lean.activate(monkeypatch, bin_dir, {**script, "barrier": parties})
    monkeypatch.setenv("FAKE_LEAN_LOG", str(log))
    wrapper = bin_dir / "lean"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__).resolve()}" "$@"\n')
    wrapper.chmod(0o755)


if __name__ == "__main__":
    fake_lean.diagnostics = _gated(fake_lean.diagnostics)
    sys.exit(fake_lean.main(sys.argv[1:]))
