"""``leanagent run`` with no ``--generator`` on the fixture project tests/fixtures/suggest:
the built-in suggester proves its sorries against the fake lean (a neighbour's tactic
renamed, two steps of a neighbour, a premise template, a closing tactic), the proofs'
steps are stored for the next run, and the patch applies. Without Lean, the run still
succeeds and says in one line what proving needs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fakes import fake_lean

from agent.cli.main import main
from agent.generators.suggester import StepMemory
from curriculum.store import Store
from lean_env.records import TheoremStatus

FIXTURE = Path(__file__).parent / "fixtures" / "suggest"
# 16: the file's `+` lemmas share `k + 0 + 0 + 0 = k`'s notation, so their templates rank
# beside `rw [Suggest.add_zero']` and `decide` (retrieval/lexical.py).
SEARCH = ["--candidates", "16", "--max-expansions", "4", "--tactic-timeout", "20", "--check-timeout", "20"]
PROOFS = {
    "Suggest.le_self_m": "by\n  exact Nat.le_refl m",
    "Suggest.and_flip'": "by\n  exact ⟨hb, ha⟩",
    "Suggest.imp_self_q": "by\n  intro h\n  exact h",
    "Suggest.add_zero_thrice": "by\n  rw [Suggest.add_zero']",
    "Suggest.two_eq": "by\n  decide",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the fixture project, named in a repos file."""
    shutil.copytree(FIXTURE, tmp_path / "suggest", ignore=shutil.ignore_patterns("fake_lean.json"))
    (tmp_path / "repos.txt").write_text("suggest\n", encoding="utf-8")
    return tmp_path / "repos.txt"


def _run(capsys: pytest.CaptureFixture[str], data: Path, repos: Path, *extra: str) -> dict:
    capsys.readouterr()
    code = main(["--data-dir", str(data), "run", str(repos), "--tracer", "source", "--no-train", "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_the_suggester_proves_the_fixture_sorries_and_the_next_run_starts_from_them(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = json.loads((FIXTURE / "fake_lean.json").read_text(encoding="utf-8"))
    fake_lean.activate(monkeypatch, tmp_path / "bin", script)
    data = tmp_path / "data"

    payload = _run(capsys, data, project, "--proof-backend", "file", *SEARCH)
    attempts = {a["theorem"]: a for a in payload["proving"]["attempts"]}
    assert {name: a["outcome"] for name, a in attempts.items()} == dict.fromkeys(PROOFS, "proved")
    assert {name: a["proof"] for name, a in attempts.items()} == PROOFS
    patch = Path(payload["proving"]["patches"][str(tmp_path / "suggest")])
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=tmp_path / "suggest", check=True)

    # The found proofs are stored as their theorems' steps, with the goals the proof
    # environment showed and the premises they use: the next run's neighbours.
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        traces = store.latest_traces()
    (trace,) = traces
    proved = {t.full_name: t for t in trace.theorems if t.status is TheoremStatus.PROVED_BY_US}
    assert set(proved) == set(PROOFS)
    imp = proved["Suggest.imp_self_q"].tactics
    assert [(s.tactic, s.state_before) for s in imp] == [
        ("intro h", "q : Prop\n⊢ q → q"),
        ("exact h", "q : Prop\nh : q\n⊢ q"),
    ]
    assert proved["Suggest.add_zero_thrice"].tactics[0].premises == ("Suggest.add_zero'",)
    learned = [s for s in StepMemory.from_traces(traces).steps if s.traced]
    assert sorted(s.tactic for s in learned) == sorted(
        ["exact Nat.le_refl m", "exact ⟨hb, ha⟩", "intro h", "exact h", "rw [Suggest.add_zero']", "decide"]
    )

    again = _run(capsys, data, project, "--proof-backend", "file", *SEARCH)
    assert again["proving"]["attempts"] == [] and again["proving"]["targets"] == 0

    # A newer version of the project (the sorries still there, their statements the same)
    # gets the found proofs at ingest (the output says so): no targets; Lean checks each
    # carried proof at the new commit, and the patch is made against it.
    with (tmp_path / "suggest" / "Suggest.lean").open("a", encoding="utf-8") as f:
        f.write("-- a newer version\n")
    capsys.readouterr()
    args = [
        "--data-dir",
        str(data),
        "run",
        str(project),
        "--tracer",
        "source",
        "--no-train",
        "--proof-backend",
        "file",
    ]
    assert main([*args, *SEARCH]) == 0
    human = capsys.readouterr().out
    assert "5 found proofs carried over from an earlier version" in human
    report = json.loads(Path(human.rsplit("report: ", 1)[1].split(", ")[0]).read_text(encoding="utf-8"))
    [newer] = report["ingest"]
    assert (newer["status"], newer["sorries"], newer["carried_proofs"]) == ("added", 0, 5)
    assert report["proving"]["targets"] == 0
    checked = {a["theorem"]: a for a in report["proving"]["attempts"]}
    assert {name: a["proof"] for name, a in checked.items()} == PROOFS
    assert {(a["outcome"], a["expansions"], a["detail"].split(";")[0][:17]) for a in checked.values()} == {
        ("proved", 0, "carried over from")
    }
    patch = Path(report["proving"]["patches"][str(tmp_path / "suggest")])
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=tmp_path / "suggest", check=True)


def test_prove_without_a_generator_uses_the_suggester(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_lean.activate(monkeypatch, tmp_path / "bin", json.loads((FIXTURE / "fake_lean.json").read_text("utf-8")))
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", str(tmp_path / "suggest"), "--tracer", "source"]) == 0
    capsys.readouterr()
    args = ["--data-dir", data, "prove", "--theorem", "Suggest.le_self_m", "--proof-backend", "file", "--json", *SEARCH]
    assert main(args) == 0
    (attempt,) = json.loads(capsys.readouterr().out)["attempts"]
    assert (attempt["outcome"], attempt["proof"]) == ("proved", PROOFS["Suggest.le_self_m"])


# The bundled examples' sorries, and what Lean 4 core accepts of the closers for the easy
# ones (tested by hand against the toolchain's rules, not run here: no Lean on the machine).
EXAMPLE_GOALS = {
    "DemoArith.double_zero": ("⊢ double 0 = 0", ["rfl", "decide"]),
    "DemoArith.add_zero'": ("a : Nat\n⊢ a + 0 = a", ["rfl", "simp", "omega"]),
    "DemoArith.sumTo_two": ("⊢ sumTo 2 = 3", ["rfl", "decide"]),
    "DemoLogic.Answer.flip_no": ("⊢ Answer.no.flip = Answer.yes", ["rfl", "decide"]),
    "DemoLogic.or_self_iff'": ("p : Prop\n⊢ p ∨ p ↔ p", ["simp", "simp_all"]),
    "DemoLogic.and_comm_iff": ("p q : Prop\n⊢ p ∧ q ↔ q ∧ p", []),
    "DemoLogic.exists_or_of_forall": (
        "α : Type\np q : α → Prop\ninst✝ : Inhabited α\nh : ∀ (x : α), p x\n⊢ ∃ x, p x ∨ q x",
        [],
    ),
    "DemoArith.Expr.comm_comm": ("e : Expr\n⊢ e.comm.comm = e", []),
    "DemoArith.tickN_steps": ("n : Nat\n⊢ ∀ (c : Counter), (tickN n c).steps = c.steps + n", []),
    "DemoArith.two_mul_sumTo": ("n : Nat\n⊢ 2 * sumTo n = n * (n + 1)", []),
}


def test_the_quick_start_proves_the_easy_example_sorries(
    examples_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = {
        "unknown_tactics": ["aesop", "norm_num", "linarith"],
        "theorems": {
            name: {"goals": goals, "steps": {t: {"done": True} for t in closers}}
            for name, (goals, closers) in EXAMPLE_GOALS.items()
        },
    }
    fake_lean.activate(monkeypatch, tmp_path / "bin", script)
    budget = ["--candidates", "8", "--max-expansions", "1", "--tactic-timeout", "20", "--check-timeout", "20"]
    payload = _run(capsys, tmp_path / "data", examples_dir / "repos.txt", "--proof-backend", "file", *budget)
    proved = {a["theorem"]: a["proof"] for a in payload["proving"]["attempts"] if a["outcome"] == "proved"}
    assert set(proved) == {name for name, (_, closers) in EXAMPLE_GOALS.items() if closers}
    assert proved["DemoArith.double_zero"] == "by\n  rfl" and proved["DemoLogic.or_self_iff'"] == "by\n  simp"


def test_without_lean_the_run_succeeds_and_says_what_proving_needs(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"  # git, but no lean or lake
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    payload = _run(capsys, tmp_path / "data", project)
    assert payload["proving"] is None
    skipped = payload["proving_skipped"]
    assert len(skipped.splitlines()) == 1 and "Lean" in skipped and "elan" in skipped, skipped
    markdown = Path(payload["report"][1]).read_text(encoding="utf-8")
    assert skipped in markdown
