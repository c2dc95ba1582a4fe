"""The Lean REPL backend (leanprover-community/repl): JSON over stdio, pooled processes.

Modules, bottom up: :mod:`~lean_env.interactive.repl.protocol` (wire format), :mod:`~lean_env.interactive.repl.process`
(one process), :mod:`~lean_env.interactive.repl.pool` (processes per import header),
:mod:`~lean_env.interactive.repl.theorem_text` (what is sent to open a theorem),
:mod:`~lean_env.interactive.repl.backend` (the :class:`~lean_env.interactive.interface.ProofBackend`) and
:mod:`~lean_env.interactive.repl.find` (finding or building the REPL). See docs/lean-repl.md.
"""

from lean_env.interactive.repl.backend import ReplBackend, ReplSession, ReplStateHandle
from lean_env.interactive.repl.find import (
    ReplSource,
    ReplStatus,
    build_repl,
    describe_repl,
    repl_command,
)

__all__ = [
    "ReplBackend",
    "ReplSession",
    "ReplStateHandle",
    "ReplSource",
    "ReplStatus",
    "build_repl",
    "describe_repl",
    "repl_command",
]
