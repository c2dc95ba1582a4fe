"""The Lean REPL's JSON wire format, isolated: typed requests out, typed responses in.

The REPL (leanprover-community/repl) reads one JSON object per request on stdin and
answers with one JSON object on stdout; both sides end a message with a blank line. The
REPL joins the lines of a request after trimming each one, so a request must be a single
line: :meth:`encode` guarantees that (``json.dumps`` escapes every newline in a string).

Requests (camelCase on the wire, snake_case here)::

    {"cmd": str, "env"?: int, "allTactics"?: bool, "rootGoals"?: bool, "infotree"?: str}
    {"path": str, "env"?: int, "allTactics"?: bool}
    {"tactic": str, "proofState": int}
    {"pickleTo": str, "env": int}            {"unpickleEnvFrom": str}
    {"pickleTo": str, "proofState": int}     {"unpickleProofStateFrom": str, "env"?: int}

Responses, told apart by shape (the REPL leaves out empty lists)::

    command    {"env": int, "messages"?: [...], "sorries"?: [...], "tactics"?: [...], "infotree"?: ...}
    tactic     {"proofState": int, "goals": [str], "messages"?, "sorries"?, "traces"?, "proofStatus"?}
    error      {"message": str}          ("Unknown environment.", "Lean error:\\n...")

Positions on the wire have a 1-based ``line`` and a 0-based ``column`` (in characters);
:meth:`ReplPos.to_position` converts to the project's 1-based :class:`Position`. Tactic-mode
messages carry line 0 ("no position").

Anything that does not fit raises :class:`ReplProtocolError` with the raw text attached.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any

from lean_env.interactive.repl.errors import ReplProtocolError
from lean_env.records import Position

# ---------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """Elaborate Lean commands, in a fresh environment (``env=None``, imports allowed) or on top of ``env``."""

    cmd: str
    env: int | None = None
    all_tactics: bool = False
    root_goals: bool = False
    infotree: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"cmd": self.cmd}
        if self.env is not None:
            wire["env"] = self.env
        if self.all_tactics:
            wire["allTactics"] = True
        if self.root_goals:
            wire["rootGoals"] = True
        if self.infotree is not None:
            wire["infotree"] = self.infotree
        return wire


@dataclass(frozen=True, slots=True)
class FileRequest:
    """Elaborate a whole file, read by the REPL from ``path`` (relative to its working directory)."""

    path: str
    env: int | None = None
    all_tactics: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"path": self.path}
        if self.env is not None:
            wire["env"] = self.env
        if self.all_tactics:
            wire["allTactics"] = True
        return wire


@dataclass(frozen=True, slots=True)
class TacticRequest:
    """Run one tactic on a recorded proof state."""

    tactic: str
    proof_state: int

    def to_wire(self) -> dict[str, Any]:
        return {"tactic": self.tactic, "proofState": self.proof_state}


@dataclass(frozen=True, slots=True)
class PickleEnvRequest:
    """Save environment ``env`` to an ``.olean`` file."""

    env: int
    pickle_to: str

    def to_wire(self) -> dict[str, Any]:
        return {"pickleTo": self.pickle_to, "env": self.env}


@dataclass(frozen=True, slots=True)
class UnpickleEnvRequest:
    """Load an environment saved by :class:`PickleEnvRequest`."""

    unpickle_env_from: str

    def to_wire(self) -> dict[str, Any]:
        return {"unpickleEnvFrom": self.unpickle_env_from}


@dataclass(frozen=True, slots=True)
class PickleProofStateRequest:
    """Save proof state ``proof_state`` to an ``.olean`` file."""

    proof_state: int
    pickle_to: str

    def to_wire(self) -> dict[str, Any]:
        return {"pickleTo": self.pickle_to, "proofState": self.proof_state}


@dataclass(frozen=True, slots=True)
class UnpickleProofStateRequest:
    """Load a proof state saved by :class:`PickleProofStateRequest`, optionally into ``env``."""

    unpickle_proof_state_from: str
    env: int | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"unpickleProofStateFrom": self.unpickle_proof_state_from}
        if self.env is not None:
            wire["env"] = self.env
        return wire


Request = (
    CommandRequest
    | FileRequest
    | TacticRequest
    | PickleEnvRequest
    | UnpickleEnvRequest
    | PickleProofStateRequest
    | UnpickleProofStateRequest
)


def encode(request: Request) -> str:
    """The request as one line of JSON followed by the blank line that ends it."""
    return json.dumps(request.to_wire(), ensure_ascii=False) + "\n\n"


def request_from_wire(wire: dict[str, Any]) -> Request:
    """The typed request a wire object stands for (the REPL's own order of trying shapes).

    Used by stand-ins and tests that start from recorded requests.
    """
    try:
        if "tactic" in wire:
            return TacticRequest(tactic=_str(wire, "tactic"), proof_state=_int(wire, "proofState"))
        if "pickleTo" in wire and "env" in wire:
            return PickleEnvRequest(env=_int(wire, "env"), pickle_to=_str(wire, "pickleTo"))
        if "unpickleEnvFrom" in wire:
            return UnpickleEnvRequest(unpickle_env_from=_str(wire, "unpickleEnvFrom"))
        if "pickleTo" in wire:
            return PickleProofStateRequest(proof_state=_int(wire, "proofState"), pickle_to=_str(wire, "pickleTo"))
        if "unpickleProofStateFrom" in wire:
            return UnpickleProofStateRequest(
                unpickle_proof_state_from=_str(wire, "unpickleProofStateFrom"),
                env=_opt_int(wire, "env"),
            )
        if "cmd" in wire:
            return CommandRequest(
                cmd=_str(wire, "cmd"),
                env=_opt_int(wire, "env"),
                all_tactics=bool(wire.get("allTactics", False)),
                root_goals=bool(wire.get("rootGoals", False)),
                infotree=wire.get("infotree"),
            )
        if "path" in wire:
            return FileRequest(
                path=_str(wire, "path"),
                env=_opt_int(wire, "env"),
                all_tactics=bool(wire.get("allTactics", False)),
            )
    except _ShapeError as e:
        raise ReplProtocolError(f"malformed REPL request ({e})", raw=json.dumps(wire)) from e
    raise ReplProtocolError("not a REPL request", raw=json.dumps(wire))


# --------------------------------------------------------------------------- responses


class Severity(enum.StrEnum):
    """The severity of a Lean message, as the REPL spells it."""

    TRACE = "trace"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class ProofStatus(enum.Enum):
    """What the REPL says about a proof after a tactic (its ``proofStatus`` field)."""

    # "Completed": no goals, the proof term has the root goal's type and passes the kernel.
    COMPLETED = "completed"
    # "Incomplete: open goals remain".
    OPEN_GOALS = "open_goals"
    # "Incomplete: contains sorry": goals are closed, but with `sorry`.
    CONTAINS_SORRY = "contains_sorry"
    # "Incomplete: contains metavariable(s)": goals are closed but the term is not.
    CONTAINS_MVARS = "contains_mvars"
    # "Error: ...": the kernel (or the type check against the root goal) rejected the term.
    ERROR = "error"
    # "Not verified: ...": the REPL could not check (several root goals).
    NOT_VERIFIED = "not_verified"
    # No proofStatus field: a REPL older than the field; judge by goals and messages alone.
    ABSENT = "absent"
    # A status string this client does not know (a newer REPL).
    UNKNOWN = "unknown"


def classify_proof_status(text: str | None) -> ProofStatus:
    """Map the REPL's ``proofStatus`` string onto :class:`ProofStatus`."""
    if text is None:
        return ProofStatus.ABSENT
    if text == "Completed":
        return ProofStatus.COMPLETED
    if text.startswith("Incomplete: open goals"):
        return ProofStatus.OPEN_GOALS
    if text.startswith("Incomplete: contains sorry"):
        return ProofStatus.CONTAINS_SORRY
    if text.startswith("Incomplete: contains metavariable"):
        return ProofStatus.CONTAINS_MVARS
    if text.startswith("Error"):
        return ProofStatus.ERROR
    if text.startswith("Not verified"):
        return ProofStatus.NOT_VERIFIED
    return ProofStatus.UNKNOWN


@dataclass(frozen=True, slots=True)
class ReplPos:
    """A position as the REPL sends it: ``line`` 1-based (0 = none), ``column`` 0-based."""

    line: int
    column: int

    def to_position(self) -> Position | None:
        """The project's 1-based position, or None for the REPL's "no position" (line 0)."""
        return None if self.line == 0 else Position(self.line, self.column + 1)


@dataclass(frozen=True, slots=True)
class ReplMessage:
    """A message Lean printed (error, warning, info, trace)."""

    severity: Severity
    pos: ReplPos
    end_pos: ReplPos | None
    data: str

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


@dataclass(frozen=True, slots=True)
class ReplSorry:
    """A `sorry` Lean met; ``proof_state`` lets tactics run on its goal (term sorries in
    commands carry one too). Sorries created by a tactic have no position."""

    goal: str
    proof_state: int | None
    pos: ReplPos | None
    end_pos: ReplPos | None


@dataclass(frozen=True, slots=True)
class ReplTactic:
    """One tactic of a command, reported with ``allTactics``."""

    tactic: str
    goals: str
    pos: ReplPos
    end_pos: ReplPos
    proof_state: int | None
    used_constants: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommandResponse:
    """The answer to a command or file: the new environment and what Lean said."""

    env: int | None
    messages: tuple[ReplMessage, ...] = ()
    sorries: tuple[ReplSorry, ...] = ()
    tactics: tuple[ReplTactic, ...] = ()
    # The info tree as raw JSON (only with the "infotree" option); we do not interpret it.
    infotree: Any = field(default=None, hash=False, compare=False)

    @property
    def errors(self) -> tuple[ReplMessage, ...]:
        return tuple(m for m in self.messages if m.is_error)


@dataclass(frozen=True, slots=True)
class ProofStepResponse:
    """The answer to a tactic (or a proof-state pickle): the new proof state and its goals."""

    proof_state: int
    goals: tuple[str, ...]
    messages: tuple[ReplMessage, ...] = ()
    sorries: tuple[ReplSorry, ...] = ()
    traces: tuple[str, ...] = ()
    proof_status: str | None = None

    @property
    def status(self) -> ProofStatus:
        return classify_proof_status(self.proof_status)

    @property
    def errors(self) -> tuple[ReplMessage, ...]:
        return tuple(m for m in self.messages if m.is_error)


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """The REPL refused the request (unknown env or proof state, a tactic that threw)."""

    message: str


Response = CommandResponse | ProofStepResponse | ErrorResponse


class _ShapeError(Exception):
    """A JSON value of the wrong shape; turned into ReplProtocolError with the raw text."""


def parse_response(raw: str) -> Response:
    """Parse one response of the REPL; malformed JSON or shape raises :class:`ReplProtocolError`."""
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ReplProtocolError(f"the Lean REPL printed invalid JSON ({e})", raw=raw) from e
    if not isinstance(obj, dict):
        raise ReplProtocolError("a REPL response must be a JSON object", raw=raw)
    try:
        if "proofState" in obj and "goals" in obj:
            return ProofStepResponse(
                proof_state=_int(obj, "proofState"),
                goals=tuple(_str_list(obj, "goals")),
                messages=_messages(obj),
                sorries=_sorries(obj),
                traces=tuple(_str_list(obj, "traces")),
                proof_status=_opt_str(obj, "proofStatus"),
            )
        if "env" in obj:
            return CommandResponse(
                env=_opt_int(obj, "env"),
                messages=_messages(obj),
                sorries=_sorries(obj),
                tactics=tuple(_tactic(t) for t in _list(obj, "tactics")),
                infotree=obj.get("infotree"),
            )
        if "message" in obj:
            return ErrorResponse(message=_str(obj, "message"))
    except _ShapeError as e:
        raise ReplProtocolError(f"malformed REPL response ({e})", raw=raw) from e
    raise ReplProtocolError("unrecognised REPL response (no env, proofState or message)", raw=raw)


def _messages(obj: dict[str, Any]) -> tuple[ReplMessage, ...]:
    out = []
    for m in _list(obj, "messages"):
        _require_dict(m, "message")
        severity = _str(m, "severity")
        try:
            sev = Severity(severity)
        except ValueError as e:
            raise _ShapeError(f"unknown message severity {severity!r}") from e
        end = m.get("endPos")
        out.append(
            ReplMessage(
                severity=sev,
                pos=_pos(m.get("pos"), "pos"),
                end_pos=None if end is None else _pos(end, "endPos"),
                data=_str(m, "data"),
            )
        )
    return tuple(out)


def _sorries(obj: dict[str, Any]) -> tuple[ReplSorry, ...]:
    out = []
    for s in _list(obj, "sorries"):
        _require_dict(s, "sorry")
        out.append(
            ReplSorry(
                goal=_str(s, "goal"),
                proof_state=_opt_int(s, "proofState"),
                pos=None if s.get("pos") is None else _pos(s["pos"], "pos"),
                end_pos=None if s.get("endPos") is None else _pos(s["endPos"], "endPos"),
            )
        )
    return tuple(out)


def _tactic(t: Any) -> ReplTactic:
    _require_dict(t, "tactic")
    return ReplTactic(
        tactic=_str(t, "tactic"),
        goals=_str(t, "goals"),
        pos=_pos(t.get("pos"), "pos"),
        end_pos=_pos(t.get("endPos"), "endPos"),
        proof_state=_opt_int(t, "proofState"),
        used_constants=tuple(_str_list(t, "usedConstants")),
    )


def _pos(value: Any, what: str) -> ReplPos:
    if not isinstance(value, dict):
        raise _ShapeError(f"{what} must be an object with line and column, got {value!r}")
    return ReplPos(line=_int(value, "line"), column=_int(value, "column"))


def _require_dict(value: Any, what: str) -> None:
    if not isinstance(value, dict):
        raise _ShapeError(f"a {what} must be a JSON object, got {value!r}")


def _int(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _ShapeError(f"{key} must be a natural number, got {value!r}")
    return value


def _opt_int(obj: dict[str, Any], key: str) -> int | None:
    return None if obj.get(key) is None else _int(obj, key)


def _str(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise _ShapeError(f"{key} must be a string, got {value!r}")
    return value


def _opt_str(obj: dict[str, Any], key: str) -> str | None:
    return None if obj.get(key) is None else _str(obj, key)


def _list(obj: dict[str, Any], key: str) -> list[Any]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise _ShapeError(f"{key} must be a list, got {value!r}")
    return value


def _str_list(obj: dict[str, Any], key: str) -> list[str]:
    values = _list(obj, key)
    if not all(isinstance(v, str) for v in values):
        raise _ShapeError(f"{key} must be a list of strings, got {values!r}")
    return values
