"""The data commands end to end: ingest, db stats, curriculum, export, run; and every bad
input a user can give ends in exit code 2 and one line on stderr."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from projects import lean_project
from sqlalchemy import create_engine, text

from agent.cli.main import main

LOGIC = """\
theorem and_swap (p q : Prop) (h : p ∧ q) : q ∧ p := by
  obtain ⟨hp, hq⟩ := h
  exact ⟨hq, hp⟩

theorem imp_self' (p : Prop) : p → p := fun h => h

theorem or_swap (p q : Prop) : p ∨ q → q ∨ p := by
  intro h
  cases h with
  | inl hp => exact Or.inr hp
  | inr hq => exact Or.inl hq

theorem todo (p : Prop) : p → p := by
  sorry
"""
ARITH = """\
theorem two_eq : 1 + 1 = 2 := rfl

theorem zero_add' (n : Nat) : 0 + n = n := by
  simp

theorem add_zero' (n : Nat) : n + 0 = n := rfl
"""


def cli(tmp_path: Path, *args: str) -> int:
    return main(["--data-dir", str(tmp_path / "data"), *args])


@pytest.fixture
def repos_file(tmp_path: Path) -> Path:
    lean_project(tmp_path / "projects" / "logic", source=LOGIC)
    lean_project(tmp_path / "projects" / "arith", source=ARITH)
    repos = tmp_path / "projects" / "repos.txt"
    repos.write_text("# two demo projects\nlogic\narith\n", encoding="utf-8")
    return repos


def json_out(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out)


def test_run_ingests_and_prints_the_curriculum_order(
    tmp_path: Path, repos_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(tmp_path, "run", str(repos_file), "--tracer", "source", "--no-train", "--json") == 0
    payload = json_out(capsys)
    assert isinstance(payload, dict)
    assert [o["status"] for o in payload["ingest"]] == ["added", "added"]
    # S: arith 1, 1, 1; logic 2, 1, 2 (+ a sorry) -> 33rd = 1.0: arith has 3 easy, logic 1.
    order = payload["curriculum"]["order"]
    assert [(Path(r["location"]).name, r["easy"], r["hard_no_proof"]) for r in order] == [
        ("arith", 3, 0),
        ("logic", 1, 1),
    ]

    assert cli(tmp_path, "run", str(repos_file), "--tracer", "source", "--no-train") == 0
    human = capsys.readouterr().out
    assert "0 added, 2 unchanged" in human and "curriculum order" in human

    assert cli(tmp_path, "db", "stats", "--json") == 0
    stats = json_out(capsys)
    assert isinstance(stats, dict)
    assert (stats["repositories"], stats["versions"], stats["runs"]) == (2, 2, 2)
    assert stats["latest_by_status"] == {"proven": 6, "sorry": 1, "proved_by_us": 0}


def test_a_failed_run_is_resumed_under_its_own_id(
    tmp_path: Path, repos_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos_file.write_text("logic\nmissing\n", encoding="utf-8")
    assert cli(tmp_path, "run", str(repos_file), "--tracer", "source", "--no-train") == 2
    assert "does not exist" in capsys.readouterr().err

    repos_file.write_text("logic\narith\n", encoding="utf-8")
    assert cli(tmp_path, "run", str(repos_file), "--tracer", "source", "--no-train", "--json") == 0
    payload = json_out(capsys)
    assert isinstance(payload, dict)
    assert (payload["run"], payload["resumed"]) == (1, True)
    # The repository stored before the failure is not traced again.
    assert [o["status"] for o in payload["ingest"]] == ["unchanged", "added"]

    # A finished run is not resumed: the next one is new.
    assert cli(tmp_path, "run", str(repos_file), "--tracer", "source", "--no-train", "--json") == 0
    payload = json_out(capsys)
    assert isinstance(payload, dict)
    assert (payload["run"], payload["resumed"]) == (2, False)
    assert cli(tmp_path, "db", "stats", "--json") == 0
    stats = json_out(capsys)
    assert isinstance(stats, dict) and stats["runs"] == 2


def test_ingest_export_and_reingest_a_benchmark(
    tmp_path: Path, repos_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(tmp_path, "ingest", "--repos", str(repos_file), "--tracer", "source") == 0
    assert "2 repositories: 2 added" in capsys.readouterr().out
    assert cli(tmp_path, "export", str(tmp_path / "bench"), "--seed", "1", "--json") == 0
    exported = json_out(capsys)
    assert isinstance(exported, dict) and exported["theorems"] == 7
    assert (tmp_path / "bench" / "corpus.jsonl").is_file()

    other = ["--db", f"sqlite:///{tmp_path / 'other.db'}"]
    assert cli(tmp_path, *other, "ingest", "--benchmark", str(tmp_path / "bench"), "--json") == 0
    outcomes = json_out(capsys)
    assert isinstance(outcomes, list)
    assert sorted(
        (Path(o["location"]).name, o["backend"], o["theorems"], o["sorries"], o["carried_proofs"]) for o in outcomes
    ) == [
        ("arith", "benchmark", 3, 0, 0),
        ("logic", "benchmark", 4, 1, 0),
    ]
    assert cli(tmp_path, *other, "curriculum") == 0
    assert "curriculum order" in capsys.readouterr().out


def test_curriculum_and_stats_of_an_empty_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(tmp_path, "curriculum", "--json") == 0
    assert json_out(capsys) == {"thresholds": None, "order": []}
    assert cli(tmp_path, "db", "stats") == 0
    assert "no repositories ingested yet" in capsys.readouterr().out


@contextlib.contextmanager
def _unwritable(directory: Path):  # type: ignore[no-untyped-def]
    """``directory`` made immutable (``chattr +i``): nobody, root included, can create a file
    in it (tests run as root, for whom a mode of 555 changes nothing)."""
    import subprocess

    if subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)


def test_reading_commands_read_a_database_in_a_directory_that_cannot_be_written(
    tmp_path: Path, repos_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(tmp_path, "ingest", "--repos", str(repos_file), "--tracer", "source") == 0
    capsys.readouterr()
    data = tmp_path / "data"
    assert not list(data.glob("leanagent.db-*"))  # closed: no WAL files left beside it
    with _unwritable(data):
        assert cli(tmp_path, "db", "stats", "--json") == 0
        assert json_out(capsys)["repositories"] == 2
        assert cli(tmp_path, "curriculum", "--json") == 0
        assert len(json_out(capsys)["order"]) == 2
        assert cli(tmp_path, "ingest", "--repos", str(repos_file), "--tracer", "source") == 2  # a writer refuses
        assert "leanagent: error: cannot use the database" in capsys.readouterr().err


def _not_lean(tmp: Path) -> list[str]:
    (tmp / "plain").mkdir()
    return ["ingest", str(tmp / "plain")]


def _malformed(tmp: Path) -> list[str]:
    (tmp / "repos.txt").write_text("# ok\nhttps://x/y a b\n")
    return ["run", str(tmp / "repos.txt")]


def _unwritable_db(tmp: Path) -> list[str]:
    lean_project(tmp / "proj")
    (tmp / "file").write_text("x")
    return [
        "--db",
        f"sqlite:///{tmp / 'file'}/db.sqlite",
        "ingest",
        str(tmp / "proj"),
        "--tracer",
        "source",
    ]


def _unwritable_data_dir(tmp: Path) -> list[str]:
    (tmp / "file").write_text("x")
    return ["--data-dir", str(tmp / "file" / "data"), "db", "stats"]


def _empty_repos_file(tmp: Path) -> list[str]:
    (tmp / "repos.txt").write_text("# nothing yet\n\n")
    return ["run", str(tmp / "repos.txt")]


def _not_a_database(tmp: Path) -> list[str]:
    (tmp / "notes.txt").write_text("these are notes, not SQLite")
    return ["--db", f"sqlite:///{tmp / 'notes.txt'}", "db", "stats"]


def _older_database(tmp: Path) -> list[str]:
    """A database of our tables made before the schema version was recorded."""
    url = f"sqlite:///{tmp / 'old.db'}"
    with create_engine(url).begin() as conn:
        conn.execute(text("CREATE TABLE repositories (id INTEGER PRIMARY KEY, location VARCHAR)"))
    return ["--db", url, "db", "stats"]


def _export_onto_a_file(tmp: Path) -> list[str]:
    lean_project(tmp / "proj")
    with contextlib.redirect_stdout(io.StringIO()):  # setup output is not under test
        assert cli(tmp, "ingest", str(tmp / "proj"), "--tracer", "source") == 0
    (tmp / "taken").write_text("x")
    return ["export", str(tmp / "taken")]


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        pytest.param(_not_lean, "is not a Lean project", id="not-a-lean-project"),
        pytest.param(lambda t: ["ingest", str(t / "missing")], "does not exist", id="missing-path"),
        pytest.param(
            _malformed, r"repos.txt:2: expected 'LOCATION \[COMMIT\] \[skip=GLOB \.\.\.\]'", id="malformed-repos-line"
        ),
        pytest.param(
            lambda t: ["run", str(t / "none.txt")],
            "cannot read repos file",
            id="missing-repos-file",
        ),
        pytest.param(
            lambda t: ["ingest", "file:///nonexistent/leanagent/r.git"],
            "cannot clone file:///nonexistent/leanagent/r.git",
            id="unreachable-url",
        ),
        pytest.param(_unwritable_db, "cannot use the database sqlite:///", id="unwritable-db"),
        pytest.param(_unwritable_data_dir, "cannot create the data directory", id="unwritable-data-dir"),
        pytest.param(
            lambda t: ["--db", "nonsense", "db", "stats"],
            "not a usable database URL",
            id="bad-db-url",
        ),
        pytest.param(lambda t: ["ingest"], "exactly one of them", id="nothing-to-ingest"),
        pytest.param(lambda t: ["ingest", "x", "--repos", "y"], "exactly one of them", id="two-sources"),
        pytest.param(lambda t: ["ingest", "--benchmark", str(t)], "has no split files", id="not-a-benchmark"),
        pytest.param(lambda t: ["export", str(t / "out")], "nothing to export", id="export-empty-db"),
        pytest.param(_empty_repos_file, "lists no repositories", id="empty-repos-file"),
        pytest.param(
            lambda t: ["ingest", "https://127.0.0.1:9/o/r.git"],
            "cannot clone https://127.0.0.1:9/o/r.git: fatal: ",
            id="unreachable-https-url",
        ),
        pytest.param(_not_a_database, "file is not a database", id="db-file-not-a-database"),
        pytest.param(_older_database, "was not made by this leanagent", id="db-without-schema-version"),
        pytest.param(_export_onto_a_file, "cannot write a benchmark directory", id="export-to-file"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make_args: Callable[[Path], list[str]],
    message: str,
) -> None:
    assert cli(tmp_path, *make_args(tmp_path)) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("leanagent: error: ")
    assert re.search(message, err), err


def test_the_example_repos_file(tmp_path: Path, examples_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repos = examples_dir / "repos.txt"
    assert cli(tmp_path, "run", str(repos), "--tracer", "source", "--no-train", "--json") == 0
    payload = json_out(capsys)
    assert isinstance(payload, dict)
    order = payload["curriculum"]["order"]
    # demo-lists is one-step rewrites, demo-logic many one- and two-step proofs, demo-arith
    # longer induction proofs.
    assert [Path(r["location"]).name for r in order] == ["demo-lists", "demo-logic", "demo-arith"]
    assert order[0]["easy"] > order[1]["easy"] > order[2]["easy"] > 0
    assert all(r["hard_no_proof"] > 0 for r in order)  # all have `sorry`s to prove
    # Integer S with mostly one-step proofs: both thresholds are 1, so the medium bucket is
    # empty (docs/curriculum.md explains why that is intended).
    bounds = payload["curriculum"]["thresholds"]
    assert bounds["easy_max_steps"] == bounds["medium_max_steps"] == 1.0
    assert [r["medium"] for r in order] == [0, 0, 0]
