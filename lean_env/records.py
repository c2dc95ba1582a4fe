"""The plain data records every layer speaks: positions, repositories, files, premises,
theorems and traced tactics.

They are defined once, here at the bottom of the dependency chain
(``agent -> retrieval -> curriculum -> lean_env``), and carry no behaviour beyond cheap
derived properties. Both ingestion paths (LeanDojo tracing and Lean-free source
extraction) produce them, the database stores them, and the retriever and prover read them.

Conventions:

* Positions follow LeanDojo: ``line`` and ``column`` are both 1-based. Backends whose wire
  format is 0-based (the Lean REPL's columns) convert at their edge. A span ``start``..``end``
  is half-open, as Lean's syntax ranges: ``end`` is the position just after the last
  character.
* File paths are POSIX strings relative to the repository root (``Mathlib/Logic/Basic.lean``),
  never absolute, so that two checkouts of one repository produce equal records.
* Names are fully qualified Lean names (``Nat.add_comm``), with namespaces resolved.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """A point in a Lean source file; both coordinates are 1-based, as in LeanDojo."""

    line: int
    column: int

    def __post_init__(self) -> None:
        if self.line < 1 or self.column < 1:
            raise ValueError(f"positions are 1-based, got line={self.line} column={self.column}")

    def as_list(self) -> list[int]:
        """The ``[line, column]`` pair used by the LeanDojo Benchmark 4 JSON files."""
        return [self.line, self.column]


# A commit is a hex SHA (abbreviated or full), a tag or a branch name; we only reject what
# git itself would reject as a ref name in a repo list line.
_REF_RE = re.compile(r"^[A-Za-z0-9._/\-]+$")


@dataclass(frozen=True, slots=True)
class RepoSpec:
    """Where a Lean repository comes from: a git URL or a local path, at an optional commit.

    ``commit`` is ``None`` for "whatever is checked out" (local path) or "the default
    branch head" (URL); ingestion resolves it to a concrete SHA before storing anything.
    ``skip`` holds globs of the repository's paths whose sorries are not to be proved
    (exercises left open on purpose); they are ingested and counted all the same.
    """

    location: str
    commit: str | None = None
    skip: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.location:
            raise ValueError("a repository spec needs a URL or a path")
        if self.commit is not None and not _REF_RE.match(self.commit):
            raise ValueError(f"not a valid commit or ref: {self.commit!r}")
        if not all(self.skip):
            raise ValueError("a skip glob cannot be empty")

    @property
    def is_remote(self) -> bool:
        """True for URLs (``https://``, ``git@``, ``ssh://``, ``file://``), False for paths."""
        return self.location.startswith(("https://", "http://", "git@", "ssh://", "file://"))

    @property
    def name(self) -> str:
        """A short human name: the last path component without ``.git``."""
        tail = self.location.rstrip("/").rsplit("/", 1)[-1]
        return tail.removesuffix(".git") or self.location

    @property
    def identity(self) -> str:
        """The repository's name wherever it is checked out: what seeds its held-out split.

        A network URL gives its host (lower case, without user or port) and path, without a
        trailing ``/`` or ``.git``: ``https://github.com/a/b``, ``https://github.com/a/b.git/``
        and ``git@github.com:a/b.git`` are all ``github.com/a/b``. A local path (or a
        ``file://`` URL) gives the project's directory name (:attr:`name`), not where that
        directory is: moving or cloning a project keeps its identity, renaming its
        directory does not. It is no key: two projects of one name share it.
        """
        if not self.is_remote or self.location.startswith("file://"):
            return self.name
        if "://" in self.location:
            parts = urlsplit(self.location)
            host, path = parts.hostname or "", parts.path
        else:  # scp-like: git@host:owner/repo
            host, _, path = self.location.partition("@")[2].partition(":")
            host = host.lower()
        return f"{host}/{path.strip('/').removesuffix('.git').rstrip('/')}"

    def __str__(self) -> str:
        return self.location if self.commit is None else f"{self.location}@{self.commit}"


# Where Lake keeps dependency checkouts (current and pre-v4.3 layouts), relative to the repo.
PACKAGE_DIRS = (".lake/packages/", "lake-packages/")
# Lean's own sources inside its package checkout.
_LEAN4_SOURCE_DIR = "src/lean/"
# Where a trace puts the toolchain's core library (Init, Std, Lean): LeanDojo's layout.
CORE_PREFIX = f"{PACKAGE_DIRS[0]}lean4/{_LEAN4_SOURCE_DIR}"


def module_of_path(path: str) -> str:
    """The Lean module a file path defines.

    ``Mathlib/Logic/Basic.lean`` -> ``Mathlib.Logic.Basic``; dependency files drop their
    package prefix (``.lake/packages/batteries/Batteries/Data.lean`` -> ``Batteries.Data``)
    and Lean's own sources their ``src/lean/`` (``.lake/packages/lean4/src/lean/Init.lean``
    -> ``Init``).
    """
    for prefix in PACKAGE_DIRS:
        if path.startswith(prefix):
            package, _, path = path[len(prefix) :].partition("/")
            if package == "lean4":
                path = path.removeprefix(_LEAN4_SOURCE_DIR)
            break
    return path.removesuffix(".lean").replace("/", ".")


@dataclass(frozen=True, slots=True)
class LeanFile:
    """One ``.lean`` file of a repository and the modules it imports."""

    path: str
    imports: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        """The Lean module this file defines (see :func:`module_of_path`)."""
        return module_of_path(self.path)


class DeclKind(enum.StrEnum):
    """The kind of a Lean declaration, as written in the source."""

    THEOREM = "theorem"
    LEMMA = "lemma"
    DEF = "def"
    ABBREV = "abbrev"
    INSTANCE = "instance"
    STRUCTURE = "structure"
    INDUCTIVE = "inductive"
    CLASS = "class"
    AXIOM = "axiom"
    OPAQUE = "opaque"
    EXAMPLE = "example"
    # LeanDojo's traced premises do not always say what they are.
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Premise:
    """A declaration that a proof may use: its full name, source code and where it lives."""

    full_name: str
    path: str
    start: Position
    end: Position
    kind: DeclKind = DeclKind.UNKNOWN
    code: str = ""


class TheoremStatus(enum.StrEnum):
    """Where a theorem stands."""

    # The repository proves it (no `sorry` in its proof).
    PROVEN = "proven"
    # Its proof is, or contains, `sorry`: a target for the prover.
    SORRY = "sorry"
    # Was `sorry` in the repository; our search found a proof that Lean checked.
    PROVED_BY_US = "proved_by_us"


class AttemptOutcome(enum.StrEnum):
    """How one proof search for one theorem ended."""

    # A proof was found and Lean's final check of the whole file accepted it.
    PROVED = "proved"
    # The search finished its budget (or ran out of tactics) without a proof.
    FAILED = "failed"
    # The wall-clock limit stopped the search: unknown, not a failure to prove.
    TIMEOUT = "timeout"
    # The proof environment itself failed (Lean crashed, could not open the theorem).
    ERROR = "error"
    # Lean compiled the file with the proof, but the theorem depends on sorryAx (a sorry in
    # its statement or in what the proof uses): no proof, the theorem stays open.
    VACUOUS = "vacuous"


class RunStatus(enum.StrEnum):
    """Where a run (one invocation of the lifelong loop) stands."""

    RUNNING = "running"  # started and not ended: killed, or still going
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class TacticOutcome(enum.StrEnum):
    """What one tactic did where the search ran it (the proof environment's answer)."""

    PROOF = "proof"  # it closed the last goal
    STATE = "state"  # it left goals: a new state
    ERROR = "error"  # Lean refused it
    TIMEOUT = "timeout"  # it ran past its time: unknown


@dataclass(frozen=True, slots=True)
class TriedTactic:
    """One tactic a proof search ran, and what it did: what a ranking of tactics learns from."""

    goal: str  # the goals it ran on, as the proof environment printed them
    tactic: str
    outcome: TacticOutcome
    goals_after: int | None  # goals open after it: 0 for a proof, None after an error or a timeout
    on_proof: bool = False  # a step of the proof the attempt found and Lean's final check accepted


@dataclass(frozen=True, slots=True)
class TracedTactic:
    """One tactic step of a proof: top-level steps for source extraction, every traced
    tactic (nested ones included) for LeanDojo, as LeanAgent counts them.

    ``state_before``/``state_after`` are Lean's pretty-printed goals; they are ``None`` when
    the step comes from source extraction, which sees text but not goals. ``premises`` are
    the full names of the premises the step uses.
    """

    tactic: str
    state_before: str | None = None
    state_after: str | None = None
    premises: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Theorem:
    """A theorem (or lemma) of a repository, with its proof as written.

    ``proof`` is the text after ``:=`` (including ``by``), or ``None`` when the source gives
    none that could be read. ``tactics`` holds the top-level steps of a ``by`` proof and is
    empty for term-mode proofs. ``premises`` are the full names the whole proof uses.
    ``sorries`` are the positions of every ``sorry`` inside the proof. ``proof_start`` is
    where the proof begins: its first token (``by``, the term, or the first ``|`` of
    equations), after ``:=`` and any whitespace; ``None`` when unknown. The proof spans
    ``proof_start``..``end``, which is what writing a found proof back replaces.
    """

    full_name: str
    path: str
    start: Position
    end: Position
    statement: str
    proof: str | None
    status: TheoremStatus
    tactics: tuple[TracedTactic, ...] = ()
    premises: tuple[str, ...] = ()
    sorries: tuple[Position, ...] = ()
    proof_start: Position | None = None

    @property
    def num_steps(self) -> int:
        """S in the curriculum's difficulty e^S: the number of tactic steps recorded (see
        :class:`TracedTactic` for how each backend counts them).

        A term-mode proof counts as one step; a `sorry` theorem, or one whose proof was
        neither read nor traced, has zero (the curriculum treats `sorry` theorems
        separately, as "hard, no proof").
        """
        if self.status is TheoremStatus.SORRY:
            return 0
        if self.tactics:
            return len(self.tactics)
        return 0 if self.proof is None else 1

    @property
    def plain_statement(self) -> str:
        """The statement with every run of whitespace as one space: two versions of a theorem
        state the same when these are equal (a signature reflowed over lines does)."""
        return " ".join(self.statement.split())


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """Something an ingestion step could not read; recorded so that it goes on."""

    path: str
    line: int
    reason: str


class IngestBackend(enum.StrEnum):
    """How a repository was turned into records."""

    DOJO = "dojo"  # LeanDojo tracing: real goals and premises from Lean.
    SOURCE = "source"  # Lean-free source extraction: text, layout and name resolution.
    BENCHMARK = "benchmark"  # Read from a LeanDojo Benchmark 4 directory.


@dataclass(frozen=True, slots=True)
class RepoTrace:
    """Everything ingestion learned about one repository at one commit."""

    spec: RepoSpec
    commit: str
    backend: IngestBackend
    lean_version: str | None
    files: tuple[LeanFile, ...]
    premises: tuple[Premise, ...]
    theorems: tuple[Theorem, ...]
    problems: tuple[ParseProblem, ...] = ()
