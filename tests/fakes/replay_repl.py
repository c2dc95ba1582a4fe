#!/usr/bin/env python3
"""A stand-in for the Lean REPL that replays a recorded transcript.

Run as ``replay_repl.py DIR/NAME`` (or with ``REPLAY_TRANSCRIPT=DIR/NAME``): it reads the
requests of ``NAME.in`` and the answers of ``NAME.expected.out`` and answers the k-th request
it receives with the k-th recorded answer, byte for byte as the real REPL printed it. A
request that differs from the recorded one (compared as JSON) is a client bug: the replay
writes why on stderr and exits with code 3, which the client sees as a crash.

Requests are split and joined exactly as the REPL does (blank lines end a request; each
line is trimmed on the right and the lines are concatenated), so transcripts whose
requests span several lines replay faithfully.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# This runs as a script, so only its own directory is on sys.path: add tests/, the root every
# import of the stand-ins starts from, since both read requests with one function.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fakes.fake_repl import read_request  # noqa: E402


def blocks(text: str, *, join: str) -> list[str]:
    """Blank-line separated blocks of ``text``; lines trimmed on the right, joined by ``join``."""
    out: list[str] = []
    lines: list[str] = []
    for line in text.splitlines():
        if line.strip():
            lines.append(line.rstrip())
        elif lines:
            out.append(join.join(lines))
            lines = []
    if lines:
        out.append(join.join(lines))
    return out


def load(base: Path) -> tuple[list[dict], list[str]]:
    raw_requests = blocks(base.with_name(base.name + ".in").read_text(encoding="utf-8"), join="")
    requests = [json.loads(r) for r in raw_requests if not r.startswith(("#", "--"))]
    answers = blocks(base.with_name(base.name + ".expected.out").read_text(encoding="utf-8"), join="\n")
    return requests, answers


def main() -> None:
    base = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ["REPLAY_TRANSCRIPT"])
    requests, answers = load(base)
    for index, (expected, recorded) in enumerate(zip(requests, answers, strict=True)):
        query = read_request()
        if not query:
            return
        received = json.loads(query)
        if received != expected:
            sys.stderr.write(
                f"replay_repl: request {index} of {base.name} differs from the recording:\n"
                f"  received {json.dumps(received, ensure_ascii=False)}\n"
                f"  recorded {json.dumps(expected, ensure_ascii=False)}\n"
            )
            sys.exit(3)
        sys.stdout.write(recorded + "\n\n")
        sys.stdout.flush()
    # Like the real REPL at the end of its input: exit when stdin closes.
    while read_request():
        sys.stderr.write(f"replay_repl: {base.name} has no more recorded answers\n")
        sys.exit(3)


if __name__ == "__main__":
    main()
