"""Test-wide settings: single-threaded BLAS, markers that skip without their tool, paths."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# db_url, a fixture: imported here, it serves every test file (SQLite, and PostgreSQL when
# POSTGRES_URL_ENV names a server).
from db_cases import POSTGRES_URL_ENV, db_url  # noqa: F401

if TYPE_CHECKING:
    from curriculum.store import Store

# On 2 busy cores multi-threaded BLAS is many times slower; set before torch is imported.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Never reach for a model hub from tests.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = REPO_ROOT / "examples"
# ../shared sits beside the checkout on development machines and in CI, not in a user's clone.
SHARED_DIR = REPO_ROOT.parent / "shared"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reasons = {
        "lean": None if shutil.which("lean") else "no Lean toolchain on PATH (install elan)",
        "dojo": None
        if importlib.util.find_spec("lean_dojo")
        else "lean-dojo is not installed (pip install 'leanagent[dojo]')",
        "postgres": None
        if os.environ.get(POSTGRES_URL_ENV)
        else f"no PostgreSQL server ({POSTGRES_URL_ENV} is not set)",
    }
    for item in items:
        for marker, reason in reasons.items():
            if reason and marker in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES_DIR


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:  # noqa: F811
    """An open store on a fresh, empty database (each of db_url's)."""
    from curriculum.store import Store

    with Store.open(db_url) as opened:
        yield opened


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED_DIR.is_dir():
        pytest.skip(f"{SHARED_DIR} is absent (only development machines and CI have ../shared)")
    return SHARED_DIR


# The session's exit status, kept for pytest_unconfigure below.
_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the process with pytest's own exit status once everything is reported, without
    the interpreter's finalization: on a loaded 2-core machine a native library's teardown
    at exit (threads of torch, faiss, Ray or a solver still winding down) crashed once with a
    segmentation fault *after* every test had passed and the summary was printed, turning a
    green run into exit 139. Nothing of ours runs at exit, so nothing is lost."""
    import sys

    if _EXIT_STATUS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])
