"""Which proof environment opens theorems: the choice ``--proof-backend`` makes, and the
one function that opens it."""

from __future__ import annotations

import enum
import functools
from pathlib import Path

from lean_env.data_layout import DataLayout
from lean_env.interactive.interface import ProofBackend
from lean_env.interactive.repl.pool import Recycling


class ProofBackendChoice(enum.StrEnum):
    """A proof environment, as the user names it."""

    AUTO = "auto"  # repl when a Lean REPL is found for the project, else server
    FILE = "file"  # any lean: one whole-file run per batch of tactics
    SERVER = "server"  # the file check through `lean --server`: the file before the theorem elaborated once
    REPL = "repl"  # the Lean REPL: JSON over stdio, processes reused
    DOJO = "dojo"  # LeanDojo's Dojo


def open_backend(
    choice: ProofBackendChoice,
    repo: Path,
    *,
    timeout: float,
    data_dir: Path,
    recycling: Recycling = Recycling(),
    servers: int = 1,
) -> ProofBackend:
    """The proof environment ``choice`` names, for the Lake project at ``repo``, with
    ``timeout`` seconds per tactic; caches (REPL builds, LeanDojo traces) live in
    ``data_dir``; ``recycling``: when a REPL process is replaced; ``servers``: language
    servers per theorem of the server backend, checking that many candidates at once. A
    module-level function: a ``functools.partial`` of it pickles, so Ray workers open their own."""
    from lean_env.interactive.dojo import DojoBackend
    from lean_env.interactive.filecheck import FileCheckBackend, ServerCheckBackend
    from lean_env.interactive.repl.backend import ReplBackend
    from lean_env.interactive.repl.find import describe_repl
    from lean_env.lean.server import ServerRunner

    layout = DataLayout(data_dir)
    if choice is ProofBackendChoice.AUTO:
        found = describe_repl(repo, cache_dir=layout.repl).found
        choice = ProofBackendChoice.REPL if found else ProofBackendChoice.SERVER
    if choice is ProofBackendChoice.REPL:
        return ReplBackend.create(tactic_timeout=timeout, cache_dir=layout.repl, recycling=recycling)
    if choice is ProofBackendChoice.DOJO:
        return DojoBackend(timeout=timeout, cache_dir=layout.lean_dojo)
    if choice is ProofBackendChoice.SERVER:
        return ServerCheckBackend(
            timeout=timeout, runner_factory=functools.partial(ServerRunner.for_project, workers=servers)
        )
    return FileCheckBackend(timeout=timeout)
