"""The typed settings every command starts from, built once at the CLI edge.

Lower layers never read the environment themselves: they receive what they need (a
database URL, a data directory) as arguments, so tests can point them anywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lean_env.data_layout import DataLayout

DATA_DIR_ENV = "LEANAGENT_HOME"
DB_URL_ENV = "LEANAGENT_DB"


def default_data_dir() -> Path:
    """``$LEANAGENT_HOME``, else ``$XDG_DATA_HOME/leanagent``, else ``~/.local/share/leanagent``."""
    if env := os.environ.get(DATA_DIR_ENV):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "leanagent"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the prover keeps its state."""

    # Holds the SQLite database, LeanDojo's trace cache, checkpoints and reports (``layout``).
    data_dir: Path
    # SQLAlchemy URL of the dynamic database; SQLite in data_dir unless the user says otherwise.
    db_url: str

    @property
    def layout(self) -> DataLayout:
        """Where each thing the prover keeps lies in :attr:`data_dir`."""
        return DataLayout(self.data_dir)

    @classmethod
    def resolve(cls, *, data_dir: Path | None = None, db_url: str | None = None) -> Settings:
        """Fill in what the user did not give from the environment, then from defaults."""
        data_dir = (data_dir or default_data_dir()).expanduser()
        db_url = db_url or os.environ.get(DB_URL_ENV) or f"sqlite:///{DataLayout(data_dir).database}"
        return cls(data_dir=data_dir, db_url=db_url)
