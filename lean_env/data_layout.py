"""What the data directory holds, and where: every path under it named once.

The data directory itself is chosen at the CLI edge (``agent.workspace.settings.Settings``
exposes its layout); the layers below receive the directory and find their part of it here,
so that no two modules spell a subdirectory's name each on its own. The names are those the
data directories already on disk use: changing one loses what is stored under the old name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class DataLayout:
    """The files and directories under the data directory ``root``."""

    root: Path

    @property
    def database(self) -> Path:
        """The SQLite database, unless the user gives another database URL."""
        return self.root / "leanagent.db"

    @property
    def lock(self) -> Path:
        """The lock a job holds on the data directory while it runs."""
        return self.root / "leanagent.lock"

    @property
    def cache(self) -> Path:
        """Clones of URL repositories, at the commits that were checked out."""
        return self.root / "cache"

    @property
    def builds(self) -> Path:
        """Lake packages that checkouts with the same dependencies share (:mod:`lean_env.lean.build`)."""
        return self.root / "builds"

    @property
    def repl(self) -> Path:
        """The Lean REPL, built per toolchain."""
        return self.root / "repl"

    @property
    def lean_dojo(self) -> Path:
        """LeanDojo's cache (its ``CACHE_DIR``): its traces of repositories."""
        return self.root / "lean_dojo"

    @property
    def embeddings(self) -> Path:
        """Premise embeddings per encoder, reused by every job."""
        return self.root / "embeddings"

    @property
    def retriever(self) -> Path:
        """The premise retriever trained last (``run``, ``retrieval train``); also the copy of the
        retriever that Ray workers load while proving."""
        return self.root / "retriever"

    @property
    def learner(self) -> Path:
        """The lifelong job's progressive learners, one file per database, model and options."""
        return self.root / "learner"

    @property
    def checkpoints(self) -> Path:
        """The state of an interrupted ``retrieval train``, which the next one resumes."""
        return self.root / "checkpoints"

    @property
    def reports(self) -> Path:
        """Reports of ``run`` and ``evaluate`` (JSON, Markdown, plots)."""
        return self.root / "reports"

    @property
    def generator(self) -> Path:
        """The tactic generator ``generator train`` saves by default."""
        return self.root / "generator"

    @property
    def verify(self) -> Path:
        """The quantized encoders ``verify train-example`` trains, saved by default."""
        return self.root / "verify"
