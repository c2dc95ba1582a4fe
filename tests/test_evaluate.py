"""``leanagent evaluate`` against the fake lean: each evaluated proof hidden from the prover
(from its own search and from every other evaluated theorem's), the axiom audit relative to
the original proof, the theorem choices (a file, the retriever's held-out split, a seeded
sample), resumption, and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import fake_lean

from agent.cli.main import main
from curriculum.store import Store
from lean_env.records import TheoremStatus

SOURCE = """\
namespace Ev

def magic (n : Nat) : n = n := rfl

def hidden : Nat := sorry

theorem secret (n : Nat) : n = n := by
  exact Ev.magic n

theorem secret' (m : Nat) : m = m := by
  exact Ev.magic m

theorem two : 2 = 1 + 1 := by
  decide

theorem stuck (p : Prop) (h : p) : p ∧ p := by
  exact And.intro h h

theorem on_hidden (h : hidden = 0) : hidden = 0 := by
  exact h

end Ev
"""
SCRIPT = {
    "theorems": {
        "Ev.secret": {"goals": "n : Nat\n⊢ n = n", "steps": {"exact Ev.magic n": {"done": True}}},
        "Ev.secret'": {"goals": "m : Nat\n⊢ m = m", "steps": {"exact Ev.magic m": {"done": True}}},
        "Ev.two": {"goals": "⊢ 2 = 1 + 1", "steps": {"decide": {"done": True}}},
        "Ev.stuck": {"goals": "p : Prop\nh : p\n⊢ p ∧ p", "steps": {"exact And.intro h h": {"done": True}}},
        "Ev.on_hidden": {
            "goals": "h : Ev.hidden = 0\n⊢ Ev.hidden = 0",
            "steps": {"exact h": {"done": True}, "assumption": {"done": True}},
        },
    }
}
ALL = ["Ev.secret", "Ev.secret'", "Ev.two", "Ev.stuck", "Ev.on_hidden"]
SEARCH = ["--proof-backend", "file", "--candidates", "8", "--max-expansions", "3", "--tactic-timeout", "20"]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A data directory holding the project of :data:`SOURCE`, with the fake lean on PATH."""
    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)
    project = tmp_path / "proj"
    (project / "Ev").mkdir(parents=True)
    (project / "Ev" / "Basic.lean").write_text(SOURCE, encoding="utf-8")
    (project / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", str(project), "--tracer", "source"]) == 0
    capsys.readouterr()
    return data


def _evaluate(capsys: pytest.CaptureFixture[str], data: Path, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["--data-dir", str(data), "evaluate", *SEARCH, "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _theorems_file(tmp_path: Path, *lines: str) -> str:
    file = tmp_path / "theorems.txt"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8-sig")  # with a BOM, as some editors write
    return str(file)


def _outcomes(payload: dict) -> dict[str, str]:
    return {t["theorem"]: t["outcome"] for t in payload["theorems"]}


def test_every_evaluated_proof_is_hidden_from_the_prover(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, payload = _evaluate(capsys, data)
    assert code == 0, payload
    # secret and secret' prove each other (a neighbour's tactic renamed): evaluated together,
    # neither sees the other's proof, nor its own; `decide` and `assumption` need no memory.
    assert _outcomes(payload) == {
        "Ev.secret": "failed",
        "Ev.secret'": "failed",
        "Ev.two": "proved",
        "Ev.stuck": "failed",
        "Ev.on_hidden": "proved",
    }
    assert payload["pass_at_1"]["proved"] == 2 and payload["pass_at_1"]["total"] == 5
    low, high = payload["pass_at_1"]["interval"]
    assert low < 0.4 < high
    two = next(t for t in payload["theorems"] if t["theorem"] == "Ev.two")
    assert two["proof"] == "by\n  decide" and two["path"] == "Ev/Basic.lean" and two["lean_seconds"] > 0

    # Alone, secret is proved from secret''s stored proof: that is what hiding prevented.
    code, payload = _evaluate(capsys, data, "--theorems", _theorems_file(data.parent, "Ev/Basic.lean:secret"))
    assert code == 0, payload
    (only,) = payload["theorems"]
    assert (only["theorem"], only["outcome"], only["proof"]) == ("Ev.secret", "proved", "by\n  exact Ev.magic n")


def test_an_evaluation_marks_nothing_proved_and_writes_a_report(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, payload = _evaluate(capsys, data)
    assert code == 0
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        statuses = {t.theorem.full_name: t.theorem.status for t in store.theorems()}
        (run,) = store.runs()
        attempts = store.attempts(run_id=run.id)
    assert {statuses[name] for name in ALL} == {TheoremStatus.PROVEN}
    assert run.config["command"] == "evaluate" and run.config["learn"] is False
    assert len(attempts) == 5 and sum(a.outcome == "proved" for a in attempts) == 2
    json_path, markdown_path = (Path(p) for p in payload["report"])
    assert json.loads(json_path.read_text(encoding="utf-8"))["pass_at_1"] == payload["pass_at_1"]
    markdown = markdown_path.read_text(encoding="utf-8")
    assert "Pass@1 40.0% (2/5;" in markdown and "bucket" in markdown
    assert payload["pass_at_budget"]["600"] == 0.4  # the search's own limit is the last mark
    assert "evaluate-1-budget.png" in markdown and (data / "reports" / "evaluate-1-budget.png").stat().st_size > 0
    assert not list((data / "reports").glob("*.patch"))


def test_a_proof_that_needs_sorry_ax_as_the_original_does_counts(data: Path, capsys) -> None:
    """`on_hidden`'s statement names a `sorry` definition: its original proof depends on
    sorryAx, so a found proof that does is no worse (prove would call it vacuous)."""
    code, payload = _evaluate(capsys, data, "--theorems", _theorems_file(data.parent, "Ev.on_hidden"))
    assert code == 0
    (only,) = payload["theorems"]
    assert only["outcome"] == "proved" and "sorryAx" in only["axioms"]
    assert "as the original proof does" in only["detail"]


def test_the_audit_judges_against_the_original_axioms() -> None:
    from agent.evaluation.evaluate import judged_against
    from agent.proving.theorem import ProofAttempt
    from lean_env.proofs.final_check import FinalCheckResult, Verdict
    from lean_env.records import AttemptOutcome

    def attempt(outcome: AttemptOutcome, verdict: Verdict, axioms: tuple[str, ...]) -> ProofAttempt:
        check = FinalCheckResult("t", "A.lean", "by simp", verdict, axioms=axioms)
        return ProofAttempt(outcome, "by simp", None, check, "as the check said")

    proved = attempt(AttemptOutcome.PROVED, Verdict.ACCEPTED, ("Classical.choice", "Lean.ofReduceBool"))
    assert judged_against(proved, ("Classical.choice",)).outcome is AttemptOutcome.VACUOUS
    assert "Lean.ofReduceBool" in judged_against(proved, ("Classical.choice",)).detail
    assert judged_against(proved, ("Lean.ofReduceBool",)) == proved
    assert judged_against(proved, None) == proved  # the original's axioms unknown
    vacuous = attempt(AttemptOutcome.VACUOUS, Verdict.VACUOUS, ("sorryAx",))
    assert judged_against(vacuous, ()).outcome is AttemptOutcome.VACUOUS
    assert judged_against(vacuous, ("propext", "sorryAx")).outcome is AttemptOutcome.PROVED


def test_the_test_split_is_the_retrievers_held_out_side(data: Path) -> None:
    from agent.evaluation.evaluate import Selection, select_theorems
    from retrieval.corpus import PremiseCorpus
    from retrieval.split import split

    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        traces = store.latest_traces()
        proven = {t.theorem.full_name for t in store.theorems(status=TheoremStatus.PROVEN)}
        sizes = []
        for fraction in (0.3, 0.5, 0.7):
            selection = Selection(split_test=True, test_fraction=fraction, split_seed=3)
            chosen = {t.theorem.full_name for t in select_theorems(store, selection)}
            train, test = split(PremiseCorpus(traces).examples(traces[0]), test_fraction=fraction, seed=3)
            assert not chosen & {e.theorem for e in train}  # never a theorem the retriever trained on
            assert {e.theorem for e in test} & proven <= chosen
            sizes.append(len(chosen))
    assert sizes == sorted(sizes) and 0 < sizes[-1] < len(ALL)


def test_a_benchmark_split_evaluates_its_test_theorems(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The stored project exported as LeanDojo Benchmark 4: each strategy's test split is
    what is evaluated."""
    exported = data.parent / "benchmark"
    assert main(["--data-dir", str(data), "export", str(exported)]) == 0
    for strategy in ("random", "novel_premises"):
        test = json.loads((exported / strategy / "test.json").read_text(encoding="utf-8"))
        wanted = {(t["file_path"], t["full_name"]) for t in test} & {("Ev/Basic.lean", name) for name in ALL}
        code, payload = _evaluate(capsys, data, "--benchmark", str(exported), "--benchmark-split", strategy)
        assert code == 0, payload
        assert {(t["path"], t["theorem"]) for t in payload["theorems"]} == wanted and wanted
    code, payload = _evaluate(capsys, data, "--benchmark-split", "random")
    assert code == 2 and "go together" in payload["error"]
    code, payload = _evaluate(capsys, data, "--benchmark", str(data), "--benchmark-split", "random")
    assert code == 2 and "no random/test.json" in payload["error"]


def test_a_sample_is_seeded(data: Path, capsys) -> None:
    from agent.evaluation.evaluate import Selection, select_theorems

    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:

        def names(n: int, seed: int) -> list[str]:
            return [t.theorem.full_name for t in select_theorems(store, Selection(sample=n, seed=seed))]

        assert names(3, 1) == names(3, 1)
        assert len(names(3, 1)) == 3 and set(names(3, 1)) <= set(ALL)
        assert {tuple(names(2, seed)) for seed in range(8)} != {tuple(names(2, 0))}
        assert names(50, 0) == ALL  # more than there are: all, in trace order


def test_an_interrupted_evaluation_resumes_without_repeating_work(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.evaluation.evaluate

    judged, calls = agent.evaluation.evaluate.judged_against, []

    def interrupted_after_two(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return judged(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(agent.evaluation.evaluate, "judged_against", interrupted_after_two)
    code, _ = _evaluate(capsys, data)
    assert code == 130
    monkeypatch.setattr(agent.evaluation.evaluate, "judged_against", judged)
    code, payload = _evaluate(capsys, data)
    assert code == 0 and payload["resumed"] is True
    assert list(_outcomes(payload)) == ALL
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        assert len(store.attempts()) == 5  # the two finished before the interruption were not repeated


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--theorems", "missing.txt"], "cannot read the theorems file"),
        (["--theorems", "THEOREMS:Ev.nothing"], "no stored theorem with a proof is called 'Ev.nothing'"),
        (["--theorems", "THEOREMS:Ev.magic"], "no stored theorem with a proof is called 'Ev.magic'"),  # a def
        (["--seed", "3"], "--seed is the seed of --sample"),
        (["--repo", "/nowhere"], "no stored repository is /nowhere"),
        (["--theorems", "THEOREMS:x", "--split", "test"], "not allowed with argument"),
    ],
)
def test_bad_choices_are_one_line_and_exit_2(
    data: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    args = [a if not a.startswith("THEOREMS:") else _theorems_file(data.parent, a.split(":", 1)[1]) for a in extra]
    code, payload = _evaluate(capsys, data, *args)
    assert code == 2 and message in payload["error"]


def test_without_lean_it_says_what_it_needs(data: Path, capsys, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import shutil

    only_git = tmp_path / "only-git"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "git")
    monkeypatch.setenv("PATH", str(only_git))
    code, payload = _evaluate(capsys, data)
    assert code == 2 and "No Lean toolchain found" in payload["error"]


def test_the_ranking_learns_from_earlier_attempts_never_from_the_evaluated_theorems(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the searches tried is recorded; an evaluation's ranking learns from the attempts
    at every other theorem, none at those it evaluates (their own earlier attempts included)."""
    from agent.generators.ranking import TacticRanking

    learned: list[list] = []
    monkeypatch.setattr(TacticRanking, "train", staticmethod(lambda tried, seed=0: learned.append(list(tried))))
    assert _evaluate(capsys, data, "--ranking")[0] == 0
    assert learned == [[]]  # nothing tried before the first evaluation
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        goals = {tried.goal for _, tried in store.tried_tactics()}
    assert {"n : Nat\n⊢ n = n", "⊢ 2 = 1 + 1"} <= goals
    code, _ = _evaluate(capsys, data, "--ranking", "--theorems", _theorems_file(data.parent, "Ev/Basic.lean:secret"))
    assert code == 0
    seen = {tried.goal for tried in learned[1]}
    assert "⊢ 2 = 1 + 1" in seen and "n : Nat\n⊢ n = n" not in seen
    assert _evaluate(capsys, data, "--theorems", _theorems_file(data.parent, "Ev.two"))[0] == 0  # off by default
    assert len(learned) == 2
