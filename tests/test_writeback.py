"""Write-back: bottom-up edits, a diff that git applies, and a branch that touches nothing else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fakes import fake_lean

from lean_env.lean.runner import LeanRunner
from lean_env.proofs.writeback import (
    ProofEdit,
    WriteBackError,
    apply_edits,
    commit_to_branch,
    default_branch,
    rebase_edits,
    render_diff,
    unified_diff,
)

SOURCE = """\
namespace Demo

theorem a (p : Prop) : p → p := by
  sorry

theorem b : 1 + 1 = 2 := sorry

section
  theorem c (p q : Prop) (hp : p) (hq : q) : p ∧ q := by sorry
end

end Demo
"""

EXPECTED = """\
namespace Demo

theorem a (p : Prop) : p → p := by
  intro h
  exact h

theorem b : 1 + 1 = 2 := rfl

section
  theorem c (p q : Prop) (hp : p) (hq : q) : p ∧ q := by
    constructor
    · exact hp
    · exact hq
end

end Demo
"""

PROOFS = {
    "Demo.a": "by\n  intro h\n  exact h",
    "Demo.b": "rfl",
    "Demo.c": "by\n  constructor\n  · exact hp\n  · exact hq",
}

SCRIPT = {
    "theorems": {
        "Demo.a": {"goals": "p : Prop\n⊢ p → p", "steps": {"intro h\nexact h": {"done": True}}},
        "Demo.b": {"terms": {"rfl": {"done": True}}},
        "Demo.c": {"goals": "⊢ p ∧ q", "steps": {"constructor\n· exact hp\n· exact hq": {"done": True}}},
    }
}


def _edits(text: str = SOURCE, path: str = "Demo.lean") -> list[ProofEdit]:
    return [ProofEdit(fake_lean.theorem_record(text, n, path), p) for n, p in PROOFS.items()]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    # No global git config: exercises the fallback identity and keeps the test hermetic.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "Demo.lean").write_text(SOURCE, encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "Demo.lean")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    return root


@pytest.mark.parametrize("order", [pytest.param(o, id="-".join(o)) for o in (("a", "b", "c"), ("c", "a", "b"))])
def test_several_sorries_replaced_bottom_up_with_indentation(order):
    edits = {e.theorem.full_name: e for e in _edits()}
    assert apply_edits(SOURCE, [edits[f"Demo.{n}"] for n in order]) == EXPECTED


def test_written_file_is_accepted_by_the_fake_lean(tmp_path, monkeypatch):
    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)
    (tmp_path / "Demo.lean").write_text(apply_edits(SOURCE, _edits()), encoding="utf-8")
    run = LeanRunner.for_project(tmp_path).run(tmp_path / "Demo.lean", timeout=20)
    assert run.returncode == 0 and run.diagnostics == ()
    (tmp_path / "Sorry.lean").write_text(SOURCE, encoding="utf-8")
    run = LeanRunner.for_project(tmp_path).run(tmp_path / "Sorry.lean", timeout=20)
    assert [d.start.line for d in run.diagnostics if d.is_sorry_warning] == [3, 6, 9]


def test_overlapping_edits_are_refused():
    edit = _edits()[0]
    with pytest.raises(WriteBackError, match="overlap"):
        apply_edits(SOURCE, [edit, ProofEdit(edit.theorem, "by\n  simp")])


def test_diff_applies_with_git_and_leaves_the_file_alone(repo, tmp_path):
    diff = render_diff(repo, _edits())
    assert diff.startswith("--- a/Demo.lean\n+++ b/Demo.lean\n")
    assert (repo / "Demo.lean").read_text(encoding="utf-8") == SOURCE
    (tmp_path / "patch.diff").write_text(diff, encoding="utf-8")
    _git(repo, "apply", "--check", str(tmp_path / "patch.diff"))
    _git(repo, "apply", str(tmp_path / "patch.diff"))
    assert (repo / "Demo.lean").read_text(encoding="utf-8") == EXPECTED


def test_apply_creates_a_branch_with_one_commit_and_touches_nothing_else(repo):
    head, status = _git(repo, "rev-parse", "HEAD"), _git(repo, "status", "--porcelain")
    result = commit_to_branch(repo, _edits(), branch="leanagent/proofs-test")
    assert result.branch == "leanagent/proofs-test" and result.files == ("Demo.lean",)
    assert _git(repo, "rev-parse", "HEAD") == head
    assert _git(repo, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert _git(repo, "status", "--porcelain") == status == ""
    assert (repo / "Demo.lean").read_text(encoding="utf-8") == SOURCE
    assert _git(repo, "rev-list", "--count", f"{head}..{result.branch}") == "1"
    assert _git(repo, "rev-parse", f"{result.branch}^") == head
    assert _git(repo, "show", f"{result.branch}:Demo.lean") + "\n" == EXPECTED
    assert "Demo.a" in _git(repo, "log", "-1", "--format=%B", result.branch)


def test_apply_refuses_a_dirty_file_and_an_existing_branch(repo):
    commit_to_branch(repo, _edits(), branch="taken")
    with pytest.raises(WriteBackError, match="already exists"):
        commit_to_branch(repo, _edits(), branch="taken")
    (repo / "Demo.lean").write_text(SOURCE + "\n-- local change\n", encoding="utf-8")
    with pytest.raises(WriteBackError, match="differs from HEAD"):
        commit_to_branch(repo, _edits(SOURCE + "\n-- local change\n"), branch="other")
    with pytest.raises(WriteBackError, match="not a valid"):
        commit_to_branch(repo, _edits(), branch="bad..name")


def test_a_default_name_taken_within_the_same_second_gets_a_number(repo, monkeypatch):
    import lean_env.proofs.writeback as writeback

    monkeypatch.setattr(writeback, "default_branch", lambda: "leanagent/proofs-20261129-210507")
    names = [commit_to_branch(repo, _edits()).branch for _ in range(3)]
    assert names == [
        "leanagent/proofs-20261129-210507",
        "leanagent/proofs-20261129-210507-2",
        "leanagent/proofs-20261129-210507-3",
    ]


def test_default_branch_is_dated():
    from datetime import UTC, datetime

    assert default_branch(datetime(2026, 11, 29, 21, 5, 7, tzinfo=UTC)) == "leanagent/proofs-20261129-210507"


# The upstream branch moved on after the proofs were checked at the base commit: what each
# change of Demo.lean does to the three proofs (None: the file is removed).
_MOVED = SOURCE.replace("namespace Demo\n", "namespace Demo\n\ntheorem extra : True := trivial\n")
UPSTREAM = [
    pytest.param(_MOVED, {}, id="moved-down"),
    pytest.param(SOURCE.replace("b : 1 + 1 = 2", "b :\n    1 + 1 = 2"), {}, id="statement-reformatted"),
    pytest.param(SOURCE.replace("b : 1 + 1 = 2", "b : 2 + 0 = 2"), {"Demo.b": "its statement changed"}, id="changed"),
    pytest.param(SOURCE.replace("= 2 := sorry", "= 2 := rfl"), {"Demo.b": "it is proved there already"}, id="proved"),
    pytest.param(
        SOURCE.replace("theorem b : 1 + 1 = 2 := sorry\n", ""),
        {"Demo.b": "Demo.lean has no theorem Demo.b any more"},
        id="removed",
    ),
    pytest.param(None, dict.fromkeys(PROOFS, "Demo.lean is gone"), id="file-removed"),
]


@pytest.mark.parametrize(("upstream", "stale"), UPSTREAM)
def test_proofs_go_onto_the_newest_commit_or_are_stale(repo, tmp_path, upstream, stale):
    checked = _git(repo, "rev-parse", "HEAD")
    if upstream is None:
        _git(repo, "rm", "-q", "Demo.lean")
    else:
        (repo / "Demo.lean").write_text(upstream, encoding="utf-8")
        _git(repo, "add", "Demo.lean")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "upstream moves on")
    onto = _git(repo, "rev-parse", "HEAD")

    fresh, left_out = rebase_edits(repo, _edits(), checked=checked, onto=onto)
    assert {p.theorem: p.reason for p in left_out} == {name: f"{why} at {onto[:12]}" for name, why in stale.items()}
    assert sorted(e.theorem.full_name for e in fresh) == sorted(set(PROOFS) - set(stale))
    if not fresh:
        return
    # Positions are the new head's: the diff applies there, and the branch sits on it.
    (tmp_path / "fresh.diff").write_text(render_diff(repo, fresh, base=onto), encoding="utf-8")
    _git(repo, "apply", "--check", str(tmp_path / "fresh.diff"))
    branch = commit_to_branch(repo, fresh, branch="fresh", base=onto)
    assert _git(repo, "rev-parse", f"{branch.branch}^") == onto
    written = _git(repo, "show", "fresh:Demo.lean")
    assert all(line in written for e in fresh for line in e.proof.split("\n")[1:]), written
    assert ("theorem extra" in written) is (upstream == _MOVED)


def test_a_branch_on_another_commit_reads_that_commit_not_the_working_tree(repo):
    """The working tree may hold anything (a clone's checkout of an older commit): with a
    base, the files are that commit's."""
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "Demo.lean").write_text("-- not the committed file\n", encoding="utf-8")
    assert commit_to_branch(repo, _edits(), branch="on-base", base=base).files == ("Demo.lean",)
    assert _git(repo, "show", "on-base:Demo.lean") + "\n" == EXPECTED
    assert render_diff(repo, _edits(), base=base) == unified_diff({"Demo.lean": (SOURCE, EXPECTED)})
