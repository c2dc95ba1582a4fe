"""The final check: whole file with the proof in place, no error, no sorry for the theorem;
and the axiom audit in the same run (a theorem depending on sorryAx is vacuous). Against the
fake Lean in memory, but where running it is the point (the user's file untouched, a
timeout) and the real Lean's tests."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from fakes import fake_lean

from lean_env.lean.runner import LeanRunner
from lean_env.proofs.axioms import find_axioms
from lean_env.proofs.final_check import Verdict, check_proof

SOURCE = fake_lean.DEMO_SOURCE

SCRIPT = {
    "unknown_tactics": ["exact?"],
    "theorems": {
        "Demo.imp_self'": {
            "goals": "p : Prop\n⊢ p → p",
            "steps": {
                "intro h\nexact h": {"done": True},
                "intro h": {"goals": "p : Prop\nh : p\n⊢ p"},
                "intro h\nspin": {"hang": True},
                "cheat": {"done": True, "warning": "declaration uses 'sorry'"},
            },
            "terms": {"fun h => h": {"done": True}},
        },
        "Demo.two": {"terms": {"rfl": {"done": True}}},
    },
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    return fake_lean.demo_repo(tmp_path, monkeypatch, SCRIPT)


def _check(repo: Path, name: str, proof: str, *, script: dict = SCRIPT, process: bool = False, timeout: float = 20.0):
    """The final check of ``proof`` for ``name``, by the fake Lean run as a process (``lean``
    on PATH: ``repo``'s script) or, for what is done with Lean's answer, in memory."""
    theorem = fake_lean.theorem_record(SOURCE, name, "Demo.lean")
    runner = LeanRunner.for_project(repo) if process else fake_lean.in_memory(script)
    return check_proof(repo, theorem, proof, runner=runner, timeout=timeout)


@pytest.mark.parametrize(
    ("name", "proof", "verdict", "reason"),
    [
        pytest.param(
            "Demo.imp_self'", "by\n  intro h\n  exact h", Verdict.ACCEPTED, None, id="other-theorems-sorry-is-not-ours"
        ),
        pytest.param("Demo.imp_self'", "fun h => h", Verdict.ACCEPTED, None, id="term-proof"),
        pytest.param("Demo.two", "rfl", Verdict.ACCEPTED, None, id="earlier-theorems-sorry"),
        pytest.param(
            "Demo.imp_self'",
            "by\n  cheat",
            Verdict.REJECTED,
            "theorem Demo.imp_self' still uses sorry (line 3)",
            id="own-sorry-warning",
        ),
        pytest.param(
            "Demo.imp_self'",
            "by\n  intro h",
            Verdict.REJECTED,
            "error in Demo.imp_self' (line 3): unsolved goals",
            id="unsolved-goals",
        ),
        pytest.param("Demo.imp_self'", "by\n  intro h\n  exact?", Verdict.REJECTED, "unknown tactic", id="lean-error"),
        pytest.param("Demo.imp_self'", "by\n  intro h\n  sorry", Verdict.REJECTED, "uses `sorry`", id="sorry-in-proof"),
        pytest.param("Demo.imp_self'", "by\n  admit", Verdict.REJECTED, "uses `sorry` or `admit`", id="admit-in-proof"),
        pytest.param(
            "Demo.imp_self'",
            "by\n  intro h\n  exact h\n#exit",
            Verdict.REJECTED,
            "contains the command `#exit`",
            id="exit-after-the-proof",
        ),
        pytest.param(
            "Demo.imp_self'",
            "by\n  intro h\n  exact h\n\ntheorem imp_self' : True := trivial",
            Verdict.REJECTED,
            "contains the command `theorem`",
            id="redefines-the-theorem",
        ),
        pytest.param(
            "Demo.imp_self'",
            "by\n  intro h\n  exact h -- no sorry needed",
            Verdict.ACCEPTED,
            None,
            id="sorry-in-a-comment",
        ),
    ],
)
def test_verdicts(repo, name, proof, verdict, reason):
    result = _check(repo, name, proof)
    assert result.verdict is verdict
    assert not result.only_elsewhere  # every rejection here blames the proof
    if reason is None:
        assert result.reasons == () and result.accepted
    else:
        assert any(reason in r for r in result.reasons), result.reasons


def test_accepted_result_and_the_users_file_untouched(repo):
    result = _check(repo, "Demo.imp_self'", "by\n  intro h\n  exact h", process=True)
    payload = result.to_json()
    assert payload["verdict"] == "accepted" and payload["theorem"] == "Demo.imp_self'"
    assert payload["diagnostics"] == [
        {"severity": "warning", "position": [7, 9], "message": "declaration uses 'sorry'"}
    ]
    assert (repo / "Demo.lean").read_text(encoding="utf-8") == SOURCE


def test_timeout_is_unknown_not_rejected(repo):
    result = _check(repo, "Demo.imp_self'", "by\n  intro h\n  spin", process=True, timeout=1.0)
    assert result.verdict is Verdict.TIMEOUT
    assert not result.accepted


def test_error_elsewhere_in_the_file_rejects(repo):
    script = {**SCRIPT, "errors": [{"line": 1, "column": 0, "message": "unknown namespace"}]}
    result = _check(repo, "Demo.imp_self'", "by\n  intro h\n  exact h", script=script)
    assert result.verdict is Verdict.REJECTED and result.only_elsewhere  # the file is at fault
    assert "error elsewhere in the file (line 1): unknown namespace" in result.reasons
    worse = _check(repo, "Demo.imp_self'", "by\n  intro h", script=script)  # and the proof too
    assert worse.verdict is Verdict.REJECTED and not worse.only_elsewhere


UNBUILT = "-- the file imports its package's module, which nothing built\nimport Book.Basic\n\n" + SOURCE


def test_an_import_that_failed_blames_the_checkout_not_the_proof(repo, monkeypatch, tmp_path):
    """The 2021 Lean's words for an import it cannot find ("unknown package") stand at the
    header, and every declaration after it fails too, the theorem's own: the checkout is not
    built, and the proof may be sound. Once built (the fake's build record), it is accepted."""
    fake_lean.activate(monkeypatch, tmp_path / "bin2", {**SCRIPT, "imports_need_build": True})
    (repo / "Demo.lean").write_text(UNBUILT, encoding="utf-8")
    theorem = fake_lean.theorem_record(UNBUILT, "Demo.imp_self'", "Demo.lean")
    runner = LeanRunner.for_project(repo)
    result = check_proof(repo, theorem, "by\n  intro h\n  exact h", runner=runner, timeout=20)
    assert (result.verdict, result.only_elsewhere) == (Verdict.REJECTED, True)
    assert result.reasons == ("an import failed (line 2; are the imports built?): unknown package 'Book'",)
    (repo / ".lake" / "build").mkdir(parents=True)
    (repo / ".lake" / "build" / "fake-built").write_text("Book.Basic\n", encoding="utf-8")
    assert check_proof(repo, theorem, "by\n  intro h\n  exact h", runner=runner, timeout=20).accepted


# A placeholder definition, a theorem about it, and a theorem whose proof may use a sorry lemma.
AUDITED = """\
namespace Demo

def secret : Nat := sorry

theorem about_secret : secret = secret := by
  sorry

theorem imp_self' (p : Prop) : p → p := by
  sorry

theorem two : 1 + 1 = 2 := sorry

end Demo
"""
AUDIT_LINE = AUDITED.count("\n") + 1  # where the final check puts `#print axioms`
_IMP = {
    "goals": "p : Prop\n⊢ p → p",
    "terms": {"fun h => h": {"done": True}, "fun h => (fun _ => h) two": {"done": True}},
}
AUDIT_SCRIPT = {"theorems": {"Demo.about_secret": {"terms": {"rfl": {"done": True}}}, "Demo.imp_self'": _IMP}}


def _audit(tmp_path: Path, *, name: str, proof: str, script: dict, source: str = AUDITED, rename=None):
    """The final check of ``proof`` for ``name`` in ``source``, by the fake Lean in memory."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "Demo.lean").write_text(source, encoding="utf-8")
    theorem = fake_lean.theorem_record(source, name, "Demo.lean")
    if rename:
        theorem = dataclasses.replace(theorem, full_name=rename)
    return check_proof(repo, theorem, proof, runner=fake_lean.in_memory(script), timeout=20)


@pytest.mark.parametrize(
    ("name", "proof", "extra", "verdict", "axioms", "nonstandard"),
    [
        pytest.param("Demo.imp_self'", "fun h => h", {}, Verdict.ACCEPTED, (), (), id="no-axioms"),
        pytest.param(
            "Demo.imp_self'",
            "fun h => h",
            {"axioms": ["propext", "Lean.ofReduceBool", "Classical.choice"]},
            Verdict.ACCEPTED,
            ("Classical.choice", "Lean.ofReduceBool", "propext"),
            ("Lean.ofReduceBool",),
            id="nonstandard-axiom-listed",
        ),
        pytest.param(
            "Demo.about_secret", "rfl", {}, Verdict.VACUOUS, ("sorryAx",), ("sorryAx",), id="sorry-definition"
        ),
        pytest.param(
            "Demo.imp_self'",
            "fun h => (fun _ => h) two",
            {},
            Verdict.VACUOUS,
            ("sorryAx",),
            ("sorryAx",),
            id="proof-uses-a-sorry-lemma",
        ),
    ],
)
@pytest.mark.parametrize("headers", [False, True], ids=["bare-info", "info-header"])
def test_the_axiom_audit(tmp_path, name, proof, extra, verdict, axioms, nonstandard, headers):
    entry = {**AUDIT_SCRIPT["theorems"][name], **extra}
    script = {"info_headers": headers, "theorems": {**AUDIT_SCRIPT["theorems"], name: entry}}
    result = _audit(tmp_path, name=name, proof=proof, script=script)
    assert (result.verdict, result.axioms, result.nonstandard_axioms) == (verdict, axioms, nonstandard)
    assert result.audit_note == "" and result.accepted is (verdict is Verdict.ACCEPTED)
    if verdict is Verdict.VACUOUS:
        assert result.reasons == (
            f"{name} depends on sorryAx: a sorry stands in its statement or in a declaration its proof uses, "
            "so the proof may prove nothing",
        )
    # The audit's message is no diagnostic, nor a part of one (printed bare, it follows the
    # last sorry warning of the file).
    assert not any("axioms" in d.message for d in result.diagnostics), result.diagnostics
    assert [d.message for d in result.diagnostics if d.start.line >= AUDIT_LINE] == []


@pytest.mark.parametrize(
    ("source", "rename", "errors", "verdict", "note"),
    [
        pytest.param(
            "module\n\n" + AUDITED, None, [], Verdict.ACCEPTED, "cannot use `#print axioms` in a `module`", id="module"
        ),
        pytest.param(AUDITED, "Demo.renamed", [], Verdict.ACCEPTED, "unknown constant 'Demo.renamed'", id="unknown"),
        pytest.param(AUDITED + "#exit\n", None, [], Verdict.ACCEPTED, "Lean printed no axioms", id="nothing-printed"),
        pytest.param(
            AUDITED,
            None,
            [{"line": AUDIT_LINE, "column": 0, "message": "unexpected token '#print'; expected term"}],
            Verdict.REJECTED,
            "",
            id="the-files-own-error-at-the-end",
        ),
    ],
)
def test_an_audit_lean_does_not_make_is_unknown_not_a_rejection(tmp_path, source, rename, errors, verdict, note):
    script = {**AUDIT_SCRIPT, "errors": errors}
    result = _audit(tmp_path, name="Demo.imp_self'", proof="fun h => h", script=script, source=source, rename=rename)
    assert result.verdict is verdict, result.reasons
    assert note in result.audit_note and bool(result.audit_note) is bool(note)
    if verdict is Verdict.ACCEPTED:
        assert result.axioms is None
    else:
        assert result.reasons == (
            f"error elsewhere in the file (line {AUDIT_LINE}): unexpected token '#print'; expected term",
        )


def test_a_proof_after_which_lean_silently_lacks_the_theorem_is_rejected(tmp_path):
    """Lean reports no error, but the theorem is not declared after the file (the audit
    finds no such constant), while with `sorry` for its proof it is: the proof lost it."""
    imp = {**_IMP, "steps": {"intro h\nrename List α => xs": {"done": True, "undeclared": True}}}
    script = {"theorems": {**AUDIT_SCRIPT["theorems"], "Demo.imp_self'": imp}}
    result = _audit(tmp_path, name="Demo.imp_self'", proof="by\n  intro h\n  rename List α => xs", script=script)
    assert result.verdict is Verdict.REJECTED and result.axioms is None and result.audit_note == ""
    assert result.reasons == (
        "Lean reported no error, but Demo.imp_self' is not declared after the file with this proof (it is with "
        "`sorry` in its place): something in the proof stopped Lean silently",
    )


@pytest.mark.parametrize(
    ("output", "name", "axioms", "rest"),
    [
        pytest.param(
            "'Demo.two' depends on axioms: [propext, sorryAx]\n", "Demo.two", ("propext", "sorryAx"), "\n", id="bare"
        ),
        pytest.param("'Demo.two' does not depend on any axioms\n", "Demo.two", (), "\n", id="none"),
        pytest.param(
            "F.lean:9:0: info: 'Demo.two' does not depend on any axioms\n", "Demo.two", (), "\n", id="with-a-header"
        ),
        pytest.param(
            "F.lean:3:8: warning: declaration uses 'sorry'\n"
            "'a.b' depends on axioms: [propext,\n Classical.choice,\n Quot.sound]\n",
            "a.b",
            ("propext", "Classical.choice", "Quot.sound"),
            "F.lean:3:8: warning: declaration uses 'sorry'\n\n",
            id="wrapped-after-a-warning",
        ),
        pytest.param(
            "'Demo.imp_self'' does not depend on any axioms", "Demo.imp_self'", (), "", id="prime-in-the-name"
        ),
        pytest.param(
            "'_private.Demo.0.Demo.hidden' depends on axioms: [sorryAx]", "Demo.hidden", ("sorryAx",), "", id="private"
        ),
        pytest.param("'Demo.«my thm»' does not depend on any axioms", "Demo.my thm", (), "", id="escaped"),
        pytest.param(
            "'Demo.two' depends on axioms: [sorryAx]\n"
            "'Demo.two' depends on axioms: [propext]\n"
            "'Other' depends on axioms: [x]",
            "Demo.two",
            ("propext",),
            "'Demo.two' depends on axioms: [sorryAx]\n\n'Other' depends on axioms: [x]",
            id="the-last-for-the-name",
        ),
        pytest.param("'Demo.twoo' does not depend on any axioms", "Demo.two", None, None, id="another-name"),
        pytest.param("F.lean:1:0: error: unknown constant 'Demo.two'", "Demo.two", None, None, id="not-printed"),
    ],
)
def test_reading_print_axioms(output, name, axioms, rest):
    found = find_axioms(output, name)
    assert (None, None) == (axioms, rest) if found is None else (found.axioms, found.rest) == (axioms, rest)


@pytest.mark.lean
def test_real_lean_accepts_a_proof_and_rejects_sorry(tmp_path):
    source = "theorem imp_self' (p : Prop) : p → p := by\n  sorry\n"
    (tmp_path / "Real.lean").write_text(source, encoding="utf-8")
    theorem = fake_lean.theorem_record(source, "imp_self'", "Real.lean")
    runner = LeanRunner.for_project(tmp_path)
    accepted = check_proof(tmp_path, theorem, "by\n  intro h\n  exact h", runner=runner, timeout=120)
    assert accepted.accepted and accepted.axioms == (), (accepted.reasons, accepted.audit_note)
    wrong = check_proof(tmp_path, theorem, "by\n  intro h", runner=runner, timeout=120)
    assert wrong.verdict is Verdict.REJECTED and "unsolved goals" in " ".join(wrong.reasons)


@pytest.mark.lean
def test_real_lean_finds_a_theorem_about_a_sorry_definition_vacuous(tmp_path):
    # Term-mode sorries: the 2021 Lean 4 has `sorry` as a term but not as a tactic.
    source = "def secret : Nat := sorry\n\ntheorem about_secret : secret = secret := sorry\n"
    (tmp_path / "Vacuous.lean").write_text(source, encoding="utf-8")
    theorem = fake_lean.theorem_record(source, "about_secret", "Vacuous.lean")
    result = check_proof(tmp_path, theorem, "rfl", runner=LeanRunner.for_project(tmp_path), timeout=120)
    assert result.verdict is Verdict.VACUOUS and result.axioms == ("sorryAx",), (result.reasons, result.audit_note)


@pytest.mark.lean
def test_real_lean_accepts_an_example_projects_own_proof(examples_dir):
    from lean_env.records import TheoremStatus
    from lean_env.trace.source import extract_file

    project = next((p.parent for p in sorted(examples_dir.rglob("lakefile.*")) if ".lake" not in p.parts), None)
    if project is None:
        pytest.skip(f"no Lake project under {examples_dir}")
    if shutil.which("lake") is None:
        # A Lake project runs as `lake env lean FILE`; a lean without lake (a hand-built one) cannot.
        pytest.skip(f"lean is on PATH but lake is not; the example {project.name} is a Lake project")
    for file in sorted(project.rglob("*.lean")):
        if ".lake" in file.parts or file.name.startswith("lakefile"):
            continue
        rel = file.relative_to(project).as_posix()
        proven = [
            t
            for t in extract_file(file.read_text(encoding="utf-8"), path=rel).theorems
            if t.status is TheoremStatus.PROVEN and t.proof and t.proof_start
        ]
        if proven:
            break
    else:
        pytest.skip(f"no proven theorem in {project}")
    theorem = proven[0]
    result = check_proof(project, theorem, theorem.proof, runner=LeanRunner.for_project(project), timeout=900)
    assert result.accepted, result.reasons


OLD_LEAN = os.environ.get("LEANAGENT_TEST_OLD_LEAN")


@pytest.mark.skipif(not OLD_LEAN, reason="LEANAGENT_TEST_OLD_LEAN does not name the 2021 Lean's bin directory")
def test_on_the_2021_lean_a_theorem_it_drops_without_a_word_is_rejected(tmp_path, monkeypatch):
    """That Lean compiles `rename List α => xs` (α unbound) without an error, and without
    the theorem: only the audit, then the file with `sorry`, shows that the proof lost it."""
    monkeypatch.setenv("PATH", f"{OLD_LEAN}{os.pathsep}{os.environ.get('PATH', '')}")
    source = "theorem t (n : Nat) : n = n := by\n  rfl\n"
    (tmp_path / "Old.lean").write_text(source, encoding="utf-8")
    theorem = fake_lean.theorem_record(source, "t", "Old.lean")
    runner = LeanRunner.for_project(tmp_path)
    dropped = check_proof(tmp_path, theorem, "by\n  rename List α => xs\n  rfl", runner=runner, timeout=60)
    assert dropped.verdict is Verdict.REJECTED and "is not declared after the file" in dropped.reasons[0]
    assert check_proof(tmp_path, theorem, "by\n  rfl", runner=runner, timeout=60).accepted


@pytest.mark.skipif(not OLD_LEAN, reason="LEANAGENT_TEST_OLD_LEAN does not name the 2021 Lean's bin directory")
def test_on_the_2021_lean_an_import_it_cannot_find_blames_the_checkout(tmp_path, monkeypatch):
    """What `leanagent recheck` met in a clone whose .lake/build was gone: `unknown package`
    at the header, then `unknown identifier 'True'` in the theorem. Not a broken proof."""
    monkeypatch.setenv("PATH", f"{OLD_LEAN}{os.pathsep}{os.environ.get('PATH', '')}")
    source = "import Book.Basic\n\ntheorem t : True := by\n  sorry\n"
    (tmp_path / "Old.lean").write_text(source, encoding="utf-8")
    theorem = fake_lean.theorem_record(source, "t", "Old.lean")
    result = check_proof(tmp_path, theorem, "by\n  trivial", runner=LeanRunner.for_project(tmp_path), timeout=60)
    assert (result.verdict, result.only_elsewhere) == (Verdict.REJECTED, True), result.reasons
    assert result.reasons == ("an import failed (line 1; are the imports built?): unknown package 'Book'",)
