"""Progressive retriever training: the contrastive step learns, EWC holds weights near what
earlier repositories needed, replay keeps a fair reservoir, and the lifelong loop's matrix."""

from __future__ import annotations

import dataclasses
import enum
import fractions
import json
import logging
import math
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from builders import premise, repo_trace, theorem
from fakes.tiny_encoder import tiny_encoder

from lean_env.errors import DiskFullError, UserInputError
from lean_env.records import (
    LeanFile,
    Position,
    RepoTrace,
)
from retrieval.corpus import PremiseCorpus
from retrieval.index import PremiseIndex, RecallScores, evaluate
from retrieval.lifelong_metrics import ScoreMatrix
from retrieval.progressive import (
    LEARNER_FORMAT,
    CheckpointError,
    Learner,
    ProgressiveReport,
    ProgressRow,
    learner_id,
    run_progressive,
    split,
)
from retrieval.train import ProgressiveTrainer, StepReport
from retrieval.train_config import Consolidation, Loss, Schedule, TrainConfig

torch.set_num_threads(1)

WORDS = ["apple", "river", "stone", "cloud", "tiger", "maple", "ocean", "piano", "lemon", "eagle", "frost", "amber"]


def _repo(location: str, words: list[str]) -> RepoTrace:
    """Premise ``p<i>`` states a fact about word ``i``; theorems ``use_<i>_k`` speak of the
    *next* word and use ``p<i>``: no word in common, so an untrained encoder cannot match
    them and a trained one must learn the pairing."""
    premises = [
        premise(f"p{i}", path="Lib/Facts.lean", line=i + 1, end=Position(i + 2, 1), code=f"theorem p{i} : {w} = {w}")
        for i, w in enumerate(words)
    ]
    theorems = [
        theorem(
            f"use_{i}_{k}",
            path="Lib/Main.lean",
            line=10 * i + k + 1,
            premises=(f"p{i}",),
            end=Position(10 * i + k + 2, 1),
            statement=f"{words[(i + 1) % len(words)]} {'holds' if k else 'is true'}",
            proof="by simp",
            proof_start=None,
        )
        for i in range(len(words))
        for k in range(2)
    ]
    files = (LeanFile("Lib/Facts.lean"), LeanFile("Lib/Main.lean", ("Lib.Facts",)))
    return repo_trace(location, theorems=theorems, premises=premises, files=files, lean_version=None)


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


def test_a_training_step_learns_with_reprovers_loss() -> None:
    trace = _repo("/r/a", WORDS[:6])
    corpus = PremiseCorpus([trace])
    encoder = tiny_encoder(0)
    before = _recall_at_1(encoder, corpus, trace)
    config = _config(consolidation=Consolidation.NONE, epochs=30, learning_rate=5e-3, loss=Loss.MSE)
    ProgressiveTrainer(encoder, config).step(corpus, corpus.examples(trace))
    assert before <= 0.5 and _recall_at_1(encoder, corpus, trace) >= 0.8


def _two_files() -> tuple[PremiseCorpus, RepoTrace]:
    """Premises ``a0..a3`` in Lib/A.lean and ``b0..b3`` in Lib/B.lean, theorems in Lib/Main.lean
    (importing both) using ``a0``, and one in Lib/B.lean (at line 3) using ``b0``."""
    premises = [
        premise(f"{f}{i}", path=f"Lib/{f.upper()}.lean", line=i + 1, end=Position(i + 2, 1), code=f"theorem {f}{i} : T")
        for f in "ab"
        for i in range(4)
    ]
    theorems = [
        theorem("main", path="Lib/Main.lean", premises=("a0",), statement="main", proof="by simp", proof_start=None),
        theorem(
            "late", path="Lib/B.lean", line=3, premises=("b0",), statement="late", proof="by simp", proof_start=None
        ),
    ]
    files = (LeanFile("Lib/A.lean"), LeanFile("Lib/B.lean"), LeanFile("Lib/Main.lean", ("Lib.A", "Lib.B")))
    trace = repo_trace("/r", theorems=theorems, premises=premises, files=files, lean_version=None)
    return PremiseCorpus([trace]), trace


@pytest.mark.parametrize(
    ("theorem_name", "negatives", "in_file", "expected"),
    [
        pytest.param("main", 3, 1, (1, 2), id="one-from-the-positives-file-two-from-others"),
        pytest.param("main", 3, 3, (3, 0), id="all-from-its-file"),
        pytest.param("main", 8, 1, (1, 4), id="fewer-others-than-asked"),
        # In B.lean before line 3 only b0 (the positive) and b1 are accessible; A is not imported.
        pytest.param("late", 3, 2, (1, 0), id="only-accessible-premises"),
    ],
)
def test_hard_negatives_are_drawn_as_reprover_draws_them(theorem_name, negatives, in_file, expected) -> None:
    corpus, trace = _two_files()
    (example,) = [e for e in corpus.examples(trace) if e.theorem == theorem_name]
    (positive,) = example.positives
    trainer = ProgressiveTrainer(tiny_encoder(0), _config(negatives=negatives, in_file_negatives=in_file))
    drawn = trainer._negatives(corpus, example, positive)
    path = corpus.premises[positive].path
    allowed = corpus.accessible(example.repo, example.path, example.start)
    assert positive not in drawn and len(set(drawn)) == len(drawn) and all(allowed[i] for i in drawn)
    assert (
        sum(corpus.premises[i].path == path for i in drawn),
        sum(corpus.premises[i].path != path for i in drawn),
    ) == (expected)


def test_the_mse_loss_compares_every_goal_with_every_premise_of_the_batch(monkeypatch) -> None:
    corpus, trace = _two_files()
    examples = corpus.examples(trace)
    encoder = tiny_encoder(0)
    encoder.model.eval()  # no dropout: the same embeddings twice
    trainer = ProgressiveTrainer(encoder, _config(loss=Loss.MSE))
    index = {p.full_name: i for i, p in enumerate(corpus.premises)}
    # Fixed negatives: b0 (which "late" used) among "main"'s, a1 among "late"'s.
    negatives = {"main": [index["b0"], index["a2"]], "late": [index["a1"]]}
    monkeypatch.setattr(trainer, "_negatives", lambda corpus, example, positive: negatives[example.theorem])
    loss = trainer.loss(corpus, examples)
    columns = [index["a0"], index["b0"], index["b0"], index["a2"], index["a1"]]
    from retrieval.corpus import premise_text

    with torch.no_grad():
        queries = encoder.embed([e.context for e in examples])
        keys = encoder.embed([premise_text(corpus.premises[i]) for i in columns])
        label = torch.tensor([[1.0, 0, 0, 0, 0], [0, 1.0, 1.0, 0, 0]])
        assert loss.item() == pytest.approx(torch.nn.functional.mse_loss(queries @ keys.T, label).item(), abs=1e-6)


def test_the_cosine_schedule_warms_up_then_falls_to_zero_in_every_step() -> None:
    """As transformers' get_cosine_schedule_with_warmup over the step's batches, and again
    from the top for the next repository."""
    first, second = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    trainer = ProgressiveTrainer(
        tiny_encoder(0), _config(epochs=4, schedule=Schedule.COSINE, warmup_steps=2, consolidation=Consolidation.NONE)
    )
    rates: list[float] = []
    trainer._optimizer.register_step_pre_hook(lambda optimizer, *_: rates.append(optimizer.param_groups[0]["lr"]))
    for trace in (first, second):
        corpus = PremiseCorpus([trace])
        trainer.step(corpus, corpus.examples(trace))
    total = 4 * 2  # 4 epochs of 12 examples in batches of 8
    expected = [
        1e-3 * (t / 2 if t < 2 else 0.5 * (1 + math.cos(math.pi * (t - 2) / (total - 2)))) for t in range(total)
    ]
    assert rates == pytest.approx(expected * 2)


def test_ewc_penalises_moving_away_from_the_earlier_repository() -> None:
    """The Fisher-weighted distance from the first repository's weights during the second
    step (the reported penalty / (lambda / 2)) is far smaller under a strong penalty than
    under a negligible one."""
    first, second = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    distance = {}
    for strength in (1e-6, 1e6):
        trainer = ProgressiveTrainer(
            tiny_encoder(0), _config(consolidation=Consolidation.EWC, ewc_lambda=strength, epochs=5)
        )
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
    runs = [
        run_progressive(traces, tiny_encoder(0), Learner(_config(epochs=3), ks=(1, 10), test_fraction=0.5))
        for _ in range(2)
    ]
    first, again = runs
    recall10 = first.matrix(lambda s: s.recall[10])
    assert recall10[0][1] is None and all(v is not None for v in recall10[1])
    assert recall10 == again.matrix(lambda s: s.recall[10])


def test_the_report_gives_the_metrics_each_steps_column_and_its_scores_before_the_step() -> None:
    """The last step learns a again (a newer commit): it trains a's column, and b, learned
    before it, is the one whose forgetting counts (0.9 -> 0.3)."""
    step = StepReport(1, 1, 0.0, 0.0)
    empty = RecallScores(0, {1: 0.0, 10: 0.0}, 0.0)  # no held-out examples: no score
    report = ProgressiveReport(
        ("a", "b"),
        (
            ProgressRow("a", "c0", 1, step, {"a": _scores(0.8)}, _scores(0.1), _scores(0.1)),
            ProgressRow("b", "c0", 1, step, {"a": _scores(0.6), "b": _scores(0.9)}, _scores(0.3), _scores(0.2)),
            ProgressRow("a", "c1", 1, step, {"a": _scores(0.9), "b": _scores(0.3)}, empty),
        ),
    )
    assert report.score_matrix(lambda s: s.mrr) == ScoreMatrix(
        scores=((0.8, None), (0.6, 0.9), (0.9, 0.3)),
        trained=(0, 1, 0),
        before=(0.1, 0.3, None),
        untrained=(0.1, 0.2, None),
    )
    assert report.metrics(lambda s: s.mrr).fm == pytest.approx(0.9 - 0.3)


def test_each_repository_is_scored_before_its_step_and_by_the_starting_encoder() -> None:
    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])]
    report = run_progressive(traces, tiny_encoder(0), Learner(_config(epochs=3), test_fraction=0.5))
    first, second = report.rows
    assert first.before == first.untrained  # nothing learned yet

    def scores(encoder, trace: RepoTrace) -> RecallScores:
        corpus = PremiseCorpus([trace])
        _, test = split(corpus.examples(trace), test_fraction=0.5, seed=0)
        assert test
        return evaluate(PremiseIndex.build(corpus, encoder), encoder, test)

    starting = tiny_encoder(0)
    assert [row.untrained for row in report.rows] == [scores(starting, trace) for trace in traces]
    after_a = tiny_encoder(0)
    run_progressive(traces[:1], after_a, Learner(_config(epochs=3), test_fraction=0.5))
    assert second.before == scores(after_a, traces[1])


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"consolidation": Consolidation.EWC}, id="ewc"),
        pytest.param({"consolidation": Consolidation.REPLAY}, id="replay"),
        pytest.param(
            {"consolidation": Consolidation.REPLAY, "loss": Loss.MSE, "schedule": Schedule.COSINE, "warmup_steps": 2},
            id="replay-reprover-loss-and-schedule",
        ),
    ],
)
def test_an_interrupted_run_resumes_where_it_stopped_and_ends_as_an_uninterrupted_one(options, tmp_path) -> None:
    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:]), _repo("/r/c", WORDS[3:9])]
    config = _config(epochs=2, replay_size=4, **options)
    whole = run_progressive(traces, tiny_encoder(0), Learner(config, test_fraction=0.5))

    checkpoint = tmp_path / "run.pt"

    def stop_after_two(row) -> None:
        if row.repo == "/r/b":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_progressive(
            traces, tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint, on_step=stop_after_two
        )
    assert checkpoint.exists()
    steps: list[str] = []
    resumed = run_progressive(
        traces,
        tiny_encoder(0),
        Learner(config, test_fraction=0.5),
        checkpoint=checkpoint,
        on_step=lambda row: steps.append(row.repo),
    )
    assert steps == ["/r/a", "/r/b", "/r/c"]  # the first two come from the checkpoint
    assert resumed.rows == whole.rows  # bit-identical losses and scores, read back or trained
    # a finished run's checkpoint gives its report back without training again
    again = run_progressive(traces, tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint)
    assert again.rows == resumed.rows


def _weights(encoder) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in encoder.model.state_dict().items()}


def _reseed(seed: int) -> Callable[[ProgressRow], None]:
    """An ``on_step`` that draws from torch's global generator after reseeding it, as a
    fresh process (seeded at random) or a proof search between two steps would."""

    def draw(row: ProgressRow) -> None:
        torch.manual_seed(seed)
        torch.rand(7)

    return draw


@pytest.mark.parametrize(
    ("before", "between"),
    [
        pytest.param(1, None, id="another-global-seed-at-the-start"),
        pytest.param(None, 2, id="draws-from-the-global-generator-between-steps"),
        pytest.param(3, 4, id="both"),
    ],
)
@pytest.mark.parametrize("consolidation", [Consolidation.EWC, Consolidation.REPLAY], ids=lambda c: c.value)
def test_training_draws_only_from_its_own_seeded_streams(consolidation, before, between) -> None:
    """Bit-identical weights and rows whatever torch's global generator holds or gives to
    others: the trainer's dropout runs on its own random state, and leaves the global one as
    it found it."""
    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])]
    config = _config(epochs=2, consolidation=consolidation, replay_size=4)
    plain = tiny_encoder(0)
    expected = run_progressive(traces, plain, Learner(config, test_fraction=0.5))
    other = tiny_encoder(0)
    if before is not None:
        torch.manual_seed(before)
    state = torch.get_rng_state()
    got = run_progressive(
        traces, other, Learner(config, test_fraction=0.5), on_step=None if between is None else _reseed(between)
    )
    assert got.rows == expected.rows
    assert all(torch.equal(v, _weights(plain)[k]) for k, v in _weights(other).items())
    if between is None:
        assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("consolidation", list(Consolidation), ids=lambda c: c.value)
def test_recomputing_activations_changes_no_weight(consolidation) -> None:
    """Gradient checkpointing (on by default) replays each layer's dropout masks in the
    backward pass: the weights after a step are those of training that keeps activations."""
    trace = _repo("/r/a", WORDS[:6])
    corpus = PremiseCorpus([trace])
    config = _config(epochs=2, consolidation=consolidation)
    kept, recomputed = tiny_encoder(0), tiny_encoder(0)
    ProgressiveTrainer(kept, config, recompute_activations=False).step(corpus, corpus.examples(trace))
    layers = []  # (training, checkpointing) of the encoder's layers as the step ran them
    for layer in recomputed.model.encoder.layer:
        layer.register_forward_pre_hook(lambda m, _: layers.append((m.training, m.gradient_checkpointing)))
    ProgressiveTrainer(recomputed, config).step(corpus, corpus.examples(trace))
    assert (True, True) in layers  # the training passes did recompute
    assert not any(layer.gradient_checkpointing for layer in recomputed.model.encoder.layer)  # off again
    assert recomputed.model.config.use_cache is kept.model.config.use_cache is True  # given back
    assert all(torch.equal(v, _weights(kept)[k]) for k, v in _weights(recomputed).items())
    assert any(not torch.equal(v, _weights(tiny_encoder(0))[k]) for k, v in _weights(recomputed).items())


def test_two_learners_of_one_run_are_the_same_bytes(tmp_path) -> None:
    """A learner file depends on what it holds only (not on its name, nor on the partial
    file it was written through), so two runs can be compared file to file."""
    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])]
    for name in ("one.pt", "two.pt"):
        run_progressive(
            traces, tiny_encoder(0), Learner(_config(epochs=1), test_fraction=0.5), checkpoint=tmp_path / name
        )
    assert (tmp_path / "one.pt").read_bytes() == (tmp_path / "two.pt").read_bytes()


def test_a_later_run_learns_only_new_repositories_and_new_commits(tmp_path) -> None:
    a, b = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    config = _config(epochs=1)
    checkpoint = tmp_path / "learner.pt"
    first = run_progressive([a], tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint)
    assert [(r.repo, r.commit) for r in first.rows] == [("/r/a", "c0")]

    # The curriculum may now put b first: a is learned already and keeps its place.
    later = run_progressive([b, a], tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint)
    assert [(r.repo, r.commit) for r in later.rows] == [("/r/a", "c0"), ("/r/b", "c0")]
    assert later.rows[0] == first.rows[0] and later.repos == ("/r/a", "/r/b") and later.picked_up == 1
    assert set(later.rows[1].scores) == {"/r/a", "/r/b"}  # the new step is scored on both

    newer_a = dataclasses.replace(a, commit="c1")
    newest = run_progressive([b, newer_a], tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint)
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
            run_progressive(traces, tiny_encoder(0), Learner(_config(epochs=1)), checkpoint=checkpoint, on_step=stop)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="retrieval.progressive"):
            run_progressive(
                traces,
                other.get("encoder", tiny_encoder(0)),
                Learner(other.get("config", _config(epochs=1)), model_id=other.get("model_id", "")),
                checkpoint=checkpoint,
            )
        assert "starting afresh" in caplog.text and "resuming" not in caplog.text


def _stopped_learner(checkpoint, traces: list[RepoTrace], config: TrainConfig) -> None:
    """A learner file written after the first step of ``traces``."""

    def stop(row) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_progressive(
            traces, tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint, on_step=stop
        )


def test_the_learner_file_is_versioned_json_and_tensors(tmp_path) -> None:
    """Nothing pickled: the file loads with weights_only=True, and its meta is JSON naming
    the learner's options field by field, the steps, the reservoir and the random state."""
    a, b = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    config = _config(epochs=1, consolidation=Consolidation.REPLAY, replay_size=4)
    checkpoint = tmp_path / "learner.pt"
    run_progressive([a, b], tiny_encoder(0), Learner(config, test_fraction=0.5, model_id="tiny"), checkpoint=checkpoint)
    state = torch.load(checkpoint, weights_only=True)
    assert state["format"] == LEARNER_FORMAT and set(state) == {"format", "meta", "encoder", "trainer"}
    meta = json.loads(state["meta"])
    assert meta["learner"] == {
        "consolidation": "replay",
        "epochs": 1,
        "batch_size": 8,
        "learning_rate": 1e-3,
        "max_length": 1024,
        "loss": "infonce",
        "temperature": 0.05,
        "negatives": 3,
        "in_file_negatives": 1,
        "schedule": "constant",
        "warmup_steps": 1000,
        "ewc_lambda": 1e10,
        "ewc_decay": 1.0,
        "fisher_batches": 16,
        "replay_size": 4,
        "seed": 0,
        "ks": [1, 10],
        "test_fraction": 0.5,
        "model": "tiny",
        "embed_length": 64,
    }
    assert [(row["repo"], row["commit"]) for row in meta["rows"]] == [("/r/a", "c0"), ("/r/b", "c0")]
    assert {"scores", "before", "untrained"} <= set(meta["rows"][1]) and meta["rows"][1]["before"]["examples"] > 0
    assert len(meta["trainer"]["reservoir"]) == 4 and meta["trainer"]["seen"] > 4
    assert {"repo", "theorem", "positives", "names"} <= set(meta["trainer"]["reservoir"][0])
    assert not list(tmp_path.glob("*.partial"))


def _changed(value: object) -> object:
    if isinstance(value, enum.Enum):
        return next(c for c in type(value) if c != value)
    return value + 1  # type: ignore[operator]


def _id(config: TrainConfig, *, embed_length: int = 512, place: str = "") -> str:
    return learner_id(Learner(config, test_fraction=0.2, model_id="m"), embed_length=embed_length, place=place)


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(TrainConfig)])
def test_every_training_option_is_part_of_the_learner(name: str) -> None:
    """The learner's key names each TrainConfig field itself (not by position): one that
    is left out of it would let a learner of other options be picked up."""
    base = TrainConfig()
    other = dataclasses.replace(base, **{name: _changed(getattr(base, name))})
    assert _id(other) != _id(base)


def test_the_embedding_length_is_part_of_the_learner() -> None:
    """The scores of its rows were measured at that length."""
    assert _id(TrainConfig(), embed_length=256) != _id(TrainConfig(), embed_length=2048)


def test_the_learner_id_is_stable() -> None:
    """The id names the learner's file across versions of leanagent: a change here orphans
    every user's learner (change it only with the key, and say so: docs/retrieval.md)."""
    assert _id(TrainConfig(), place="sqlite:///x.db") == "08bedd7ae1ec"
    assert _id(TrainConfig(), place="sqlite:///y.db") != "08bedd7ae1ec"


def _old_learner(path, traces: list[RepoTrace]) -> None:
    """A learner file as leanagent wrote it before the format was versioned: torch.save of
    a dict of pickled records."""
    encoder = tiny_encoder(0)
    trainer = ProgressiveTrainer(encoder, _config(epochs=1))
    row = ProgressRow(
        traces[0].spec.location, "c0", 3, StepReport(3, 1, 0.5, 0.0), {traces[0].spec.location: _scores(0.5)}
    )
    old_trainer = {
        "optimizer": trainer._optimizer.state_dict(),
        "fisher": {},
        "anchor": {},
        "reservoir": [],
        "seen": 0,
        "rng": random.Random(0).getstate(),
        "torch_rng": torch.get_rng_state(),
    }
    torch.save({"key": "(...)", "rows": [row], "encoder": encoder.model.state_dict(), "trainer": old_trainer}, path)


def _write_damaged(kind: str):
    def write(path, traces: list[RepoTrace]) -> None:
        if kind == "truncated":
            _stopped_learner(path, traces, _config(epochs=1))
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        elif kind == "not-torch":
            path.write_text("not a learner", encoding="utf-8")
        elif kind == "empty":
            path.write_bytes(b"")
        elif kind == "newer-format":
            torch.save({"format": 999, "meta": "{}", "encoder": {}, "trainer": {}}, path)
        elif kind == "no-format":
            torch.save({"weights": torch.zeros(2)}, path)
        elif kind == "meta-not-json":
            _stopped_learner(path, traces, _config(epochs=1))
            state = torch.load(path, weights_only=True)
            torch.save({**state, "meta": state["meta"][:-10]}, path)
        elif kind == "meta-without-rows":
            _stopped_learner(path, traces, _config(epochs=1))
            state = torch.load(path, weights_only=True)
            meta = json.loads(state["meta"])
            del meta["rows"]
            torch.save({**state, "meta": json.dumps(meta)}, path)
        elif kind == "foreign-pickle":
            torch.save({"format": 1, "meta": "{}", "encoder": {}, "trainer": fractions.Fraction(1, 3)}, path)

    return write


@pytest.mark.parametrize(
    ("write", "message"),
    [
        pytest.param(_old_learner, "written by an older leanagent (an unversioned learner)", id="old-unversioned"),
        pytest.param(
            _write_damaged("newer-format"), "written by a newer leanagent (learner format 999", id="newer-format"
        ),
        pytest.param(_write_damaged("truncated"), "cannot be read (damaged or truncated)", id="truncated"),
        pytest.param(_write_damaged("not-torch"), "cannot be read (damaged or truncated)", id="not-a-torch-file"),
        pytest.param(_write_damaged("empty"), "cannot be read (damaged or truncated)", id="empty"),
        pytest.param(_write_damaged("no-format"), "not a learner file of leanagent", id="no-format"),
        pytest.param(_write_damaged("meta-not-json"), "is damaged (JSONDecodeError", id="meta-not-json"),
        pytest.param(_write_damaged("meta-without-rows"), "is damaged (KeyError", id="meta-without-rows"),
        pytest.param(
            _write_damaged("foreign-pickle"), "holds pickled Python objects (fractions.Fraction", id="foreign-pickle"
        ),
    ],
)
def test_a_learner_file_this_leanagent_does_not_read_is_one_clear_error(write, message: str, tmp_path) -> None:
    """Never a traceback and never a silent restart: the file is named, left as it is, and
    the message says how to start a new learner."""
    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])]
    checkpoint = tmp_path / "learner.pt"
    write(checkpoint, traces)
    before = checkpoint.read_bytes()
    with pytest.raises(CheckpointError, match=re.escape(message)) as info:
        run_progressive(traces, tiny_encoder(0), Learner(_config(epochs=1), test_fraction=0.5), checkpoint=checkpoint)
    text = str(info.value)
    assert isinstance(info.value, UserInputError) and "\n" not in text
    assert str(checkpoint) in text and "move it away or delete it to start a new learner" in text
    assert checkpoint.read_bytes() == before


def test_a_full_disk_while_the_learner_is_saved_is_one_line_and_loses_nothing(tmp_path, monkeypatch) -> None:
    """torch writes the learner into /dev/full, a device every write to fails with ENOSPC
    (so this runs without a small file system to fill: tests/test_reliability.py fills one
    where it may mount it). torch's own error on closing the archive it could not write
    ("unexpected pos") hides the cause: the error names the file and says the disk is full,
    and the learner saved before is left as it was."""
    import retrieval.progressive

    traces = [_repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])]
    config = _config(epochs=1)
    checkpoint = tmp_path / "learner.pt"
    run_progressive(traces[:1], tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint)
    before = checkpoint.read_bytes()
    save = retrieval.progressive._save_tensors
    monkeypatch.setattr(retrieval.progressive, "_save_tensors", lambda state, path: save(state, Path("/dev/full")))
    with pytest.raises(DiskFullError) as info:
        run_progressive(traces, tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint)
    assert str(info.value) == f"cannot write the learner {checkpoint}: No space left on device"
    assert checkpoint.read_bytes() == before and sorted(tmp_path.iterdir()) == [checkpoint]


def test_replay_survives_a_newer_commit_of_a_learned_repository_with_fewer_premises(tmp_path) -> None:
    """A newer commit of the first repository with one premise fewer shifts every later
    repository's premises down: replayed examples find their premises by name, not by
    their old corpus index (which would point past the end, or at another premise)."""
    a, b = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    config = _config(epochs=3, consolidation=Consolidation.REPLAY)
    checkpoint = tmp_path / "learner.pt"
    run_progressive([a, b], tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint)

    newer_a = dataclasses.replace(
        a, commit="c1", premises=a.premises[1:], theorems=tuple(t for t in a.theorems if t.premises != ("p0",))
    )
    report = run_progressive([newer_a, b], tiny_encoder(0), Learner(config, test_fraction=0.5), checkpoint=checkpoint)
    assert [(r.repo, r.commit) for r in report.rows] == [("/r/a", "c0"), ("/r/b", "c0"), ("/r/a", "c1")]


def _scores(value: float) -> RecallScores:
    return RecallScores(examples=1, recall={1: value, 10: value}, mrr=value)


def test_a_learner_of_format_1_is_read_without_scores_before_its_steps(tmp_path) -> None:
    """Format 1 kept no scores before each step: its steps come back without them, and the
    run goes on, scoring the new steps in full."""
    a, b = _repo("/r/a", WORDS[:6]), _repo("/r/b", WORDS[6:])
    checkpoint = tmp_path / "learner.pt"
    first = run_progressive([a], tiny_encoder(0), Learner(_config(epochs=1), test_fraction=0.5), checkpoint=checkpoint)
    state = torch.load(checkpoint, weights_only=True)
    meta = json.loads(state["meta"])
    for row in meta["rows"]:
        del row["before"], row["untrained"]
    torch.save({**state, "format": 1, "meta": json.dumps(meta)}, checkpoint)

    later = run_progressive(
        [a, b], tiny_encoder(0), Learner(_config(epochs=1), test_fraction=0.5), checkpoint=checkpoint
    )
    old, new = later.rows
    assert (old.before, old.untrained) == (None, None) and old.scores == first.rows[0].scores
    assert new.before is not None and new.untrained is not None
    assert isinstance(later.metrics(lambda s: s.mrr).fwt, float)  # from the new step alone
    assert torch.load(checkpoint, weights_only=True)["format"] == LEARNER_FORMAT


# ---- leanagent run -------------------------------------------------------------------------
