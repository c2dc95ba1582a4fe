"""Premise embeddings kept on disk per encoder, so that a run embeds only the premises it
has not embedded before with the same weights, and the indexes built from them.

**Layout**: ``DATA_DIR/embeddings/<encoder identity>.npy``, one numpy file per encoder, a
structured array of rows ``(key, vector)``: ``key`` is the 16-byte blake2b digest of the
premise's text (what :func:`retrieval.corpus.premise_text` gives: a changed premise, or a
changed way of writing premises, is another key), ``vector`` its embedding as float16 (half
the bytes of float32; the ranking it gives differs from float32's by less than the 8-bit
codes of the approximate index do, see docs/retrieval.md). One file, not a table in the
database: embeddings are tens to hundreds of megabytes of numbers read whole by one job,
which a memory map reads lazily and a database would only carry as blobs.

**The encoder's identity** (:meth:`retrieval.encoder.TextEncoder.identity`) hashes its
weights, its tokenizer's vocabulary, its input length and the pooling recipe: a training
step changes it, so only that encoder's embeddings are computed again, and a saved and
reloaded encoder (the retriever the Ray workers load) keeps it, so they find the driver's.

**Interruption and two processes**: the file is replaced whole (:func:`write_atomically`),
so a reader sees the old rows or the new, never half; two writers each write the rows they
read plus their own, and the last one's file stands: the other's new rows are computed
again when next asked for, never wrong. A damaged or foreign file is logged and computed
anew. The files of the ``keep`` encoders used last stay; older ones are removed (after a
training step the previous weights' embeddings serve nothing).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lean_env.data_layout import DataLayout
from lean_env.files import write_atomically
from lean_env.records import RepoTrace
from retrieval.corpus import PremiseCorpus
from retrieval.encoder import IdentifiedEncoder
from retrieval.index import IndexQuality, PremiseIndex
from retrieval.index_options import IndexOptions

log = logging.getLogger(__name__)

_KEY_BYTES = 16  # blake2b digest of a premise text: collisions are out of reach at any corpus size


@dataclass(frozen=True, slots=True)
class EmbeddingCounts:
    """How many premises a store embedded, and how many it found already embedded."""

    embedded: int = 0  # texts encoded now (each distinct text once)
    reused: int = 0  # the other premises asked for: their embedding was at hand

    def __add__(self, other: EmbeddingCounts) -> EmbeddingCounts:
        return EmbeddingCounts(self.embedded + other.embedded, self.reused + other.reused)

    def to_json(self) -> dict[str, int]:
        return {"embedded": self.embedded, "reused": self.reused}

    def text(self) -> str:
        return f"premises embedded: {self.embedded}, reused from the embedding store: {self.reused}"


def text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=_KEY_BYTES).digest()


class EmbeddingStore:
    """Premise embeddings per encoder in ``directory``; :attr:`counts` tallies what this
    store object embedded and reused."""

    def __init__(self, directory: Path, *, keep: int = 4) -> None:
        self.directory = directory
        self.keep = keep  # encoders whose embeddings stay on disk (the most recently used)
        self.counts = EmbeddingCounts()

    @classmethod
    def of_data_dir(cls, data_dir: Path) -> EmbeddingStore:
        """The store every job of the data directory ``data_dir`` shares."""
        return cls(DataLayout(data_dir).embeddings)

    def path(self, identity: str) -> Path:
        """The file of the encoder whose :meth:`~IdentifiedEncoder.identity` is ``identity``."""
        return self.directory / f"{identity}.npy"

    def embeddings(
        self,
        encoder: IdentifiedEncoder,
        texts: Sequence[str],
        *,
        identity: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """(len(texts), d) float16 embeddings of ``texts`` by ``encoder`` (whose identity
        the caller may have computed already): those the store holds are read, the others
        encoded (each distinct text once) and added."""
        path = self.path(identity or encoder.identity())
        stored = self._read(path)
        keys = [text_key(t) for t in texts]
        rows: dict[bytes, int] = {}
        if stored is not None:
            raw = np.ascontiguousarray(stored["key"]).tobytes()
            rows = {raw[i : i + _KEY_BYTES]: r for r, i in enumerate(range(0, len(raw), _KEY_BYTES))}
        missing = list(dict.fromkeys(key for key in keys if key not in rows))
        new: np.ndarray | None = None
        if missing:
            first = {key: i for i, key in reversed(list(enumerate(keys)))}
            new = encoder.encode([texts[first[key]] for key in missing], progress=progress).astype(np.float16)
        if stored is None and new is None:  # nothing to embed: the dimension is the encoder's alone
            new = encoder.encode([], progress=progress).astype(np.float16)
        if new is None:
            assert stored is not None, "without new rows there are stored ones"
            d = stored["vector"].shape[1]
        else:
            d = new.shape[1]
        out = np.empty((len(texts), d), dtype=np.float16)
        fresh = {key: i for i, key in enumerate(missing)}
        found = [i for i, key in enumerate(keys) if key in rows]
        if found:
            assert stored is not None, "texts found among the stored rows"
            out[found] = stored["vector"][[rows[keys[i]] for i in found]]
        if missing:
            assert new is not None, "the missing texts were just embedded"
            out[[i for i, key in enumerate(keys) if key in fresh]] = new[[fresh[key] for key in keys if key in fresh]]
            self._write(path, stored, missing, new)
        counts = EmbeddingCounts(len(missing), len(texts) - len(missing))
        self.counts += counts
        log.info("%d premise(s) embedded, %d reused (%s)", counts.embedded, counts.reused, path.name)
        return out

    def _read(self, path: Path) -> np.ndarray | None:
        """The rows of ``path`` as a memory map, or None when there is no usable file."""
        try:
            stored = np.load(path, mmap_mode="r", allow_pickle=False)
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: kept by the pruning below
        except FileNotFoundError:
            return None
        except (OSError, ValueError, EOFError) as error:  # EOFError: an empty file
            log.warning("the embeddings %s cannot be read (%s); computing them again", path, error)
            return None
        fields = stored.dtype.fields or {}
        if set(fields) != {"key", "vector"} or fields["key"][0] != np.dtype((np.uint8, _KEY_BYTES)):
            log.warning("%s is not an embedding file of this leanagent; computing them again", path)
            return None
        return stored

    def _write(self, path: Path, stored: np.ndarray | None, keys: list[bytes], vectors: np.ndarray) -> None:
        d = vectors.shape[1]
        if stored is not None and stored["vector"].shape[1] != d:
            stored = None  # another width under this identity cannot be: start again
        dtype = np.dtype([("key", np.uint8, (_KEY_BYTES,)), ("vector", np.float16, (d,))])
        old = 0 if stored is None else len(stored)
        rows = np.empty(old + len(keys), dtype=dtype)
        if stored is not None:
            rows[:old] = stored
        rows["key"][old:] = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, _KEY_BYTES)
        rows["vector"][old:] = vectors
        try:
            write_atomically(path, lambda partial: np.save(partial, rows, allow_pickle=False))
        except OSError as error:  # a cache: the run goes on, and embeds these again next time
            log.warning("cannot keep the embeddings in %s: %s", path, error.strerror or error)
            return
        self._prune(keep_also=path)

    def _prune(self, *, keep_also: Path) -> None:
        files = sorted(self.directory.glob("*.npy"), key=_mtime, reverse=True)
        for old in files[self.keep :]:
            if old != keep_also:
                with contextlib.suppress(OSError):
                    old.unlink()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class PremiseIndexes:
    """The premise index of a set of repositories for an encoder, embedded through one store
    (or none), and kept: asked again for the same repositories and weights, or for some of
    them (proving one repository right after the evaluation of all), it is the same index."""

    def __init__(
        self,
        store: EmbeddingStore | None = None,
        *,
        exact: bool | None = None,
        options: IndexOptions = IndexOptions(),
        device: str | None = None,
    ) -> None:
        self.store = store
        self.exact = exact  # None: PremiseIndex chooses by size and measured recall
        self.options = options
        self.device = device  # a torch device to search on (the encoder's GPU); None: the CPU
        self._last: tuple[frozenset[tuple[str, str]], str, PremiseIndex] | None = None

    @property
    def quality(self) -> IndexQuality | None:
        """The kind and measured recall of the index built last (None before the first)."""
        return None if self._last is None else self._last[2].quality

    @property
    def counts(self) -> EmbeddingCounts:
        return self.store.counts if self.store is not None else EmbeddingCounts()

    def index(
        self, traces: Sequence[RepoTrace], encoder: IdentifiedEncoder, *, corpus: PremiseCorpus | None = None
    ) -> PremiseIndex:
        """An index holding the premises of ``traces`` (``corpus``: theirs, when the caller
        has it): the last one built, if it holds every one of them at its commit and was
        embedded by these weights, else a new one over ``traces``. An index of more
        repositories serves as well: a theorem's mask allows only its own repository."""
        wanted = frozenset((t.spec.location, t.commit) for t in traces)
        identity = encoder.identity()
        if self._last is not None and wanted <= self._last[0] and identity == self._last[1]:
            return self._last[2]
        self._last = None  # free it before building the next one
        index = PremiseIndex.build(
            corpus or PremiseCorpus(traces),
            encoder,
            store=self.store,
            identity=identity,
            exact=self.exact,
            options=self.options,
            device=self.device,
        )
        self._last = (wanted, identity, index)
        return index
