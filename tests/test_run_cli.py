"""``leanagent run`` as the lifelong job: ingest, curriculum, one retriever step per new
repository (a tiny encoder), proving each file repository's sorries after its step (a tiny
generator taught two tactics, the fake lean), a report on disk, and resumption."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fakes import fake_lean
from fakes.tiny_encoder import tiny_encoder
from projects import lean_project
from prove_cases import AFTER_INTRO, START, VACUOUS_SCRIPT, VACUOUS_SOURCE, demo_lake_repo, taught_generator

import agent.lifelong.job
import agent.proving.repositories
import agent.proving.theorem
from agent.cli.main import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, main
from curriculum.store import Store
from lean_env.records import TheoremStatus
from retrieval.lifelong_metrics import ScoreMatrix, lifelong_metrics
from retrieval.train import ProgressiveTrainer

torch.set_num_threads(1)

# Premises used by name, so that source extraction yields retrieval examples.
LOGIC = """\
theorem swap_and (p q : Prop) (h : p ∧ q) : q ∧ p := ⟨h.2, h.1⟩

theorem use_swap (p q : Prop) (h : p ∧ q) : q ∧ p := by
  exact swap_and p q h

theorem use_swap_again (a b : Prop) (h : a ∧ b) : b ∧ a := by
  apply swap_and
  exact h

theorem use_swap_term (a b : Prop) (h : a ∧ b) : b ∧ a := swap_and a b h

theorem use_swap_twice (a b : Prop) (h : a ∧ b) : a ∧ b := by
  exact swap_and b a (swap_and a b h)
"""
ARITH = """\
theorem add_zero_eq (n : Nat) : n + 0 = n := rfl

theorem use_add_zero (m : Nat) : m + 0 = m := by
  exact add_zero_eq m

theorem use_add_zero_twice (m : Nat) : m + 0 + 0 = m := by
  rw [add_zero_eq, add_zero_eq]

theorem use_add_zero_term (k : Nat) : k + 0 = k := add_zero_eq k

theorem use_add_zero_simp (k : Nat) : k + 0 = k := by
  simp [add_zero_eq]
"""
SEARCH = ["--candidates", "2", "--max-expansions", "6", "--tactic-timeout", "20", "--check-timeout", "20"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("models")
    tiny_encoder(0).save(root / "encoder")
    return root / "encoder", taught_generator(root / "generator")


def _run(capsys: pytest.CaptureFixture[str], data: Path, repos: Path, *extra: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(
        [
            "--data-dir",
            str(data),
            "run",
            str(repos),
            "--tracer",
            "source",
            "--epochs",
            "2",
            "--batch-size",
            "2",
            "--test-fraction",
            "0.5",
            "--json",
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def test_later_runs_learn_only_new_repositories_and_report_every_step(tmp_path, models, capsys) -> None:
    encoder, _ = models
    lean_project(tmp_path / "logic", source=LOGIC)
    lean_project(tmp_path / "arith", source=ARITH)
    repos = tmp_path / "repos.txt"
    repos.write_text("logic\n", encoding="utf-8")
    data = tmp_path / "data"

    code, first, _ = _run(capsys, data, repos, "--model", str(encoder))
    assert code == 0
    (step,) = first["training"]["steps"]
    assert step["repo"] == str(tmp_path / "logic")
    assert first["training"]["steps_before_this_run"] == 0 and first["proving"] is None

    repos.write_text("logic\narith\n", encoding="utf-8")
    code, second, _ = _run(capsys, data, repos, "--model", str(encoder))
    assert code == 0
    training = second["training"]
    assert [s["repo"] for s in training["steps"]] == [str(tmp_path / "logic"), str(tmp_path / "arith")]
    assert training["steps_before_this_run"] == 1 and training["steps"][0] == first["training"]["steps"][0]
    # after the new step, both repositories are scored (a row per step, a column per repository)
    # a row per step, a column per repository; arith is not scored before it is seen (which
    # theorems are held out depends on the repository's path, so the values are not asserted)
    mrr = training["matrices"]["MRR"]
    assert len(mrr) == 2 and all(len(row) == 2 for row in mrr) and mrr[0][1] is None
    assert (data / "retriever").is_dir()

    json_report, markdown = (Path(p) for p in second["report"])
    assert json.loads(json_report.read_text(encoding="utf-8"))["training"] == training
    text = markdown.read_text(encoding="utf-8")
    assert text.startswith(f"# leanagent run {second['run']}") and "## Retriever training" in text and "arith" in text
    for name in ("recall10", "recall10-heatmap", "MRR", "MRR-heatmap"):  # lines, and the matrix beside them
        plot = markdown.parent / f"run-{second['run']}-{name}.png"
        assert f"]({plot.name})" in text and plot.read_bytes().startswith(b"\x89PNG")
    # the lifelong-learning metrics: numbers where two steps suffice, a reason where they do not
    metrics = training["metrics"]["recall@10"]
    # every metric the library names (tests/test_lifelong_metrics.py lists them), in its order
    assert list(metrics) == [name for name, _ in lifelong_metrics(ScoreMatrix.square([])).named()]
    assert all(isinstance(metrics[m]["value"], float) for m in ("plasticity", "BWT", "FM", "EBWT", "IP", "WF5"))
    assert metrics["WF5"]["unit"] == "fraction" and metrics["CFR"]["unit"] == "ratio"
    assert all(s["before"] is not None and s["untrained"] is not None for s in training["steps"])
    assert "lifelong-learning metrics" in text and "percentage points" in text

    # nothing new: no step is taken again, with the data directory reached by another path
    # too (the learner is the database's, by its identity, not by its URL's spelling)
    (tmp_path / "alias").symlink_to(data)
    code, third, _ = _run(capsys, tmp_path / "alias", repos, "--model", str(encoder))
    assert code == 0 and third["training"]["steps_before_this_run"] == 2 and len(third["training"]["steps"]) == 2
    assert len(list((data / "learner").glob("*.pt"))) == 1


def test_without_matplotlib_the_report_says_why_it_has_no_plots(tmp_path, models, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # importing it now fails
    lean_project(tmp_path / "logic", source=LOGIC)
    (tmp_path / "repos.txt").write_text("logic\n", encoding="utf-8")
    code, payload, _ = _run(capsys, tmp_path / "data", tmp_path / "repos.txt", "--model", str(models[0]))
    assert code == 0
    text = Path(payload["report"][1]).read_text(encoding="utf-8")
    assert "pip install 'leanagent[plots]'" in text and ".png" not in text


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake lean's demo repository (two sorries) as a Lake project, in a repos file."""
    demo_lake_repo(tmp_path, monkeypatch)
    repos = tmp_path / "repos.txt"
    repos.write_text("repo\n", encoding="utf-8")
    return repos


def test_sorries_are_proved_after_their_repository_is_learned(demo, models, capsys, tmp_path) -> None:
    encoder, generator = models
    data = tmp_path / "data"
    code, payload, _ = _run(
        capsys, data, demo, "--model", str(encoder), "--generator", str(generator), "--proof-backend", "file", *SEARCH
    )
    assert code == 0
    outcomes = {a["theorem"]: a["outcome"] for a in payload["proving"]["attempts"]}
    assert outcomes == {"Demo.imp_self'": "proved", "Demo.two": "failed"}
    assert [s["repo"] for s in payload["training"]["steps"]] == [str(tmp_path / "repo")]
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        statuses = {t.theorem.full_name: t.theorem.status for t in store.theorems()}
        attempts = store.attempts(run_id=payload["run"])
    assert statuses["Demo.imp_self'"] is TheoremStatus.PROVED_BY_US and len(attempts) == 2
    assert "proved and checked by Lean" in Path(payload["report"][1]).read_text(encoding="utf-8")
    # the found proof, as a patch that applies to the repository
    patch = Path(payload["proving"]["patches"][str(tmp_path / "repo")])
    assert "-  sorry\n+  intro h\n+  exact h\n" in patch.read_text(encoding="utf-8")
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=tmp_path / "repo", check=True)


def test_an_interrupted_run_resumes_without_repeating_finished_work(
    demo, models, capsys, tmp_path, monkeypatch
) -> None:
    encoder, generator = models
    data = tmp_path / "data"
    args = ("--model", str(encoder), "--generator", str(generator), "--proof-backend", "file", *SEARCH)
    real = agent.proving.repositories.prove_targets

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(agent.proving.repositories, "prove_targets", interrupted)
    code, _, _ = _run(capsys, data, demo, *args)
    assert code == EXIT_INTERRUPTED

    monkeypatch.setattr(agent.proving.repositories, "prove_targets", real)
    code, payload, _ = _run(capsys, data, demo, *args)
    assert code == 0 and payload["resumed"] is True
    # the step finished before the interruption is picked up, not taken again
    assert payload["training"]["steps_before_this_run"] == 1 and len(payload["training"]["steps"]) == 1
    assert {a["outcome"] for a in payload["proving"]["attempts"]} == {"proved", "failed"}


def test_a_missing_lean_is_reported_before_any_training(tmp_path, models, capsys, monkeypatch) -> None:
    encoder, generator = models
    lean_project(tmp_path / "logic", source=LOGIC + "\ntheorem open_goal : True := by\n  sorry\n")
    (tmp_path / "repos.txt").write_text("logic\n", encoding="utf-8")
    bin_dir = tmp_path / "bin"  # git, but no lean or lake
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    data = tmp_path / "data"
    code, _, err = _run(capsys, data, tmp_path / "repos.txt", "--model", str(encoder), "--generator", str(generator))
    assert code == EXIT_USAGE and len(err.splitlines()) == 1 and "elan" in err, err
    assert not (data / "learner").exists()  # no training was started


def test_a_resumed_run_reports_the_attempts_made_before_the_interruption(
    demo, models, capsys, tmp_path, monkeypatch
) -> None:
    """Interrupted at its second proof attempt, the resumed run's report (which replaces
    run-N.json/.md) lists the attempt made before the interruption too."""
    encoder, generator = models
    data = tmp_path / "data"
    args = ("--model", str(encoder), "--generator", str(generator), "--proof-backend", "file", *SEARCH)
    real = agent.proving.theorem.prove_theorem
    calls = []

    def interrupt_second(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(agent.proving.theorem, "prove_theorem", interrupt_second)
    code, _, _ = _run(capsys, data, demo, *args)
    assert code == EXIT_INTERRUPTED
    monkeypatch.setattr(agent.proving.theorem, "prove_theorem", real)

    code, payload, _ = _run(capsys, data, demo, *args)
    assert code == 0 and payload["resumed"] is True
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        recorded = len(store.attempts(run_id=payload["run"]))
    assert recorded == 2
    reported = json.loads(Path(payload["report"][0]).read_text(encoding="utf-8"))["proving"]["attempts"]
    assert {a["theorem"] for a in reported} == {"Demo.imp_self'", "Demo.two"}


def test_a_newer_commit_is_proved_after_its_own_step(demo, models, capsys, tmp_path, monkeypatch) -> None:
    """The learner knows repo@c0; repo changed (c1) and gets a step in this run: its sorries
    are searched after that step, not at the picked-up c0 row before it."""
    encoder, generator = models
    data = tmp_path / "data"
    code, first, _ = _run(capsys, data, demo, "--model", str(encoder))
    assert code == 0 and len(first["training"]["steps"]) == 1
    source = tmp_path / "repo" / "Demo.lean"
    source.write_text(source.read_text(encoding="utf-8") + "\n-- a newer version\n", encoding="utf-8")

    events: list[str] = []
    real_step, real_prove = ProgressiveTrainer.step, agent.proving.repositories.prove_targets

    def step(self, *a, **k):
        events.append("step")
        return real_step(self, *a, **k)

    def prove(*a, **k):
        events.append("prove")
        return real_prove(*a, **k)

    monkeypatch.setattr(ProgressiveTrainer, "step", step)
    monkeypatch.setattr(agent.proving.repositories, "prove_targets", prove)
    code, second, _ = _run(
        capsys, data, demo, "--model", str(encoder), "--generator", str(generator), "--proof-backend", "file", *SEARCH
    )
    assert code == 0 and [
        s["commit"] == first["training"]["steps"][0]["commit"] for s in second["training"]["steps"]
    ] == [True, False]
    assert events == ["step", "prove"]


def test_a_report_that_cannot_be_written_does_not_end_the_run_as_finished(demo, models, capsys, tmp_path) -> None:
    """The report directory is a file: exit 2 before any work, and the next run repeats no
    proof attempt."""
    encoder, generator = models
    data = tmp_path / "data"
    data.mkdir()
    (data / "reports").write_text("not a directory", encoding="utf-8")
    args = ("--model", str(encoder), "--generator", str(generator), "--proof-backend", "file", *SEARCH)
    code, _, _ = _run(capsys, data, demo, *args)
    assert code == EXIT_USAGE
    (data / "reports").unlink()

    code, payload, _ = _run(capsys, data, demo, *args)
    assert code == 0
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        attempts = store.attempts()
    assert len(attempts) == 2, [(a.run_id, a.theorem_id, a.outcome) for a in attempts]


def test_a_learner_directory_that_cannot_be_written_is_a_one_line_error(demo, models, capsys, tmp_path) -> None:
    """DATA_DIR/learner is a file: one line and exit 2, before any training."""
    encoder, _ = models
    data = tmp_path / "data"
    data.mkdir()
    (data / "learner").write_text("not a directory", encoding="utf-8")
    capsys.readouterr()
    code = main(
        [
            "--data-dir",
            str(data),
            "run",
            str(demo),
            "--tracer",
            "source",
            "--epochs",
            "1",
            "--batch-size",
            "2",
            "--test-fraction",
            "0.5",
            "--model",
            str(encoder),
        ]
    )
    _, err = capsys.readouterr()
    assert code == EXIT_USAGE and len(err.strip().splitlines()) == 1 and "learner" in err, err


# Two provable theorems in one file (the fake lean answers both like Demo.imp_self').
TWO_PROVABLE = """\
namespace Demo

theorem imp_self' (p : Prop) : p → p := by
  sorry

theorem imp_self2 (p : Prop) : p → p := by
  sorry

end Demo
"""
_STEPS = {"goals": START, "steps": {"intro h": {"goals": AFTER_INTRO}, "intro h\nexact h": {"done": True}}}
TWO_SCRIPT = {"theorems": {"Demo.imp_self'": _STEPS, "Demo.imp_self2": _STEPS}}


@pytest.fixture
def generator(models: tuple[Path, Path]) -> Path:
    return models[1]


def _two_provable_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repos file naming a Lake project whose one file has two sorries that both get proved."""
    repo = fake_lean.demo_repo(tmp_path, monkeypatch, TWO_SCRIPT)
    (repo / "Demo.lean").write_text(TWO_PROVABLE, encoding="utf-8")
    (repo / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage demo\nlean_lib Demo\n", encoding="utf-8")
    (repo / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    repos = tmp_path / "repos.txt"
    repos.write_text("repo\n", encoding="utf-8")
    return repos


def _run_untrained(capsys, data: Path, repos: Path, generator: Path, *extra: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(
        [
            "--data-dir",
            str(data),
            "run",
            str(repos),
            "--tracer",
            "source",
            "--no-train",
            "--generator",
            str(generator),
            "--proof-backend",
            "file",
            *SEARCH,
            "--json",
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def test_a_patch_holds_every_proof_of_one_file(tmp_path, monkeypatch, capsys, generator) -> None:
    """Both theorems of Demo.lean are proved: the repository's one patch replaces both
    sorries and applies."""
    repos = _two_provable_repo(tmp_path, monkeypatch)
    code, payload, err = _run_untrained(capsys, tmp_path / "data", repos, generator)
    assert code == 0, err
    assert {a["outcome"] for a in payload["proving"]["attempts"]} == {"proved"}
    patch = Path(payload["proving"]["patches"][str(tmp_path / "repo")])
    assert patch.read_text(encoding="utf-8").count("+  exact h\n") == 2
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=tmp_path / "repo", check=True)


def test_a_vacuous_proof_is_reported_and_left_out_of_the_patch(tmp_path, monkeypatch, capsys, generator) -> None:
    """Demo.on_secret's statement uses a `sorry` definition: Lean compiles the file with the
    proof, but the theorem depends on sorryAx. Reported as vacuous, not patched, still open."""
    demo_lake_repo(tmp_path, monkeypatch, source=VACUOUS_SOURCE, script=VACUOUS_SCRIPT)
    (tmp_path / "repos.txt").write_text("repo\n", encoding="utf-8")
    data = tmp_path / "data"
    code, payload, err = _run_untrained(capsys, data, tmp_path / "repos.txt", generator)
    assert code == 0, err
    attempts = {a["theorem"]: a for a in payload["proving"]["attempts"]}
    assert {name: a["outcome"] for name, a in attempts.items()} == {
        "Demo.imp_self'": "proved",
        "Demo.two": "failed",
        "Demo.on_secret": "vacuous",
    }
    assert attempts["Demo.on_secret"]["axioms"] == ["sorryAx"] and attempts["Demo.imp_self'"]["axioms"] == []
    patch = Path(payload["proving"]["patches"][str(tmp_path / "repo")]).read_text(encoding="utf-8")
    assert patch.count("+  exact h\n") == 1 and "on_secret" not in patch
    markdown = Path(payload["report"][1]).read_text(encoding="utf-8")
    assert "1 proof is vacuous" in markdown and "not written back: Demo.on_secret" in markdown
    statuses = _statuses(data)
    assert (
        statuses["Demo.on_secret"] is TheoremStatus.SORRY and statuses["Demo.imp_self'"] is TheoremStatus.PROVED_BY_US
    )


@pytest.mark.parametrize(
    ("line", "skip", "attempted", "left_alone"),
    [
        pytest.param("repo skip=Exercises", [], {"Demo.imp_self'", "Demo.two"}, 1, id="repos-file"),
        pytest.param("repo", ["--skip", "Exercises/*.lean"], {"Demo.imp_self'", "Demo.two"}, 1, id="command-line"),
        pytest.param("repo skip=Exercises", ["--skip", "Demo.lean"], set(), 3, id="both"),
    ],
)
def test_exercises_are_counted_but_never_proved(
    tmp_path, monkeypatch, capsys, generator, line, skip, attempted, left_alone
):
    """Exercises/Basic.lean holds a sorry left open on purpose: it is ingested and counted,
    never attempted (were it, the fake lean would answer for it as for any theorem)."""
    repo = demo_lake_repo(tmp_path, monkeypatch)
    (repo / "Exercises").mkdir()
    (repo / "Exercises" / "Basic.lean").write_text("theorem ex1 (p : Prop) : p → p := by\n  sorry\n", encoding="utf-8")
    (tmp_path / "repos.txt").write_text(line + "\n", encoding="utf-8")
    code, payload, err = _run_untrained(capsys, tmp_path / "data", tmp_path / "repos.txt", generator, *skip)
    assert code == 0, err
    assert [o["sorries"] for o in payload["ingest"]] == [3]
    proving = payload["proving"]
    assert {a["theorem"] for a in proving["attempts"]} == attempted
    assert proving["skipped_sorries"] == {str(repo): left_alone} and proving["targets"] == 3 - left_alone
    markdown = Path(payload["report"][1]).read_text(encoding="utf-8")
    assert f"{left_alone} sorry theorem(s) of {repo} left alone" in markdown


def test_a_skip_glob_that_matches_no_file_is_warned_of(tmp_path, monkeypatch, capsys, caplog, generator) -> None:
    repo = demo_lake_repo(tmp_path, monkeypatch)
    (repo / "Exercises").mkdir()
    (repo / "Exercises" / "Basic.lean").write_text("theorem ex1 (p : Prop) : p → p := by\n  sorry\n", encoding="utf-8")
    (tmp_path / "repos.txt").write_text("repo skip=Exercise/*\n", encoding="utf-8")  # a typo
    code, payload, err = _run_untrained(capsys, tmp_path / "data", tmp_path / "repos.txt", generator)
    assert code == 0, err
    assert f"skip=Exercise/* matches no file of {repo}" in caplog.text
    # The glob left nothing alone; the file is an exercise file all the same (agent/proving/exercises.py).
    assert payload["proving"]["skipped_sorries"] == {} and payload["proving"]["targets"] == 2
    (listed,) = payload["proving"]["exercises"].values()
    assert [(e["path"], e["theorem"]) for e in listed] == [("Exercises/Basic.lean", "ex1")]


def _run_after_a_new_commit(
    tmp_path, monkeypatch, capsys, generator, imp_self2: dict, *extra: str, script: dict | None = None
) -> tuple[dict, dict]:
    """Run 1 proves both sorries of Demo.lean; a theorem is added, so both proofs carry over
    to the new version; run 2 (with ``extra``) meets a Lean whose script entry for
    imp_self2 is now ``imp_self2``, and ``script``'s other keys. Returns both payloads."""
    repos = _two_provable_repo(tmp_path, monkeypatch)
    data = tmp_path / "data"
    code, first, err = _run_untrained(capsys, data, repos, generator)
    assert code == 0 and {a["outcome"] for a in first["proving"]["attempts"]} == {"proved"}, err
    source = tmp_path / "repo" / "Demo.lean"
    source.write_text(TWO_PROVABLE.replace("end Demo", "theorem more : True := trivial\n\nend Demo"), encoding="utf-8")
    theorems = {"Demo.imp_self'": _STEPS, "Demo.imp_self2": imp_self2}
    fake_lean.activate(monkeypatch, tmp_path / "bin", {**(script or {}), "theorems": theorems})
    code, second, err = _run_untrained(capsys, data, repos, generator, *extra)
    assert code == 0, err
    assert [o["carried_proofs"] for o in second["ingest"]] == [2]
    return first, second


def _exact_h(outcome: dict) -> dict:
    """imp_self2's script entry with ``outcome`` for ``intro h; exact h``."""
    return {"goals": START, "steps": {"intro h": {"goals": AFTER_INTRO}, "intro h\nexact h": outcome}}


def _statuses(data: Path) -> dict[str, TheoremStatus]:
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        return {t.theorem.full_name: t.theorem.status for t in store.theorems()}


def _unconfirmed(tmp_path: Path) -> list[str]:
    with Store.open(f"sqlite:///{tmp_path / 'data' / 'leanagent.db'}") as store:
        return [c.stored.theorem.full_name for c in store.found_proofs(str(tmp_path / "repo"), unconfirmed=True)]


def test_carried_proofs_are_checked_by_lean_at_the_new_commit(tmp_path, monkeypatch, capsys, caplog, generator) -> None:
    """Lean at the new commit accepts imp_self''s carried proof: run 2's own, reported and
    patched against the new file, with no search. It rejects imp_self2's (as a renamed lemma
    would make it): withdrawn, its theorem searched again."""
    first, second = _run_after_a_new_commit(
        tmp_path, monkeypatch, capsys, generator, _exact_h({"error": "unknown identifier 'h'"})
    )
    attempts = {a["theorem"]: a for a in second["proving"]["attempts"]}
    kept, again = attempts["Demo.imp_self'"], attempts["Demo.imp_self2"]
    assert (kept["outcome"], kept["expansions"], kept["axioms"], kept["carried"]) == ("proved", 0, [], True)
    [ingested] = first["ingest"]
    assert kept["detail"] == f"carried over from {ingested['commit'][:12]}; Lean accepts it at " + (
        f"{second['ingest'][0]['commit'][:12]} too"
    )
    assert (again["outcome"], again["carried"]) == ("failed", False) and again["expansions"] > 0
    new_commit = second["ingest"][0]["commit"][:12]
    assert again["detail"].startswith(
        f"its proof carried over from {ingested['commit'][:12]} broke at {new_commit} (error in Demo.imp_self2"
    )
    assert (
        f"Demo.imp_self2: Lean rejects its proof accepted at {ingested['commit'][:12]} at {new_commit}" in caplog.text
    )
    markdown = Path(second["report"][1]).read_text(encoding="utf-8")
    repo = str(tmp_path / "repo")
    assert f"rechecked 2 found proof(s) carried over to {repo} at {new_commit}: 1 broke, 1 holds" in markdown
    assert f"  Demo.lean:Demo.imp_self2: broke at {new_commit} (error in Demo.imp_self2" in markdown
    assert [r["verdict"] for r in second["proving"]["rechecked"][repo]] == ["holds", "broke"]
    assert "(1 sorry theorem(s) targeted; 1 proof(s) carried over from an earlier commit, checked again)" in markdown
    patch = Path(second["proving"]["patches"][str(tmp_path / "repo")])
    assert patch.read_text(encoding="utf-8").count("+  exact h\n") == 1
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=tmp_path / "repo", check=True)
    statuses = _statuses(tmp_path / "data")
    assert (
        statuses["Demo.imp_self'"] is TheoremStatus.PROVED_BY_US and statuses["Demo.imp_self2"] is TheoremStatus.SORRY
    )
    assert _unconfirmed(tmp_path) == []


def test_a_carried_proof_that_is_vacuous_now_is_withdrawn(tmp_path, monkeypatch, capsys, generator) -> None:
    """At the new commit imp_self2 depends on sorryAx (a lemma it uses became a sorry, say):
    withdrawn, searched again, and vacuous again; never patched."""
    _, second = _run_after_a_new_commit(tmp_path, monkeypatch, capsys, generator, {**_STEPS, "axioms": ["sorryAx"]})
    attempts = {a["theorem"]: (a["outcome"], a["carried"]) for a in second["proving"]["attempts"]}
    assert attempts == {"Demo.imp_self'": ("proved", True), "Demo.imp_self2": ("vacuous", False)}
    assert _statuses(tmp_path / "data")["Demo.imp_self2"] is TheoremStatus.SORRY


@pytest.mark.parametrize(
    ("imp_self2", "extra", "script", "logged"),
    [
        pytest.param(
            _exact_h({"hang": True}), ("--check-timeout", "3"), None, "is unknown at {} (ran out of time)", id="timeout"
        ),
        pytest.param(
            _STEPS,
            (),
            {"errors": [{"line": 1, "column": 0, "message": "unknown package 'Mathlib'"}]},
            "is unknown at {} (error elsewhere in the file (line 1): unknown package 'Mathlib')",
            id="the-file-is-broken",
        ),
    ],
)
def test_a_carried_proof_whose_check_tells_nothing_stays_carried(
    tmp_path, monkeypatch, capsys, caplog, generator, imp_self2, extra, script, logged
) -> None:
    """Unknown is no rejection: a check that runs out of time, or a file Lean rejects only for
    errors outside the theorem (the new checkout's, not the proof's), leaves imp_self2's
    proof carried: not withdrawn, not searched, not written back."""
    first, second = _run_after_a_new_commit(tmp_path, monkeypatch, capsys, generator, imp_self2, *extra, script=script)
    checked = [a["theorem"] for a in second["proving"]["attempts"]]
    assert checked == ([] if script else ["Demo.imp_self'"])
    found_at = first["ingest"][0]["commit"][:12]
    new_commit = second["ingest"][0]["commit"][:12]
    assert f"Demo.imp_self2: the check of its proof accepted at {found_at} {logged.format(new_commit)}" in caplog.text
    assert _statuses(tmp_path / "data")["Demo.imp_self2"] is TheoremStatus.PROVED_BY_US
    assert _unconfirmed(tmp_path) == (["Demo.imp_self'", "Demo.imp_self2"] if script else ["Demo.imp_self2"])


def test_carried_proofs_in_skipped_paths_are_not_checked(tmp_path, monkeypatch, capsys, generator) -> None:
    """Run 2 leaves Demo.lean alone (--skip): its carried proofs are neither checked, nor
    withdrawn, nor written back; they stay carried."""
    _, second = _run_after_a_new_commit(
        tmp_path, monkeypatch, capsys, generator, _exact_h({"error": "no h"}), "--skip", "Demo.lean"
    )
    assert second["proving"]["attempts"] == [] and second["proving"]["patches"] == {}
    assert _unconfirmed(tmp_path) == ["Demo.imp_self'", "Demo.imp_self2"]


def test_carried_proofs_alone_are_checked_after_their_repositorys_step(tmp_path, monkeypatch, capsys, models) -> None:
    """With training, a repository is proved after its step; one whose sorries all carry over
    still has work: its carried proofs are checked there, and written back."""
    encoder, generator = models
    repos = _two_provable_repo(tmp_path, monkeypatch)
    data = tmp_path / "data"
    code, _, err = _run_untrained(capsys, data, repos, generator)
    assert code == 0, err
    source = tmp_path / "repo" / "Demo.lean"
    source.write_text(TWO_PROVABLE.replace("end Demo", "theorem more : True := trivial\n\nend Demo"), encoding="utf-8")
    args = ("--model", str(encoder), "--generator", str(generator), "--proof-backend", "file", *SEARCH)
    code, second, err = _run(capsys, data, repos, *args)
    assert code == 0, err
    assert [s["repo"] for s in second["training"]["steps"]] == [str(tmp_path / "repo")]
    checked = sorted((a["theorem"], a["outcome"], a["carried"]) for a in second["proving"]["attempts"])
    assert checked == [("Demo.imp_self'", "proved", True), ("Demo.imp_self2", "proved", True)]
    assert second["proving"]["targets"] == 0 and str(tmp_path / "repo") in second["proving"]["patches"]


def test_a_run_resumed_after_checking_carried_proofs_reports_them_once(tmp_path, monkeypatch, capsys, generator):
    """Interrupted right after the carried proofs were checked (before any search), the
    resumed run reports imp_self''s checked proof once, still as carried, and patches it."""
    real, calls = agent.proving.repositories.prove_targets, []

    def second_interrupted(*args, **kwargs):  # run 1 proves; run 2 is stopped before its search
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(agent.proving.repositories, "prove_targets", second_interrupted)
    with pytest.raises(AssertionError, match="assert 130 == 0"):  # run 2: exit 130, no payload
        _run_after_a_new_commit(tmp_path, monkeypatch, capsys, generator, _exact_h({"error": "no h"}))
    code, third, err = _run_untrained(capsys, tmp_path / "data", tmp_path / "repos.txt", generator)
    assert code == 0 and third["resumed"] is True and len(calls) == 3, err
    reported = [(a["theorem"], a["outcome"], a["carried"]) for a in third["proving"]["attempts"]]
    assert sorted(reported) == [("Demo.imp_self'", "proved", True), ("Demo.imp_self2", "failed", False)]
    patch = Path(third["proving"]["patches"][str(tmp_path / "repo")])
    assert patch.read_text(encoding="utf-8").count("+  exact h\n") == 1


def test_a_resumed_run_whose_sorries_were_all_proved_writes_its_patch(tmp_path, monkeypatch, capsys, generator) -> None:
    """Interrupted after proving every sorry of its repository (while writing the report), the
    resumed run finishes (exit 0) and its patch holds the proofs found before the interruption."""
    repos = _two_provable_repo(tmp_path, monkeypatch)
    data = tmp_path / "data"
    real = agent.lifelong.job.write_report

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(agent.lifelong.job, "write_report", interrupted)
    code, _, _ = _run_untrained(capsys, data, repos, generator)
    assert code == EXIT_INTERRUPTED
    monkeypatch.setattr(agent.lifelong.job, "write_report", real)

    code, payload, err = _run_untrained(capsys, data, repos, generator)
    assert code == 0 and payload["resumed"] is True, err
    patch = Path(payload["proving"]["patches"][str(tmp_path / "repo")])
    assert patch.read_text(encoding="utf-8").count("+  exact h\n") == 2


def test_run_with_workers_but_without_ray_fails_before_any_training(tmp_path, monkeypatch, generator, capsys) -> None:
    """``run --workers 2`` where Ray cannot be imported: the one-line error comes before the
    first training step (as a missing Lean or a bad generator does), not after it."""
    from fakes.tiny_encoder import tiny_encoder

    demo_lake_repo(tmp_path, monkeypatch)
    (tmp_path / "repos.txt").write_text("repo\n", encoding="utf-8")
    tiny_encoder(0).save(tmp_path / "encoder")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    data = tmp_path / "data"
    capsys.readouterr()
    code = main(
        [
            "--data-dir",
            str(data),
            "run",
            str(tmp_path / "repos.txt"),
            "--tracer",
            "source",
            "--model",
            str(tmp_path / "encoder"),
            "--batch-size",
            "2",
            "--generator",
            str(generator),
            "--proof-backend",
            "file",
            *SEARCH,
            "--workers",
            "2",
        ]
    )
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "Ray" in err, err
    assert not (data / "learner").exists() or not any((data / "learner").iterdir()), "training ran before the Ray check"


# ---- proofs of a URL repository go onto the newest commit of its branch -----------------

# Four sorries the taught generator proves (the fake lean gives them Demo.imp_self''s goals).
FOUR = """\
namespace Demo

theorem kept (p : Prop) : p → p := by
  sorry

theorem removed (p : Prop) : p → p := by
  sorry

theorem proved_upstream (p : Prop) : p → p := by
  sorry

theorem changed (p : Prop) : p → p := by
  sorry

end Demo
"""
# Meanwhile upstream: a lemma above `kept` (which moves down), `removed` gone, `proved_upstream`
# proved, `changed` restated.
UPSTREAM = """\
namespace Demo

theorem upstream_lemma : True := trivial

theorem kept (p : Prop) : p → p := by
  sorry

theorem proved_upstream (p : Prop) : p → p := by
  intro h
  exact h

theorem changed (p q : Prop) : p → q → p := by
  sorry

end Demo
"""
FOUR_SCRIPT = {"theorems": {f"Demo.{name}": _STEPS for name in ("kept", "removed", "proved_upstream", "changed")}}


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bare repository (the remote, as a file:// URL in repos.txt) holding FOUR, pushed
    from tmp_path/work; the fake lean on PATH."""
    from projects import git, lean_project

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))  # no identity: the fallback's
    fake_lean.activate(monkeypatch, tmp_path / "bin", FOUR_SCRIPT)
    work = lean_project(tmp_path / "work", source=FOUR)
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "four sorries")
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(tmp_path / "remote.git")], check=True)
    git(work, "remote", "add", "origin", str(tmp_path / "remote.git"))
    (tmp_path / "repos.txt").write_text(f"file://{tmp_path / 'remote.git'}\n", encoding="utf-8")
    return tmp_path / "remote.git"


def _upstream_moves_on_while_proving(monkeypatch: pytest.MonkeyPatch, work: Path, then=None) -> None:
    """After the sorries are proved (at the commit ingested), upstream pushes UPSTREAM."""
    from projects import git

    real = agent.proving.repositories.prove_targets

    def prove_then_push(*args, **kwargs):
        done = real(*args, **kwargs)
        (work / "Demo" / "Basic.lean").write_text(UPSTREAM, encoding="utf-8")
        git(work, "commit", "-qam", "upstream moves on")
        git(work, "push", "-q", "origin", "HEAD:main")
        if then is not None:
            then()
        return done

    monkeypatch.setattr(agent.proving.repositories, "prove_targets", prove_then_push)


def test_proofs_of_a_url_repository_go_onto_its_newest_commit(remote, tmp_path, monkeypatch, capsys, generator):
    from projects import git

    url = f"file://{remote}"
    _upstream_moves_on_while_proving(monkeypatch, tmp_path / "work")
    code, payload, err = _run_untrained(capsys, tmp_path / "data", tmp_path / "repos.txt", generator)
    assert code == 0, err
    proving = payload["proving"]
    assert {a["outcome"] for a in proving["attempts"]} == {"proved"} and len(proving["attempts"]) == 4
    head = git(remote, "rev-parse", "main")
    stale = {(s["theorem"], s["reason"]) for s in proving["stale"]}
    assert stale == {
        ("Demo.removed", f"Demo/Basic.lean has no theorem Demo.removed any more at {head[:12]}"),
        ("Demo.proved_upstream", f"it is proved there already at {head[:12]}"),
        ("Demo.changed", f"its statement changed at {head[:12]}"),
    }
    assert {s["repository"] for s in proving["stale"]} == {url}

    # The patch holds the one proof left, at the new head's positions: it applies there.
    patch = Path(proving["patches"][url])
    assert patch.read_text(encoding="utf-8").count("+  exact h\n") == 1
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "clone", "-q", str(remote), str(fresh)], check=True)
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=fresh, check=True)

    # ... and a branch of one commit on that head, in the clone, names the theorem.
    branch = proving["branches"][url]
    assert branch["onto"] == "main" and branch["base"] == head and branch["branch"].startswith("leanagent/proofs-")
    clone = Path(branch["clone"])
    assert git(clone, "rev-parse", f"{branch['branch']}^") == head == git(clone, "rev-parse", f"{branch['commit']}^")
    message = git(clone, "log", "-1", "--format=%B", branch["branch"])
    assert "- Demo.kept" in message and "Demo.changed" not in message
    committed = git(clone, "show", f"{branch['branch']}:Demo/Basic.lean")
    assert "theorem upstream_lemma" in committed and committed.count("exact h") == 2  # ours and upstream's
    markdown = Path(payload["report"][1]).read_text(encoding="utf-8")
    assert f"on branch {branch['branch']}" in markdown and "stale, not written back: Demo.changed" in markdown


def test_a_fetch_that_fails_before_write_back_is_one_line_and_the_run_resumes(
    remote, tmp_path, monkeypatch, capsys, generator
):
    """The remote is unreachable when the proofs are to be written back: the report is
    written, then exit 1 with one line (the run unfinished, its attempts recorded);
    reachable again, the run resumes and writes them back."""
    moved = tmp_path / "remote-moved.git"
    _upstream_moves_on_while_proving(monkeypatch, tmp_path / "work", then=lambda: remote.rename(moved))
    code, _, err = _run_untrained(capsys, tmp_path / "data", tmp_path / "repos.txt", generator)
    assert code == EXIT_FAILURE and len(err.strip().splitlines()) == 1 and "cannot fetch" in err, err
    report = tmp_path / "data" / "reports" / "run-1.md"
    assert "could not be written back" in report.read_text(encoding="utf-8") and str(report) in err

    moved.rename(remote)
    monkeypatch.undo()  # the fake lean and the environment again, without the push
    fake_lean.activate(monkeypatch, tmp_path / "bin", FOUR_SCRIPT)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    code, payload, err = _run_untrained(capsys, tmp_path / "data", tmp_path / "repos.txt", generator)
    assert code == 0 and payload["resumed"] is True, err
    # Resumed, the run ingests the head the remote has now, where Demo.kept has the proof it
    # found before (carried over: the same statement) and Demo.changed, restated, is proved
    # again; both are written back onto that head.
    proving = payload["proving"]
    assert {a["theorem"]: a["outcome"] for a in proving["attempts"]} == {
        "Demo.kept": "proved",
        "Demo.changed": "proved",
    }
    assert len(proving["attempts"]) == 2  # the proofs of the three others at the commit before are history
    [kept] = [a for a in proving["attempts"] if a["theorem"] == "Demo.kept"]
    assert "carried over" in kept["detail"] and payload["ingest"][0]["carried_proofs"] == 1
    assert proving["stale"] == []
    patch = Path(proving["patches"][f"file://{remote}"]).read_text(encoding="utf-8")
    assert patch.count("-  sorry\n") == 2 and "theorem kept" in patch and "theorem changed (p q" in patch
