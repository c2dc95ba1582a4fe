"""The file-check backend's batches (lean_env/interactive/batch.py): many candidates of one
state in one Lean run, with the verdicts one run per candidate gives, against the fake lean,
and against the 2021 Lean 4 where LEANAGENT_TEST_OLD_LEAN names its bin directory."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from fakes import fake_lean

from lean_env.interactive.batch import BATCH_MARK, END_MARK, batch_file, needs_confirming
from lean_env.interactive.filecheck import FileCheckBackend, FileCheckError
from lean_env.interactive.interface import LeanError, ProofFinished, TacticState, TacticTimeout
from lean_env.interactive.probe import DROPPED
from lean_env.lean.runner import LeanRunner
from lean_env.trace.source import extract_file

SOURCE = """\
namespace Demo

theorem helper (p : Prop) (h : p) : p := h

/-- the one under test -/
@[simp] theorem imp_self' (p : Prop) : p → p := by
  sorry

end Demo
"""
START, AFTER_INTRO = "p : Prop\n⊢ p → p", "p : Prop\nh : p\n⊢ p"
SCRIPT = {
    "unknown_tactics": ["nonsense"],
    "theorems": {
        "Demo.imp_self'": {
            "goals": START,
            "steps": {
                "intro h": {"goals": AFTER_INTRO},
                "intro x": {"goals": "p : Prop\nx : p\n⊢ p"},
                "intros": {"goals": AFTER_INTRO},
                "intro h\nexact h": {"done": True},
                "intro h\nassumption": {"done": True},
                "intro h\nexact helper p h": {"done": True},
                "intro h\nexact x": {"error": "unknown identifier 'x'"},
                "intro h\nrename List α => xs": {"done": True, "undeclared": True},  # Lean drops it
                "intro h\nrefine ?_\n· skip": {"error": "unsolved goals\np : Prop\nh : p\n⊢ p"},
                "intro h\nexact foo": {"done": True, "warning": "declaration uses 'sorry'"},
                "intro h\nspin": {"hang": True},
            },
        },
    },
}
THEOREM = next(t for t in extract_file(SOURCE, path="Demo/Basic.lean").theorems if t.full_name == "Demo.imp_self'")
AT_INTRO = [
    "exact h",
    "exact x",
    "assumption",
    "refine ?_\n· skip",
    "nonsense",
    "rename List α => xs",
    "exact foo",
    "exact sorry",
    "exact helper p h",
    "exact h",  # twice: run once
]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)
    monkeypatch.setenv("FAKE_LEAN_LOG", str(tmp_path / "lean.log"))
    root = tmp_path / "repo"
    (root / "Demo").mkdir(parents=True)
    (root / "Demo" / "Basic.lean").write_text(SOURCE, encoding="utf-8")
    return root


def _runs(repo: Path) -> int:
    log = repo.parent / "lean.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _one_by_one(repo: Path, tactics: list[str]) -> list[object]:
    with FileCheckBackend(timeout=20).open(repo, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        return [session.run_tactic(state, t) for t in tactics]


def test_a_batch_gives_the_verdicts_of_one_run_each_in_one_run(repo: Path) -> None:
    expected = _one_by_one(repo, AT_INTRO)
    assert isinstance(expected[0], ProofFinished) and expected[1] == LeanError("unknown identifier 'x'")
    assert expected[AT_INTRO.index("rename List α => xs")] == LeanError(DROPPED)
    with FileCheckBackend(timeout=20).open(repo, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        before = _runs(repo)
        assert list(session.run_tactics(state, AT_INTRO)) == expected
        # One batch: none of the three finished proofs searches the environment.
        assert _runs(repo) - before == 1
        assert list(session.run_tactics(state, AT_INTRO)) == expected  # known now: no run at all
        assert _runs(repo) - before == 1
        # The first state's candidates, goals included, the same way.
        first = ["intro h", "intro x", "intros", "nonsense", "exact h"]
        assert list(session.run_tactics(session.initial_state, first)) == [
            TacticState(AFTER_INTRO),
            TacticState("p : Prop\nx : p\n⊢ p"),
            TacticState(AFTER_INTRO),
            LeanError("unknown tactic"),
            LeanError(fake_lean.UNSCRIPTED),
        ]


def test_batches_grow_as_the_outcomes_are_read(repo: Path) -> None:
    """8 candidates in the first batch, then 16: a search that stops at the first outcome
    has Lean elaborate 8, not all 20; one that reads all, 2 runs, not 20."""
    wrong = [f"exact wrong{i}" for i in range(20)]
    with FileCheckBackend(timeout=20).open(repo, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        before = _runs(repo)
        outcomes = session.run_tactics(state, wrong)
        assert _runs(repo) == before  # nothing runs before it is read
        assert next(outcomes) == LeanError(fake_lean.UNSCRIPTED)
        assert _runs(repo) == before + 1
        assert list(outcomes) == [LeanError(fake_lean.UNSCRIPTED)] * 19
        assert _runs(repo) == before + 2


@pytest.mark.parametrize("seed", range(3))
def test_any_order_and_subset_gives_the_same_verdicts(repo: Path, seed: int) -> None:
    tactics = random.Random(seed).sample(AT_INTRO, k=6)
    expected = _one_by_one(repo, tactics)
    with FileCheckBackend(timeout=20).open(repo, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        assert list(session.run_tactics(state, tactics)) == expected


def test_a_batch_that_hangs_runs_each_alone_with_its_own_limit(repo: Path) -> None:
    with FileCheckBackend(timeout=2).open(repo, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        outcomes = list(session.run_tactics(state, ["exact x", "spin", "exact h"]))
    assert outcomes == [LeanError("unknown identifier 'x'"), TacticTimeout(2), ProofFinished()]


def test_a_finished_search_of_the_environment_is_confirmed_alone(repo: Path) -> None:
    """A tactic that searches the environment by statement could find an earlier copy of
    the theorem: the batch's word "finished" is not taken, the candidate runs alone."""

    class EarlierCopyFound(LeanRunner):
        """Lean as if `exact?` found an earlier copy of the theorem in a batch."""

        def run(self, file: Path, *, timeout: float):  # type: ignore[no-untyped-def]
            text = file.read_text(encoding="utf-8")
            if BATCH_MARK in text:
                file.write_text(text.replace("exact?", "exact h"), encoding="utf-8")
            return super().run(file, timeout=timeout)

    backend = FileCheckBackend(timeout=20, runner_factory=lambda d: EarlierCopyFound(d.resolve(), ("lean",)))
    with backend.open(repo, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        assert list(session.run_tactics(state, ["simp", "exact?"])) == [LeanError(fake_lean.UNSCRIPTED)] * 2


@pytest.mark.parametrize(
    ("tactic", "index", "confirm"),
    [
        ("exact?", 1, True),
        ("apply? using h", 3, True),
        ("first | simp | library_search", 2, True),
        ("exact?", 0, False),  # the first copy sees no other
        ("simp [h] -- exact? would do", 1, False),
        ("exact h", 1, False),
        ("simp!", 1, False),
    ],
)
def test_which_finished_copies_are_confirmed(tactic: str, index: int, confirm: bool) -> None:
    assert needs_confirming(tactic, index) is confirm


def test_errors_outside_the_theorem_fail_a_batch_as_they_fail_one_run(repo: Path, tmp_path: Path) -> None:
    script = {**SCRIPT, "errors": [{"line": 3, "column": 0, "message": "unknown constant 'Nat.foo'"}]}
    with FileCheckBackend(timeout=20).open(repo, THEOREM) as session:
        state = session.run_tactic(session.initial_state, "intro h")
        (tmp_path / "bin" / "script.json").write_text(json.dumps(script), encoding="utf-8")
        with pytest.raises(FileCheckError, match="errors outside theorem Demo.imp_self'"):
            list(session.run_tactics(state, ["exact x", "simp"]))


def test_the_copies_are_renamed_and_lose_their_attributes() -> None:
    nested = SOURCE.replace("@[simp]", "@[simp, aesop safe [constructors]] private")
    source = nested[: nested.index("sorry") + len("sorry")]
    theorem = next(t for t in extract_file(nested, path="Demo/Basic.lean").theorems if t.full_name == "Demo.imp_self'")
    batch = batch_file(source, theorem, ["by\n  intro h\n  exact h", "by\n  simp"])
    assert batch is not None
    assert batch.text.startswith(source[: source.index("/--")])
    assert batch.text.count(f"private theorem imp_self'{BATCH_MARK}0 (p : Prop)") == 1
    assert batch.text.count(f"theorem imp_self'{BATCH_MARK}1 (p : Prop)") == 1
    assert "@[" not in batch.text and "aesop" not in batch.text
    lines = batch.text.splitlines()
    for copy in batch.copies:
        assert lines[copy.by.line - 1][copy.by.column - 1 :].startswith("by")
    assert [lines[c.start.line - 1] for c in batch.copies] == ["/-- the one under test -/"] * 2


def test_a_parse_error_or_a_marker_that_says_more_makes_only_that_copy_unsure() -> None:
    """After each copy its marker's one error says the parser read the copy to its end and
    started afresh. A parse error in a copy, a copy that read on into its marker (which then
    says more) or a marker the parser skipped (which then says nothing) leaves that copy's
    verdict to a run of its own; its neighbours keep theirs."""
    from lean_env.lean.diagnostics import Diagnostic, Severity

    source = SOURCE[: SOURCE.index("sorry") + len("sorry")]
    batch = batch_file(source, THEOREM, [f"by\n  exact w{i}" for i in range(5)])
    assert batch is not None
    assert batch.text.count(f"#check @{END_MARK}") == 5

    def error_at(index: int, message: str, *, marker: bool = False, probe: bool = False) -> Diagnostic:
        copy = batch.copies[index]
        return Diagnostic(
            "B.lean", copy.marker if marker else copy.probe if probe else copy.by, Severity.ERROR, message
        )

    def markers(*but: int) -> list[Diagnostic]:
        unknown = f"unknown identifier '{END_MARK}'"
        return [error_at(i, unknown, marker=True) for i in range(5) if i not in but]

    assert batch.unsure(markers()) == set()
    assert batch.unsure([*markers(), error_at(2, "unknown identifier 'w2'"), error_at(3, "type mismatch")]) == set()
    decide = "expected type must not contain free or meta variables\n  a + 0 = a"  # the elaborator's
    assert batch.unsure([*markers(), error_at(1, decide)]) == set()
    assert batch.unsure([*markers(), error_at(2, "expected '{' or tactic")]) == {2}
    assert batch.unsure([*markers(), error_at(0, "expected ')'"), error_at(4, "unexpected end of input")]) == {0, 4}
    assert batch.unsure([*markers(), error_at(1, "expected term", marker=True)]) == {1}  # read on into it
    assert batch.unsure(markers(3)) == {3}  # skipped
    dropped = error_at(2, f"unknown identifier 'Demo.imp_self'{BATCH_MARK}2'", probe=True)
    assert batch.unsure([*markers(), dropped]) == set()  # the probe's one word: Lean dropped copy 2
    assert batch.unsure([*markers(), error_at(2, "expected term", probe=True)]) == {2}  # read on into it
    assert batch.probe_of(2, [*markers(), dropped]) == [dropped] and batch.diagnostics_of(2, [dropped]) == []
    # The markers' errors are no copy's.
    assert batch.diagnostics_of(2, [*markers(), error_at(2, "type mismatch")]) == [error_at(2, "type mismatch")]


def test_an_anonymous_or_quoted_declaration_is_not_batched() -> None:
    quoted = SOURCE.replace("imp_self'", "«imp self»")
    theorem = extract_file(quoted, path="Demo/Basic.lean").theorems[1]
    assert batch_file(quoted[: quoted.index("sorry") + 5], theorem, ["by\n  simp", "by\n  rfl"]) is None


OLD_LEAN = os.environ.get("LEANAGENT_TEST_OLD_LEAN")
OLD_SOURCE = """\
theorem helper (a b : Nat) (h : a = b) : b = a := h.symm

@[simp] theorem target (a b : Nat) (h : a = b) : b + 0 = a := by
  skip
"""
OLD_TACTICS = [
    "exact h.symm",
    "rw [h]",
    "simp",
    "exact helper a b h",
    "intro x",
    "apply Eq.symm",
    "exact Nat.add_comm",
    "nonsense",
    "rfl",
    "simp [h]",
    "exact fun x =>",  # wants more: reads on into its marker
    "exact suffices b = a from this",  # wants more, yet declared: only the parse error says so
    "unif_hint (n : Nat) where\n    |- n =?= 1",  # a command: a parse error, then Lean reads on
    "decide",
    "cases h",
    "rename List β => xs",  # β is unbound: no error, and no theorem (Lean drops it)
]


@pytest.mark.skipif(not OLD_LEAN, reason="LEANAGENT_TEST_OLD_LEAN does not name the 2021 Lean's bin directory")
def test_on_the_2021_lean_a_batch_gives_the_verdicts_of_one_run_each(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", f"{OLD_LEAN}{os.pathsep}{os.environ.get('PATH', '')}")
    (tmp_path / "Old.lean").write_text(OLD_SOURCE, encoding="utf-8")
    theorem = next(t for t in extract_file(OLD_SOURCE, path="Old.lean").theorems if t.full_name == "target")
    with FileCheckBackend(timeout=60).open(tmp_path, theorem) as session:
        one_by_one = [session.run_tactic(session.initial_state, t) for t in OLD_TACTICS]
    with FileCheckBackend(timeout=60).open(tmp_path, theorem) as session:
        batched = list(session.run_tactics(session.initial_state, OLD_TACTICS))
    assert batched == one_by_one
    kinds = {type(o) for o in batched}
    assert {TacticState, LeanError, ProofFinished} <= kinds  # the list exercises each verdict
    assert batched[-1] == LeanError(DROPPED)
    assert batched[OLD_TACTICS.index("exact suffices b = a from this")] == LeanError("expected term")
    for a, b in zip(batched, one_by_one, strict=True):
        if isinstance(a, LeanError):
            assert a.message == b.message  # the copy's name never shows
