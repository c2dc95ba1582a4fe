"""The lifelong job through its library API, no CLI: ingest -> order -> one retriever step
(a tiny encoder) -> proving the repository's sorries after its step (a tiny generator
taught two tactics, the fake lean as the only Lean) -> report, then a second run that
learns nothing new and embeds no premise. Only the environment is set up (the fake lean on
PATH); no code is patched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch
from fakes.tiny_encoder import tiny_encoder
from prove_cases import demo_lake_repo, taught_generator

from agent.lifelong.job import LifelongJob, LifelongOptions, RetrieverTraining
from agent.lifelong.report import report_payload
from agent.proving.config import ProvingConfig
from agent.search.tree import SearchConfig
from agent.workspace.settings import Settings
from curriculum.ingest import IngestStatus
from lean_env.interactive.choice import ProofBackendChoice
from lean_env.records import AttemptOutcome
from lean_env.trace.choice import TracerChoice
from retrieval.train_config import TrainConfig

torch.set_num_threads(1)


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LifelongJob:
    demo_lake_repo(tmp_path, monkeypatch)  # tmp_path/repo, two sorries; the fake lean on PATH
    (tmp_path / "repos.txt").write_text("repo\n", encoding="utf-8")
    tiny_encoder(0).save(tmp_path / "encoder")
    options = LifelongOptions(
        tmp_path / "repos.txt",
        tracer=TracerChoice.SOURCE,
        training=RetrieverTraining(str(tmp_path / "encoder"), TrainConfig(epochs=2, batch_size=2), test_fraction=0.5),
        proving=ProvingConfig(
            str(taught_generator(tmp_path / "generator")),
            backend=ProofBackendChoice.FILE,
            search=SearchConfig(num_candidates=2, max_expansions=6),
            tactic_timeout=20,
            check_timeout=20,
        ),
    )
    return LifelongJob(Settings.resolve(data_dir=tmp_path / "data"), options)


def test_the_whole_job_through_the_library(job: LifelongJob, tmp_path: Path) -> None:
    repo = str(tmp_path / "repo")
    result = job.run()

    assert (result.run_id, result.resumed) == (1, False)
    assert [(o.location, o.status, o.sorries) for o in result.ingest] == [(repo, IngestStatus.ADDED, 2)]
    assert [r.location for r in result.curriculum.repos] == [repo]
    assert result.training is not None and [row.repo for row in result.training.rows] == [repo]
    assert result.training.picked_up == 0 and (result.retriever_dir / "config.json").is_file()
    assert result.proving is not None and result.proving.targets == 2
    outcomes = {a.theorem: a.outcome for a in result.proving.attempts}
    assert outcomes == {"Demo.imp_self'": AttemptOutcome.PROVED, "Demo.two": AttemptOutcome.FAILED}
    # The step's evaluation embedded the premises; proving searched that same index.
    assert result.embeddings is not None and result.embeddings.embedded > 0 and result.embeddings.reused == 0
    (proved,) = [a for a in result.proving.attempts if a.proved]
    assert proved.proof == "by\n  intro h\n  exact h" and proved.tactics == 2

    patch = Path(result.proving.patches[repo])
    assert "-  sorry\n+  intro h\n+  exact h\n" in patch.read_text(encoding="utf-8")
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo, check=True)
    json_report, markdown = result.report
    assert json.loads(json_report.read_text(encoding="utf-8")) == json.loads(json.dumps(report_payload(result)))
    assert markdown.read_text(encoding="utf-8").startswith("# leanagent run 1")

    again = job.run()
    # A new run (the first finished): the learner's step is picked up, not taken again, and
    # only the sorry that is left is attempted.
    assert (again.run_id, again.resumed) == (2, False)
    assert [o.status for o in again.ingest] == [IngestStatus.UNCHANGED]
    assert again.training is not None and again.training.picked_up == 1 and len(again.training.rows) == 1
    assert again.training.rows[0].step == result.training.rows[0].step
    assert again.proving is not None and again.proving.targets == 1
    assert [(a.theorem, a.outcome) for a in again.proving.attempts] == [("Demo.two", AttemptOutcome.FAILED)]
    # Proving found every premise's embedding in the store: nothing was embedded, and the
    # report says so.
    assert again.embeddings is not None
    assert (again.embeddings.embedded, again.embeddings.reused) == (0, result.embeddings.embedded)
    payload = json.loads(again.report[0].read_text(encoding="utf-8"))
    assert payload["embeddings"] == {"embedded": 0, "reused": result.embeddings.embedded}
    assert "premises embedded: 0" in again.report[1].read_text(encoding="utf-8")
    # A corpus this small is searched exactly, and the report says which index it was.
    assert payload["premise_index"]["kind"] == "exact" and payload["premise_index"]["recall_at_10"] == 1.0
    assert "premise index: exact on cpu" in again.report[1].read_text(encoding="utf-8")
