"""Helpers for tests that run the Lean REPL stand-ins (fake_repl.py, replay_repl.py) and
the stand-in ``git``/``lake`` that building the REPL runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lean_env.interactive.repl.process import ReplCommand

FAKES_DIR = Path(__file__).resolve().parent
FAKE_REPL = FAKES_DIR / "fake_repl.py"
REPLAY_REPL = FAKES_DIR / "replay_repl.py"


def write_script(directory: Path, script: dict, name: str = "script.json") -> Path:
    """Write a fake_repl script as JSON and return its path."""
    path = directory / name
    path.write_text(json.dumps(script, ensure_ascii=False), encoding="utf-8")
    return path


def fake_command(cwd: Path, script: Path, *, log: Path | None = None) -> ReplCommand:
    """How to start fake_repl.py with ``script`` (and a request log) in ``cwd``."""
    env = {"FAKE_REPL_LOG": str(log)} if log is not None else {}
    return ReplCommand(argv=(sys.executable, str(FAKE_REPL), str(script)), cwd=cwd, env=env)


def replay_command(cwd: Path, transcript: Path) -> ReplCommand:
    """How to start replay_repl.py on ``transcript`` (a path without .in/.expected.out)."""
    return ReplCommand(argv=(sys.executable, str(REPLAY_REPL), str(transcript)), cwd=cwd)


def read_log(log: Path) -> list[dict]:
    """The entries fake_repl.py appended to its request log."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def pid_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


# `git clone ... --branch TAG URL DIR`: an empty clone pinning the Lean version TAG.
FAKE_GIT_SH = """\
echo "git $*" >> "$TOOL_LOG"
for last; do :; done
mkdir -p "$last/.git"
tag=$5
echo "leanprover/lean4:$tag" > "$last/lean-toolchain"
"""
# `lake build repl`: an executable where lake puts the REPL.
FAKE_LAKE_SH = """\
echo "lake $*" >> "$TOOL_LOG"
mkdir -p .lake/build/bin
printf '#!/bin/sh\\n' > .lake/build/bin/repl
chmod +x .lake/build/bin/repl
"""


def executable(path: Path, body: str = "exit 0") -> Path:
    """A ``/bin/sh`` script at ``path`` running ``body`` (stand-in repl, git, lake)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path
