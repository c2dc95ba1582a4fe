"""``leanagent prove`` end to end: the stored sorry theorems of a repository ingested by
source extraction, a tiny generator taught two tactics, the file-check backend and the
final check against the fake lean, attempts recorded in the database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from prove_cases import VACUOUS_SCRIPT, VACUOUS_SOURCE, demo_lake_repo, taught_generator

from agent.cli.main import EXIT_USAGE, main
from curriculum.store import Store
from lean_env.records import AttemptOutcome, TheoremStatus

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def generator_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return taught_generator(tmp_path_factory.mktemp("generator") / "model")


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = demo_lake_repo(tmp_path, monkeypatch)
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", str(repo), "--tracer", "source"]) == 0
    return data


def _prove(capsys: pytest.CaptureFixture[str], data: Path, generator: Path, *extra: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(
        [
            "--data-dir",
            str(data),
            "prove",
            "--generator",
            str(generator),
            "--proof-backend",
            "file",
            "--candidates",
            "2",
            "--max-expansions",
            "6",
            "--tactic-timeout",
            "20",
            "--check-timeout",
            "20",
            "--json",
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def test_a_found_proof_is_checked_recorded_and_the_theorem_becomes_proved_by_us(data, generator_dir, capsys) -> None:
    code, payload, _ = _prove(
        capsys, data, generator_dir, "--theorem", "Demo.imp_self'", "--repo", str(data.parent / "repo")
    )
    assert code == 0
    (attempt,) = payload["attempts"]
    assert attempt["outcome"] == "proved" and attempt["proof"] == "by\n  intro h\n  exact h"
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        statuses = {t.theorem.full_name: t.theorem.status for t in store.theorems()}
        (recorded,) = store.attempts(run_id=payload["run"])
    assert statuses["Demo.imp_self'"] is TheoremStatus.PROVED_BY_US and statuses["Demo.two"] is TheoremStatus.SORRY
    assert recorded.proof == attempt["proof"] and recorded.backend == "file"
    # proved now, so no longer a target
    code, _, err = _prove(capsys, data, generator_dir, "--theorem", "Demo.imp_self'")
    assert code == EXIT_USAGE and "no stored sorry theorem" in err


def test_a_proof_of_a_statement_about_a_sorry_definition_is_vacuous(tmp_path, monkeypatch, generator_dir, capsys):
    """Lean compiles the file with the proof, but the theorem's statement uses a `sorry`
    definition: the attempt is vacuous (recorded with its proof), and the theorem stays open."""
    repo = demo_lake_repo(tmp_path, monkeypatch, source=VACUOUS_SOURCE, script=VACUOUS_SCRIPT)
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", str(repo), "--tracer", "source"]) == 0
    code, payload, _ = _prove(capsys, data, generator_dir, "--theorem", "Demo.on_secret")
    assert code == 0
    (attempt,) = payload["attempts"]
    assert (attempt["outcome"], attempt["axioms"], attempt["nonstandard_axioms"]) == (
        "vacuous",
        ["sorryAx"],
        ["sorryAx"],
    )
    assert attempt["proof"] == "by\n  intro h\n  exact h" and "depends on sorryAx" in attempt["detail"]
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        statuses = {t.theorem.full_name: t.theorem.status for t in store.theorems()}
        (recorded,) = store.attempts(run_id=payload["run"])
    assert statuses["Demo.on_secret"] is TheoremStatus.SORRY
    assert recorded.outcome is AttemptOutcome.VACUOUS and recorded.proof == attempt["proof"]
    # still open: a later run tries it again, and says so in its table
    capsys.readouterr()
    assert main(["--data-dir", str(data), "prove", "--generator", str(generator_dir), "--proof-backend", "file",
                 "--candidates", "2", "--max-expansions", "6", "--theorem", "Demo.on_secret"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert " vacuous " in out, out
    assert "1 proof is vacuous (the theorem depends on sorryAx" in out and "not written back: Demo.on_secret" in out


def test_a_theorem_the_generator_cannot_prove_is_recorded_as_failed(data, generator_dir, capsys) -> None:
    code, payload, _ = _prove(capsys, data, generator_dir, "--theorem", "Demo.two")
    assert code == 0
    (attempt,) = payload["attempts"]
    assert attempt["outcome"] == "failed" and attempt["proof"] is None
    assert attempt["expansions"] == 1 and "exhausted" in attempt["detail"]


def test_skipped_paths_are_counted_not_proved(data, generator_dir, capsys) -> None:
    code, payload, _ = _prove(capsys, data, generator_dir, "--skip", "Demo.lean")
    assert code == 0 and payload["attempts"] == [] and payload["skipped_sorries"] == 2
    code, _, err = _prove(capsys, data, generator_dir, "--skip", "*.lean", "--theorem", "Demo.two")
    assert code == EXIT_USAGE and "'Demo.two' is in Demo.lean, which --skip leaves alone" in err


def test_a_repository_changed_since_ingest_is_refused(data, generator_dir, capsys, tmp_path: Path) -> None:
    (tmp_path / "repo" / "Extra.lean").write_text("theorem extra : True := trivial\n", encoding="utf-8")
    code, _, err = _prove(capsys, data, generator_dir)
    assert code == EXIT_USAGE and "changed since it was ingested" in err


@pytest.mark.parametrize(
    "extra, message",
    [
        pytest.param(["--candidates", "0"], "--candidates", id="candidates"),
        pytest.param(["--time-limit", "0"], "--time-limit", id="time-limit"),
        pytest.param(["--theorem", "No.such"], "no stored sorry theorem", id="unknown-theorem"),
        pytest.param(["--repo", "/no/such/repo"], "no stored repository", id="unknown-repo"),
        pytest.param(["--skip", " "], "--skip", id="empty-skip"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(data, generator_dir, capsys, extra: list[str], message: str) -> None:
    code, _, err = _prove(capsys, data, generator_dir, *extra)
    assert code == EXIT_USAGE and message in err and "Traceback" not in err


def test_a_missing_generator_is_a_user_error(data, capsys, tmp_path: Path) -> None:
    code, _, err = _prove(capsys, data, tmp_path / "no-model")
    assert code == EXIT_USAGE and "no such directory" in err


def test_the_library_prove_job_returns_the_runs_outcome(data, generator_dir) -> None:
    """``prove`` as a library (agent/proving/prove.py) returns the run's ProvingOutcome, each
    attempt recorded under the run."""
    from agent.proving.config import ProvingConfig
    from agent.proving.prove import ProveRequest, prove
    from agent.search.tree import SearchConfig
    from lean_env.interactive.choice import ProofBackendChoice

    config = ProvingConfig(
        generator=str(generator_dir),
        backend=ProofBackendChoice.FILE,
        search=SearchConfig(num_candidates=2, max_expansions=6),
        tactic_timeout=20,
        check_timeout=20,
    )
    request = ProveRequest(theorems=("Demo.imp_self'",))
    with Store.open(f"sqlite:///{data / 'leanagent.db'}") as store:
        result = prove(store, request, config, data_dir=data)
        (attempt,) = result.proving.attempts
        assert not result.resumed and result.proving.resumed == 0 and result.proving.made_now == (attempt,)
        assert attempt.outcome is AttemptOutcome.PROVED and attempt.theorem == "Demo.imp_self'"
        assert result.proving.targets == 1 and result.proving.written.patches == {}
        assert [a.theorem_id for a in store.attempts(run_id=result.run_id)] == [
            t.id for t in store.theorems() if t.theorem.full_name == "Demo.imp_self'"
        ]


def test_prove_shows_the_premise_index_it_searched(data, generator_dir, capsys, tmp_path) -> None:
    """With a retriever, ``prove`` says which premise index it searched and the recall it
    measured (issue 41: served queries included); without one, there is none to show."""
    from fakes.tiny_encoder import tiny_encoder

    tiny_encoder(0).save(tmp_path / "encoder")
    code, payload, _ = _prove(
        capsys, data, generator_dir, "--theorem", "Demo.two", "--retriever", str(tmp_path / "encoder")
    )
    assert code == 0
    index = payload["premise_index"]
    # A demo corpus is searched exactly: exact by construction, no served query checked.
    assert index["kind"] == "exact" and index["recall_at_10"] == 1.0 and index["served_queries"] == 0
    code, payload, _ = _prove(capsys, data, generator_dir, "--theorem", "Demo.two", "--max-expansions", "1")
    assert code == 0 and payload["premise_index"] is None
