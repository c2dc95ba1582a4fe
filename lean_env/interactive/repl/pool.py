"""A bounded pool of REPL processes, one per (project, import header).

Loading imports is the expensive part of a REPL session, and a REPL environment can be
extended any number of times: so every theorem of a file (and of every file with the same
imports) runs on one process that has loaded the header once. The pool keeps at most
``max_size`` processes and closes the least recently used one to make room.

A :class:`PooledRepl` hides restarts: when its process died (crash, timeout kill, memory
cap) the next request starts a new one and reloads the header. Each process it starts gets a
new :attr:`~PooledRepl.incarnation` number, unique within the pool, so callers can tell that
the proof-state ids they hold belong to a process that is gone (the backend replays them).

**Recycling** (:class:`Recycling`, after kimina-lean-server's ``MAX_REPL_USES`` and
``MAX_REPL_MEM``): a REPL keeps every environment and proof state it made, so its memory
grows with its requests. Before a request, a process that has answered ``max_uses`` of them,
or whose process tree holds more than ``max_memory_mb`` of resident memory, is replaced by a
fresh one when a caller next asks which process it is talking to
(:attr:`PooledRepl.incarnation`, at the start of every tactic step), never within a step.

Requests return outcomes, not exceptions, for what a tactic can cause::

    ReplReply      the REPL answered (its answer may itself be an error response)
    ReplTimedOut   no answer in time; the process tree was killed (or not asked: time spent)
    ReplCrashed    the process died; exit code, stderr tail and the request are kept

Crashes are also appended to :attr:`ReplPool.incidents`, so the attempt that hit one is
never lost. Malformed output still raises :class:`ReplProtocolError`: it means the client
and the REPL disagree about the protocol, which no retry fixes.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lean_env.closing import ClosesOnExit
from lean_env.interactive.repl.errors import ReplCrashError, ReplOpenError, ReplTimeoutError
from lean_env.interactive.repl.process import DEFAULT_MEMORY_LIMIT_MB, ReplCommand, ReplProcess
from lean_env.interactive.repl.protocol import CommandRequest, CommandResponse, Request, Response
from lean_env.lean import budget

logger = logging.getLogger(__name__)

# Starts the REPL for a project directory (see lean_env.interactive.repl.find.repl_command).
Launcher = Callable[[Path], ReplCommand]
# The resident memory, in MB, of a process and its descendants (``lake env repl`` runs the
# REPL as lake's child).
ResidentMemory = Callable[[int], float]
# Seconds a fresh process may take to load a theorem file's imports (its header), by default:
# loaded once per process, and far slower than a tactic where the imports are Mathlib's.
HEADER_TIMEOUT = 600.0


@dataclass(frozen=True, slots=True)
class Recycling:
    """When a pooled REPL process is replaced by a fresh one, between requests."""

    # Requests one process answers before it is replaced; None: no limit.
    max_uses: int | None = None
    # Resident memory of its process tree, in MB, past which it is replaced (a Mathlib
    # REPL holds several GB after its imports); None: no limit.
    max_memory_mb: int | None = 16_384

    def __post_init__(self) -> None:
        for name in ("max_uses", "max_memory_mb"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"a REPL's {name} is a positive number or none, got {value}")


def resident_mb(pid: int) -> float:
    """The resident memory of process ``pid`` and its descendants, in MB (0 when gone)."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue  # it ended while we counted
    return total / 2**20


@dataclass(frozen=True, slots=True)
class PoolKey:
    """Which processes can be shared: same project (same LEAN_PATH), same import header."""

    project_dir: Path
    header: str


@dataclass(frozen=True, slots=True)
class ReplReply:
    """The REPL answered ``request``."""

    response: Response
    incarnation: int


@dataclass(frozen=True, slots=True)
class ReplTimedOut:
    """The REPL did not answer in ``seconds``; its process tree was killed (or, with 0
    seconds, it was not asked: the attempt's time budget was spent, lean_env.lean.budget)."""

    seconds: float
    incarnation: int


@dataclass(frozen=True, slots=True)
class ReplCrashed:
    """The REPL process died while handling ``request`` (kept so the attempt is recorded)."""

    request: Request
    returncode: int | None
    stderr_tail: str
    incarnation: int

    def describe(self) -> str:
        code = "" if self.returncode is None else f" with exit code {self.returncode}"
        stderr = f"; stderr: {self.stderr_tail}" if self.stderr_tail else ""
        return f"the Lean REPL died{code}{stderr}"


ReplOutcome = ReplReply | ReplTimedOut | ReplCrashed


@dataclass(slots=True)
class PoolStats:
    """Counters for logs, benchmarks and tests."""

    started: int = 0  # processes started (first starts and restarts)
    evicted: int = 0  # processes closed to make room
    crashes: int = 0
    timeouts: int = 0
    requests: int = 0
    recycled: int = 0  # processes replaced for their uses or their memory


class PooledRepl:
    """One import header's process; restarted on demand. Obtain from :meth:`ReplPool.get`."""

    def __init__(self, pool: ReplPool, key: PoolKey) -> None:
        self.key = key
        self._pool = pool
        self._process: ReplProcess | None = None
        self._header_env: int | None = None
        self._incarnation = 0
        self._uses = 0  # requests the current process answered
        self._lock = threading.RLock()
        self._closed = False

    @property
    def incarnation(self) -> int:
        """The id of the current process (starting one if none runs). Asked at the start of
        every step, this is where a process due for recycling is replaced: never between a
        caller's reading the incarnation and its requests on it."""
        with self._lock:
            self._recycle_if_due()
            self._ensure_running()
            return self._incarnation

    @property
    def header_env(self) -> int:
        """The REPL environment in which the header's imports are loaded."""
        with self._lock:
            self._ensure_running()
            assert self._header_env is not None
            return self._header_env

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def _ensure_running(self) -> None:
        if self._closed:
            raise ReplCrashError(
                f"the REPL for {self.key.project_dir} was evicted from the pool",
                returncode=None,
                stderr_tail="",
            )
        if self._process is not None and self._process.alive:
            return
        if self._process is not None:
            self._process.close()
        self._process = ReplProcess.start(
            self._pool.launcher(self.key.project_dir), memory_limit_mb=self._pool.memory_limit_mb
        )
        self._incarnation = self._pool.next_incarnation()
        self._uses = 0
        self._pool.stats.started += 1
        try:
            answer = self._process.request(CommandRequest(cmd=self.key.header), timeout=self._pool.header_timeout)
        except (ReplCrashError, ReplTimeoutError):
            self._process.close()
            raise
        if not isinstance(answer, CommandResponse) or answer.env is None or answer.errors:
            self._process.close()
            detail = "; ".join(m.data for m in answer.errors) if isinstance(answer, CommandResponse) else repr(answer)
            raise ReplOpenError(
                f"the Lean REPL could not load the imports of {self.key.project_dir} "
                f"({self.key.header.replace(chr(10), '; ') or 'no imports'}): {detail}"
            )
        self._header_env = answer.env
        logger.debug(
            "REPL pid %s loaded header for %s (incarnation %d)",
            self._process.pid,
            self.key.project_dir,
            self._incarnation,
        )

    def run(self, request: Request, *, timeout: float) -> ReplOutcome:
        """Send ``request`` to the current process (starting one if needed).

        Starting a process can itself raise (:class:`ReplStartError`, a header that does
        not load); timeouts and crashes of the request become outcomes.
        """
        with self._lock:
            self._ensure_running()
            assert self._process is not None
            incarnation = self._incarnation
            timeout = budget.clamp(timeout)
            if timeout <= 0:
                return ReplTimedOut(seconds=0.0, incarnation=incarnation)
            self._pool.stats.requests += 1
            self._uses += 1
            try:
                return ReplReply(self._process.request(request, timeout=timeout), incarnation)
            except ReplTimeoutError as e:
                self._pool.stats.timeouts += 1
                logger.info("REPL request timed out after %g s; process killed", e.seconds)
                return ReplTimedOut(seconds=e.seconds, incarnation=incarnation)
            except ReplCrashError as e:
                crash = ReplCrashed(
                    request=request,
                    returncode=e.returncode,
                    stderr_tail=e.stderr_tail,
                    incarnation=incarnation,
                )
                self._pool.record_crash(crash)
                return crash

    def _recycle_if_due(self) -> None:
        """Close a running process that has answered its share of requests or grown past its
        memory (:class:`Recycling`): the next request starts a fresh one."""
        process, limits = self._process, self._pool.recycling
        if process is None or not process.alive or process.pid is None:
            return
        why = None
        if limits.max_uses is not None and self._uses >= limits.max_uses:
            why = f"it answered {self._uses} requests"
        elif limits.max_memory_mb is not None:
            resident = self._pool.resident_mb(process.pid)
            if resident > limits.max_memory_mb:
                why = f"it holds {resident:.0f} MB"
        if why is not None:
            logger.info("replacing the REPL for %s (pid %d): %s", self.key.project_dir, process.pid, why)
            process.close()
            self._process = None
            self._pool.stats.recycled += 1

    def close(self) -> None:
        """Stop the process; later requests fail (the pool hands out a new slot instead)."""
        with self._lock:
            self._closed = True
            if self._process is not None:
                self._process.close()
                self._process = None


class ReplPool(ClosesOnExit):
    """Up to ``max_size`` REPL processes, keyed by :class:`PoolKey`, least recently used out."""

    def __init__(
        self,
        launcher: Launcher,
        *,
        max_size: int = 2,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        header_timeout: float = HEADER_TIMEOUT,
        recycling: Recycling = Recycling(),
        resident_mb: ResidentMemory = resident_mb,
    ) -> None:
        if max_size < 1:
            raise ValueError(f"a REPL pool needs room for at least one process, got {max_size}")
        self.launcher = launcher
        self.max_size = max_size
        self.memory_limit_mb = memory_limit_mb
        self.header_timeout = header_timeout
        self.recycling = recycling
        self.resident_mb = resident_mb
        self.stats = PoolStats()
        self.incidents: list[ReplCrashed] = []
        self._slots: OrderedDict[PoolKey, PooledRepl] = OrderedDict()
        self._incarnations = itertools.count(1)
        self._lock = threading.Lock()

    def next_incarnation(self) -> int:
        with self._lock:
            return next(self._incarnations)

    def record_crash(self, crash: ReplCrashed) -> None:
        with self._lock:
            self.stats.crashes += 1
            self.incidents.append(crash)
        logger.warning("%s (request %r)", crash.describe(), crash.request)

    def get(self, key: PoolKey) -> PooledRepl:
        """The slot for ``key``, created (and the least recently used one evicted) if needed.

        Creating a slot starts nothing: the process starts on its first request.
        """
        evicted: list[PooledRepl] = []
        with self._lock:
            slot = self._slots.get(key)
            if slot is not None:
                self._slots.move_to_end(key)
                return slot
            while len(self._slots) >= self.max_size:
                old_key, old = self._slots.popitem(last=False)
                logger.debug("evicting REPL for %s", old_key)
                evicted.append(old)
                self.stats.evicted += 1
            slot = PooledRepl(self, key)
            self._slots[key] = slot
        # Closed outside the pool's lock: a slot busy with a request holds its own lock and
        # may be waiting for the pool's (next_incarnation, record_crash); closing it under
        # the pool's lock would deadlock the two threads.
        for old in evicted:
            old.close()
        return slot

    def keys(self) -> list[PoolKey]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._slots)

    def close(self) -> None:
        """Stop every process; idempotent."""
        with self._lock:
            slots, self._slots = list(self._slots.values()), OrderedDict()
        for slot in slots:
            slot.close()
