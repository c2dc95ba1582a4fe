"""What one lifelong run did: the records :class:`~agent.lifelong.job.LifelongJob` returns
and :mod:`agent.lifelong.report` renders, in a module of their own so that the job and its
report both import them and neither imports the other."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.proving.attempts import AttemptReport
    from agent.proving.recheck import RecheckResult
    from agent.proving.write_back import WrittenBack
    from curriculum.ingest import IngestOutcome
    from curriculum.ordering import Curriculum
    from lean_env.lean.build import BuildOutcome
    from retrieval.embeddings import EmbeddingCounts
    from retrieval.index import IndexQuality
    from retrieval.progressive import ProgressiveReport


@dataclass(frozen=True, slots=True)
class ProvingOutcome:
    attempts: tuple[AttemptReport, ...]  # every attempt of the run, earlier ones first
    targets: int  # sorry theorems of the file's repositories not left alone, with those whose carried proof failed
    written: WrittenBack  # the patches, and for URL repositories the branches and stale proofs
    skipped: dict[str, int]  # repository -> its sorries left alone (skip globs), not in `targets`
    # Sorries left alone as exercises (agent/proving/exercises.py), not in `targets`:
    # (path, theorem, why) per repository.
    exercises: dict[str, list[tuple[str, str, str]]] = dataclasses.field(default_factory=dict)
    # Repository -> Lean's verdicts on the found proofs carried over to its new version.
    rechecked: dict[str, tuple[RecheckResult, ...]] = dataclasses.field(default_factory=dict)
    # Repository -> how its toolchain changed from the version before ("X -> Y"), when it did.
    bumps: dict[str, str] = dataclasses.field(default_factory=dict)
    # Repository -> how building its checkout went; one that failed had no attempts.
    builds: dict[str, BuildOutcome] = dataclasses.field(default_factory=dict)

    @property
    def patches(self) -> dict[str, str]:
        """Repository -> the patch file of its proofs (git apply format)."""
        return self.written.patches


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
