"""Premise corpus (accessibility, examples), the faiss index, recall metrics and the encoder."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import premise, repo_trace, theorem
from fakes.tiny_encoder import tiny_encoder

from lean_env.records import LeanFile, Position, TracedTactic
from retrieval.corpus import PremiseCorpus, RetrievalExample
from retrieval.encoder import TextEncoder
from retrieval.index import PremiseIndex, evaluate
from retrieval.pretrained import ModelLoadError

torch.set_num_threads(1)

# A package whose files import one another in a chain (Base <- Mid <- Top) and one file apart.
FILES = (
    LeanFile("Pkg/Base.lean"),
    LeanFile("Pkg/Mid.lean", ("Pkg.Base",)),
    LeanFile("Pkg/Top.lean", ("Pkg.Mid",)),
    LeanFile("Pkg/Other.lean"),
)

PREMISES = [
    premise(name, path=path, line=line, end=Position(line + 1, 1), code=f"theorem {name} : True := trivial")
    for name, path, line in [
        ("base_a", "Pkg/Base.lean", 1),
        ("mid_a", "Pkg/Mid.lean", 1),
        ("top_before", "Pkg/Top.lean", 1),
        ("top_after", "Pkg/Top.lean", 50),
        ("other_a", "Pkg/Other.lean", 1),
    ]
]


@pytest.fixture
def corpus() -> PremiseCorpus:
    first = repo_trace("/repos/one", premises=PREMISES, files=FILES, lean_version=None)
    base_b = premise("base_b", path="Pkg/Base.lean", end=Position(2, 1), code="theorem base_b : True := trivial")
    second = repo_trace("/repos/two", premises=[base_b], files=FILES, lean_version=None)
    return PremiseCorpus([first, second])


def _names(corpus: PremiseCorpus, mask: np.ndarray) -> set[str]:
    return {corpus.premises[i].full_name for i in np.flatnonzero(mask)}


def test_accessible_premises_follow_imports_transitively_and_stop_at_the_theorem(corpus: PremiseCorpus) -> None:
    assert _names(corpus, corpus.accessible("/repos/one", "Pkg/Top.lean", Position(10, 1))) == {
        "base_a",
        "mid_a",
        "top_before",
    }
    assert _names(corpus, corpus.accessible("/repos/one", "Pkg/Top.lean", Position(60, 1))) == {
        "base_a",
        "mid_a",
        "top_before",
        "top_after",
    }
    assert _names(corpus, corpus.accessible("/repos/one", "Pkg/Mid.lean", Position(1, 1))) == {"base_a"}
    assert _names(corpus, corpus.accessible("/repos/one", "Pkg/Other.lean", Position(1, 1))) == set()
    # equal paths in another repository: its own premises only
    assert _names(corpus, corpus.accessible("/repos/two", "Pkg/Mid.lean", Position(1, 1))) == {"base_b"}
    assert corpus.index_of("/repos/one", "base_b") is None and corpus.index_of("/repos/two", "base_b") is not None


def test_examples_keep_only_known_accessible_premises() -> None:
    tactics = (
        TracedTactic("rw [mid_a]", "⊢ goal one", "⊢ two", ("mid_a",)),
        TracedTactic("simp", "⊢ two", None, ()),  # no premise: no example
        TracedTactic("exact top_after", "⊢ three", None, ("top_after", "base_a")),  # top_after is declared later
    )
    theorems = [
        theorem(
            name,
            path="Pkg/Top.lean",
            line=line,
            premises=premises,
            tactics=tactics,
            end=Position(line + 2, 1),
            statement=f"theorem {name} : P",
            proof="by simp",
            proof_start=None,
        )
        for name, line, premises, tactics in [
            ("traced", 10, ("mid_a", "top_after", "base_a"), tactics),
            ("by_statement", 20, ("unknown.name", "top_before", "base_a", "top_before"), ()),
            ("nothing_known", 30, ("unknown.name", "other_a"), ()),
        ]
    ]
    trace = repo_trace("/repos/one", theorems=theorems, premises=PREMISES, files=FILES, lean_version=None)
    corpus = PremiseCorpus([trace])
    examples = corpus.examples(trace)
    got = [(e.theorem, e.context, [corpus.premises[i].full_name for i in e.positives]) for e in examples]
    assert got == [
        ("traced", "⊢ goal one", ["mid_a"]),
        ("traced", "⊢ three", ["base_a"]),
        ("by_statement", "theorem by_statement : P", ["top_before", "base_a"]),
    ]


class _TableEncoder:
    """A fake encoder: fixed vectors per text."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def encode(self, texts, *, batch_size=64, progress=None) -> np.ndarray:
        vectors = np.array([self.table[t] for t in texts], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_search_ranks_by_cosine_and_respects_the_mask(corpus: PremiseCorpus) -> None:
    embeddings = np.eye(len(corpus), dtype=np.float32)
    index = PremiseIndex(corpus, embeddings)
    query = np.array([[0.1, 0.9, 0.5, 0.2, 0.0, 0.3]], dtype=np.float32)
    (hits,) = index.search(query, 3)
    assert [h.index for h in hits] == [1, 2, 5]
    assert hits[0].score == pytest.approx(0.9)
    mask = np.zeros(len(corpus), dtype=bool)
    mask[[0, 3]] = True
    (hits,) = index.search(query, 3, allowed=[mask])
    assert [h.index for h in hits] == [3, 0]  # fewer allowed than k: only those


def test_recall_and_mrr_follow_their_definitions() -> None:
    premises = [
        premise(n, path="Pkg/Base.lean", line=i + 1, end=Position(i + 2, 1), code=f"theorem {n} : True := trivial")
        for i, n in enumerate(["p0", "p1", "p2", "p3"])
    ]
    trace = repo_trace("/r", premises=premises, files=FILES, lean_version=None)
    corpus = PremiseCorpus([trace])
    index = PremiseIndex(corpus, np.eye(4, dtype=np.float32))
    at = Position(1, 1)
    examples = [
        RetrievalExample("/r", "t1", "Pkg/Mid.lean", at, "q1", (0,)),  # ranked first
        RetrievalExample("/r", "t2", "Pkg/Mid.lean", at, "q2", (1, 3)),  # ranks 2 and 4
    ]
    encoder = _TableEncoder({"q1": [4, 3, 2, 1], "q2": [2, 3, 4, 1]})
    scores = evaluate(index, encoder, examples, ks=(1, 2, 10))
    assert scores.examples == 2
    assert scores.recall == {1: pytest.approx(0.5), 2: pytest.approx(0.75), 10: pytest.approx(1.0)}
    assert scores.mrr == pytest.approx((1 + 1 / 2) / 2)


def test_the_encoder_gives_unit_vectors_independent_of_padding_and_round_trips(tmp_path: Path) -> None:
    encoder = tiny_encoder()
    texts = ["theorem add_comm (a b : Nat) : a + b = b + a", "simp", "a much longer goal " * 5]
    batch = encoder.encode(texts)
    assert batch.shape == (3, 32)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    alone = encoder.encode(["simp"])
    assert np.allclose(alone[0], batch[1], atol=1e-5)  # padding in a batch changes nothing
    encoder.save(tmp_path / "model")
    again = TextEncoder.load(tmp_path / "model", max_length=64).encode(texts)
    assert np.allclose(again, batch, atol=1e-5)


def test_weights_a_model_lacks_are_drawn_the_same_in_every_process(tmp_path: Path) -> None:
    """A checkpoint without its pooler: transformers draws the missing weights at random,
    from torch's global generator (seeded at random in a fresh process); loading draws them
    from a fixed seed, and leaves the global generator as it was."""
    from safetensors.torch import load_file, save_file

    tiny_encoder().save(tmp_path / "model")
    weights = tmp_path / "model" / "model.safetensors"
    save_file({k: v for k, v in load_file(weights).items() if "pooler" not in k}, weights, metadata={"format": "pt"})
    loaded = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        state = torch.get_rng_state()
        loaded.append(TextEncoder.load(tmp_path / "model").model.state_dict())
        assert torch.equal(torch.get_rng_state(), state)
    assert any("pooler" in k for k in loaded[0])
    assert all(torch.equal(v, loaded[1][k]) for k, v in loaded[0].items())


def test_unloadable_models_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="no such directory"):
        TextEncoder.load(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="cannot load the encoder"):
        TextEncoder.load(tmp_path / "empty")
    for name in ("a/b/c", "bad name!"):  # neither a directory nor a hub name: nothing to ask the hub
        with pytest.raises(ModelLoadError, match="not a Hugging Face model name"):
            TextEncoder.load(name)


@pytest.mark.parametrize(
    ("offline", "endpoint", "message"),
    [
        pytest.param(True, None, "HF_HUB_OFFLINE is set", id="offline"),
        # Port 9 (discard) of this machine: nothing listens, so the connection is refused at once.
        pytest.param(False, "http://127.0.0.1:9", "127.0.0.1 cannot be reached from here", id="unreachable"),
    ],
)
def test_a_hub_name_that_can_only_be_downloaded_fails_at_once_where_nothing_can_be(
    monkeypatch: pytest.MonkeyPatch, offline: bool, endpoint: str | None, message: str
) -> None:
    """Not in the cache, and offline: one clear error, not half a minute of logged retries."""
    import time

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    if endpoint:
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    started = time.monotonic()
    with pytest.raises(ModelLoadError, match=re.escape(message)):
        TextEncoder.load("leanagent-tests/no-such-model")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("says_encoder_decoder", [False, True], ids=["as-saved-now", "as-older-transformers-saved"])
def test_a_t5_encoder_checkpoint_loads_trains_saves_and_reloads(tmp_path: Path, says_encoder_decoder: bool) -> None:
    """ReProver's retriever is a ByT5 `T5EncoderModel`; its config says `is_encoder_decoder`
    false (true from older transformers). Either way it embeds with the encoder, learns,
    and comes back from `save` as it was."""
    import json

    from transformers import ByT5Tokenizer, T5Config, T5EncoderModel

    torch.manual_seed(0)
    config = T5Config(vocab_size=384, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)
    T5EncoderModel(config).save_pretrained(tmp_path / "t5e")
    ByT5Tokenizer().save_pretrained(tmp_path / "t5e")
    written = json.loads((tmp_path / "t5e" / "config.json").read_text())
    assert written["architectures"] == ["T5EncoderModel"]
    written["is_encoder_decoder"] = says_encoder_decoder
    (tmp_path / "t5e" / "config.json").write_text(json.dumps(written))

    encoder = TextEncoder.load(tmp_path / "t5e", max_length=64)
    assert type(encoder.model).__name__ == "T5EncoderModel" and encoder.dimension == 32
    texts = ["⊢ True", "theorem t : True := trivial"]
    before = encoder.embed(texts)
    assert before.shape == (2, 32) and torch.allclose(before.norm(dim=1), torch.ones(2))
    optimizer = torch.optim.SGD(encoder.model.parameters(), lr=0.5)
    (-(before[0] @ before[1])).backward()  # one step pulling the two together
    optimizer.step()
    trained = encoder.embed(texts).detach()
    assert not torch.allclose(trained, before.detach())
    encoder.save(tmp_path / "trained")
    again = TextEncoder.load(tmp_path / "trained", max_length=64)
    assert again.identity() == encoder.identity()
    assert torch.allclose(again.embed(texts).detach(), trained, atol=1e-6)
