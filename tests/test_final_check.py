"""The final check: whole file with the proof in place, no error, no sorry for the theorem."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fakes import fake_lean

from lean_env.lean.runner import LeanRunner
from lean_env.proofs.final_check import Verdict, check_proof

SOURCE = fake_lean.DEMO_SOURCE

SCRIPT = {
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
    }
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    return fake_lean.demo_repo(tmp_path, monkeypatch, SCRIPT)


def _check(repo: Path, name: str, proof: str, timeout: float = 20.0):
    theorem = fake_lean.theorem_record(SOURCE, name, "Demo.lean")
    return check_proof(repo, theorem, proof, runner=LeanRunner.for_project(repo), timeout=timeout)


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
    if reason is None:
        assert result.reasons == () and result.accepted
    else:
        assert any(reason in r for r in result.reasons), result.reasons


def test_accepted_result_and_the_users_file_untouched(repo):
    result = _check(repo, "Demo.imp_self'", "by\n  intro h\n  exact h")
    payload = result.to_json()
    assert payload["verdict"] == "accepted" and payload["theorem"] == "Demo.imp_self'"
    assert payload["diagnostics"] == [
        {"severity": "warning", "position": [7, 9], "message": "declaration uses 'sorry'"}
    ]
    assert (repo / "Demo.lean").read_text(encoding="utf-8") == SOURCE


def test_timeout_is_unknown_not_rejected(repo):
    result = _check(repo, "Demo.imp_self'", "by\n  intro h\n  spin", timeout=1.0)
    assert result.verdict is Verdict.TIMEOUT
    assert not result.accepted


def test_error_elsewhere_in_the_file_rejects(repo, monkeypatch, tmp_path):
    script = {**SCRIPT, "errors": [{"line": 1, "column": 0, "message": "unknown namespace"}]}
    fake_lean.activate(monkeypatch, tmp_path / "bin2", script)
    result = _check(repo, "Demo.imp_self'", "by\n  intro h\n  exact h")
    assert result.verdict is Verdict.REJECTED
    assert "error elsewhere in the file (line 1): unknown namespace" in result.reasons


@pytest.mark.lean
def test_real_lean_accepts_a_proof_and_rejects_sorry(tmp_path):
    source = "theorem imp_self' (p : Prop) : p → p := by\n  sorry\n"
    (tmp_path / "Real.lean").write_text(source, encoding="utf-8")
    theorem = fake_lean.theorem_record(source, "imp_self'", "Real.lean")
    runner = LeanRunner.for_project(tmp_path)
    assert check_proof(tmp_path, theorem, "by\n  intro h\n  exact h", runner=runner, timeout=120).accepted
    wrong = check_proof(tmp_path, theorem, "by\n  intro h", runner=runner, timeout=120)
    assert wrong.verdict is Verdict.REJECTED and "unsolved goals" in " ".join(wrong.reasons)


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
