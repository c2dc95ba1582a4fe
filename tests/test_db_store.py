"""The dynamic database: round trips, idempotence, versions and the merged view, kill-safety,
runs and attempts, and errors at the boundary. Every test runs on SQLite and, when a server
is configured, on PostgreSQL."""

from __future__ import annotations

import dataclasses
import os
import re
import sqlite3
import subprocess
import sys
import threading
from datetime import UTC
from pathlib import Path

import pytest
from builders import premise, repo_trace, rich_trace, theorem
from db_cases import POSTGRES_URL_ENV
from sqlalchemy import Engine, create_engine, event, inspect, select, text
from sqlalchemy.engine import make_url

from curriculum import bulk
from curriculum import store as store_module
from curriculum.db import SCHEMA_VERSION, Base, PremiseRow, SchemaRow, TacticPremiseRow
from curriculum.store import DatabaseUnavailableError, RecordNotFoundError, Store
from lean_env.records import AttemptOutcome, RunStatus, TacticOutcome, TheoremStatus, TracedTactic, TriedTactic


def counts(store: Store) -> tuple[object, ...]:
    """Everything observable about what is stored, minus the URL; with the row ids of the
    theorems, so that deleting and re-inserting equal rows counts as a change."""
    stats = store.stats()
    return (
        dataclasses.replace(stats, url=""),
        store.versions(),
        store.latest_traces(),
        store.theorems(),
    )


def test_round_trip_gives_back_the_same_records(store: Store) -> None:
    trace = rich_trace()
    assert store.add_trace(trace).added is True
    assert store.latest_traces() == [trace]


def test_ingesting_the_same_version_twice_changes_nothing(store: Store) -> None:
    trace = rich_trace()
    store.add_trace(trace)
    before = counts(store)
    assert store.add_trace(trace).added is False
    # Even a different trace under the same (location, commit) is not stored again.
    assert store.add_trace(dataclasses.replace(trace, theorems=trace.theorems[:1])).added is False
    assert counts(store) == before
    assert store.stats().versions == 1


def test_losing_a_race_to_store_the_same_version_is_not_an_error(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = rich_trace()
    store.add_trace(trace)
    before = counts(store)
    real, calls = Store._version_id, []

    def stale_once(session: object, location: str, commit: str) -> int | None:
        # The first look-up runs "before the other process committed" and sees nothing.
        calls.append(1)
        return None if len(calls) == 1 else real(session, location, commit)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "_version_id", staticmethod(stale_once))
    assert store.add_trace(trace).added is False  # the unique key caught it
    assert len(calls) >= 2
    assert counts(store) == before


def test_equal_paths_and_names_in_two_repositories_do_not_collide(store: Store) -> None:
    one = repo_trace("/repos/one", commit="c1", theorems=[theorem("foo", steps=1)], premises=[premise("bar")])
    two = repo_trace(
        "/repos/two",
        commit="c1",
        theorems=[theorem("foo", steps=4), theorem("baz", steps=None)],
        premises=[premise("bar", line=9)],
    )
    assert store.add_trace(one).added and store.add_trace(two).added
    assert store.latest_traces() == [one, two]
    stats = store.stats()
    assert (stats.repositories, stats.versions, stats.theorems, stats.premises) == (2, 2, 3, 2)


def test_new_commit_is_a_new_version_and_the_merged_view_takes_the_newest(store: Store) -> None:
    url = "https://example.org/r.git"
    old = repo_trace(url, commit="c1", theorems=[theorem("foo", steps=1), theorem("gone", steps=2)])
    new = repo_trace(url, commit="c2", theorems=[theorem("foo", steps=3), theorem("hole", steps=None)])
    store.add_trace(old)
    store.add_trace(new)
    assert store.latest_traces() == [new]
    assert [(v.commit, v.latest) for v in store.versions()] == [("c1", False), ("c2", True)]
    # Re-ingesting the old commit is idempotent: it does not become the newest again.
    assert store.add_trace(old).added is False
    assert store.latest_traces() == [new]
    assert {t.theorem.full_name for t in store.theorems()} == {"foo", "hole"}
    assert store.stats().theorems == 4  # both versions are kept


@pytest.mark.parametrize(
    ("fault", "fail_at_call", "location"),
    [
        pytest.param(
            RuntimeError("disk on fire"),
            1,
            "https://example.org/r.git",
            id="error-at-files-new-commit",
        ),
        pytest.param(
            RuntimeError("disk on fire"),
            4,
            "https://example.org/new.git",
            id="error-at-theorems-new-repo",
        ),
        pytest.param(KeyboardInterrupt(), 6, "https://example.org/r.git", id="ctrl-c-at-premise-links"),
    ],
)
def test_an_ingest_killed_half_way_leaves_the_database_as_before(
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    fault: BaseException,
    fail_at_call: int,
    location: str,
) -> None:
    first = repo_trace("https://example.org/r.git", commit="c1", theorems=[theorem("foo", steps=1)])
    store.add_trace(first)
    before = counts(store)
    real_insert, calls = bulk.insert_rows, []

    def failing_insert(*args: object, **kwargs: object) -> int:
        calls.append(1)
        if len(calls) == fail_at_call:
            raise fault
        return real_insert(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bulk, "insert_rows", failing_insert)
    second = rich_trace(location, "c2")
    with pytest.raises(type(fault)):
        store.add_trace(second)
    assert len(calls) == fail_at_call  # the fault did hit mid-way
    assert counts(store) == before
    assert not store.has_version(location, "c2")

    monkeypatch.setattr(bulk, "insert_rows", real_insert)
    assert store.add_trace(second).added is True
    assert second in store.latest_traces()
    assert store.stats().versions == 2


# The child stores a trace, signals once its first bulk batch is in the open transaction,
# then waits to be killed.
_KILLED_CHILD = """
import sys, time
from curriculum import bulk
from curriculum.store import Store
from builders import rich_trace

real = bulk.insert_rows

def insert_then_hang(*args, **kwargs):
    count = real(*args, **kwargs)
    print("inserted", flush=True)
    time.sleep(60)
    return count

bulk.insert_rows = insert_then_hang
Store.open(sys.argv[1]).add_trace(rich_trace("https://example.org/killed.git", "c1"))
"""


def test_a_process_killed_mid_transaction_leaves_the_database_as_before(db_url: str) -> None:
    with Store.open(db_url) as store:
        store.add_trace(rich_trace())
        before = counts(store)
    tests_dir = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests_dir.parent), str(tests_dir)])}
    child = subprocess.Popen([sys.executable, "-c", _KILLED_CHILD, db_url], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "inserted"
    finally:
        child.kill()  # SIGKILL: no cleanup, no rollback from the client side
        child.wait(timeout=30)
    with Store.open(db_url) as store:
        assert counts(store) == before
        assert store.add_trace(rich_trace("https://example.org/killed.git", "c1")).added is True
        assert store.stats().versions == 2


def test_tactic_premise_links_resolve_to_premises_of_the_same_version(store: Store) -> None:
    store.add_trace(rich_trace())
    store.add_trace(rich_trace("https://example.org/other.git"))
    with store._engine.connect() as conn:  # white box: the link table has no public reader
        links = conn.execute(
            select(
                TacticPremiseRow.name,
                TacticPremiseRow.version_id,
                PremiseRow.version_id,
                PremiseRow.full_name,
            )
            .outerjoin(PremiseRow, PremiseRow.id == TacticPremiseRow.premise_id)
            .order_by(TacticPremiseRow.id)
        ).all()
    assert len(links) == 2 * (2 + 3)  # A.one: 1 step x 2 premises; A.two: 3 steps x 1 premise
    for name, link_version, premise_version, premise_name in links:
        if name == "Nat.succ":  # not defined in the repository
            assert premise_version is None
        else:
            assert (premise_version, premise_name) == (link_version, name)


def test_theorems_filter_by_status_and_location(store: Store) -> None:
    store.add_trace(rich_trace("https://example.org/a.git"))
    store.add_trace(repo_trace("/b", commit="c1", theorems=[theorem("x", steps=None), theorem("y", steps=2)]))
    sorries = store.theorems(status=TheoremStatus.SORRY)
    assert [(t.location, t.theorem.full_name) for t in sorries] == [
        ("/b", "x"),
        ("https://example.org/a.git", "B.hole"),
    ]
    only_a = store.theorems(location="https://example.org/a.git")
    assert [t.theorem for t in only_a] == list(rich_trace().theorems)
    assert len({t.id for t in store.theorems()}) == 7
    proven_b = store.theorems(status=TheoremStatus.PROVEN, location="/b")
    assert [len(t.theorem.tactics) for t in proven_b] == [2]


def test_runs_and_attempts(store: Store) -> None:
    store.add_trace(rich_trace())
    [hole] = store.theorems(status=TheoremStatus.SORRY)
    [proven, *_] = store.theorems(status=TheoremStatus.PROVEN)
    run = store.start_run({"seed": 1, "repos": ["a"]})
    assert run.status is RunStatus.RUNNING and run.started_at.tzinfo is UTC and run.ended_at is None
    assert store.runs(status=RunStatus.RUNNING) == [run]

    failed = store.record_attempt(
        run_id=run.id,
        theorem_id=proven.id,
        outcome=AttemptOutcome.FAILED,
        seconds=0.5,
        nodes=7,
        backend="repl",
    )
    proved = store.record_attempt(
        run_id=run.id, theorem_id=hole.id, outcome=AttemptOutcome.PROVED, seconds=2.0, nodes=3,
        backend="dojo", proof="by trivial",
    )  # fmt: skip
    # A repeat for the same (run, theorem) returns the first record and changes nothing.
    again = store.record_attempt(
        run_id=run.id,
        theorem_id=hole.id,
        outcome=AttemptOutcome.TIMEOUT,
        seconds=9.0,
        nodes=1,
        backend="dojo",
    )
    assert again == proved
    assert store.attempts(run_id=run.id) == [failed, proved]
    assert [t.theorem.full_name for t in store.theorems(status=TheoremStatus.PROVED_BY_US)] == ["B.hole"]
    assert store.stats().latest_by_status == {"proven": 4, "sorry": 0, "proved_by_us": 1}

    ended = store.finish_run(run.id)
    assert ended.status is RunStatus.FINISHED and ended.ended_at is not None and ended.ended_at.tzinfo is UTC
    assert store.runs(status=RunStatus.RUNNING) == []
    assert store.runs()[0].config == {"seed": 1, "repos": ["a"]}


def test_the_tactics_an_attempt_tried_are_kept_and_read_back_but_those_left_out(store: Store) -> None:
    store.add_trace(rich_trace())
    [hole] = store.theorems(status=TheoremStatus.SORRY)
    [proven, *_] = store.theorems(status=TheoremStatus.PROVEN)
    run = store.start_run({"seed": 1})
    tried = (
        TriedTactic("⊢ p → p", "intro h", TacticOutcome.STATE, 1, on_proof=True),
        TriedTactic("⊢ p → p", "simp", TacticOutcome.ERROR, None),
        TriedTactic("h : p\n⊢ p", "decide", TacticOutcome.TIMEOUT, None),
        TriedTactic("h : p\n⊢ p", "exact h", TacticOutcome.PROOF, 0, on_proof=True),
    )
    other = (TriedTactic("⊢ q", "rfl", TacticOutcome.ERROR, None),)
    for target, tactics, outcome in ((hole, tried, AttemptOutcome.PROVED), (proven, other, AttemptOutcome.FAILED)):
        store.record_attempt(
            run_id=run.id, theorem_id=target.id, outcome=outcome, seconds=1.0, nodes=2, backend="server",
            proof="by\n  intro h\n  exact h" if outcome is AttemptOutcome.PROVED else None, tried=tactics,
        )  # fmt: skip
    assert store.tried_tactics() == [*((hole.id, t) for t in tried), (proven.id, other[0])]
    assert store.tried_tactics(leave_out={hole.id}) == [(proven.id, other[0])]


def test_a_proof_found_becomes_the_theorems_steps(store: Store) -> None:
    """The found proof's steps (goals, premises) replace the sorry's, for the suggester and
    the retriever; its proof text stays the source's, what write-back replaces."""
    store.add_trace(rich_trace())
    [hole] = store.theorems(status=TheoremStatus.SORRY)
    run = store.start_run({"seed": 1})
    steps = (
        TracedTactic("intro h", "⊢ p → p", "h : p\n⊢ p", ("B.q",)),
        TracedTactic("exact A.p1 h", "h : p\n⊢ p", None, ("A.p1", "Nat.succ")),
    )
    store.record_attempt(
        run_id=run.id, theorem_id=hole.id, outcome=AttemptOutcome.PROVED, seconds=1.0, nodes=2,
        backend="file", proof="by\n  intro h\n  exact A.p1 h", steps=steps,
    )  # fmt: skip
    [proved] = store.theorems(status=TheoremStatus.PROVED_BY_US)
    assert proved.theorem.tactics == steps and proved.theorem.premises == ("B.q", "A.p1", "Nat.succ")
    assert proved.theorem.proof == hole.theorem.proof
    assert [s.num_steps for s in store.theorem_summaries() if s.full_name == "B.hole"] == [2]
    [trace] = store.latest_traces()
    assert [t for t in trace.theorems if t.full_name != "B.hole"] == [
        t for t in rich_trace().theorems if t.full_name != "B.hole"
    ]


def test_a_vacuous_attempt_is_stored_with_its_proof_and_leaves_the_theorem_open(store: Store) -> None:
    """`vacuous` fits the outcome column of schema version 1 (strings, no CHECK of values)."""
    store.add_trace(rich_trace())
    [hole] = store.theorems(status=TheoremStatus.SORRY)
    run = store.start_run({"seed": 1})
    vacuous = store.record_attempt(
        run_id=run.id, theorem_id=hole.id, outcome=AttemptOutcome.VACUOUS, seconds=1.0, nodes=2,
        backend="file", proof="by rfl",
    )  # fmt: skip
    assert store.attempts(run_id=run.id) == [vacuous] and vacuous.outcome is AttemptOutcome.VACUOUS
    assert vacuous.proof == "by rfl" and [t.id for t in store.theorems(status=TheoremStatus.SORRY)] == [hole.id]


def test_an_unfinished_run_with_the_same_config_is_resumed(store: Store) -> None:
    config = {"command": "run", "repos": "/r.txt", "backend": "source"}
    killed = store.start_run(config)  # never finished: the process died
    failed = store.start_run({**config, "backend": "dojo"})
    store.finish_run(failed.id, status=RunStatus.FAILED)
    done = store.start_run({"command": "other"})
    store.finish_run(done.id)

    resumed = store.resume_run(config)
    assert resumed is not None and resumed.id == killed.id and resumed.status is RunStatus.RUNNING
    again = store.resume_run({**config, "backend": "dojo"})
    assert again is not None and again.id == failed.id and again.ended_at is None
    assert store.resume_run({"command": "other"}) is None  # finished runs stay finished
    assert store.resume_run({"command": "new"}) is None
    assert len(store.runs()) == 3


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"run_id": 999}, RecordNotFoundError, id="unknown-run"),
        pytest.param({"theorem_id": 999}, RecordNotFoundError, id="unknown-theorem"),
        pytest.param({"outcome": AttemptOutcome.PROVED, "proof": None}, ValueError, id="proved-without-proof"),
    ],
)
def test_record_attempt_rejects_bad_references(store: Store, kwargs: dict[str, object], error: type[Exception]) -> None:
    store.add_trace(rich_trace())
    run = store.start_run({})
    theorem_id = store.theorems()[0].id
    args: dict[str, object] = {
        "run_id": run.id, "theorem_id": theorem_id, "outcome": AttemptOutcome.FAILED,
        "seconds": 1.0, "nodes": 1, "backend": "repl", **kwargs,
    }  # fmt: skip
    with pytest.raises(error):
        store.record_attempt(**args)  # type: ignore[arg-type]
    assert store.attempts() == []


def test_timestamps_are_aware_utc(store: Store) -> None:
    store.add_trace(rich_trace())
    [version] = store.versions()
    assert version.ingested_at.tzinfo is UTC


@pytest.mark.parametrize(
    ("make_url_for", "fragment"),
    [
        pytest.param(
            lambda tmp: f"sqlite:///{tmp / 'a-file'}/db.sqlite",
            "a-file/db.sqlite",
            id="parent-is-a-file",
        ),
        pytest.param(
            lambda tmp: f"sqlite:///{tmp / 'missing' / 'dir'}/db.sqlite",
            "missing/dir",
            id="missing-dir",
        ),
        pytest.param(lambda tmp: f"sqlite:///{tmp / 'a-file'}", "file is not a database", id="not-a-database"),
        pytest.param(lambda tmp: "not a url", "not a usable database URL", id="not-a-url"),
        pytest.param(lambda tmp: "nosuchdb://x/y", "not a usable database URL", id="unknown-dialect"),
    ],
)
def test_an_unusable_database_is_one_clear_error(tmp_path: Path, make_url_for, fragment: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a-file").write_text("not a directory")
    with pytest.raises(DatabaseUnavailableError, match=fragment) as info:
        Store.open(make_url_for(tmp_path))
    assert "\n" not in str(info.value)


def test_an_unknown_driver_is_named_without_the_password() -> None:
    with pytest.raises(DatabaseUnavailableError, match="not a usable database URL") as info:
        Store.open("postgresql+nosuchdriver://me:top-secret@db.example.org/x")
    assert "top-secret" not in str(info.value) and "me:***@db.example.org" in str(info.value)


@pytest.mark.postgres
def test_postgres_errors_name_the_url_without_the_password() -> None:
    url = make_url(os.environ[POSTGRES_URL_ENV]).set(password="wrong-secret", port=1)
    with pytest.raises(DatabaseUnavailableError) as info:
        Store.open(url.render_as_string(hide_password=False))
    message = str(info.value)
    assert "wrong-secret" not in message and "***" in message and ":1/" in message


# ---- the schema version ----------------------------------------------------------------------


def _tables(url: str) -> list[str]:
    engine = create_engine(url)
    try:
        return sorted(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _execute(url: str, *statements: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
    finally:
        engine.dispose()


def test_a_fresh_database_gets_the_tables_and_the_schema_version(db_url: str) -> None:
    for _ in range(2):  # made, then opened as it is
        with Store.open(db_url) as store:
            assert store.stats().repositories == 0
    assert _tables(db_url) == sorted(Base.metadata.tables)
    engine = create_engine(db_url)
    with engine.connect() as conn:
        ((id_, version, identity),) = conn.execute(select(SchemaRow.id, SchemaRow.version, SchemaRow.identity)).all()
    engine.dispose()
    assert (id_, version) == (1, SCHEMA_VERSION) and re.fullmatch(r"[0-9a-f]{32}", identity)
    with Store.open(db_url) as store:
        assert store.identity == identity  # made once, read back ever after


def test_each_database_has_an_identity_of_its_own(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'a.db'}") as a, Store.open(f"sqlite:///{tmp_path / 'b.db'}") as b:
        assert a.identity != b.identity
        first = a.identity
    (tmp_path / "moved").mkdir()
    (tmp_path / "a.db").rename(tmp_path / "moved" / "a.db")
    with Store.open(f"sqlite:///{tmp_path / 'moved' / '..' / 'moved' / 'a.db'}") as moved:
        assert moved.identity == first  # moved, and reached by another spelling


def test_a_database_opened_to_read_is_read_and_never_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    with Store.open(url) as store:
        store.add_trace(rich_trace())
        identity, before = store.identity, counts(store)
    with Store.open_to_read(url) as reader:
        assert reader.identity == identity and counts(reader) == before
        with pytest.raises(DatabaseUnavailableError, match=re.escape(f"{url} (storing") + ".*readonly database"):
            reader.add_trace(dataclasses.replace(rich_trace(), commit="f" * 40))
    with Store.open(url) as store:
        assert counts(store) == before


def test_a_database_of_schema_version_1_is_given_its_identity_and_kept(db_url: str) -> None:
    """Version 1 had the same tables but no identity: opening it adds the column, an
    identity and the version, and what it held stays."""
    with Store.open(db_url) as store:
        store.add_trace(rich_trace())
    _execute(db_url, "ALTER TABLE leanagent_schema DROP COLUMN identity", "UPDATE leanagent_schema SET version = 1")
    with Store.open(db_url) as store:
        assert re.fullmatch(r"[0-9a-f]{32}", store.identity) and store.stats().repositories == 1
        upgraded = store.identity
    engine = create_engine(db_url)
    with engine.connect() as conn:
        assert conn.execute(select(SchemaRow.version)).all() == [(SCHEMA_VERSION,)]
    engine.dispose()
    with Store.open(db_url) as store:
        assert store.identity == upgraded


def test_a_database_of_schema_version_2_gets_the_tables_of_tried_tactics_and_keeps_the_rest(
    db_url: str,
) -> None:
    with Store.open(db_url) as store:
        store.add_trace(rich_trace())
        identity = store.identity
    _execute(db_url, "DROP TABLE tried_tactics", "DROP TABLE attempt_goals", "UPDATE leanagent_schema SET version = 2")
    with Store.open(db_url) as store:
        assert store.identity == identity and store.stats().repositories == 1
        assert store.tried_tactics() == []
    assert _tables(db_url) == sorted(Base.metadata.tables)
    engine = create_engine(db_url)
    with engine.connect() as conn:
        assert conn.execute(select(SchemaRow.version)).all() == [(SCHEMA_VERSION,)]
    engine.dispose()


def test_a_database_of_schema_version_3_gets_the_table_of_write_backs_and_keeps_the_rest(
    db_url: str,  # noqa: F811
) -> None:
    with Store.open(db_url) as store:
        store.add_trace(rich_trace())
        run = store.start_run({"command": "run"})
        identity = store.identity
    _execute(db_url, "DROP TABLE write_backs", "UPDATE leanagent_schema SET version = 3")
    with Store.open_to_read(db_url) as reader:
        assert reader.write_backs() == []  # read as it is, not upgraded
    with Store.open(db_url) as store:
        assert store.identity == identity and store.stats().repositories == 1
        made = store.add_write_back(run.id, "https://x.org/r.git", {"patch": "p"}, failed="pull request: 401")
        done = store.update_write_back(made.id, pull_request={"url": "u", "number": 1}, failed=None)
        assert (done.failed, done.failures, done.pull_request) == (
            None,
            ("pull request: 401",),
            {"url": "u", "number": 1},
        )
        store.close_pull_request(done.id, "superseded by #2")
        assert [w.closed for w in store.write_backs(location="https://x.org/r.git")] == ["superseded by #2"]
    assert _tables(db_url) == sorted(Base.metadata.tables)


@pytest.mark.parametrize(
    ("statements", "message"),
    [
        pytest.param(
            ["CREATE TABLE repositories (id INTEGER PRIMARY KEY, url VARCHAR(200))"],
            "was not made by this leanagent (it has tables but no schema version",
            id="older-leanagent",
        ),
        pytest.param(
            ["CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER)"],
            "was not made by this leanagent (it has tables but no schema version",
            id="another-program",
        ),
        pytest.param(
            ["CREATE TABLE leanagent_schema (id INTEGER PRIMARY KEY, version INTEGER)"],
            f"(schema version none; this one uses version {SCHEMA_VERSION})",
            id="version-table-without-its-row",
        ),
    ],
)
def test_a_database_not_made_by_this_leanagent_is_refused_untouched(
    db_url: str,
    statements: list[str],
    message: str,
) -> None:
    _execute(db_url, *statements)
    before = _tables(db_url)
    with pytest.raises(DatabaseUnavailableError, match=re.escape(message)) as info:
        Store.open(db_url)
    assert "\n" not in str(info.value) and "use another database or data directory" in str(info.value)
    assert _tables(db_url) == before  # no table of ours was added


def test_a_database_of_another_schema_version_is_refused(db_url: str) -> None:
    Store.open(db_url).close()
    _execute(db_url, "UPDATE leanagent_schema SET version = 999")
    with pytest.raises(
        DatabaseUnavailableError,
        match=re.escape(f"made by a newer leanagent (schema version 999; this one uses version {SCHEMA_VERSION})"),
    ):
        Store.open(db_url)


def test_making_the_schema_is_one_transaction(db_url: str) -> None:
    """A failure after the tables were created leaves none behind: the next open finds an
    empty database and makes it, not one with tables and no version."""

    def fail_on_the_version_row(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        if statement.startswith("INSERT INTO leanagent_schema"):
            raise KeyboardInterrupt

    event.listen(Engine, "before_cursor_execute", fail_on_the_version_row)
    try:
        with pytest.raises(KeyboardInterrupt):
            Store.open(db_url)
    finally:
        event.remove(Engine, "before_cursor_execute", fail_on_the_version_row)
    assert _tables(db_url) == []
    Store.open(db_url).close()
    assert _tables(db_url) == sorted(Base.metadata.tables)


def _open_at_once(url: str, monkeypatch: pytest.MonkeyPatch, seen: int | None) -> set[str]:
    """Four stores opening ``url`` at once, each waiting for the others right after its
    first look at the schema (which must find version ``seen``; None: empty); the
    identities they read."""
    openers = 4
    barrier = threading.Barrier(openers, timeout=30)
    looked = threading.local()
    look = store_module._schema_version

    def look_then_wait(conn, url):  # type: ignore[no-untyped-def]
        version = look(conn, url)
        if not getattr(looked, "once", False):
            looked.once = True
            assert version == seen
            barrier.wait()
        return version

    monkeypatch.setattr(store_module, "_schema_version", look_then_wait)
    errors: list[BaseException] = []
    identities: set[str] = set()

    def open_and_count() -> None:
        try:
            with Store.open(url) as store:
                store.stats()
                identities.add(store.identity)
        except BaseException as error:  # reported below, from the test's thread
            errors.append(error)

    threads = [threading.Thread(target=open_and_count) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return identities


def test_stores_opening_a_fresh_database_at_once_all_succeed(
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every opener first sees an empty database, so all of them go on to make it: one
    does, and the others find it made, with one identity."""
    assert len(_open_at_once(db_url, monkeypatch, None)) == 1
    assert _tables(db_url) == sorted(Base.metadata.tables)


def test_stores_upgrading_a_database_at_once_give_it_one_identity(
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Store.open(db_url).close()
    _execute(db_url, "ALTER TABLE leanagent_schema DROP COLUMN identity", "UPDATE leanagent_schema SET version = 1")
    assert len(_open_at_once(db_url, monkeypatch, 1)) == 1


class _BusyCursor:
    """A cursor whose switch to WAL mode finds the database locked ``busy`` times first, as
    SQLite answers while another opener of a fresh database holds it."""

    def __init__(self, busy: int, error: str = "database is locked") -> None:
        self.busy, self.error, self.switches = busy, error, 0

    def execute(self, sql: str) -> None:
        assert sql == "PRAGMA journal_mode=WAL"
        self.switches += 1
        if self.switches <= self.busy:
            raise sqlite3.OperationalError(self.error)


def test_the_switch_to_wal_mode_waits_out_a_lock_for_a_while_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    cursor = _BusyCursor(busy=3)
    store_module._use_wal(cursor)
    assert cursor.switches == 4
    always = _BusyCursor(busy=10**9)
    monkeypatch.setattr(store_module, "_SQLITE_WAIT", 0.05)
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # not forever
        store_module._use_wal(always)
    assert 1 < always.switches < 10**9
    broken = _BusyCursor(busy=1, error="disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        store_module._use_wal(broken)
    assert broken.switches == 1


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        pytest.param(
            "ALTER TABLE repositories RENAME COLUMN location TO place",
            "its table 'repositories' lacks the column(s) location; it was changed by hand",
            id="renamed-column",
        ),
        pytest.param("DROP TABLE parse_problems", "but no table 'parse_problems'", id="dropped-table"),
    ],
)
def test_a_database_changed_by_hand_is_refused(db_url: str, statement: str, message: str) -> None:
    Store.open(db_url).close()
    _execute(db_url, statement)
    with pytest.raises(DatabaseUnavailableError, match=re.escape(message)):
        Store.open(db_url)
