"""What this machine offers for proving a project: Lean, Lake, elan, git, the Lean REPL and
lean-dojo (where each is, its version, how to install it when missing), and so which proof
environments can run. ``leanagent env doctor`` prints it."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from lean_env.errors import LeanNotFoundError
from lean_env.interactive.choice import ProofBackendChoice
from lean_env.interactive.repl.find import describe_repl
from lean_env.lean.toolchain import find_tool, read_toolchain, tool_version

# The command-line tools looked up on PATH (and in elan's directory), with what to do
# when one is missing.
_TOOLS = (
    ("lean", LeanNotFoundError.INSTALL_HINT),
    ("lake", "comes with every Lean toolchain that elan installs"),
    ("elan", "optional; it installs and switches Lean versions (see lean above)"),
    ("git", "install git (apt-get install git); needed to write proofs onto a branch and for LeanDojo"),
)


@dataclass(frozen=True, slots=True)
class ToolReport:
    """One tool: found or not, where, which version, and how to install it when missing."""

    name: str
    found: bool
    path: str | None
    version: str | None
    detail: str


@dataclass(frozen=True, slots=True)
class ToolchainReport:
    """Every tool the proof environments need, and which environments can run."""

    project: Path
    lean_toolchain: str | None  # the project's lean-toolchain pin
    tools: tuple[ToolReport, ...]
    backends: dict[ProofBackendChoice, bool]  # file, repl, dojo -> can it run here

    @property
    def lean_found(self) -> bool:
        return any(t.name == "lean" and t.found for t in self.tools)

    def to_json(self) -> dict[str, Any]:
        return {
            "project": str(self.project),
            "lean_toolchain": self.lean_toolchain,
            "tools": [
                {"name": t.name, "found": t.found, "path": t.path, "version": t.version, "detail": t.detail}
                for t in self.tools
            ],
            "backends": {str(choice): ready for choice, ready in self.backends.items()},
        }


def probe_toolchain(project: Path, *, repl_cache: Path) -> ToolchainReport:
    """Look up every tool for ``project`` (a Lake project directory); the REPL is searched
    as the repl backend searches it when it starts a process (``repl_cache`` holds builds)."""
    tools = [_tool(name, hint) for name, hint in _TOOLS]
    tools += [_repl(project, repl_cache), _lean_dojo()]
    found = {t.name: t.found for t in tools}
    backends = {
        ProofBackendChoice.SERVER: found["lean"],  # every Lean 4 serves (`lean --server`)
        ProofBackendChoice.FILE: found["lean"],
        ProofBackendChoice.REPL: found["lean REPL"],
        ProofBackendChoice.DOJO: found["lean-dojo"] and found["lean"] and found["git"],
    }
    return ToolchainReport(project, read_toolchain(project), tuple(tools), backends)


def _tool(name: str, hint: str) -> ToolReport:
    path = find_tool(name)
    if path is None:
        return ToolReport(name, False, None, None, hint)
    return ToolReport(name, True, str(path), tool_version(path), "")


def _repl(project: Path, repl_cache: Path) -> ToolReport:
    status = describe_repl(project, cache_dir=repl_cache)
    return ToolReport("lean REPL", status.found, " ".join(status.argv) or None, status.repl_toolchain, status.detail)


def _lean_dojo() -> ToolReport:
    try:
        version = metadata.version("lean-dojo")
    except metadata.PackageNotFoundError:
        return ToolReport("lean-dojo", False, None, None, "pip install 'leanagent[dojo]'")
    return ToolReport("lean-dojo", True, None, version, "")
