"""The file-check backend: works with any ``lean`` binary, one whole-file run per tactic.

To run a tactic, it re-elaborates the theorem with the proof so far and reads Lean's
``unsolved goals`` diagnostic as the new state; no error means the proof is finished; any
other error is a Lean error. Slow (each step re-elaborates the file up to the theorem,
imports included) but universal across Lean versions, and it needs nothing beyond ``lean``.

How a step is checked:

* The user's file is never modified. Each run writes a temporary copy: the file up to the
  end of the theorem (declarations after it cannot change it, so they are left out), with the
  theorem's proof (``Theorem.proof_start``..``Theorem.end``) replaced by ``by`` and the
  tactic prefix, one tactic per line.
* The initial state comes from ``by`` + ``skip``: an empty ``by`` is a parse error in most
  Lean versions, while ``skip`` changes nothing, so Lean reports every goal as unsolved.
* A state's handle is its tactic prefix (a tuple of tactics). States reached by different
  prefixes with the same goals compare equal (see :class:`~lean_env.interactive.interface.TacticState`).
* The ``unsolved goals`` error of the proof itself is the one Lean puts at (or, in some
  versions, before) the ``by``; an ``unsolved goals`` error further in (a ``·`` or ``{}``
  block that did not close its goal) is a Lean error of the tactic, as is any other error.
* Errors outside the theorem (before it) are not the tactic's fault: they mean the file
  does not elaborate around the theorem, and raise :class:`FileCheckError`.
* After the theorem comes a probe (:mod:`lean_env.interactive.probe`), which says nothing
  when the theorem is declared and "unknown identifier" when it is not: "no error" is a
  finished proof only when the theorem exists (the 2021 Lean 4 drops some without a word).
  A parse error at the probe is the tactic's: its text wanted more and the parser read on.
  A session whose probe fails with the empty proof (a name it cannot resolve) goes without.
* A tactic using ``sorry`` or ``admit`` is rejected without running it (as in every backend:
  :mod:`lean_env.interactive.session`), and so is one carrying a command (``#exit``,
  ``axiom``, ...; see :func:`~lean_env.proofs.text.proof_problem`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from lean_env.errors import BackendError
from lean_env.interactive.batch import batch_file, batchable, needs_confirming
from lean_env.interactive.interface import (
    OPEN_TIMEOUT,
    TACTIC_TIMEOUT,
    LeanError,
    ProofFinished,
    TacticResult,
    TacticState,
    TacticTimeout,
)
from lean_env.interactive.probe import DROPPED, declaration_probe, says_undeclared
from lean_env.interactive.session import SORRY_REJECTED, GuardedSession
from lean_env.lean.diagnostics import Diagnostic
from lean_env.lean.runner import FileRunner, LeanRun, LeanRunner, PendingRun
from lean_env.lean.server import ServerRunner
from lean_env.proofs.text import offset_of, position_of, proof_problem, splice_proof, tactic_proof
from lean_env.proofs.theorem_source import read_theorem_file
from lean_env.records import Position, Theorem

log = logging.getLogger(__name__)

# The candidates of an expansion's first Lean run together; each next batch is twice as large.
FIRST_BATCH = 8


class FileCheckError(BackendError):
    """The file does not elaborate around the theorem, or Lean's answer cannot be read."""


Prefix = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FileCheckBackend:
    """Opens theorems by re-elaborating their file with ``lean`` (see the module docstring)."""

    name: ClassVar[str] = "file"

    # Seconds one tactic may take before it counts as a timeout (a check gets this plus what
    # reaching the theorem took: FileCheckSession._check_timeout).
    timeout: float = TACTIC_TIMEOUT
    # Finds lean/lake for a project directory; tests and benchmarks substitute their own.
    runner_factory: Callable[[Path], FileRunner] = LeanRunner.for_project
    # Candidates in a check's first batch (each next one twice as many); 1: no batches.
    first_batch: int = FIRST_BATCH

    def open(self, repo_dir: Path, theorem: Theorem) -> FileCheckSession:
        """Start a session on ``theorem`` of the checkout at ``repo_dir`` (runs Lean once)."""
        runner = self.runner_factory(repo_dir)
        return FileCheckSession.open(runner, repo_dir, theorem, timeout=self.timeout, first_batch=self.first_batch)

    def close(self) -> None:
        """Nothing to release: every session owns its temporary directory and its runner."""


@dataclass(frozen=True, slots=True)
class ServerCheckBackend(FileCheckBackend):
    """The file check through Lean's language server (:mod:`lean_env.lean.server`): the same
    files and verdicts, but a session's server elaborates the file up to the theorem once,
    and each check only the theorem it changes.

    The servers outlive a session: the next session on a theorem of the same file checks the
    same document through them, so the server elaborates again only from the first command
    whose text changed (the theorem before, its proof restored), not the whole file up to
    the theorem (StateT.seqLeft_eq, line 296 of the 2021 core library's Control/Lawful.lean:
    opened in 2.75 s by a fresh server). :data:`KEPT_FILES` files keep theirs, the least
    recently opened closed first; :meth:`close` closes them all.

    One candidate per check: the server publishes the whole list of a file's diagnostics
    after every command, rendering each message again, so a batch of n copies costs n^2
    renderings (64 copies of a theorem of alg.lean: 9.0 s through the server, 2.2 s as one
    `lean` run, 64 x 0.035 s one at a time). A ``runner_factory`` giving a runner of
    several servers (``partial(ServerRunner.for_project, workers=n)``) checks the next
    candidates on the idle ones while the search reads the first."""

    name: ClassVar[str] = "server"

    runner_factory: Callable[[Path], FileRunner] = ServerRunner.for_project
    first_batch: int = 1
    # (checkout, file) -> the runner and directory its sessions check that file with, oldest first.
    _lanes: OrderedDict[tuple[Path, str], _Lane] = field(default_factory=OrderedDict, compare=False, repr=False)

    def open(self, repo_dir: Path, theorem: Theorem) -> FileCheckSession:
        """Start a session on ``theorem``, through the servers of its file if they are kept."""
        key = (repo_dir.resolve(), theorem.path)
        lane = self._lanes.pop(key, None)
        if lane is None or lane.closed:
            lane = _Lane(self.runner_factory(repo_dir), Path(tempfile.mkdtemp(prefix="leanagent-filecheck-")))
        self._lanes[key] = lane
        while len(self._lanes) > KEPT_FILES:
            self._lanes.popitem(last=False)[1].close()
        return FileCheckSession.open(
            lane.runner, repo_dir, theorem, timeout=self.timeout, first_batch=self.first_batch, lane=lane
        )

    def close(self) -> None:
        """Close the servers kept for the next sessions."""
        while self._lanes:
            self._lanes.popitem()[1].close()


# Files whose language servers the server backend keeps between sessions.
KEPT_FILES = 2


@dataclass(slots=True, eq=False)
class _Lane:
    """A runner and the directory of the file its sessions check, kept between sessions on
    one source file. A session leaves it as it found it: no check in flight (else it closes
    it, and the next session starts a new one)."""

    runner: FileRunner
    workdir: Path
    closed: bool = False
    # The longest a session's opening took to reach its theorem: what a check costs on top of
    # its tactic when Lean elaborates the file again (a `lean` run; a new server).
    reach_seconds: float = 0.0

    def release(self) -> None:
        """A session is done with the lane: closed when a check of it is still running."""
        if self.runner.idle_workers < self.runner.workers:
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.runner.close()
            shutil.rmtree(self.workdir, ignore_errors=True)


class FileCheckSession(GuardedSession[Prefix]):
    """One theorem under the file check. Use :meth:`open`; ``close()`` is idempotent."""

    kind = "file-check"

    def __init__(
        self,
        *,
        theorem: Theorem,
        source: str,
        by: Position,
        lane: _Lane,
        owned: bool,
        timeout: float,
        first_batch: int = FIRST_BATCH,
    ) -> None:
        super().__init__(theorem)
        self._lane = lane
        # What closing the session does with the runner and the directory.
        self._release = lane.close if owned else lane.release
        self._first_batch = first_batch
        # The file text up to the end of the theorem: declarations after it cannot affect it.
        self._source = source
        self._file = lane.workdir / Path(theorem.path).name
        self._timeout = timeout
        # Where the proof's `by` sits in every temporary file (the text before it never changes).
        self._by = by
        self._results: dict[Prefix, TacticResult] = {}
        self._pending: dict[Prefix, _PendingProbedRun] = {}  # submitted ahead of their reading
        self._probe = declaration_probe(theorem.full_name)
        self._probing = True  # until the empty proof's run shows the probe cannot find the name

    @classmethod
    def open(
        cls,
        runner: FileRunner,
        repo_dir: Path,
        theorem: Theorem,
        *,
        timeout: float,
        first_batch: int = FIRST_BATCH,
        lane: _Lane | None = None,
    ) -> FileCheckSession:
        """Read the theorem's file, elaborate it with an empty proof and keep its goals. The
        session owns ``runner`` from here, and closes it; or, given the ``lane`` that holds
        ``runner``, checks in its directory and leaves them to the next session."""
        owned = lane is None
        if lane is None:
            lane = _Lane(runner, Path(tempfile.mkdtemp(prefix="leanagent-filecheck-")))
        release = lane.close if owned else lane.release
        try:
            text = read_theorem_file(repo_dir, theorem)
            source = text[: offset_of(text, theorem.end)]
            # Positions that do not fit the file fail here, before anything is created.
            with_by, by_offset = splice_proof(source, theorem, "by")
        except BaseException:
            release()
            raise
        by = position_of(with_by, by_offset)
        session = cls(
            theorem=theorem,
            source=source,
            by=by,
            lane=lane,
            owned=owned,
            timeout=timeout,
            first_batch=first_batch,
        )
        session.start()
        return session

    @property
    def _runner(self) -> FileRunner:
        return self._lane.runner

    @property
    def _check_timeout(self) -> float:
        """Seconds one check may take: the tactic's, plus what reaching the theorem took
        (_Lane.reach_seconds). A `lean` run elaborates the file up to the theorem again for
        every check, and so does a new language server after a timeout killed the last one:
        with a few seconds per tactic, a file slower to reach would time every check out."""
        return self._timeout + self._lane.reach_seconds

    def _handle(self, handle: object) -> Prefix | None:
        return handle if isinstance(handle, tuple) else None

    def _refusal(self, tactic: str) -> str | None:
        return super()._refusal(tactic) or proof_problem(tactic)  # or a command hidden in the tactic

    def _run_tactic(self, state: TacticState, handle: Prefix, tactic: str) -> TacticResult:
        """Run ``tactic`` after the state's prefix by re-elaborating the theorem."""
        return next(self._outcomes((tactic,), {}, [(*handle, tactic)]))

    def run_tactics(self, state: TacticState, tactics: Sequence[str]) -> Iterator[TacticResult]:
        """Each of ``tactics`` after the state's prefix, in order, with the verdicts one run
        each gives, computed as they are read: the tactics not known yet run together, in
        one Lean run per batch (:mod:`lean_env.interactive.batch`), batches of the
        session's first size (:data:`FIRST_BATCH`; 1: each alone), then twice as many each
        time, so that a search that stops at
        the first proof elaborates at most about twice what it reads; what a batch leaves
        to a run of its own (a proof it says is finished, a verdict it is unsure of) runs
        when it is read."""
        handle = self._own(state)
        refused = {t: problem for t in tactics if (problem := self._refusal(t)) is not None}
        prefixes = [None if t in refused else (*handle, t) for t in tactics]
        return self._outcomes(tactics, refused, prefixes)

    def _outcomes(
        self, tactics: Sequence[str], refused: dict[str, str], prefixes: list[Prefix | None]
    ) -> Iterator[TacticResult]:
        size = self._first_batch
        tried: set[Prefix] = set()  # in a batch already: what it left runs alone
        for index, (tactic, prefix) in enumerate(zip(tactics, prefixes, strict=True)):
            if prefix is None:
                yield LeanError(refused[tactic])
                continue
            if prefix not in self._results:  # the session may have closed while its outcomes were read
                self._check_open()
            if prefix not in self._results and prefix not in tried and batchable(tactic, self.theorem):
                later = (p for p in prefixes[index:] if p is not None and p not in self._results and p not in tried)
                batch = [p for p in dict.fromkeys(later) if batchable(p[-1], self.theorem)][:size]
                if len(batch) > 1:
                    self._run_batch(batch)
                    tried.update(batch)
                    size *= 2
            if prefix not in self._results:  # alone, or what the batch left to a run of its own
                # Without batches the next ones run alone too: the runner's other workers start them.
                upcoming = [p for p in prefixes[index + 1 :] if p is not None] if size <= 1 else []
                self._results[prefix] = self._classify(prefix, self._elaborate(prefix, upcoming))
            yield self._results[prefix]

    def _close(self) -> None:
        self._pending.clear()
        self._release()

    def _start(self) -> TacticState:
        # Opening is not a tactic: the tactic timeout does not cut it (only the attempt's budget).
        first = self._submit((), timeout=OPEN_TIMEOUT)
        for _ in range(self._runner.workers - 1):
            # The other workers elaborate the file up to the theorem meanwhile.
            self._submit((), timeout=OPEN_TIMEOUT)
        run = first.result()
        self._lane.reach_seconds = max(self._lane.reach_seconds, run.run.seconds)
        if run.timed_out:
            raise FileCheckError(
                f"Lean took more than {OPEN_TIMEOUT:g}s, or the attempt's time, to elaborate "
                f"{self.theorem.path} up to theorem {self.theorem.full_name}"
            )
        if says_undeclared(run.probe_diagnostics):
            log.warning("the file check cannot find %s by its name: it will not see it dropped", self.theorem.full_name)
            self._probing = False
        result = self._classify((), run)
        if not isinstance(result, TacticState):
            detail = result.message if isinstance(result, LeanError) else "no goals were reported"
            raise FileCheckError(
                f"theorem {self.theorem.full_name} in {self.theorem.path} cannot be opened: "
                f"with an empty proof Lean should report its goals as unsolved, but: {detail}"
            )
        return result

    def _elaborate(self, prefix: Prefix, upcoming: Iterable[Prefix] = ()) -> _ProbedRun:
        """The run of ``prefix``; meanwhile each worker of the runner that is idle starts the
        next of ``upcoming`` without a verdict (their runs are kept for when they are read)."""
        target = self._pending.pop(prefix, None) or self._submit(prefix)
        later_ones = iter(upcoming)
        while not target.pending.done:
            while self._runner.idle_workers and (later := next(later_ones, None)) is not None:
                if later != prefix and later not in self._results and later not in self._pending:
                    self._pending[later] = self._submit(later)
            if not target.pending.done:  # a submit may have read its answer: then wait for none
                self._runner.wait_any()
        return target.result()

    def _submit(self, prefix: Prefix, *, timeout: float | None = None) -> _PendingProbedRun:
        """Start the run of ``prefix``, within ``timeout`` seconds (default: a check's, the
        tactic timeout plus the file's opening)."""
        text, _ = splice_proof(self._source, self.theorem, tactic_proof(prefix))
        text += "\n\n"
        self._file.write_text(f"{text}{self._probe}\n", encoding="utf-8")
        limit = self._check_timeout if timeout is None else timeout
        return _PendingProbedRun(self._runner.submit(self._file, timeout=limit), position_of(text, len(text)))

    def _run_batch(self, prefixes: list[Prefix]) -> None:
        """Elaborate ``prefixes`` in one run and keep each verdict, but a "finished" that a
        run of its own must confirm (an earlier copy may be what closed it) and those a parse
        error makes unsure; nothing when the batch cannot be built, or runs out of time (each
        then runs alone, with its own limit)."""
        batch = batch_file(self._source, self.theorem, [tactic_proof(p) for p in prefixes])
        if batch is None:
            return
        self._file.write_text(batch.text, encoding="utf-8")
        run = self._runner.run(self._file, timeout=self._check_timeout)
        if run.timed_out:
            log.debug("a batch of %d tactics ran out of time; each runs alone", len(prefixes))
            return
        self._refuse_outside(batch.before_copies(run.errors))
        unsure = batch.unsure(run.diagnostics)
        for index, prefix in enumerate(prefixes):
            own, probe = batch.diagnostics_of(index, run.diagnostics), batch.probe_of(index, run.diagnostics)
            verdict = self._judge(prefix, own, probe, by=batch.copies[index].by)
            finished = isinstance(verdict, ProofFinished)
            if index not in unsure and not (finished and needs_confirming(prefix[-1], index)):
                self._results[prefix] = verdict

    def _classify(self, prefix: Prefix, probed: _ProbedRun) -> TacticResult:
        run = probed.run
        if run.timed_out:
            return TacticTimeout(self._timeout)
        self._refuse_outside([d for d in run.errors if d.start < self.theorem.start])
        own = [d for d in run.diagnostics if self.theorem.start <= d.start < probed.probe]
        return self._judge(prefix, own, probed.probe_diagnostics, by=self._by)

    def _judge(
        self, prefix: Prefix, diagnostics: list[Diagnostic], probe: list[Diagnostic], *, by: Position
    ) -> TacticResult:
        """The verdict of the theorem's ``diagnostics``, but an error when the ``probe`` says
        that Lean dropped it, or when the parser read on into the probe: the proof's text
        wants more (``exact suffices h from e``), and Lean fills what is missing with a
        ``sorry`` that it reports nowhere but in that parse error, at the probe."""
        ran_on = [d for d in probe if d.is_parse_error]
        if ran_on:
            return LeanError("\n\n".join(d.message for d in ran_on))
        verdict = _verdict(prefix, diagnostics, by=by)
        if isinstance(verdict, ProofFinished) and self._probing and says_undeclared(probe):
            return LeanError(DROPPED)
        return verdict

    def _refuse_outside(self, errors: list[Diagnostic]) -> None:
        if errors:
            raise FileCheckError(
                f"{self.theorem.path} has errors outside theorem {self.theorem.full_name}, so "
                f"its tactics cannot be checked: {_render(errors)}"
            )


@dataclass(frozen=True, slots=True)
class _PendingProbedRun:
    """A submitted run of the theorem alone, and where its probe starts."""

    pending: PendingRun
    probe: Position

    def result(self) -> _ProbedRun:
        return _ProbedRun(self.pending.result(), self.probe)


@dataclass(frozen=True, slots=True)
class _ProbedRun:
    """A run of the theorem alone, and where its probe starts (after everything else)."""

    run: LeanRun
    probe: Position

    @property
    def timed_out(self) -> bool:
        return self.run.timed_out

    @property
    def probe_diagnostics(self) -> list[Diagnostic]:
        return [d for d in self.run.diagnostics if d.start >= self.probe]


def _verdict(prefix: Prefix, diagnostics: list[Diagnostic], *, by: Position) -> TacticResult:
    """The outcome of ``prefix`` from the diagnostics of the theorem's elaboration, whose
    proof's ``by`` is at ``by``: its ``unsolved goals`` error (at or before the ``by``) gives
    the new state, any other error is the tactic's, else the proof is finished."""
    errors = [d for d in diagnostics if d.is_error]
    own = [d for d in errors if d.unsolved_goals is not None and d.start <= by]
    others = [d for d in errors if d not in own]
    if others:
        return LeanError("\n\n".join(d.message for d in others))
    if own:
        return TacticState("\n\n".join(d.unsolved_goals or "" for d in own), handle=prefix)
    if any(d.is_sorry_warning for d in diagnostics):
        return LeanError(SORRY_REJECTED)
    return ProofFinished("\n".join(d.message for d in diagnostics))


def _render(diagnostics: list[Diagnostic]) -> str:
    return "; ".join(f"line {d.start.line}: {d.message.splitlines()[0]}" for d in diagnostics[:3])
