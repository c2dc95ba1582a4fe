"""The database fixture every test file gets through conftest.py: a URL that runs each test
against SQLite and (when LEANAGENT_TEST_POSTGRES_URL is set) PostgreSQL, in its own schema.
The records those tests store come from builders.py, their Lean projects from projects.py."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

POSTGRES_URL_ENV = "LEANAGENT_TEST_POSTGRES_URL"


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: a SQLite file, or a PostgreSQL schema dropped afterwards."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
        return
    base = os.environ[POSTGRES_URL_ENV]
    schema = f"test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        # psycopg passes `options` to the server: every connection of the test sees only its schema.
        url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
