"""``leanagent check`` and ``leanagent env doctor`` against the fake lean."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakes import fake_lean

from agent.cli import main as cli

SOURCE = fake_lean.DEMO_SOURCE

SCRIPT = {
    "theorems": {
        "Demo.imp_self'": {
            "goals": "p : Prop\n⊢ p → p",
            "steps": {
                "intro h": {"goals": "p : Prop\nh : p\n⊢ p"},
                "intro h\nexact h": {"done": True},
                "intro h\nexact x": {"error": "unknown identifier 'x'"},
            },
        }
    }
}

GOOD = "by\n  intro h\n  exact h"
BAD = "by\n  intro h\n  exact x"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    return fake_lean.demo_repo(tmp_path, monkeypatch, SCRIPT)


def _check(repo: Path, *extra: str, proof: str = GOOD, name: str = "Demo.imp_self'") -> list[str]:
    return ["check", str(repo), "Demo.lean", name, "--proof", proof, "--timeout", "20", *extra]


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("proof", "code", "verdict"),
    [pytest.param(GOOD, 0, "accepted", id="accepted"), pytest.param(BAD, 1, "rejected", id="rejected")],
)
def test_check_verdict_and_exit_code(repo, capsys, proof, code, verdict):
    assert cli.main(_check(repo, "--json", proof=proof)) == code
    payload = _json(capsys)
    assert payload["verdict"] == verdict and payload["theorem"] == "Demo.imp_self'"


def test_check_human_output_names_the_reason(repo, capsys):
    assert cli.main(_check(repo, proof=BAD)) == 1
    out = capsys.readouterr().out
    assert "Demo.imp_self': rejected" in out and "unknown identifier 'x'" in out


def test_check_of_a_vacuous_proof_exits_1_and_writes_nothing_back(repo, capsys):
    """The statement of Demo.on_secret uses a `sorry` definition: Lean compiles the file, the
    audit finds sorryAx, and --diff gives no diff."""
    source = SOURCE.replace(
        "end Demo", "def secret : Nat := sorry\n\ntheorem on_secret : secret = secret := sorry\n\nend Demo"
    )
    (repo / "Demo.lean").write_text(source, encoding="utf-8")
    script = {"theorems": {"Demo.on_secret": {"terms": {"rfl": {"done": True}}}}}
    (repo.parent / "bin" / "script.json").write_text(json.dumps(script), encoding="utf-8")
    assert cli.main(_check(repo, "--diff", "--json", proof="rfl", name="Demo.on_secret")) == 1
    payload = _json(capsys)
    assert (payload["verdict"], payload["axioms"], payload["accepted"]) == ("vacuous", ["sorryAx"], False)
    assert "diff" not in payload and "depends on sorryAx" in payload["reasons"][0]
    assert cli.main(_check(repo, proof="rfl", name="Demo.on_secret")) == 1
    out = capsys.readouterr().out
    assert "Demo.on_secret: vacuous" in out and "axioms: sorryAx (non-standard: sorryAx)" in out


def test_check_names_the_axioms_of_an_accepted_proof(repo, capsys):
    assert cli.main(_check(repo)) == 0
    assert "axioms: none" in capsys.readouterr().out


def test_check_replays_tactics_in_the_file_backend(repo, capsys):
    assert cli.main(_check(repo, "--proof-backend", "file", "--json", proof=BAD)) == 1
    steps = _json(capsys)["replay"]
    assert [s["outcome"] for s in steps] == ["TacticState", "LeanError"]
    assert steps[0]["goals"] == "p : Prop\nh : p\n⊢ p"
    assert steps[1]["error"] == "unknown identifier 'x'"


def test_check_diff_of_an_accepted_proof(repo, capsys):
    assert cli.main(_check(repo, "--diff", "--json")) == 0
    diff = _json(capsys)["diff"]
    assert "-  sorry\n+  intro h\n+  exact h\n" in diff
    assert (repo / "Demo.lean").read_text(encoding="utf-8") == SOURCE


def test_check_apply_commits_on_a_branch(repo, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    assert cli.main(_check(repo, "--apply", "--branch", "proofs", "--json")) == 0
    assert _json(capsys)["branch"] == "proofs"
    shown = subprocess.run(
        ["git", "-C", str(repo), "show", "proofs:Demo.lean"], capture_output=True, text=True, check=True
    )
    assert "intro h\n  exact h" in shown.stdout
    assert (repo / "Demo.lean").read_text(encoding="utf-8") == SOURCE


def test_check_apply_outside_git_shows_the_verdict_then_the_error(repo, capsys):
    assert cli.main(_check(repo, "--apply")) == 2
    captured = capsys.readouterr()
    assert "Demo.imp_self': accepted" in captured.out
    assert "not a git repository" in captured.err and captured.err.count("\n") == 1


@pytest.mark.parametrize(
    ("file", "name", "proof", "message"),
    [
        pytest.param(
            "Demo.lean",
            "Demo.nope",
            GOOD,
            "no theorem Demo.nope in Demo.lean; theorems there: Demo.imp_self', Demo.two",
            id="unknown-theorem",
        ),
        pytest.param("Missing.lean", "Demo.imp_self'", GOOD, "cannot read", id="missing-file"),
        pytest.param("../x.lean", "Demo.imp_self'", GOOD, "is not inside the repository", id="outside"),
        pytest.param("Demo.lean", "Demo.imp_self'", "   ", "the proof is empty", id="empty-proof"),
    ],
)
def test_check_bad_input_exits_2(repo, capsys, file, name, proof, message):
    assert cli.main(["check", str(repo), file, name, "--proof", proof]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf"])
def test_check_bad_timeout_exits_2(repo, capsys, timeout):
    assert cli.main([*_check(repo)[:-2], "--timeout", timeout]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --timeout: must be a positive number of seconds" in err


def test_doctor_on_a_missing_project_exits_2(capsys, tmp_path):
    assert cli.main(["env", "doctor", "--project", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "project directory" in err and "does not exist" in err


def test_check_without_lean_exits_2_with_the_install_sentence(repo, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert cli.main(_check(repo)) == 2
    err = capsys.readouterr().err
    assert "No Lean toolchain found (lean is not on PATH)" in err and "elan" in err


def test_doctor_reports_the_fake_toolchain(repo, capsys):
    assert cli.main(["env", "doctor", "--project", str(repo), "--json"]) == 0
    payload = _json(capsys)
    tools = {t["name"]: t for t in payload["tools"]}
    assert tools["lean"]["found"] and tools["lean"]["version"] == fake_lean.VERSION
    assert tools["lake"]["version"] == fake_lean.LAKE_VERSION
    assert payload["backends"]["file"] is True
    assert set(tools) == {"lean", "lake", "elan", "git", "lean REPL", "lean-dojo"}


def test_doctor_build_repl_builds_for_the_projects_lean(capsys, monkeypatch, tmp_path):
    from fakes.repl_support import FAKE_GIT_SH, FAKE_LAKE_SH, executable

    bin_dir = tmp_path / "bin"
    executable(bin_dir / "git", FAKE_GIT_SH)
    executable(bin_dir / "lake", FAKE_LAKE_SH)
    monkeypatch.setenv("PATH", f"{bin_dir}:/bin:/usr/bin")
    monkeypatch.setenv("TOOL_LOG", str(tmp_path / "tools.log"))
    monkeypatch.delenv("LEANAGENT_REPL", raising=False)
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    project = tmp_path / "project"
    project.mkdir()
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n")
    data = tmp_path / "data"
    args = ["--data-dir", str(data), "env", "doctor", "--project", str(project), "--build-repl"]
    assert cli.main([*args, "--json"]) == 2  # no lean: exit 2, but the REPL is built
    tools = {t["name"]: t for t in _json(capsys)["tools"]}
    assert tools["lean REPL"]["found"] and tools["lean REPL"]["version"] == "leanprover/lean4:v4.20.0"
    assert str(data / "repl" / "repl-v4.20.0") in tools["lean REPL"]["path"]
    assert "--branch v4.20.0" in (tmp_path / "tools.log").read_text()


def test_doctor_without_lean_says_how_to_install(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    assert cli.main(["env", "doctor", "--project", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "lean       MISSING" in out and "elan-init.sh" in out
    assert "file unavailable" in out
