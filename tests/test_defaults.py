"""One default per value: every proof backend cuts a tactic at the same default."""

from __future__ import annotations

import pytest

from agent.proving.theorem import ProvingConfig
from lean_env.interactive.dojo import DojoBackend
from lean_env.interactive.filecheck import FileCheckBackend, ServerCheckBackend
from lean_env.interactive.interface import TACTIC_TIMEOUT
from lean_env.interactive.repl.backend import ReplBackend


def _repl_timeout() -> float:
    with ReplBackend.create() as backend:  # starts no process before a theorem is opened
        return backend.tactic_timeout


@pytest.mark.parametrize(
    "timeout",
    [
        pytest.param(lambda: FileCheckBackend().timeout, id="file"),
        pytest.param(lambda: ServerCheckBackend().timeout, id="server"),
        pytest.param(_repl_timeout, id="repl"),
        pytest.param(lambda: DojoBackend().timeout, id="dojo"),
        pytest.param(lambda: ProvingConfig().tactic_timeout, id="proving"),
    ],
)
def test_every_backend_cuts_a_tactic_at_the_same_default(timeout) -> None:
    assert timeout() == TACTIC_TIMEOUT
