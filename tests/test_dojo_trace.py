"""LeanDojo tracing: converting a TracedRepo into records, the environment lean_dojo needs,
and failing clearly without Lean. The fakes below carry exactly the attribute and method
names of lean_dojo 4.20.0 that the conversion uses; ``test_fakes_match_the_real_api``
checks those names against the installed lean_dojo source without importing it."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import os
import shutil
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lean_env.benchmark.read import read_benchmark
from lean_env.benchmark.write import write_benchmark
from lean_env.errors import LeanNotFoundError
from lean_env.records import (
    DeclKind,
    IngestBackend,
    LeanFile,
    Position,
    RepoSpec,
    TheoremStatus,
    TracedTactic,
)
from lean_env.trace import dojo as dojo_trace
from lean_env.trace.dojo import (
    DojoInputError,
    DojoTraceError,
    configure_dojo_env,
    dojo_environment,
    records_from_traced_repo,
    trace_repo,
)

LEAN4_URL = "https://github.com/leanprover/lean4"
URL = "https://github.com/example/demo-arith"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
INIT_PATH = Path(".lake/packages/lean4/src/lean/Init.lean")


# ---------------------------------------------------------------------------- fakes


@dataclass(frozen=True)
class FakePos:  # lean_dojo.Pos: 1-based line_nb/column_nb, iterable as [line, column]
    line_nb: int
    column_nb: int

    def __iter__(self):
        yield self.line_nb
        yield self.column_nb


class FakeLeanFile:  # lean_dojo.LeanFile: the source, sliced by Pos (end exclusive)
    def __init__(self, text: str) -> None:
        self.code = text.split("\n")

    def __getitem__(self, key: slice) -> str:
        (l1, c1), (l2, c2) = key.start, key.stop
        if l1 == l2:
            return self.code[l1 - 1][c1 - 1 : c2 - 1]
        middle = self.code[l1 : l2 - 1]
        return "\n".join([self.code[l1 - 1][c1 - 1 :], *middle, self.code[l2 - 1][: c2 - 1]])

    def find(self, needle: str, occurrence: int = 0) -> FakePos:
        """Test helper: the position of ``needle`` (its ``occurrence``-th match)."""
        hits = [(i + 1, line.index(needle) + 1) for i, line in enumerate(self.code) if needle in line]
        return FakePos(*hits[occurrence])

    def after(self, needle: str) -> FakePos:
        pos = self.find(needle)
        return FakePos(pos.line_nb, pos.column_nb + len(needle))


@dataclass(frozen=True)
class FakeLeanGitRepo:  # lean_dojo.LeanGitRepo
    url: str
    commit: str
    lean_version: str = "v4.20.0"

    @property
    def is_lean4(self) -> bool:
        return self.url == LEAN4_URL


@dataclass(frozen=True)
class FakeTheorem:  # lean_dojo.Theorem
    repo: FakeLeanGitRepo
    file_path: Path
    full_name: str


@dataclass
class FakeTracedTactic:  # lean_dojo.TracedTactic
    tactic: str
    state_before: str
    state_after: str
    annotated: tuple[str, list[dict[str, Any]]] = ("", [])

    def get_annotated_tactic(self) -> tuple[str, list[dict[str, Any]]]:
        return self.annotated or (self.tactic, [])


@dataclass
class FakeTracedTheorem:  # lean_dojo.TracedTheorem
    theorem: FakeTheorem
    start: FakePos
    end: FakePos
    proof_start: FakePos | None
    statement: str
    premise_names: list[str] = field(default_factory=list)
    tactics: list[FakeTracedTactic] = field(default_factory=list)

    @property
    def repo(self) -> FakeLeanGitRepo:
        return self.theorem.repo

    def locate_proof(self) -> tuple[FakePos, FakePos]:
        if self.proof_start is None:  # what lean_dojo does on an AST it cannot read
            raise AssertionError("no proof node")
        return self.proof_start, self.end

    def get_theorem_statement(self) -> str:
        return self.statement

    def get_premise_full_names(self) -> list[str]:
        return self.premise_names

    def get_traced_tactics(self) -> list[FakeTracedTactic]:
        return self.tactics


@dataclass
class FakeTracedFile:  # lean_dojo.TracedFile
    path: Path
    lean_file: FakeLeanFile
    premises: list[dict[str, Any]] = field(default_factory=list)
    dependencies: list[tuple[str, Path]] = field(default_factory=list)
    theorems: list[FakeTracedTheorem] = field(default_factory=list)

    def get_premise_definitions(self) -> list[dict[str, Any]]:
        return self.premises

    def get_direct_dependencies(self, repo: FakeLeanGitRepo) -> list[tuple[str, Path]]:
        return self.dependencies

    def get_traced_theorems(self) -> list[FakeTracedTheorem]:
        return self.theorems


@dataclass
class FakeTracedRepo:  # lean_dojo.TracedRepo
    repo: FakeLeanGitRepo
    traced_files: list[FakeTracedFile]


COMM_SOURCE = """import DemoArith.Basic

namespace DemoArith

theorem add_comm' (a b : Nat) : a + b = b + a := by
  rw [Nat.add_comm]

theorem todo (n : Nat) : n = n := by
  · sorry -- a sorry in a comment does not count

theorem term_proof : 1 = 1 := rfl

theorem broken : True := trivial

end DemoArith"""


def _premise(name: str, start: FakePos, end: FakePos, code: str, kind: str = "commanddeclaration") -> dict[str, Any]:
    return {"full_name": name, "code": code, "start": list(start), "end": list(end), "kind": kind}


def fake_traced_repo() -> FakeTracedRepo:
    """A traced demo repository: its own file, Lean core and one Lake dependency."""
    repo = FakeLeanGitRepo(URL, COMMIT)
    lean4 = FakeLeanGitRepo(LEAN4_URL, "f" * 40)
    batteries = FakeLeanGitRepo("https://github.com/leanprover-community/batteries", "b" * 40)
    init_file = FakeLeanFile("theorem Nat.add_comm (n m : Nat) : n + m = m + n := by\n  omega")
    init = FakeTracedFile(
        INIT_PATH,
        init_file,
        premises=[
            _premise(
                "Nat.add_comm",
                FakePos(1, 1),
                FakePos(2, 8),
                "theorem Nat.add_comm (n m : Nat) : n + m = m + n",
            )
        ],
        theorems=[
            FakeTracedTheorem(
                FakeTheorem(lean4, Path("src/lean/Init.lean"), "Nat.add_comm"),
                FakePos(1, 1),
                FakePos(2, 8),
                init_file.find("by"),
                "theorem Nat.add_comm",
            )
        ],
    )
    dep_file = FakeLeanFile("theorem Batteries.triv : True := trivial")
    dep = FakeTracedFile(
        Path(".lake/packages/batteries/Batteries/Triv.lean"),
        dep_file,
        premises=[_premise("Batteries.triv", FakePos(1, 1), FakePos(1, 41), "theorem Batteries.triv : True")],
        dependencies=[("Init", INIT_PATH)],
        theorems=[
            FakeTracedTheorem(
                FakeTheorem(batteries, Path("Batteries/Triv.lean"), "Batteries.triv"),
                FakePos(1, 1),
                FakePos(1, 41),
                dep_file.find("trivial"),
                "theorem Batteries.triv : True :=",
            )
        ],
    )
    src = FakeLeanFile(COMM_SOURCE)
    path = Path("DemoArith/Comm.lean")
    add_comm = FakeTracedTheorem(
        FakeTheorem(repo, path, "DemoArith.add_comm'"),
        src.find("theorem add_comm'"),
        src.after("rw [Nat.add_comm]"),
        src.find("by"),
        "theorem add_comm' (a b : Nat) : a + b = b + a :=",
        premise_names=["Nat", "Nat", "Nat.add_comm"],
        tactics=[
            FakeTracedTactic(
                "rw [Nat.add_comm]",
                "a b : Nat\n⊢ a + b = b + a",
                "no goals",
                (
                    "rw [<a>Nat.add_comm</a>]",
                    [
                        {
                            "full_name": "Nat.add_comm",
                            "def_path": str(INIT_PATH),
                            "def_pos": [1, 9],
                            "def_end_pos": [1, 21],
                        }
                    ],
                ),
            ),
            FakeTracedTactic("skip", "no goals", "no goals"),  # LeanDojo's export drops these
        ],
    )
    todo = FakeTracedTheorem(
        FakeTheorem(repo, path, "DemoArith.todo"),
        src.find("theorem todo"),
        src.after("-- a sorry in a comment does not count"),
        src.find("by", 1),
        "theorem todo (n : Nat) : n = n :=",
        tactics=[
            FakeTracedTactic("· sorry", "n : Nat\n⊢ n = n", "no goals"),  # dropped: `·`
            FakeTracedTactic("sorry", "n : Nat\n⊢ n = n", "no goals"),
        ],
    )
    term = FakeTracedTheorem(
        FakeTheorem(repo, path, "DemoArith.term_proof"),
        src.find("theorem term_proof"),
        src.after("rfl"),
        src.find("rfl"),
        "theorem term_proof : 1 = 1 :=",
    )
    broken = FakeTracedTheorem(
        FakeTheorem(repo, path, "DemoArith.broken"),
        src.find("theorem broken"),
        src.after("trivial"),
        None,
        "",
    )
    comm = FakeTracedFile(
        path,
        src,
        premises=[
            _premise(
                "DemoArith.add_comm'",
                add_comm.start,
                add_comm.end,
                "theorem add_comm' (a b : Nat) : a + b = b + a",
            ),
            _premise("DemoArith.todo", todo.start, todo.end, "theorem todo (n : Nat) : n = n"),
            _premise("DemoArith.todo", todo.start, todo.end, "theorem todo (n : Nat) : n = n"),
        ],
        dependencies=[("Init", INIT_PATH), ("DemoArith.Basic", Path("DemoArith/Basic.lean"))],
        theorems=[add_comm, todo, term, broken],
    )
    return FakeTracedRepo(repo, [comm, dep, init])


# ---------------------------------------------------------------------------- conversion


def test_conversion_of_a_traced_repo() -> None:
    trace = records_from_traced_repo(fake_traced_repo(), spec=RepoSpec(URL), commit=COMMIT)
    assert trace.backend is IngestBackend.DOJO and trace.lean_version == "v4.20.0"
    assert trace.files == (
        LeanFile(".lake/packages/batteries/Batteries/Triv.lean", ("Init",)),
        LeanFile(".lake/packages/lean4/src/lean/Init.lean", ()),
        LeanFile("DemoArith/Comm.lean", ("DemoArith.Basic", "Init")),
    )
    assert [(p.full_name, p.path, p.kind) for p in trace.premises] == [
        ("Batteries.triv", ".lake/packages/batteries/Batteries/Triv.lean", DeclKind.THEOREM),
        ("Nat.add_comm", ".lake/packages/lean4/src/lean/Init.lean", DeclKind.THEOREM),
        ("DemoArith.add_comm'", "DemoArith/Comm.lean", DeclKind.THEOREM),
        ("DemoArith.todo", "DemoArith/Comm.lean", DeclKind.THEOREM),  # once, not twice
    ]
    thms = {t.full_name: t for t in trace.theorems}
    assert list(thms) == ["DemoArith.add_comm'", "DemoArith.todo", "DemoArith.term_proof"]

    add_comm = thms["DemoArith.add_comm'"]
    assert (add_comm.start, add_comm.end) == (Position(5, 1), Position(6, 20))
    assert add_comm.proof == "by\n  rw [Nat.add_comm]" and add_comm.proof_start == Position(5, 50)
    assert add_comm.statement == "theorem add_comm' (a b : Nat) : a + b = b + a"
    assert add_comm.status is TheoremStatus.PROVEN and add_comm.num_steps == 1
    assert add_comm.tactics == (
        TracedTactic("rw [Nat.add_comm]", "a b : Nat\n⊢ a + b = b + a", "no goals", ("Nat.add_comm",)),
    )
    assert add_comm.premises == ("Nat", "Nat.add_comm")

    todo = thms["DemoArith.todo"]
    assert todo.status is TheoremStatus.SORRY
    assert todo.sorries == (Position(9, 5),)
    assert [t.tactic for t in todo.tactics] == ["sorry"]

    term = thms["DemoArith.term_proof"]
    assert term.proof == "rfl" and term.tactics == () and term.num_steps == 1

    [problem] = trace.problems
    assert problem.path == "DemoArith/Comm.lean" and problem.line == 13 and "DemoArith.broken" in problem.reason


def test_dependency_theorems_are_opt_in_and_lean_core_never() -> None:
    trace = records_from_traced_repo(
        fake_traced_repo(), spec=RepoSpec(URL), commit=COMMIT, include_dependency_theorems=True
    )
    names = {t.full_name for t in trace.theorems}
    assert "Batteries.triv" in names and "Nat.add_comm" not in names


def test_traced_records_round_trip_through_the_benchmark_format(tmp_path: Path) -> None:
    trace = records_from_traced_repo(fake_traced_repo(), spec=RepoSpec(URL), commit=COMMIT)
    write_benchmark([trace], tmp_path, seed=0)
    assert read_benchmark(tmp_path) == [dataclasses.replace(trace, backend=IngestBackend.BENCHMARK)]


# ---------------------------------------------------------------------------- the real API


# What the conversion and trace_repo use, per lean_dojo 4.20.0 class.
USED_API = {
    "TracedRepo": {"repo", "traced_files"},
    "TracedFile": {
        "path",
        "lean_file",
        "get_premise_definitions",
        "get_direct_dependencies",
        "get_traced_theorems",
    },
    "TracedTheorem": {
        "theorem",
        "repo",
        "start",
        "end",
        "locate_proof",
        "get_theorem_statement",
        "get_premise_full_names",
        "get_traced_tactics",
    },
    "TracedTactic": {"tactic", "state_before", "state_after", "get_annotated_tactic"},
    "LeanGitRepo": {"commit", "lean_version", "is_lean4", "from_path"},
    "Theorem": {"full_name"},
    "Pos": {"line_nb", "column_nb"},
    "LeanFile": {"__getitem__"},
}
FAKES = {
    "TracedRepo": lambda: fake_traced_repo(),
    "TracedFile": lambda: fake_traced_repo().traced_files[0],
    "TracedTheorem": lambda: fake_traced_repo().traced_files[0].theorems[0],
    "TracedTactic": lambda: fake_traced_repo().traced_files[0].theorems[0].tactics[0],
    "Theorem": lambda: fake_traced_repo().traced_files[0].theorems[0].theorem,
    "Pos": lambda: FakePos(1, 1),
    "LeanFile": lambda: FakeLeanFile(""),
}


def _class_members(source: str) -> dict[str, set[str]]:
    members: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            names = members.setdefault(node.name, set())
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
    return members


@pytest.mark.dojo
def test_fakes_match_the_real_api() -> None:
    """Read (not import: importing configures lean_dojo for the whole process) the installed
    lean_dojo and check every name we use exists there, and on our fakes."""
    spec = importlib.util.find_spec("lean_dojo")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    members: dict[str, set[str]] = {}
    for module in ("data_extraction/traced_data.py", "data_extraction/lean.py"):
        members.update(_class_members((root / module).read_text(encoding="utf-8")))
    for cls, names in USED_API.items():
        assert names <= members[cls], f"lean_dojo.{cls} lacks {names - members[cls]}"
        if cls in FAKES:
            fake = FAKES[cls]()
            assert all(hasattr(fake, n) for n in names), f"the {cls} fake lacks some of {names}"
    exported = (root / "__init__.py").read_text(encoding="utf-8")
    assert "trace," in exported and "LeanGitRepo" in exported
    constants = (root / "constants.py").read_text(encoding="utf-8")
    for variable in ("CACHE_DIR", "DISABLE_REMOTE_CACHE", "TACTIC_MEMORY_LIMIT"):
        assert f'"{variable}"' in constants, variable


# ---------------------------------------------------------------------------- environment


def test_environment_is_offline_and_cached_under_our_directory(tmp_path: Path) -> None:
    env = dojo_environment(tmp_path / "dojo", environ={})
    assert env["DISABLE_REMOTE_CACHE"] == "1"
    assert env["CACHE_DIR"] == str((tmp_path / "dojo").resolve())
    assert env["TACTIC_MEMORY_LIMIT"][:-1].isdigit() and env["TACTIC_MEMORY_LIMIT"].endswith("g")
    assert int(env["TACTIC_MEMORY_LIMIT"][:-1]) >= 1


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param("3g", "3g", id="user-value-kept"),
        pytest.param("", None, id="empty-means-derived"),
    ],
)
def test_memory_limit(tmp_path: Path, given: str, expected: str | None) -> None:
    env = dojo_environment(tmp_path, environ={"TACTIC_MEMORY_LIMIT": given})
    assert env["TACTIC_MEMORY_LIMIT"] == (expected or dojo_trace.default_memory_limit())


def test_bad_memory_limit_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(DojoInputError, match="TACTIC_MEMORY_LIMIT='512m'"):
        dojo_environment(tmp_path, environ={"TACTIC_MEMORY_LIMIT": "512m"})


def test_configure_refuses_a_lean_dojo_imported_with_other_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env: dict[str, str] = {}
    stale = types.SimpleNamespace(CACHE_DIR=Path.home() / ".cache/lean_dojo", DISABLE_REMOTE_CACHE=False)
    monkeypatch.setitem(sys.modules, "lean_dojo.constants", stale)
    with pytest.raises(DojoTraceError, match="imported before its environment was set"):
        configure_dojo_env(tmp_path, environ=env)
    assert env["DISABLE_REMOTE_CACHE"] == "1"
    monkeypatch.setitem(
        sys.modules,
        "lean_dojo.constants",
        types.SimpleNamespace(CACHE_DIR=tmp_path.resolve(), DISABLE_REMOTE_CACHE=True),
    )
    configure_dojo_env(tmp_path, environ=env)


# ---------------------------------------------------------------------------- trace_repo


@pytest.fixture
def isolated_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """trace_repo sets lean_dojo's variables in os.environ; keep them out of other tests."""
    env = dict(os.environ)
    for name in ("CACHE_DIR", "DISABLE_REMOTE_CACHE", "TACTIC_MEMORY_LIMIT"):
        env.pop(name, None)
    monkeypatch.setattr(os, "environ", env)
    return env


def test_missing_lean_fails_before_lean_dojo_is_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_env: dict[str, str]
) -> None:
    monkeypatch.setattr(dojo_trace, "find_tool", lambda name: None)
    with pytest.raises(LeanNotFoundError) as info:
        trace_repo(tmp_path, spec=RepoSpec(str(tmp_path)), commit=COMMIT, cache_dir=tmp_path / "cache")
    assert LeanNotFoundError.INSTALL_HINT in str(info.value) and "lean is not on PATH" in str(info.value)
    assert "CACHE_DIR" not in isolated_env


def _fake_lean_dojo(traced: FakeTracedRepo, seen_env: dict[str, str], head: str) -> types.ModuleType:
    module = types.ModuleType("lean_dojo")
    module.__version__ = "4.20.0"

    class LeanGitRepo(FakeLeanGitRepo):
        @classmethod
        def from_path(cls, path: Path) -> LeanGitRepo:
            return cls(str(path), head)

    def trace(repo: FakeLeanGitRepo) -> FakeTracedRepo:
        seen_env.update(os.environ)  # what lean_dojo's constants would have read
        return traced

    module.LeanGitRepo = LeanGitRepo
    module.trace = trace
    return module


@pytest.fixture
def fake_toolchain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(dojo_trace, "find_tool", lambda name: tmp_path / "elan" / "bin" / name)


def test_trace_repo_configures_then_traces(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    isolated_env: dict[str, str],
    fake_toolchain: None,
) -> None:
    checkout = tmp_path / "repo"
    (checkout / ".git").mkdir(parents=True)
    seen: dict[str, str] = {}
    monkeypatch.setitem(sys.modules, "lean_dojo", _fake_lean_dojo(fake_traced_repo(), seen, COMMIT))
    monkeypatch.delitem(sys.modules, "lean_dojo.constants", raising=False)
    trace = trace_repo(checkout, spec=RepoSpec(URL), commit=COMMIT, cache_dir=tmp_path / "cache")
    assert seen["DISABLE_REMOTE_CACHE"] == "1" and seen["CACHE_DIR"] == str((tmp_path / "cache").resolve())
    assert str(tmp_path / "elan" / "bin") in seen["PATH"].split(os.pathsep)
    assert trace.spec == RepoSpec(URL) and trace.commit == COMMIT and len(trace.theorems) == 3


@pytest.mark.parametrize(
    ("make_git", "spec", "message"),
    [
        pytest.param(True, RepoSpec(URL), "is checked out at " + "9" * 40, id="wrong-commit"),
        pytest.param(False, None, "is not a git checkout", id="local-not-git"),
    ],
)
def test_trace_repo_input_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    isolated_env: dict[str, str],
    fake_toolchain: None,
    make_git: bool,
    spec: RepoSpec | None,
    message: str,
) -> None:
    checkout = tmp_path / "repo"
    checkout.mkdir()
    if make_git:
        (checkout / ".git").mkdir()
    monkeypatch.setitem(sys.modules, "lean_dojo", _fake_lean_dojo(fake_traced_repo(), {}, "9" * 40))
    monkeypatch.delitem(sys.modules, "lean_dojo.constants", raising=False)
    with pytest.raises(DojoInputError, match=message):
        trace_repo(checkout, spec=spec or RepoSpec(str(checkout)), commit=COMMIT, cache_dir=tmp_path / "c")


def test_trace_repo_without_lean_dojo_says_how_to_install_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    isolated_env: dict[str, str],
    fake_toolchain: None,
) -> None:
    monkeypatch.setitem(sys.modules, "lean_dojo", None)  # makes `import lean_dojo` fail
    monkeypatch.delitem(sys.modules, "lean_dojo.constants", raising=False)
    with pytest.raises(DojoTraceError, match=r"pip install 'leanagent\[dojo\]'"):
        trace_repo(tmp_path, spec=RepoSpec(URL), commit=COMMIT, cache_dir=tmp_path / "c")


# ---------------------------------------------------------------------------- real Lean


@pytest.mark.lean
@pytest.mark.dojo
def test_trace_demo_arith_with_real_lean(tmp_path: Path, examples_dir: Path) -> None:
    """Traces examples/demo-arith for real (minutes: lake build + LeanDojo's ExtractData)."""
    source = examples_dir / "demo-arith"
    if not source.is_dir():
        pytest.skip(f"{source} is absent")
    checkout = tmp_path / "demo-arith"
    shutil.copytree(source, checkout, ignore=shutil.ignore_patterns(".lake", "build"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "demo"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    trace = trace_repo(checkout, spec=RepoSpec(str(checkout)), commit=commit, cache_dir=tmp_path / "cache")
    assert trace.backend is IngestBackend.DOJO and trace.commit == commit
    own = [t for t in trace.theorems if not t.path.startswith(".lake/")]
    assert own, "demo-arith has theorems"
    assert any(t.tactics for t in own) and all("⊢" in s.state_before for t in own for s in t.tactics)
    assert {t.path for t in own} <= {f.path for f in trace.files}
    assert trace.premises
