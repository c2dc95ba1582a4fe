"""The database's job lock (:meth:`Store.job_lock`): held, refused naming its holder, waited
for, and a lock that cannot be taken is an error, for the library and on the command line.
The lock tests run on SQLite and, when a server is configured, on PostgreSQL; the lock that
cannot be taken is faked (a lock file that is a directory, a driver that refuses), so no
network is needed."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from projects import lean_project
from sqlalchemy import create_engine

from agent.cli.main import main
from curriculum.locks import JobLockedError
from curriculum.store import DatabaseUnavailableError, JobLockUnavailableError, Store

# A PostgreSQL database whose server refuses every connection (the driver's own error).
DEAD_POSTGRES = "postgresql+psycopg://me:top-secret@db.invalid/x"


def dead_postgres() -> Store:
    """A store on :data:`DEAD_POSTGRES` (as if its server went down after it was opened)."""

    psycopg = pytest.importorskip("psycopg")  # the driver's own error class, nothing more

    def refuse() -> object:
        raise psycopg.OperationalError("connection refused (a fake)")

    return Store(create_engine(DEAD_POSTGRES, creator=refuse), identity="dead")


def lock_file_is_a_directory(tmp: Path) -> Store:
    """A SQLite store whose lock file (``DB.lock``) cannot be taken: a directory has its name."""
    (tmp / "db.sqlite.lock").mkdir()
    return Store.open(f"sqlite:///{tmp / 'db.sqlite'}")


def test_a_held_lock_refuses_a_second_job_naming_its_holder(db_url: str) -> None:
    with Store.open(db_url) as first, Store.open(db_url) as second:
        with first.job_lock("leanagent run (pid 1 on host)"):
            with pytest.raises(JobLockedError, match=r"is in use by leanagent run \(pid 1 on host\); .*--wait"):
                with second.job_lock("leanagent prove"):
                    pytest.fail("two jobs held the database's lock")
        # Released with the block: the next job takes it.
        with second.job_lock("leanagent prove"):
            pass


def test_a_waiting_job_is_told_who_holds_the_lock_and_gets_it_when_released(db_url: str) -> None:
    said: list[str] = []
    events: list[str] = []
    with Store.open(db_url) as first, Store.open(db_url) as second:

        def wait_for_it() -> None:
            with second.job_lock("leanagent prove", wait=True, notify=said.append):
                events.append("second holds it")

        with first.job_lock("leanagent run"):
            waiter = threading.Thread(target=wait_for_it)
            waiter.start()
            for _ in range(200):  # it says so before it blocks
                if said:
                    break
                waiter.join(0.05)
            events.append("first releases it")
        waiter.join(30)
    assert not waiter.is_alive()
    assert events == ["first releases it", "second holds it"]
    assert len(said) == 1 and said[0].startswith("waiting for the database "), said
    assert said[0].endswith(", in use by leanagent run"), said


def test_an_in_memory_database_has_no_lock_to_take() -> None:
    with Store.open("sqlite://") as store, store.job_lock("a"), store.job_lock("b"):
        pass


@pytest.mark.parametrize(
    ("make_store", "fragment"),
    [
        pytest.param(lock_file_is_a_directory, "db.sqlite.lock: Is a directory", id="sqlite-lock-file"),
        pytest.param(lambda tmp: dead_postgres(), "connection refused (a fake)", id="postgres-server-down"),
    ],
)
def test_a_lock_that_cannot_be_taken_is_an_error(
    tmp_path: Path, make_store: Callable[[Path], Store], fragment: str
) -> None:
    ran = False
    with make_store(tmp_path) as store:
        with pytest.raises(JobLockUnavailableError) as info:
            with store.job_lock("leanagent run"):
                ran = True
    message = str(info.value)
    assert not ran, "the job went on without its lock"
    assert isinstance(info.value, DatabaseUnavailableError)
    assert message.startswith(f"cannot take the job lock of the database {store.url}: ") and fragment in message
    assert "\n" not in message and "top-secret" not in message


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("run", "{repos}", "--tracer", "source", "--no-train", "--no-prove"), id="run"),
        pytest.param(("retrieval", "train"), id="retrieval-train"),
    ],
)
def test_the_cli_reports_a_lock_that_cannot_be_taken_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: tuple[str, ...],
) -> None:
    repos = tmp_path / "repos.txt"
    repos.write_text(f"{lean_project(tmp_path / 'proj')}\n", encoding="utf-8")
    # The database opens, then its server goes away before the job takes the lock.
    monkeypatch.setattr(Store, "open", classmethod(lambda cls, url: dead_postgres()))
    data = tmp_path / "data"
    argv = ["--data-dir", str(data), "--db", DEAD_POSTGRES, *(a.format(repos=repos) for a in command), "--json"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    expected = "cannot take the job lock of the database postgresql+psycopg://me:***@db.invalid/x: connection refused"
    assert err.startswith(f"leanagent: error: {expected}") and err.count("\n") == 1, err
    assert "Traceback" not in err and "top-secret" not in err
    assert json.loads(out)["exit"] == 2
    # The data directory's lock, taken first, was given back on the way out.
    assert not (data / "leanagent.lock.holder").exists()
