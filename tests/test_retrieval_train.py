"""Progressive retriever training: the contrastive step learns, EWC holds weights near what
earlier repositories needed, replay keeps a fair reservoir, and the lifelong loop's matrix."""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pytest
import torch

from lean_env.records import (
    DeclKind,
    IngestBackend,
    LeanFile,
    Position,
    Premise,
    RepoSpec,
    RepoTrace,
    Theorem,
    TheoremStatus,
)
from retrieval.corpus import PremiseCorpus
from retrieval.index import PremiseIndex, RecallScores, evaluate
from retrieval.progressive import ProgressiveReport, ProgressRow, run_progressive, split
from retrieval.train import Consolidation, ProgressiveTrainer, StepReport, TrainConfig
from tests.fakes.tiny_encoder import tiny_encoder

torch.set_num_threads(1)

WORDS = ["apple", "river", "stone", "cloud", "tiger", "maple", "ocean", "piano", "lemon", "eagle", "frost", "amber"]


def _repo(location: str, words: list[str]) -> RepoTrace:
    """Premise ``p<i>`` states a fact about word ``i``; theorems ``use_<i>_k`` speak of the
    *next* word and use ``p<i>``: no word in common, so an untrained encoder cannot match
    them and a trained one must learn the pairing."""
    premises = tuple(
        Premise(f"p{i}", "Lib/Facts.lean", Position(i + 1, 1), Position(i + 2, 1), DeclKind.THEOREM, f"theorem p{i} : {w} = {w}")
        for i, w in enumerate(words)
    )
    theorems = tuple(
        Theorem(f"use_{i}_{k}", "Lib/Main.lean", Position(10 * i + k + 1, 1), Position(10 * i + k + 2, 1),
                f"{words[(i + 1) % len(words)]} {'holds' if k else 'is true'}", "by simp", TheoremStatus.PROVEN, premises=(f"p{i}",))
        for i in range(len(words))
        for k in range(2)
    )
    files = (LeanFile("Lib/Facts.lean"), LeanFile("Lib/Main.lean", ("Lib.Facts",)))
    return RepoTrace(RepoSpec(location), "c0", IngestBackend.SOURCE, None, files, premises, theorems)


def _config(**changes: object) -> TrainConfig:
    base = dict(epochs=20, batch_size=8, learning_rate=1e-3, seed=0)
    base.update(changes)
    return TrainConfig(**base)  # type: ignore[arg-type]


def _recall_at_1(encoder, corpus: PremiseCorpus, trace: RepoTrace) -> float:
    return evaluate(PremiseIndex.build(corpus, encoder), encoder, corpus.examples(trace), ks=(1,)).recall[1]


def test_a_training_step_learns_the_repository() -> None:
    trace = _repo("/r/a", WORDS[:6])
    corpus = PremiseCorpus([trace])
    encoder = tiny_encoder(0)
    before = _recall_at_1(encoder, corpus, trace)
    config = _config(consolidation=Consolidation.NONE, epochs=30, learning_rate=5e-3)
    report = ProgressiveTrainer(encoder, config).step(corpus, corpus.examples(trace))
    after = _recall_at_1(encoder, corpus, trace)
    assert report.examples == 12 and report.batches == 30 * 2 and report.mean_penalty == 0.0
    assert before <= 0.5 and after >= 0.8


def test_ewc_penalises_moving_away_from_the_earlier_repository() -> None:
    """The Fisher-weighted distance from the first repository's weights during the second
    step (the reported penalty / (lambda / 2)) is far smaller under a strong penalty than
    under a negligible one."""
    first, second = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    distance = {}
    for strength in (1e-6, 1e6):
        trainer = ProgressiveTrainer(tiny_encoder(0), _config(consolidation=Consolidation.EWC, ewc_lambda=strength, epochs=5))
        corpus = PremiseCorpus([first])
        first_step = trainer.step(corpus, corpus.examples(first))
        assert first_step.mean_penalty == 0.0 and trainer.fisher_distance().item() == 0.0  # anchored here
        both = PremiseCorpus([first, second])
        report = trainer.step(both, both.examples(second))
        distance[strength] = report.mean_penalty / (strength / 2)
    assert 0 < distance[1e6] < 0.2 * distance[1e-6]


def test_replay_keeps_a_bounded_reservoir_and_mixes_it_in() -> None:
    first, second = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    trainer = ProgressiveTrainer(tiny_encoder(0), _config(consolidation=Consolidation.REPLAY, replay_size=5, epochs=1))
    corpus = PremiseCorpus([first])
    trainer.step(corpus, corpus.examples(first))
    assert trainer.reservoir_size == 5
    both = PremiseCorpus([first, second])
    batches: list[int] = []
    trainer.step(both, both.examples(second), progress=batches.append)
    assert batches == [8 + 5, 4 + 4]  # every new batch carries replayed examples (at most one per new one)
    assert trainer.reservoir_size == 5


def test_split_is_deterministic_and_keeps_theorems_whole() -> None:
    trace = _repo("/r/a", WORDS)
    examples = PremiseCorpus([trace]).examples(trace)
    train, test = split(examples, test_fraction=0.3, seed=1)
    assert (train, test) == split(examples, test_fraction=0.3, seed=1)
    assert {e.theorem for e in train}.isdisjoint({e.theorem for e in test})
    assert 0 < len(test) < len(examples)


@pytest.mark.parametrize(
    ("here", "there"),
    [
        pytest.param("/home/me/lean/proj", "/tmp/clone-7/proj", id="two-checkouts-of-one-project"),
        pytest.param("https://github.com/a/proj", "https://github.com/a/proj.git", id="url-with-and-without-dot-git"),
        pytest.param("git@github.com:a/proj.git", "https://github.com/a/proj", id="ssh-and-https"),
    ],
)
def test_the_split_is_the_same_wherever_the_repository_is_checked_out(here: str, there: str) -> None:
    def held_out(location: str) -> list[str]:
        trace = _repo(location, WORDS)
        _, test = split(PremiseCorpus([trace]).examples(trace), test_fraction=0.3, seed=1)
        return [e.theorem for e in test]

    assert held_out(here) == held_out(there) and held_out(here)
    # the identity, not just the theorem names, seeds it: another project splits otherwise
    assert any(held_out(here) != held_out(f"/home/me/lean/other-{i}") for i in range(3))


def test_the_lifelong_loop_scores_every_seen_repository_and_repeats() -> None:
    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])]
    runs = [run_progressive(traces, tiny_encoder(0), _config(epochs=3), ks=(1, 10), test_fraction=0.5) for _ in range(2)]
    first, again = runs
    recall10 = first.matrix(lambda s: s.recall[10])
    assert recall10[0][1] is None and all(v is not None for v in recall10[1])
    assert recall10 == again.matrix(lambda s: s.recall[10])


def test_forgetting_is_the_mean_drop_from_the_best_earlier_value() -> None:
    def scores(value: float) -> RecallScores:
        return RecallScores(4, {1: value}, value)

    step = StepReport(1, 1, 0.0, 0.0)
    report = ProgressiveReport(
        ("a", "b", "c"),
        (
            ProgressRow("a", "c0", 1, step, {"a": scores(0.8)}),
            ProgressRow("b", "c0", 1, step, {"a": scores(0.6), "b": scores(0.9)}),
            ProgressRow("c", "c0", 1, step, {"a": scores(0.5), "b": scores(0.7), "c": scores(0.4)}),
        ),
    )
    assert report.forgetting(lambda s: s.recall[1]) == pytest.approx(((0.8 - 0.5) + (0.9 - 0.7)) / 2)
    assert np.array(report.matrix(lambda s: s.mrr)[0][1:]).tolist() == [None, None]


@pytest.mark.parametrize("consolidation", [Consolidation.EWC, Consolidation.REPLAY], ids=lambda c: c.value)
def test_an_interrupted_run_resumes_where_it_stopped_and_ends_as_an_uninterrupted_one(consolidation, tmp_path) -> None:
    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:]), _repo("/r/c", WORDS[3:9])]
    config = _config(epochs=2, consolidation=consolidation, replay_size=4)
    whole = run_progressive(traces, tiny_encoder(0), config, test_fraction=0.5)

    checkpoint = tmp_path / "run.pt"

    def stop_after_two(row) -> None:
        if row.repo == "/r/b":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_progressive(traces, tiny_encoder(0), config, test_fraction=0.5, checkpoint=checkpoint, on_step=stop_after_two)
    assert checkpoint.exists()
    steps: list[str] = []
    resumed = run_progressive(traces, tiny_encoder(0), config, test_fraction=0.5, checkpoint=checkpoint,
                              on_step=lambda row: steps.append(row.repo))
    assert steps == ["/r/a", "/r/b", "/r/c"]  # the first two come from the checkpoint
    assert resumed.matrix(lambda s: s.mrr) == whole.matrix(lambda s: s.mrr)
    assert [r.step.mean_loss for r in resumed.rows] == pytest.approx([r.step.mean_loss for r in whole.rows], rel=1e-6)
    # a finished run's checkpoint gives its report back without training again
    again = run_progressive(traces, tiny_encoder(0), config, test_fraction=0.5, checkpoint=checkpoint)
    assert again.rows == resumed.rows


def test_a_later_run_learns_only_new_repositories_and_new_commits(tmp_path) -> None:
    a, b = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    config = _config(epochs=1)
    checkpoint = tmp_path / "learner.pt"
    first = run_progressive([a], tiny_encoder(0), config, test_fraction=0.5, checkpoint=checkpoint)
    assert [(r.repo, r.commit) for r in first.rows] == [("/r/a", "c0")]

    # The curriculum may now put b first: a is learned already and keeps its place.
    later = run_progressive([b, a], tiny_encoder(0), config, test_fraction=0.5, checkpoint=checkpoint)
    assert [(r.repo, r.commit) for r in later.rows] == [("/r/a", "c0"), ("/r/b", "c0")]
    assert later.rows[0] == first.rows[0] and later.repos == ("/r/a", "/r/b") and later.picked_up == 1
    assert set(later.rows[1].scores) == {"/r/a", "/r/b"}  # the new step is scored on both

    newer_a = dataclasses.replace(a, commit="c1")
    newest = run_progressive([b, newer_a], tiny_encoder(0), config, test_fraction=0.5, checkpoint=checkpoint)
    assert [(r.repo, r.commit) for r in newest.rows] == [("/r/a", "c0"), ("/r/b", "c0"), ("/r/a", "c1")]
    assert newest.repos == ("/r/a", "/r/b") and len(newest.matrix(lambda s: s.mrr)) == 3


def test_a_checkpoint_of_another_question_or_model_is_not_resumed(tmp_path, caplog) -> None:
    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])]
    checkpoint = tmp_path / "run.pt"

    def stop(row) -> None:
        raise KeyboardInterrupt

    others = [  # other options, another model's name, a model of another shape
        {"config": _config(epochs=1, seed=7)},
        {"model_id": "another model"},
        {"encoder": tiny_encoder(0, hidden=16)},
    ]
    for other in others:
        checkpoint.unlink(missing_ok=True)
        with pytest.raises(KeyboardInterrupt):
            run_progressive(traces, tiny_encoder(0), _config(epochs=1), checkpoint=checkpoint, on_step=stop)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="retrieval.progressive"):
            run_progressive(traces, other.get("encoder", tiny_encoder(0)), other.get("config", _config(epochs=1)),
                            checkpoint=checkpoint, model_id=other.get("model_id", ""))
        assert "starting afresh" in caplog.text and "resuming" not in caplog.text


def test_replay_survives_a_newer_commit_of_a_learned_repository_with_fewer_premises(tmp_path) -> None:
    """A newer commit of the first repository with one premise fewer shifts every later
    repository's premises down: replayed examples find their premises by name, not by
    their old corpus index (which would point past the end, or at another premise)."""
    a, b = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    config = _config(epochs=3, consolidation=Consolidation.REPLAY)
    checkpoint = tmp_path / "learner.pt"
    run_progressive([a, b], tiny_encoder(0), config, test_fraction=0.5, checkpoint=checkpoint)

    newer_a = dataclasses.replace(a, commit="c1", premises=a.premises[1:],
                                  theorems=tuple(t for t in a.theorems if t.premises != ("p0",)))
    report = run_progressive([newer_a, b], tiny_encoder(0), config, test_fraction=0.5, checkpoint=checkpoint)
    assert [(r.repo, r.commit) for r in report.rows] == [("/r/a", "c0"), ("/r/b", "c0"), ("/r/a", "c1")]


def _scores(value: float) -> RecallScores:
    return RecallScores(examples=1, recall={1: value, 10: value}, mrr=value)


def test_forgetting_after_relearning_an_earlier_repository_counts_the_others() -> None:
    """The last step re-learns a (a newer commit): b, learned before it, dropped from 0.9 to
    0.3 and counts; a, the repository just trained, does not."""
    step = StepReport(1, 1, 0.0, 0.0)
    report = ProgressiveReport(
        ("a", "b"),
        (
            ProgressRow("a", "c0", 1, step, {"a": _scores(0.8)}),
            ProgressRow("b", "c0", 1, step, {"a": _scores(0.6), "b": _scores(0.9)}),
            ProgressRow("a", "c1", 1, step, {"a": _scores(0.9), "b": _scores(0.3)}),
        ),
    )
    assert report.forgetting(lambda s: s.mrr) == pytest.approx(0.9 - 0.3)


# ---- leanagent run -------------------------------------------------------------------------
