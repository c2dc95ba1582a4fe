"""The embedding store: premises embedded once per encoder's weights and text, found again
by a later call (the encoder's calls counted), by a reloaded encoder, and not after a
training step; damaged or unwritable files cost a recomputation, never a wrong vector. And
the indexes built through it: one per repository set and weights, shared by evaluation
and proving."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import premise, repo_trace
from fakes.tiny_encoder import tiny_encoder

from retrieval.embeddings import EmbeddingCounts, EmbeddingStore, PremiseIndexes
from retrieval.encoder import TextEncoder

torch.set_num_threads(1)


class CountingEncoder:
    """A real (tiny) encoder that remembers every text it was asked to embed."""

    def __init__(self, inner: TextEncoder) -> None:
        self.inner = inner
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress=None) -> np.ndarray:
        self.encoded += texts
        return self.inner.encode(texts, batch_size=batch_size, progress=progress)

    def identity(self) -> str:
        return self.inner.identity()

    def calls(self) -> list[str]:
        """The texts encoded since the last look."""
        seen, self.encoded = self.encoded, []
        return seen


@pytest.fixture
def encoder() -> CountingEncoder:
    return CountingEncoder(tiny_encoder(0))


TEXTS = ["theorem a : True", "theorem b : 1 = 1", "theorem c : p → p"]


@pytest.mark.parametrize(
    "second, encoded",
    [
        pytest.param(TEXTS, [], id="the-same-premises-embed-nothing"),
        pytest.param(TEXTS[::-1], [], id="in-another-order"),
        pytest.param([*TEXTS[:2], "theorem c : q → q"], ["theorem c : q → q"], id="a-changed-premise-alone"),
        pytest.param([*TEXTS, "new", "new"], ["new"], id="a-new-text-once"),
    ],
)
def test_a_second_call_embeds_only_what_is_new(tmp_path: Path, encoder, second, encoded) -> None:
    store = EmbeddingStore(tmp_path)
    first = store.embeddings(encoder, TEXTS)
    assert encoder.calls() == TEXTS and first.dtype == np.float16
    again = store.embeddings(encoder, second)
    assert encoder.calls() == encoded
    assert np.allclose(again.astype(np.float32), encoder.inner.encode(second), atol=2e-3)  # float16
    by_text = dict(zip(TEXTS, first, strict=True))
    assert all(np.array_equal(row, by_text[t]) for t, row in zip(second, again, strict=True) if t in by_text)
    assert store.counts == EmbeddingCounts(len(TEXTS) + len(encoded), len(second) - len(encoded))


def test_a_trained_encoder_embeds_again_and_a_reloaded_one_does_not(tmp_path: Path, encoder) -> None:
    store = EmbeddingStore(tmp_path / "store")
    store.embeddings(encoder, TEXTS)
    encoder.calls()
    encoder.inner.save(tmp_path / "saved")
    reloaded = CountingEncoder(TextEncoder.load(tmp_path / "saved", max_length=64))
    assert reloaded.identity() == encoder.identity()
    store.embeddings(reloaded, TEXTS)
    assert reloaded.calls() == []
    with torch.no_grad():  # what a training step does to the weights
        next(encoder.inner.model.parameters()).add_(1e-3)
    assert encoder.identity() != reloaded.identity()
    store.embeddings(encoder, TEXTS)
    assert encoder.calls() == TEXTS
    assert len(list((tmp_path / "store").glob("*.npy"))) == 2


def test_only_the_encoders_used_last_are_kept(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path, keep=2)
    encoders = [tiny_encoder(seed) for seed in range(3)]
    for encoder in encoders:
        store.embeddings(encoder, TEXTS)
    assert {p.stem for p in tmp_path.glob("*.npy")} == {e.identity() for e in encoders[1:]}
    assert not list(tmp_path.glob("*partial*"))


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"\x93NUMPY\x01\x00garbage", id="truncated-header"),
        pytest.param(None, id="another-array"),
    ],
)
def test_a_damaged_file_is_computed_again(tmp_path: Path, encoder, damage, caplog) -> None:
    store = EmbeddingStore(tmp_path)
    store.embeddings(encoder, TEXTS)
    encoder.calls()
    path = store.path(encoder.identity())
    if damage is None:
        np.save(path, np.zeros((3, 4)))
    else:
        path.write_bytes(damage)
    with caplog.at_level(logging.WARNING):
        vectors = store.embeddings(encoder, TEXTS)
    assert encoder.calls() == TEXTS and "computing them again" in caplog.text
    assert np.allclose(vectors.astype(np.float32), encoder.inner.encode(TEXTS), atol=2e-3)
    store.embeddings(encoder, TEXTS)
    assert encoder.calls() == []  # rewritten whole


def test_a_store_that_cannot_be_written_still_gives_the_embeddings(tmp_path: Path, encoder, caplog) -> None:
    (tmp_path / "file").write_text("not a directory", encoding="utf-8")
    store = EmbeddingStore(tmp_path / "file")
    with caplog.at_level(logging.WARNING):
        vectors = store.embeddings(encoder, TEXTS)
    assert vectors.shape == (3, 32) and "cannot keep the embeddings" in caplog.text


def test_one_index_serves_its_repository_set_and_any_part_of_it_until_the_weights_change(
    tmp_path: Path, encoder
) -> None:
    one = repo_trace("/repos/one", premises=[premise("a"), premise("b", line=5)])
    two = repo_trace("/repos/two", premises=[premise("c")])
    indexes = PremiseIndexes(EmbeddingStore(tmp_path))
    both = indexes.index([one, two], encoder)
    assert len(encoder.calls()) == 3
    assert indexes.index([one, two], encoder) is both and indexes.index([two], encoder) is both
    newer = repo_trace("/repos/two", premises=[premise("c")], commit="f" * 40)
    assert indexes.index([newer], encoder) is not both
    assert encoder.calls() == []  # its premise's text is stored already
    with torch.no_grad():
        next(encoder.inner.model.parameters()).add_(1e-3)
    assert len(indexes.index([one, two], encoder).corpus) == 3
    assert len(encoder.calls()) == 3
    assert indexes.counts == EmbeddingCounts(embedded=6, reused=1)
