"""Source extraction of whole repositories: the bundled examples, imports, Lake dependencies."""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_env.errors import UserInputError
from lean_env.lean.toolchain import core_sources
from lean_env.records import IngestBackend, Position, RepoSpec, RepoTrace, TheoremStatus
from lean_env.trace.source import SourceExtractionError, extract_repo


def _trace(root: Path) -> RepoTrace:
    return extract_repo(root, spec=RepoSpec(str(root)), commit="c0ffee", lean_version="leanprover/lean4:v4.20.0")


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def logic(examples_dir: Path) -> RepoTrace:
    return _trace(examples_dir / "demo-logic")


@pytest.fixture(scope="module")
def arith(examples_dir: Path) -> RepoTrace:
    return _trace(examples_dir / "demo-arith")


# --- the bundled example projects ----------------------------------------------------------


@pytest.mark.parametrize("project", ["demo-logic", "demo-arith", "demo-lists"])
def test_examples_are_lake_projects_pinned_to_lean_4_20(examples_dir: Path, project: str) -> None:
    root = examples_dir / project
    assert (root / "lean-toolchain").read_text().strip() == "leanprover/lean4:v4.20.0"
    assert (root / "lakefile.lean").is_file() or (root / "lakefile.toml").is_file()
    assert "Mathlib" not in "".join(p.read_text() for p in root.rglob("*.lean"))


def test_repos_file_lists_the_examples(examples_dir: Path) -> None:
    from lean_env.repos import parse_repos_file

    specs = parse_repos_file(examples_dir / "repos.txt")
    assert [Path(s.location) for s in specs] == [
        (examples_dir / "demo-logic").resolve(),
        (examples_dir / "demo-arith").resolve(),
        (examples_dir / "demo-lists").resolve(),
    ]
    assert all(s.commit is None for s in specs)


def test_example_trace_shape(logic: RepoTrace, arith: RepoTrace) -> None:
    assert logic.backend is IngestBackend.SOURCE and logic.commit == "c0ffee"
    assert [f.path for f in logic.files] == [
        "DemoLogic.lean",
        "DemoLogic/Answer.lean",
        "DemoLogic/Basic.lean",
        "DemoLogic/Derived.lean",
        "DemoLogic/Quantifiers.lean",
    ]
    assert logic.files[0].imports == (
        "DemoLogic.Basic",
        "DemoLogic.Answer",
        "DemoLogic.Quantifiers",
        "DemoLogic.Derived",
    )
    assert "lakefile.lean" not in [f.path for f in arith.files]
    assert logic.problems == () and arith.problems == ()


@pytest.mark.parametrize(
    ("project", "sorry_names"),
    [
        pytest.param(
            "logic",
            {
                "DemoLogic.and_comm_iff",
                "DemoLogic.or_self_iff'",
                "DemoLogic.Answer.flip_no",
                "DemoLogic.exists_or_of_forall",
            },
            id="logic",
        ),
        pytest.param(
            "arith",
            {
                "DemoArith.double_zero",
                "DemoArith.add_zero'",
                "DemoArith.sumTo_two",
                "DemoArith.tickN_steps",
                "DemoArith.two_mul_sumTo",
                "DemoArith.Expr.comm_comm",
            },
            id="arith",
        ),
    ],
)
def test_example_sorries(request: pytest.FixtureRequest, project: str, sorry_names: set[str]) -> None:
    trace: RepoTrace = request.getfixturevalue(project)
    assert {t.full_name for t in trace.theorems if t.status is TheoremStatus.SORRY} == sorry_names


def test_example_sorry_positions_point_at_sorry(examples_dir: Path, arith: RepoTrace) -> None:
    by_name = {t.full_name: t for t in arith.theorems}
    assert by_name["DemoArith.add_zero'"].sorries == (Position(121, 47),)
    assert by_name["DemoArith.double_zero"].sorries == (Position(119, 3),)
    for thm in arith.theorems:
        lines = (examples_dir / "demo-arith" / thm.path).read_text().splitlines()
        for pos in thm.sorries:
            assert lines[pos.line - 1][pos.column - 1 :].startswith("sorry")


def test_examples_have_different_difficulty_profiles(logic: RepoTrace, arith: RepoTrace) -> None:
    def mean_steps(trace: RepoTrace) -> float:
        proven = [t.num_steps for t in trace.theorems if t.status is TheoremStatus.PROVEN]
        return sum(proven) / len(proven)

    assert mean_steps(logic) < 1.5
    assert mean_steps(arith) > 2.0
    assert max(t.num_steps for t in arith.theorems) >= 5


@pytest.mark.parametrize(
    ("project", "theorem", "premises"),
    [
        pytest.param("logic", "DemoLogic.forall_swap_and", ("DemoLogic.and_swap",), id="across-files"),
        pytest.param("logic", "DemoLogic.exists_or_left", ("DemoLogic.or_left",), id="inside-alternatives"),
        pytest.param(
            "arith",
            "DemoArith.tick_tick_value",
            ("DemoArith.Counter.tick_value", "DemoArith.Counter.tick"),
            id="open-in",
        ),
        pytest.param("arith", "DemoArith.double_pos", ("DemoArith.double_pos.aux",), id="where-item"),
        pytest.param(
            "arith",
            "DemoArith.Expr.eval_comm",
            ("DemoArith.Expr.comm", "DemoArith.Expr.eval"),
            id="case-tags-skipped",
        ),
        pytest.param(
            "arith",
            "DemoArith.Expr.eval_double",
            ("DemoArith.Expr.eval_add", "DemoArith.double"),
            id="imported-def",
        ),
    ],
)
def test_example_premises(
    request: pytest.FixtureRequest, project: str, theorem: str, premises: tuple[str, ...]
) -> None:
    trace: RepoTrace = request.getfixturevalue(project)
    (thm,) = [t for t in trace.theorems if t.full_name == theorem]
    assert thm.premises == premises


def test_example_special_names(arith: RepoTrace) -> None:
    names = {p.full_name for p in arith.premises}
    assert {
        "DemoArith.«double two is four»",
        "Nat.demo_double_eq",
        "DemoArith.zero_add",
        "DemoArith.Counter.instAddCounter",
        "DemoArith.Counter.instInhabitedCounter",
        "DemoArith.sumList.go",
        "DemoArith.isEven",
        "DemoArith.Counter.mk",
        "DemoArith.Counter.value",
        "DemoArith.Expr.num",
    } <= names


def test_example_steps(arith: RepoTrace) -> None:
    (thm,) = [t for t in arith.theorems if t.full_name == "DemoArith.sumTo_mono"]
    assert [t.tactic.splitlines()[0] for t in thm.tactics] == [
        "induction n",
        "case zero =>",
        "case succ k ih =>",
    ]
    assert thm.tactics[2].premises == ("DemoArith.sumTo_succ",)


# --- imports, visibility and dependencies ----------------------------------------------------


def test_premises_need_an_import(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "lakefile.toml": 'name = "p"\n',
            "P/A.lean": "def P.a : Nat := 1\nprivate def P.hidden : Nat := 2\n",
            "P/B.lean": "import P.A\ntheorem P.b : P.a = 1 := by simp [P.a, P.hidden]\n",
            "P/C.lean": "import P.B\ntheorem P.c : P.a = 1 := P.b\n",
            "P/D.lean": "theorem P.d : True := by simp [P.a]\n",
        },
    )
    by_name = {t.full_name: t for t in _trace(root).theorems}
    assert by_name["P.b"].premises == ("P.a",)  # private names stay in their file
    assert by_name["P.c"].premises == ("P.b",)  # transitive import
    assert by_name["P.d"].premises == ()  # no import, no premise


def test_lake_dependencies_are_read_lazily(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "lakefile.toml": 'name = "p"\n',
            "Main.lean": "import Dep.Core\nopen Dep\ntheorem main : True := by exact core_thm\n",
            ".lake/packages/dep/Dep/Core.lean": (
                "import Dep.Base\nnamespace Dep\ntheorem core_thm : True := base\nend Dep\n"
            ),
            ".lake/packages/dep/Dep/Base.lean": "theorem Dep.base : True := trivial\n",
            ".lake/packages/dep/Dep/Unused.lean": "theorem Dep.unused : True := trivial\n",
            ".lake/build/ir/Junk.lean": "theorem junk : True := trivial\n",
        },
    )
    trace = _trace(root)
    assert [f.path for f in trace.files] == [
        "Main.lean",
        ".lake/packages/dep/Dep/Base.lean",
        ".lake/packages/dep/Dep/Core.lean",
    ]
    assert [t.full_name for t in trace.theorems] == ["main"]
    assert trace.theorems[0].premises == ("Dep.core_thm",)
    assert {p.full_name for p in trace.premises} == {"main", "Dep.core_thm", "Dep.base"}


def test_the_toolchain_core_is_read_from_its_sources_and_init_is_imported_by_every_file(tmp_path: Path) -> None:
    """Lean imports Init into every file but a `prelude`; the core's files get LeanDojo's
    paths; a core module that is not imported (Lean) is not read."""
    core = _write(
        tmp_path / "toolchain",
        {
            "Init.lean": "prelude\nimport Init.Core\n",
            "Init/Core.lean": "prelude\ntheorem Nat.add_assoc' (n m k : Nat) : n + m + k = n + (m + k) := sorry\n",
            "Lean/Elab.lean": "def Lean.elab : Nat := 0\n",
        },
    )
    root = _write(
        tmp_path / "repo",
        {
            "Main.lean": "theorem main (a b c : Nat) : a + b + c = a + (b + c) := by rw [Nat.add_assoc']\n",
            "Pre.lean": "prelude\ntheorem pre : True := trivial\n",
        },
    )
    trace = extract_repo(root, spec=RepoSpec(str(root)), commit="c0ffee", lean_version=None, core=core)
    prefix = ".lake/packages/lean4/src/lean/"
    assert {f.path: f.imports for f in trace.files} == {
        "Main.lean": ("Init",),
        "Pre.lean": (),
        f"{prefix}Init.lean": ("Init.Core",),
        f"{prefix}Init/Core.lean": (),
    }
    assert [t.full_name for t in trace.theorems] == ["main", "pre"]
    assert trace.theorems[0].premises == ("Nat.add_assoc'",)
    without = _trace(root)
    assert [f.imports for f in without.files] == [(), ()] and without.theorems[0].premises == ()


def test_core_sources_of_a_toolchain_and_of_a_lean_built_in_its_checkout(tmp_path: Path, monkeypatch) -> None:
    """elan's toolchains: `lean --print-prefix` then `src/lean`; a build tree (and a Lean
    without that option): the nearest ancestor of the binary with `src/Init.lean`."""
    released = _write(tmp_path / "release", {"src/lean/Init.lean": "prelude\n"})
    prefix_lean = _write(tmp_path / "elan", {"bin/lean": f"#!/bin/sh\necho {released}\n"}) / "bin" / "lean"
    checkout = _write(tmp_path / "lean4", {"src/Init.lean": "prelude\n"})
    built = _write(checkout, {"build/release/stage1/bin/lean": "#!/bin/sh\nexit 1\n"})
    built_lean = built / "build/release/stage1/bin/lean"
    for binary, expected in [(prefix_lean, released / "src" / "lean"), (built_lean, checkout / "src")]:
        binary.chmod(0o755)
        monkeypatch.setenv("PATH", str(binary.parent))
        assert core_sources(tmp_path) == expected
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    assert core_sources(tmp_path) is None


def test_repo_extraction_is_deterministic(examples_dir: Path) -> None:
    assert _trace(examples_dir / "demo-arith") == _trace(examples_dir / "demo-arith")


def test_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    root = _write(tmp_path, {"Good.lean": "theorem g : True := trivial\n"})
    (root / "Bad.lean").write_bytes(b"theorem b : True := \xff\xfe trivial\n")
    trace = _trace(root)
    assert [t.full_name for t in trace.theorems] == ["g"]
    assert [(p.path, p.line) for p in trace.problems] == [("Bad.lean", 1)]
    assert "UTF-8" in trace.problems[0].reason


def test_missing_directory_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(SourceExtractionError, match="is not a directory") as info:
        _trace(tmp_path / "nope")
    assert isinstance(info.value, UserInputError)
