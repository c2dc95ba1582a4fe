#!/usr/bin/env python3
"""A stand-in for the Lean REPL: speaks its JSON protocol from a small script.

Run as ``fake_repl.py SCRIPT.json`` (or with ``FAKE_REPL_SCRIPT`` set). Standard library
only, so it runs as a plain subprocess exactly where the real ``repl`` would.

The script::

    {
      "theorems": {"name": "goal text"},        # goal of `theorem name ... := by sorry`
      "tactics": {                               # (goals of a state, tactic) -> outcome
        "goal text": {
          "tactic": {"goals": ["g1", "g2"]}      # new state; [] completes the proof
                    {"error": "msg"}             # error message, proofStatus Incomplete
                    {"lean_error": "msg"}        # {"message": "Lean error:\\nmsg"}
                    {"status": "Incomplete: contains sorry"}   # no goals, this status
                    {"hang": true, "child": true}  # sleep forever (with a child process)
                    {"crash": true}              # exit at once with code 3
                    {"malformed": true}          # print text that is not JSON
                    {"memory_mb": 1024}          # allocate that much, then answer "goals": []
                    {"delay": 0.5, ...}          # wait that long first, then do the rest
                    {"hang_when": PATH, ...}     # hang if PATH exists (a test creates it)
        }
      },
      "command_errors": {"substring": "msg"},   # a command containing it gets this error
      "command_hang": "substring",              # a command containing it hangs
      "header_delay": 0.0                       # seconds an import command takes
    }

A state's key is its goals joined by a blank line. Unknown tactics give the REPL's
"unknown tactic" error, unknown ids its "Unknown proof state." / "Unknown environment.".
With ``FAKE_REPL_LOG`` set, each request is appended there as one JSON line with the pid
(and the pid of any child a hang started), so tests can count processes and requests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

_DECL_RE = re.compile(r"\b(?:theorem|lemma|example)\s+([^\s:({\[]+)?")


def log(entry: dict) -> None:
    path = os.environ.get("FAKE_REPL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), **entry}) + "\n")


def read_request() -> str:
    """Lines up to a blank line, each trimmed on the right and joined, as the REPL does."""
    parts = []
    while True:
        line = sys.stdin.readline()
        if not line:
            return "".join(parts)
        if not line.strip():
            if parts:
                return "".join(parts)
            continue
        parts.append(line.rstrip())


def answer(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, indent=1, ensure_ascii=False) + "\n\n")
    sys.stdout.flush()


def position_of_last(text: str, needle: str) -> dict:
    index = text.rindex(needle)
    before = text[:index]
    return {"line": before.count("\n") + 1, "column": index - (before.rfind("\n") + 1)}


def hang(with_child: bool) -> None:
    if with_child:
        child = subprocess.Popen(["sleep", "3600"])
        log({"child": child.pid})
    time.sleep(3600)


class FakeRepl:
    def __init__(self, script: dict) -> None:
        self.script = script
        self.envs: list[str] = []
        self.states: list[list[str]] = []

    def new_state(self, goals: list[str]) -> int:
        self.states.append(goals)
        return len(self.states) - 1

    def command(self, req: dict) -> dict:
        env = req.get("env")
        if env is not None and not 0 <= env < len(self.envs):
            return {"message": "Unknown environment."}
        cmd = req["cmd"]
        hang_on = self.script.get("command_hang")
        if hang_on and hang_on in cmd:
            hang(False)
        if env is None and "import" in cmd:
            time.sleep(float(self.script.get("header_delay", 0.0)))
        self.envs.append(cmd)
        response: dict = {"env": len(self.envs) - 1}
        messages = []
        for needle, msg in self.script.get("command_errors", {}).items():
            if needle in cmd:
                messages.append(self.message("error", position_of_last(cmd, needle), msg))
        if "sorry" in cmd:
            names = [m.group(1) or "_example" for m in _DECL_RE.finditer(cmd)]
            name = names[-1] if names else "_anonymous"
            goal = self.script.get("theorems", {}).get(name, f"⊢ {name}")
            pos = position_of_last(cmd, "sorry")
            end = {"line": pos["line"], "column": pos["column"] + 5}
            response["sorries"] = [{"proofState": self.new_state([goal]), "pos": pos, "goal": goal, "endPos": end}]
            messages.append(self.message("warning", pos, "declaration uses `sorry`"))
        if messages:
            response["messages"] = messages
        return response

    @staticmethod
    def message(severity: str, pos: dict, data: str) -> dict:
        return {"severity": severity, "pos": pos, "endPos": pos, "data": data}

    def tactic(self, req: dict) -> dict | None:
        index = req["proofState"]
        if not 0 <= index < len(self.states):
            return {"message": "Unknown proof state."}
        key = "\n\n".join(self.states[index])
        outcome = self.script.get("tactics", {}).get(key, {}).get(req["tactic"])
        if outcome is None:
            return {"message": "Lean error:\n<input>:1:1: unknown tactic"}
        time.sleep(float(outcome.get("delay", 0.0)))
        if outcome.get("hang") or os.path.exists(outcome.get("hang_when", "\0")):
            hang(bool(outcome.get("child")))
        if outcome.get("crash"):
            sys.stderr.write("fake_repl: crashing on request\n")
            sys.stderr.flush()
            os._exit(3)
        if outcome.get("malformed"):
            sys.stdout.write("{this is not json\n\n")
            sys.stdout.flush()
            return None
        if "memory_mb" in outcome:
            block = bytearray(int(outcome["memory_mb"]) * 1024 * 1024)
            block[::4096] = b"x" * len(block[::4096])
            return {"proofState": self.new_state([]), "goals": [], "proofStatus": "Completed"}
        if "lean_error" in outcome:
            return {"message": "Lean error:\n" + outcome["lean_error"]}
        goals = list(outcome.get("goals", []))
        response: dict = {"proofState": self.new_state(goals), "goals": goals}
        if "error" in outcome:
            zero = {"line": 0, "column": 0}
            response["messages"] = [self.message("error", zero, outcome["error"])]
            response["proofStatus"] = outcome.get("status", "Incomplete: contains metavariable(s)")
        elif "status" in outcome:
            response["proofStatus"] = outcome["status"]
        else:
            response["proofStatus"] = "Incomplete: open goals remain" if goals else "Completed"
        return response

    def handle(self, query: str) -> dict | None:
        try:
            req = json.loads(query)
        except json.JSONDecodeError as e:
            sys.stderr.write(f"Could not parse JSON: {e}\n")
            sys.exit(1)
        log({"request": req})
        if "tactic" in req:
            return self.tactic(req)
        if "cmd" in req:
            return self.command(req)
        return {"message": f"fake_repl does not support {sorted(req)}"}


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FAKE_REPL_SCRIPT")
    script = {}
    if path:
        with open(path, encoding="utf-8") as f:
            script = json.load(f)
    repl = FakeRepl(script)
    while True:
        query = read_request()
        if not query:
            return
        if query.startswith(("#", "--")):
            continue
        response = repl.handle(query)
        if response is not None:
            answer(response)


if __name__ == "__main__":
    main()
