"""The Lean file, fake-lean script and helpers that the file-check tests share: the one-shot
check (test_filecheck.py) and the check through Lean's language server
(test_lean_server.py) answer the same theorems alike."""

from __future__ import annotations

import json
import time
from pathlib import Path

from fakes import fake_lean

SOURCE = """\
namespace Demo

theorem imp_self' (p : Prop) : p → p := by
  sorry

theorem and_swap (p q : Prop) (h : p ∧ q) : q ∧ p := sorry

end Demo
"""

GOALS = {
    "start": "p : Prop\n⊢ p → p",
    "intro": "p : Prop\nh : p\n⊢ p",
}

SCRIPT = {
    "unknown_tactics": ["nonsense"],
    "theorems": {
        "Demo.imp_self'": {
            "goals": GOALS["start"],
            "steps": {
                "intro h": {"goals": GOALS["intro"]},
                "intro hp": {"goals": GOALS["intro"].replace("h :", "h  :")},
                "intro h\nexact h": {"done": True},
                "intro h\nexact x": {"error": "unknown identifier 'x'"},
                # No error and no theorem: the 2021 Lean drops it without a word.
                "intro h\nrename List α => xs": {"done": True, "undeclared": True},
                # The parser reads on into the probe; Lean fills the rest with a silent `sorry`.
                "intro h\nexact suffices h from p": {"reads_on": "expected term"},
                "intro h\nrefine ?_\n· skip": {"error": "unsolved goals\np : Prop\nh : p\n⊢ p"},
                "intro h\nspin": {"hang": True},
            },
        },
        "Demo.and_swap": {
            "goals": "p q : Prop\nh : p ∧ q\n⊢ q ∧ p",
            "steps": {"constructor": {"goals": "case left\n⊢ q\n\ncase right\n⊢ p"}},
        },
    },
}

# SOURCE's two theorems, read by the fake lean's own parser so that these tests do not
# depend on the source extractor.
IMP_SELF = fake_lean.theorem_record(SOURCE, "Demo.imp_self'", "Demo/Basic.lean")
AND_SWAP = fake_lean.theorem_record(SOURCE, "Demo.and_swap", "Demo/Basic.lean")


def demo_repo(tmp_path: Path) -> Path:
    """A repository holding SOURCE as Demo/Basic.lean."""
    root = tmp_path / "repo"
    (root / "Demo").mkdir(parents=True)
    (root / "Demo" / "Basic.lean").write_text(SOURCE, encoding="utf-8")
    return root


def activate(monkeypatch, tmp_path: Path, script: dict = SCRIPT) -> Path:
    """The fake lean answering from ``script`` on PATH for one test; returns its log, one
    JSON line per `lean` run or server event."""
    fake_lean.activate(monkeypatch, tmp_path / "bin", script)
    log = tmp_path / "lean.log"
    monkeypatch.setenv("FAKE_LEAN_LOG", str(log))
    return log


def log_lines(log: Path) -> list[dict]:
    """Every line the fake lean logged, in order."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def live_members(group: int) -> list[int]:
    """Processes of ``group`` that still run (killed ones may linger briefly as zombies)."""
    deadline = time.monotonic() + 5
    while True:
        live = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                live.append(int(stat.parent.name))
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.1)
