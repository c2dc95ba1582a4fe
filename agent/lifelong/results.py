"""What one lifelong run did: the records :class:`~agent.lifelong.job.LifelongJob` returns
and :mod:`agent.lifelong.report` renders, in a module of their own so that the job and its
report both import them and neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.proving.outcome import ProvingOutcome
    from curriculum.ingest import IngestOutcome
    from curriculum.ordering import Curriculum
    from retrieval.embeddings import EmbeddingCounts
    from retrieval.index import IndexQuality
    from retrieval.progressive import ProgressiveReport


@dataclass(frozen=True, slots=True)
class LifelongResult:
    """What one run did."""

    run_id: int
    resumed: bool  # an interrupted run of the same options was picked up
    ingest: tuple[IngestOutcome, ...]
    curriculum: Curriculum
    training: ProgressiveReport | None  # None: not asked
    retriever_dir: Path  # where the trained encoder is saved
    proving: ProvingOutcome | None  # None: not asked, or skipped
    sorries: int  # sorry theorems of the file's repositories
    proving_skipped: str | None = None  # why proving was skipped (no Lean), one line
    embeddings: EmbeddingCounts | None = None  # premises embedded and reused (None: no retriever)
    index: IndexQuality | None = None  # the last premise index's kind and measured recall (None: none built)
    plots: tuple[tuple[str, Path], ...] = ()  # (heading, PNG) of the report
    report: tuple[Path, ...] = ()  # the report's JSON and Markdown files
