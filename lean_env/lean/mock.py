"""An in-memory Lean for tests, as httpx's ``MockTransport(handler)`` stands for the network:
one function reads the file Lean is asked about and says what ``lean FILE`` would print.

::

    lean = MockLean(lambda path, text: "" if "exact h" in text else f"{path}:3:2: error: unknown identifier 'h'")
    check_proof(repo, theorem, "by\\n  exact h", runner=lean.for_project(repo))

It is a :class:`~lean_env.lean.runner.FileRunner`, and :meth:`for_project` is a runner
factory (``runner_for``) for whatever takes one: the prover, the final check, rechecks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lean_env.lean.diagnostics import parse_diagnostics
from lean_env.lean.runner import LeanRun

# (the file's name, its text) -> what `lean FILE` prints on stdout (diagnostics in Lean's
# command-line format, `#print axioms` answers bare)
Handler = Callable[[str, str], str]


class MockLean:
    """Answers every run with ``handler``; records the texts it was given (:attr:`texts`)."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self.texts: list[str] = []

    def for_project(self, project_dir: Path) -> MockLean:
        """The runner for any project: this one."""
        return self

    def run(self, file: Path, *, timeout: float) -> LeanRun:
        text = file.read_text(encoding="utf-8")
        self.texts.append(text)
        stdout = self._handler(file.name, text)
        output = parse_diagnostics(stdout)
        return LeanRun(("mock-lean", str(file)), 1 if output.errors else 0, output, stdout, "", 0.0)

    def close(self) -> None:
        """Nothing to release."""
