"""Proving with retrieved premises, through the REPL backend (the fake REPL) and the final
check (the fake lean): the generator reads exactly ReProver's augmented state of the premises
the retriever gave, and the marks it writes never reach Lean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from builders import premise, repo_trace
from fakes import fake_lean
from fakes.repl_support import fake_command, read_log, write_script
from fakes.tiny_encoder import tiny_encoder
from fakes.tiny_generator import tiny_t5

from agent.generators.blend import Blend
from agent.generators.premises import PremiseSource, premise_source
from agent.generators.suggester import TacticSuggester
from agent.generators.training import GeneratorTrainConfig, TacticExample, train_generator
from agent.proving.config import ProvingConfig
from agent.proving.theorem import TheoremProver
from agent.search.tree import SearchConfig
from lean_env.interactive.repl.backend import ReplBackend
from lean_env.records import AttemptOutcome, Position, Theorem
from retrieval.formats import PremisesFor, augmented_state

torch.set_num_threads(1)

START, AFTER_INTRO = "p : Prop\n⊢ p → p", "p : Prop\nh : p\n⊢ p"
# What the generator is taught to write: ReProver's generator marks the premises it uses.
TAUGHT = {START: "intro h", AFTER_INTRO: "exact <a>Demo.imp</a> h"}
LOCATION = "/repos/demo"


class RecordingTokenizer:
    """The generator's tokenizer, recording every text it is asked to tokenize and every
    text it decodes."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer, self.texts, self.decoded = tokenizer, [], []

    def __call__(self, text: str, **options: Any) -> Any:
        self.texts.append(text)
        return self.tokenizer(text, **options)

    def batch_decode(self, sequences: Any, **options: Any) -> list[str]:
        decoded = self.tokenizer.batch_decode(sequences, **options)
        self.decoded += decoded
        return decoded

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tokenizer, name)


class RecordingSource:
    """A premise source recording each goal it was asked about and the premises it gave."""

    def __init__(self, source: PremiseSource) -> None:
        self.source, self.given = source, []

    def premises_for(self, location: str, theorem: Theorem) -> PremisesFor:
        retrieve = self.source.premises_for(location, theorem)

        def recorded(goal: str) -> list[tuple[str, str]]:
            premises = list(retrieve(goal))
            self.given.append((goal, premises))
            return premises

        return recorded


def test_the_generator_reads_the_augmented_state_and_lean_never_sees_a_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lean_script = {
        "theorems": {"Demo.imp_self'": {"goals": START, "steps": {"intro h\nexact Demo.imp h": {"done": True}}}}
    }
    repo = fake_lean.demo_repo(tmp_path, monkeypatch, lean_script)
    theorem = fake_lean.theorem_record(fake_lean.DEMO_SOURCE, "Demo.imp_self'", "Demo.lean")
    repl_script = write_script(
        tmp_path,
        {
            "theorems": {"imp_self'": START},
            "tactics": {START: {"intro h": {"goals": [AFTER_INTRO]}}, AFTER_INTRO: {"exact Demo.imp h": {"goals": []}}},
        },
    )
    premises = [
        premise("Demo.imp", path="Demo.lean", line=1, end=Position(1, 2), code="theorem imp {p : Prop} (h : p) : p"),
        premise("Demo.id'", path="Demo.lean", line=1, end=Position(1, 2), code="def id' (a : α) : α := a"),
        premise("Demo.blank", path="Demo.lean", line=1, end=Position(1, 2), code=""),  # nothing to embed
    ]
    source = premise_source([repo_trace(LOCATION, premises=premises)], tiny_encoder(0), k=5)
    generator = tiny_t5(0)
    # Taught on the inputs it will be asked with: each goal with the premises retrieved for it.
    retrieve = source.premises_for(LOCATION, theorem)
    examples = [TacticExample("", "", goal, tactic, tuple(retrieve(goal))) for goal, tactic in TAUGHT.items()]
    train_generator(generator, examples, GeneratorTrainConfig(epochs=80, batch_size=2, learning_rate=5e-3))
    generator.tokenizer = RecordingTokenizer(generator.tokenizer)
    recording = RecordingSource(source)
    log = tmp_path / "repl.log"
    backend = ReplBackend.create(
        launcher=lambda project_dir: fake_command(project_dir, repl_script, log=log),
        max_processes=1,
        memory_limit_mb=None,
        tactic_timeout=5.0,
        command_timeout=10.0,
        header_timeout=10.0,
    )
    prover = TheoremProver(
        Blend(TacticSuggester(), generator, share=0.0),  # the model alone, as --generator without the suggester
        ProvingConfig(search=SearchConfig(num_candidates=2, max_expansions=4)),
        open_backend=lambda _: backend,
    )
    try:
        attempt, _ = prover.with_premises(recording).prove(LOCATION, repo, theorem)
    finally:
        prover.close()

    assert attempt.outcome is AttemptOutcome.PROVED and attempt.proof == "by\n  intro h\n  exact Demo.imp h"
    assert [goal for goal, _ in recording.given] == [START, AFTER_INTRO]
    assert all({name for name, _ in given} == {"Demo.imp", "Demo.id'"} for _, given in recording.given)
    assert generator.tokenizer.texts == [
        augmented_state(goal, given, generator.max_input_tokens) for goal, given in recording.given
    ]
    assert any("<a>Demo.imp</a>" in text for text in generator.tokenizer.decoded)  # the model wrote marks
    tactics = [entry["request"]["tactic"] for entry in read_log(log) if "tactic" in entry.get("request", {})]
    assert "exact Demo.imp h" in tactics
    assert not any("<a>" in tactic or "</a>" in tactic for tactic in tactics)
