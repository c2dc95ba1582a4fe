"""Finding Lean's tools: PATH first, then elan's bin, which ELAN_HOME names at the time of the call."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.repl_support import executable

from lean_env.lean.toolchain import find_tool


@pytest.mark.parametrize(
    ("elan_home", "installed_in", "found_in"),
    [
        pytest.param("elan", "path", "path", id="path-first"),
        pytest.param("elan", "elan/bin", "elan/bin", id="elan-home"),
        pytest.param(None, "home/.elan/bin", "home/.elan/bin", id="default-elan-home"),
        pytest.param("elan", "home/.elan/bin", None, id="elan-home-replaces-the-default"),
        pytest.param(None, None, None, id="nowhere"),
    ],
)
def test_find_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, elan_home, installed_in, found_in) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if elan_home is None:
        monkeypatch.delenv("ELAN_HOME", raising=False)
    else:
        monkeypatch.setenv("ELAN_HOME", str(tmp_path / elan_home))
    if installed_in is not None:
        executable(tmp_path / installed_in / "lake")
    if installed_in == "path":  # elan's copy too, to show which one wins
        executable(tmp_path / "elan/bin/lake")
    assert find_tool("lake") == (None if found_in is None else tmp_path / found_in / "lake")
