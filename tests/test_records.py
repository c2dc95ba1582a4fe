"""The shared records and the proof-environment result types."""

import pytest
from builders import theorem

from lean_env.interactive.interface import TacticState, hypothesis_names, normalize_goals
from lean_env.records import LeanFile, Position, RepoSpec, TheoremStatus, TracedTactic


@pytest.mark.parametrize(
    ("proof", "status", "steps", "expected"),
    [
        pytest.param("by\n  simp\n  rfl", TheoremStatus.PROVEN, 2, 2, id="tactic-two-steps"),
        pytest.param("trivial", TheoremStatus.PROVEN, 0, 1, id="term-mode-counts-one"),
        pytest.param("by sorry", TheoremStatus.SORRY, 1, 0, id="sorry-has-no-steps"),
        pytest.param(None, TheoremStatus.PROVEN, 0, 0, id="no-proof-text"),
    ],
)
def test_num_steps(proof, status, steps, expected):
    tactics = tuple(TracedTactic(f"t{i}") for i in range(steps))
    record = theorem(
        "Foo.bar", path="Foo.lean", end=Position(3, 10), statement="theorem bar : True",
        proof=proof, status=status, tactics=tactics, proof_start=None,
    )  # fmt: skip
    assert record.num_steps == expected


def test_position_is_one_based_and_ordered():
    assert Position(2, 1) > Position(1, 80)
    with pytest.raises(ValueError, match="1-based"):
        Position(0, 1)


@pytest.mark.parametrize(
    ("spec", "remote", "name"),
    [
        (RepoSpec("https://github.com/a/b.git", "abc123"), True, "b"),
        (RepoSpec("/home/me/proj/"), False, "proj"),
        (RepoSpec("git@github.com:a/c.git"), True, "c"),
    ],
)
def test_repo_spec(spec, remote, name):
    assert spec.is_remote is remote
    assert spec.name == name


@pytest.mark.parametrize(
    ("location", "identity"),
    [
        pytest.param("https://github.com/a/b", "github.com/a/b", id="https"),
        pytest.param("https://github.com/a/b.git", "github.com/a/b", id="https-dot-git"),
        pytest.param("https://GitHub.com/a/b.git/", "github.com/a/b", id="host-case-trailing-slash"),
        pytest.param("http://me:secret@github.com:8080/a/b", "github.com/a/b", id="user-and-port-dropped"),
        pytest.param("git@github.com:a/b.git", "github.com/a/b", id="scp-like"),
        pytest.param("ssh://git@github.com/a/b.git", "github.com/a/b", id="ssh"),
        pytest.param("https://gitlab.com/a/b", "gitlab.com/a/b", id="other-host"),
        pytest.param("/home/me/demo-logic", "demo-logic", id="local-path"),
        pytest.param("/tmp/clone/demo-logic/", "demo-logic", id="local-path-elsewhere"),
        pytest.param("file:///srv/git/demo-logic.git", "demo-logic", id="file-url"),
    ],
)
def test_repo_identity_does_not_depend_on_the_checkout(location: str, identity: str) -> None:
    assert RepoSpec(location).identity == identity


def test_repo_spec_rejects_bad_commit():
    with pytest.raises(ValueError, match="commit"):
        RepoSpec("x", "bad commit")


def test_lean_file_module_name():
    assert LeanFile("Mathlib/Logic/Basic.lean").module == "Mathlib.Logic.Basic"


def test_states_compare_by_normalised_goals_not_handle():
    a = TacticState("x : Nat\n⊢  x = x", handle=1)
    b = TacticState("x : Nat ⊢ x = x", handle=7)
    assert a == b and hash(a) == hash(b)
    assert normalize_goals(" a \n\n b ") == "a b"
    assert TacticState("⊢ p\n\n⊢ q").num_goals == 2


def test_hypothesis_names_are_those_the_goal_lines_bind() -> None:
    pp = "case left\nx y : Nat\nh : ∀ (a : Nat),\n  a = a\na✝ : x = y\n⊢ x ∈ s\n\ncase right\nx : Nat\n⊢ y = x"
    assert hypothesis_names(pp) == ["x", "y", "h", "a✝", "x"]


def test_project_errors_survive_pickling_whatever_their_constructor_takes() -> None:
    """Ray workers send errors back pickled: the message and attributes arrive unchanged
    (a default pickle would call the constructor with the message and format it again)."""
    import pickle

    from lean_env.errors import LeanNotFoundError
    from lean_env.interactive.repl.errors import ReplCrashError

    for error in (LeanNotFoundError("lake"), ReplCrashError("the REPL died", returncode=1, stderr_tail="oom")):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error) and again.__dict__ == error.__dict__
