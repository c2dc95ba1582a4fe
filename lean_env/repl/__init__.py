"""The Lean REPL backend (leanprover-community/repl): JSON over stdio, pooled processes.

Modules, bottom up: :mod:`~lean_env.repl.protocol` (wire format), :mod:`~lean_env.repl.process`
(one process), :mod:`~lean_env.repl.pool` (processes per import header),
:mod:`~lean_env.repl.theorem_text` (what is sent to open a theorem),
:mod:`~lean_env.repl.backend` (the :class:`~lean_env.proof_env.ProofBackend`) and
:mod:`~lean_env.repl.locate` (finding or building the REPL). See docs/lean-repl.md.
"""

from lean_env.repl.backend import ReplBackend, ReplSession, ReplStateHandle
from lean_env.repl.locate import ReplSource, ReplStatus, build_repl, describe_repl, repl_command

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
