"""LeanDojo Benchmark 4: reading the real layout, writing it back, and the two splits."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import shutil
from pathlib import Path

import pytest
from builders import theorem

from lean_env.benchmark.dojo_shapes import decl_kind
from lean_env.benchmark.read import (
    BenchmarkFormatError,
    canonical_order,
    read_benchmark,
)
from lean_env.benchmark.splits import holdout_size, split_by_premise, split_randomly
from lean_env.benchmark.write import write_benchmark
from lean_env.errors import UserInputError
from lean_env.records import (
    DeclKind,
    IngestBackend,
    LeanFile,
    ParseProblem,
    Position,
    Premise,
    RepoSpec,
    RepoTrace,
    Theorem,
    TheoremStatus,
    TracedTactic,
    module_of_path,
)

FIXTURE = Path(__file__).parent / "fixtures" / "benchmark4"
URL = "https://github.com/example/demo-arith"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
INIT = ".lake/packages/lean4/src/lean/Init.lean"
LEANDOJO_THEOREM_KEYS = {
    "url",
    "commit",
    "file_path",
    "full_name",
    "start",
    "end",
    "traced_tactics",
}
LEANDOJO_TACTIC_KEYS = {"tactic", "annotated_tactic", "state_before", "state_after"}


def P(line: int, column: int) -> Position:
    return Position(line, column)


def fixture_expected() -> RepoTrace:
    """What tests/fixtures/benchmark4 says, written out by hand."""
    basic, comm = "DemoArith/Basic.lean", "DemoArith/Comm.lean"
    return RepoTrace(
        spec=RepoSpec(URL, COMMIT),
        commit=COMMIT,
        backend=IngestBackend.BENCHMARK,
        lean_version=None,
        files=(
            LeanFile(INIT, ()),
            LeanFile(basic, ("Init",)),
            LeanFile(comm, ("DemoArith.Basic", "Init")),
        ),
        premises=(
            Premise(
                "Nat.add_comm",
                INIT,
                P(10, 1),
                P(12, 30),
                DeclKind.THEOREM,
                "protected theorem Nat.add_comm : ∀ (n m : Nat), n + m = m + n",
            ),
            Premise(
                "Nat.add_zero",
                INIT,
                P(14, 1),
                P(14, 60),
                DeclKind.THEOREM,
                "@[simp] theorem Nat.add_zero (n : Nat) : n + 0 = n",
            ),
            Premise(
                "DemoArith.double",
                basic,
                P(5, 1),
                P(6, 8),
                DeclKind.DEF,
                "def double (n : Nat) : Nat :=\n  n + n",
            ),
            Premise(
                "DemoArith.double_eq",
                basic,
                P(8, 1),
                P(9, 6),
                DeclKind.LEMMA,
                "lemma double_eq (n : Nat) : double n = n + n",
            ),
            Premise(
                "DemoArith.add_comm'",
                comm,
                P(6, 1),
                P(7, 21),
                DeclKind.THEOREM,
                "theorem add_comm' (a b : Nat) : a + b = b + a",
            ),
            Premise(
                "DemoArith.double_comm",
                comm,
                P(9, 1),
                P(11, 20),
                DeclKind.THEOREM,
                "theorem double_comm (n : Nat) : double n = n + n",
            ),
            Premise(
                "DemoArith.add_zero'",
                comm,
                P(13, 1),
                P(14, 23),
                DeclKind.THEOREM,
                "theorem add_zero' (n : Nat) : n + 0 = n",
            ),
            Premise(
                "DemoArith.todo",
                comm,
                P(16, 1),
                P(17, 8),
                DeclKind.THEOREM,
                "theorem todo : 1 + 1 = 3",
            ),
        ),
        theorems=(
            Theorem("DemoArith.double_eq", basic, P(8, 1), P(9, 6), "", None, TheoremStatus.PROVEN),
            Theorem(
                "DemoArith.add_comm'",
                comm,
                P(6, 1),
                P(7, 21),
                "theorem add_comm' (a b : Nat) : a + b = b + a",
                None,
                TheoremStatus.PROVEN,
                tactics=(
                    TracedTactic(
                        "rw [Nat.add_comm]",
                        "a b : Nat\n⊢ a + b = b + a",
                        "no goals",
                        ("Nat.add_comm",),
                    ),
                ),
                premises=("Nat.add_comm",),
            ),
            Theorem(
                "DemoArith.double_comm",
                comm,
                P(9, 1),
                P(11, 20),
                "theorem double_comm (n : Nat) : double n = n + n",
                None,
                TheoremStatus.PROVEN,
                tactics=(
                    TracedTactic(
                        "rw [double_eq]",
                        "n : Nat\n⊢ double n = n + n",
                        "no goals",
                        ("DemoArith.double_eq",),
                    ),
                    TracedTactic(
                        "exact add_comm' n n",
                        "n : Nat\n⊢ n + n = n + n",
                        "no goals",
                        ("DemoArith.add_comm'",),
                    ),
                ),
                premises=("DemoArith.double_eq", "DemoArith.add_comm'"),
            ),
            Theorem(
                "DemoArith.add_zero'",
                comm,
                P(13, 1),
                P(14, 23),
                "theorem add_zero' (n : Nat) : n + 0 = n",
                None,
                TheoremStatus.PROVEN,
                tactics=(
                    TracedTactic(
                        "simp [Nat.add_zero, Nat.add_zero]",
                        "n : Nat\n⊢ n + 0 = n",
                        "no goals",
                        ("Nat.add_zero",),
                    ),
                ),
                premises=("Nat.add_zero",),
            ),
            Theorem(
                "DemoArith.todo",
                comm,
                P(16, 1),
                P(17, 8),
                "theorem todo : 1 + 1 = 3",
                None,
                TheoremStatus.SORRY,
                tactics=(TracedTactic("sorry", "⊢ 1 + 1 = 3", "no goals"),),
            ),
        ),
    )


def rich_benchmark_trace() -> RepoTrace:
    """Records with everything the format has to carry: tactic and term proofs, a `sorry`,
    source-extraction tactics without states, an import no file defines, problems."""
    lib, main = "Rich/Lib.lean", "Rich/Main.lean"
    premises = (
        Premise("Rich.f", lib, P(3, 1), P(4, 10), DeclKind.DEF, "def f (n : Nat) : Nat := n"),
        Premise(
            "Rich.f_eq",
            lib,
            P(6, 1),
            P(7, 12),
            DeclKind.THEOREM,
            "theorem f_eq (n : Nat) : f n = n",
        ),
        Premise("Rich.g", lib, P(9, 1), P(9, 30), DeclKind.UNKNOWN, "alias g := f"),
        Premise("Rich.main_thm", main, P(4, 1), P(7, 10), DeclKind.THEOREM, "theorem main_thm : f 1 = 1"),
    )
    theorems = (
        Theorem(
            "Rich.f_eq",
            lib,
            P(6, 1),
            P(7, 12),
            "theorem f_eq (n : Nat) : f n = n",
            "rfl",
            TheoremStatus.PROVEN,
            premises=("Rich.f",),
            proof_start=P(6, 37),
        ),
        Theorem(
            "Rich.main_thm",
            main,
            P(4, 1),
            P(7, 10),
            "theorem main_thm : f 1 = 1",
            "by\n  rw [Rich.f_eq]\n  exact foo.bar",
            TheoremStatus.PROVEN,
            tactics=(
                TracedTactic("rw [Rich.f_eq]", "⊢ f 1 = 1", "⊢ 1 = 1", ("Rich.f_eq",)),
                TracedTactic("exact rfl", "⊢ 1 = 1", "no goals"),
            ),
            premises=("Rich.f_eq", "Rich.f"),
            proof_start=P(4, 30),
        ),
        Theorem(
            "Rich.later",
            main,
            P(9, 1),
            P(11, 8),
            "theorem later : f 2 = 2",
            "by\n  simp [f]\n  sorry",
            TheoremStatus.SORRY,
            tactics=(TracedTactic("simp [f]", premises=("Rich.f",)), TracedTactic("sorry")),
            premises=("Rich.f",),
            sorries=(P(11, 3),),
            proof_start=P(9, 27),
        ),
        Theorem(
            "Rich.unread",
            main,
            P(13, 1),
            P(13, 40),
            "theorem unread : True",
            None,
            TheoremStatus.PROVEN,
        ),
    )
    return canonical_order(
        RepoTrace(
            spec=RepoSpec("https://example.org/rich.git", "main"),
            commit="fedcba9876543210fedcba9876543210fedcba98",
            backend=IngestBackend.SOURCE,
            lean_version="v4.20.0",
            files=(LeanFile(main, ("Rich.Lib", "Mathlib.Tactic")), LeanFile(lib, ("Init",))),
            premises=premises,
            theorems=theorems,
            problems=(ParseProblem(main, 20, "unterminated comment"),),
        )
    )


def as_read(trace: RepoTrace) -> RepoTrace:
    """What reading back gives for ``trace``: canonical order, backend BENCHMARK."""
    return dataclasses.replace(canonical_order(trace), backend=IngestBackend.BENCHMARK)


# ---------------------------------------------------------------------------- reading


def test_fixture_reads_into_the_expected_records() -> None:
    assert read_benchmark(FIXTURE) == [fixture_expected()]


def test_either_split_alone_gives_the_same_records(tmp_path: Path) -> None:
    for strategy in ("random", "novel_premises"):
        copy = tmp_path / strategy
        shutil.copytree(FIXTURE, copy)
        shutil.rmtree(copy / ({"random", "novel_premises"} - {strategy}).pop())
        assert read_benchmark(copy) == [fixture_expected()]


def test_optional_files_may_be_missing(tmp_path: Path) -> None:
    copy = tmp_path / "bench"
    shutil.copytree(FIXTURE, copy)
    for name in ("corpus.jsonl", "traced_files.jsonl", "metadata.json"):
        (copy / name).unlink()
    [trace] = read_benchmark(copy)
    assert trace.theorems == fixture_expected().theorems
    assert trace.files == () and trace.premises == ()


def test_repositories_group_by_url_and_commit(tmp_path: Path) -> None:
    """A merged directory without our metadata: each corpus file goes to the repositories
    whose theorems live in it, the rest to the main (``from_repo``) one."""
    copy = tmp_path / "bench"
    shutil.copytree(FIXTURE, copy)
    train = copy / "random" / "train.json"
    entries = json.loads(train.read_text())
    other = {
        **entries[0],
        "url": "https://github.com/example/other",
        "commit": "1" * 40,
        "file_path": "DemoArith/Basic.lean",
        "full_name": "Other.thm",
    }
    train.write_text(json.dumps([*entries, other]))
    traces = {t.spec.location: t for t in read_benchmark(copy)}
    assert set(traces) == {URL, "https://github.com/example/other"}
    assert [t.full_name for t in traces["https://github.com/example/other"].theorems] == ["Other.thm"]
    main = traces[URL]
    assert {f.path for f in traces["https://github.com/example/other"].files} == {"DemoArith/Basic.lean"}
    assert {f.path for f in main.files} == {INIT, "DemoArith/Basic.lean", "DemoArith/Comm.lean"}
    assert main.premises == fixture_expected().premises


# ---------------------------------------------------------------------------- round trips


def test_records_round_trip(tmp_path: Path) -> None:
    trace = rich_benchmark_trace()
    write_benchmark([trace], tmp_path, seed=0)
    assert read_benchmark(tmp_path) == [as_read(trace)]


def test_several_repositories_round_trip(tmp_path: Path) -> None:
    fixture = dataclasses.replace(fixture_expected(), lean_version="v4.9.0")
    traces = [rich_benchmark_trace(), fixture]
    write_benchmark(traces, tmp_path, seed=3)
    assert read_benchmark(tmp_path) == [as_read(t) for t in traces]


def test_fixture_round_trips(tmp_path: Path) -> None:
    write_benchmark(read_benchmark(FIXTURE), tmp_path, seed=7)
    assert read_benchmark(tmp_path) == [fixture_expected()]


def test_without_our_extension_a_written_directory_reads_like_leandojo_data(tmp_path: Path) -> None:
    """Strip the ``leanagent`` keys: what is left is plain LeanDojo data, read as such."""
    trace = rich_benchmark_trace()
    write_benchmark([trace], tmp_path, seed=0)
    for split_file in tmp_path.glob("*/*.json"):
        entries = json.loads(split_file.read_text())
        split_file.write_text(json.dumps([{k: v for k, v in e.items() if k != "leanagent"} for e in entries]))
    got = {t.full_name: t for t in read_benchmark(tmp_path)[0].theorems}
    main = got["Rich.main_thm"]
    assert main.proof is None and main.proof_start is None
    assert main.tactics == next(t for t in trace.theorems if t.full_name == "Rich.main_thm").tactics
    # Tactics without goal states are not in `traced_tactics`: that theorem looks tactic-less.
    assert got["Rich.later"].tactics == () and got["Rich.later"].status is TheoremStatus.PROVEN


# ---------------------------------------------------------------------------- the written format


def test_written_directory_is_in_the_real_layout(tmp_path: Path) -> None:
    trace = rich_benchmark_trace()
    write_benchmark([trace], tmp_path, seed=0)
    names = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert names == {
        "corpus.jsonl",
        "traced_files.jsonl",
        "metadata.json",
        *(f"{s}/{n}.json" for s in ("random", "novel_premises") for n in ("train", "val", "test")),
    }
    # ReProver's Corpus: every import is a line above, each path once.
    seen: list[str] = []
    corpus = {}
    for line in (tmp_path / "corpus.jsonl").read_text().splitlines():
        data = json.loads(line)
        assert set(data) == {"path", "imports", "premises"}
        assert all(i in seen for i in data["imports"]), data
        seen.append(data["path"])
        corpus[data["path"]] = data["premises"]
    assert "Mathlib/Tactic.lean" in seen and corpus["Mathlib/Tactic.lean"] == []
    traced = [json.loads(line)["traced_file_path"] for line in (tmp_path / "traced_files.jsonl").open()]
    assert sorted(traced) == ["Rich/Lib.lean", "Rich/Main.lean"]
    metadata = json.loads((tmp_path / "metadata.json").read_text())
    assert metadata["from_repo"] == {"url": trace.spec.location, "commit": trace.commit}

    entries = [e for n in ("train", "val", "test") for e in json.loads((tmp_path / "random" / f"{n}.json").read_text())]
    assert sorted(e["full_name"] for e in entries) == sorted(t.full_name for t in trace.theorems)
    for entry in entries:
        # ReProver's get_accessible_premises looks the theorem's file up in the corpus.
        assert entry["file_path"] in corpus, entry["file_path"]
        assert LEANDOJO_THEOREM_KEYS <= set(entry) <= LEANDOJO_THEOREM_KEYS | {"theorem_statement", "leanagent"}
        for tactic in entry["traced_tactics"]:
            assert set(tactic) == LEANDOJO_TACTIC_KEYS
            text, provenances = tactic["annotated_tactic"]
            assert text.replace("<a>", "").replace("</a>", "") == tactic["tactic"]
            assert len(re.findall(r"<a>.+?</a>", text)) == len(provenances)
            for prov in provenances:  # ReProver's locate_premise finds each one
                assert any(
                    p["full_name"] == prov["full_name"] and p["start"] <= prov["def_pos"] <= p["end"]
                    for p in corpus[prov["def_path"]]
                )
    main = next(e for e in entries if e["full_name"] == "Rich.main_thm")
    assert main["traced_tactics"][0]["annotated_tactic"][0] == "rw [<a>Rich.f_eq</a>]"
    # Source-extraction tactics have no goals, so they are not LeanDojo traced tactics.
    assert next(e for e in entries if e["full_name"] == "Rich.later")["traced_tactics"] == []


# ---------------------------------------------------------------------------- splits


def many_theorems(n: int) -> list[Theorem]:
    """``n`` theorems using premises of skewed popularity (theorem i uses p0 and p{i % 7})."""
    return [
        theorem(
            f"T.t{i}",
            path="T.lean",
            line=i + 1,
            premises=("p0", f"p{i % 7}") if i % 5 else (),
            end=P(i + 1, 9),
            statement="",
            proof="by simp",
            proof_start=None,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        pytest.param(0, 0, id="empty"),
        pytest.param(2, 0, id="too-few-to-hold-out"),
        pytest.param(3, 1, id="one-each"),
        pytest.param(25, 2, id="ten-percent"),
        pytest.param(117_000, 2000, id="leandojo-size"),
    ],
)
def test_holdout_size(n: int, expected: int) -> None:
    assert holdout_size(n) == expected


@pytest.mark.parametrize("n", [0, 1, 3, 10, 57])
@pytest.mark.parametrize("splitter", [split_randomly, split_by_premise])
def test_splits_partition_the_theorems(n: int, splitter) -> None:
    split = splitter(many_theorems(n), random.Random(1))
    indices = split["train"] + split["val"] + split["test"]
    assert sorted(indices) == list(range(n))
    assert len(split["val"]) == holdout_size(n)


def test_random_split_sizes_are_leandojos() -> None:
    split = split_randomly(many_theorems(57), random.Random(1))
    assert [len(split[k]) for k in ("train", "val", "test")] == [47, 5, 5]


@pytest.mark.parametrize("n", [10, 57, 200])
def test_novel_premises_property(n: int) -> None:
    theorems = many_theorems(n)
    split = split_by_premise(theorems, random.Random(5))
    train_premises = {p for i in split["train"] for p in theorems[i].premises}
    held = split["val"] + split["test"]
    assert held and len(held) >= 2 * holdout_size(n) - 1
    for i in held:
        assert set(theorems[i].premises) - train_premises, theorems[i]


def test_written_splits_are_seeded_and_order_independent(tmp_path: Path) -> None:
    trace = dataclasses.replace(
        rich_benchmark_trace(),
        theorems=tuple(dataclasses.replace(t, path="Rich/Lib.lean") for t in many_theorems(40)),
    )

    def split_files(out: Path) -> dict[str, str]:
        return {p.relative_to(out).as_posix(): p.read_text() for p in out.glob("*/*.json")}

    write_benchmark([trace], tmp_path / "a", seed=11)
    write_benchmark([dataclasses.replace(trace, theorems=trace.theorems[::-1])], tmp_path / "b", seed=11)
    write_benchmark([trace], tmp_path / "c", seed=12)
    assert split_files(tmp_path / "a") == split_files(tmp_path / "b")
    assert split_files(tmp_path / "a") != split_files(tmp_path / "c")
    novel = {
        n: {e["full_name"] for e in json.loads((tmp_path / "a" / "novel_premises" / f"{n}.json").read_text())}
        for n in ("train", "val", "test")
    }
    by_name = {t.full_name: t for t in trace.theorems}
    train_premises = {p for name in novel["train"] for p in by_name[name].premises}
    assert all(set(by_name[name].premises) - train_premises for name in novel["val"] | novel["test"])


# ---------------------------------------------------------------------------- malformed input


def _break(root: Path, relative: str, text: str) -> None:
    (root / relative).write_text(text)


@pytest.mark.parametrize(
    ("relative", "text", "message"),
    [
        pytest.param(
            "corpus.jsonl",
            '{"path": "A.lean", "imports": [], "premises": []}\n{"path": \n',
            r"corpus\.jsonl: line 2: not valid JSON",
            id="corpus-bad-json",
        ),
        pytest.param(
            "corpus.jsonl",
            '\n{"path": "A.lean", "imports": "B.lean", "premises": []}\n',
            r"corpus\.jsonl: line 2: 'imports' must be a list",
            id="corpus-bad-imports",
        ),
        pytest.param(
            "corpus.jsonl",
            '{"path": "A.lean", "imports": [], "premises": [{"full_name": "a", "start": [0, 1], "end": [1, 1]}]}\n',
            r"corpus\.jsonl: line 1: positions are 1-based",
            id="corpus-zero-line",
        ),
        pytest.param(
            "random/train.json",
            '[\n{"url": "u", "commit": "c", "file_path": "A.lean", "full_name": "a",'
            ' "start": [1, 1], "end": [1, 2], "traced_tactics": []},\n'
            '{"url": "u", "commit": "c", "file_path": "A.lean",\n "start": [1, 1]}\n]',
            r"train\.json: line 3 \(entry 1\): 'full_name' must be a string",
            id="theorem-missing-name",
        ),
        pytest.param(
            "random/val.json",
            '[{"url": "u", "commit": "c", "file_path": "A.lean", "full_name": "a", "start": [1, 1],'
            ' "end": [1, 2], "traced_tactics": [{"tactic": "simp", "state_before": "s"}]}]',
            r"val\.json: line 1 \(entry 0\): traced_tactics\[0\]: 'state_after' must be a string",
            id="tactic-missing-state",
        ),
        pytest.param(
            "random/test.json",
            '[\n{"url": 1,}\n]',
            r"test\.json: line 2 \(entry 0\): not valid JSON",
            id="theorem-bad-json",
        ),
        pytest.param(
            "random/test.json",
            '{"not": "a list"}',
            r"test\.json: line 1: expected a JSON array",
            id="not-an-array",
        ),
        pytest.param(
            "random/test.json",
            "[]\n[]",
            r"test\.json: line 1: the JSON array is not closed properly",
            id="trailing-garbage",
        ),
        pytest.param(
            "traced_files.jsonl",
            '{"traced_file_path": "A.lean"}\n{"path": "B.lean"}\n',
            r"traced_files\.jsonl: line 2: expected",
            id="traced-files-bad-line",
        ),
        pytest.param(
            "metadata.json",
            '{\n"from_repo": \n',
            r"metadata\.json: line 3: not valid JSON",
            id="metadata-bad-json",
        ),
    ],
)
def test_malformed_files_name_the_file_and_line(tmp_path: Path, relative: str, text: str, message: str) -> None:
    root = tmp_path / "bench"
    shutil.copytree(FIXTURE, root)
    _break(root, relative, text)
    with pytest.raises(BenchmarkFormatError, match=message) as info:
        read_benchmark(root)
    assert isinstance(info.value, UserInputError)


def test_writing_where_a_file_is_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")
    with pytest.raises(BenchmarkFormatError, match="cannot write a benchmark directory at"):
        write_benchmark([rich_benchmark_trace()], tmp_path / "taken", seed=0)


def test_a_directory_without_splits_is_refused(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text("")
    with pytest.raises(BenchmarkFormatError, match="no split files"):
        read_benchmark(tmp_path)
    with pytest.raises(BenchmarkFormatError, match="is not a directory"):
        read_benchmark(tmp_path / "missing")


# ---------------------------------------------------------------------------- small helpers


@pytest.mark.parametrize(
    ("kind", "code", "expected"),
    [
        pytest.param(
            "commanddeclaration",
            "@[simp, norm_cast] protected theorem a : b",
            DeclKind.THEOREM,
            id="attrs",
        ),
        pytest.param(
            "commanddeclaration",
            '@[to_additive "[x]"] noncomputable def f := 1',
            DeclKind.DEF,
            id="nested",
        ),
        pytest.param("commanddeclaration", "class inductive C", DeclKind.CLASS, id="class-inductive"),
        pytest.param("commanddeclaration", "instance : Foo Nat := ⟨⟩", DeclKind.INSTANCE, id="instance"),
        pytest.param("mathlibtacticlemma", "lemma l : True", DeclKind.LEMMA, id="mathlib-lemma"),
        pytest.param("stdtacticaliasalias", "alias g := f", DeclKind.UNKNOWN, id="alias"),
        pytest.param("structure", "", DeclKind.STRUCTURE, id="ours"),
        pytest.param("unknown", "def f := 1", DeclKind.UNKNOWN, id="ours-unknown"),
    ],
)
def test_decl_kind(kind: str, code: str, expected: DeclKind) -> None:
    assert decl_kind(kind, code) is expected


@pytest.mark.parametrize(
    ("path", "module"),
    [
        pytest.param("Mathlib/Logic/Basic.lean", "Mathlib.Logic.Basic", id="own"),
        pytest.param(".lake/packages/batteries/Batteries/Data.lean", "Batteries.Data", id="dependency"),
        pytest.param(".lake/packages/lean4/src/lean/Init.lean", "Init", id="lean-core"),
        pytest.param("lake-packages/std/Std.lean", "Std", id="old-lake"),
    ],
)
def test_module_of_path(path: str, module: str) -> None:
    assert module_of_path(path) == module
