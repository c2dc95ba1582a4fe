"""The REPL wire format: parsing, malformed answers, and every recorded transcript replayed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.repl_support import replay_command

from lean_env.interactive.interface import LeanError, ProofFinished
from lean_env.interactive.repl.backend import outcome_of_step
from lean_env.interactive.repl.errors import ReplProtocolError
from lean_env.interactive.repl.process import ReplProcess
from lean_env.interactive.repl.protocol import (
    CommandRequest,
    CommandResponse,
    ErrorResponse,
    ProofStatus,
    ProofStepResponse,
    ReplMessage,
    ReplPos,
    ReplSorry,
    Response,
    TacticRequest,
    classify_proof_status,
    encode,
    parse_response,
    request_from_wire,
)
from lean_env.records import Position

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "shared" / "lean-repl-transcripts"
TRANSCRIPT_NAMES = sorted(p.name.removesuffix(".expected.out") for p in TRANSCRIPTS.glob("*.expected.out"))


def recorded_requests(base: Path) -> list[dict[str, Any]]:
    """The requests of a transcript, split and joined as the REPL reads them."""
    requests, lines = [], []
    for line in (base.parent / f"{base.name}.in").read_text(encoding="utf-8").splitlines() + [""]:
        if line.strip():
            lines.append(line.rstrip())
        elif lines:
            requests.append(json.loads("".join(lines)))
            lines = []
    return requests


def recorded_answers(base: Path) -> list[dict[str, Any]]:
    text = (base.parent / f"{base.name}.expected.out").read_text(encoding="utf-8")
    return [json.loads(block) for block in text.split("\n\n") if block.strip()]


def wire_of(response: Response) -> dict[str, Any]:
    """Our parsed answer written back the way the REPL writes it (empty lists left out)."""

    def pos(p: ReplPos | None) -> dict[str, int] | None:
        return None if p is None else {"line": p.line, "column": p.column}

    def message(m: ReplMessage) -> dict[str, Any]:
        return {"severity": m.severity.value, "pos": pos(m.pos), "endPos": pos(m.end_pos), "data": m.data}

    def sorry(s: ReplSorry) -> dict[str, Any]:
        out: dict[str, Any] = {"goal": s.goal, "proofState": s.proof_state}
        if s.pos is not None:
            out["pos"] = pos(s.pos)
        if s.end_pos is not None:
            out["endPos"] = pos(s.end_pos)
        return out

    if isinstance(response, ErrorResponse):
        return {"message": response.message}
    wire: dict[str, Any] = {}
    if response.messages:
        wire["messages"] = [message(m) for m in response.messages]
    if response.sorries:
        wire["sorries"] = [sorry(s) for s in response.sorries]
    if isinstance(response, ProofStepResponse):
        wire.update(proofState=response.proof_state, goals=list(response.goals))
        if response.traces:
            wire["traces"] = list(response.traces)
        if response.proof_status is not None:
            wire["proofStatus"] = response.proof_status
        return wire
    wire["env"] = response.env
    if response.tactics:
        wire["tactics"] = [
            {
                "usedConstants": list(t.used_constants),
                "tactic": t.tactic,
                "proofState": t.proof_state,
                "pos": pos(t.pos),
                "goals": t.goals,
                "endPos": pos(t.end_pos),
            }
            for t in response.tactics
        ]
    if response.infotree is not None:
        wire["infotree"] = response.infotree
    return wire


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in TRANSCRIPT_NAMES])
def test_replayed_transcript_parses_to_what_was_recorded(name: str, shared_dir: Path, tmp_path: Path) -> None:
    base = shared_dir / "lean-repl-transcripts" / name
    requests, answers = recorded_requests(base), recorded_answers(base)
    assert len(requests) == len(answers), "a transcript pairs every request with one answer"
    with ReplProcess.start(replay_command(tmp_path, base), memory_limit_mb=None) as repl:
        for wire, expected in zip(requests, answers, strict=True):
            request = request_from_wire(wire)
            assert request.to_wire() == wire  # our encoder would send exactly what was recorded
            response = repl.request(request, timeout=10)
            assert wire_of(response) == expected


def test_every_transcript_is_covered(shared_dir: Path) -> None:
    found = sorted(
        p.name.removesuffix(".expected.out") for p in (shared_dir / "lean-repl-transcripts").glob("*.expected.out")
    )
    assert found == TRANSCRIPT_NAMES and len(found) >= 50


def answer(name: str, index: int, shared_dir: Path) -> Response:
    return parse_response(json.dumps(recorded_answers(shared_dir / "lean-repl-transcripts" / name)[index]))


@pytest.mark.parametrize(
    ("name", "index", "expected"),
    [
        pytest.param("readme", 1, 1, id="apply-leaves-one-goal"),
        pytest.param("proof_branching", 1, 2, id="and-intro-two-goals"),
        pytest.param("readme", 2, ProofFinished, id="completed"),
        pytest.param("assumption_proof", 1, ProofFinished, id="assumption-completes"),
        pytest.param("invalid_tactic", 1, LeanError, id="unknown-identifier-message"),
        pytest.param("tactic_mode_sorry", 1, LeanError, id="sorry-tactic"),
        pytest.param("sorry_hypotheses", 1, LeanError, id="have-with-sorry"),
        pytest.param("by_cases", 3, LeanError, id="all-goals-sorry"),
        pytest.param("app_type_mismatch", 4, LeanError, id="metavariables-left"),
        pytest.param("app_type_mismatch2", 4, LeanError, id="kernel-rejects"),
        pytest.param("self_proof_exact_check", 2, LeanError, id="self-reference-kernel"),
        pytest.param("name_generator", 7, LeanError, id="unsolved-goals-message"),
        pytest.param("trace_simp", 6, ProofFinished, id="simp-with-traces"),
    ],
)
def test_recorded_tactic_answers_map_to_outcomes(name: str, index: int, expected: int | type, shared_dir: Path) -> None:
    response = answer(name, index, shared_dir)
    assert isinstance(response, ProofStepResponse)
    outcome = outcome_of_step(response)
    if isinstance(expected, int):  # a new state with this many goals
        assert outcome is None and len(response.goals) == expected
    else:
        assert isinstance(outcome, expected)


def test_recorded_sorry_and_message_positions(shared_dir: Path) -> None:
    response = answer("proof_branching", 0, shared_dir)
    assert isinstance(response, CommandResponse) and response.env == 0
    (sorry,) = response.sorries
    assert sorry.proof_state == 0 and sorry.goal.endswith("⊢ p ∧ r")
    assert sorry.pos == ReplPos(1, 75) and sorry.pos.to_position() == Position(1, 76)
    (warning,) = response.messages
    assert not warning.is_error and warning.data == "declaration uses `sorry`"
    tactic_error = answer("invalid_tactic", 1, shared_dir)
    assert isinstance(tactic_error, ProofStepResponse)
    assert tactic_error.errors[0].pos.to_position() is None  # tactic mode: line 0, no position


@pytest.mark.parametrize(
    ("text", "status"),
    [
        pytest.param("Completed", ProofStatus.COMPLETED, id="completed"),
        pytest.param("Incomplete: open goals remain", ProofStatus.OPEN_GOALS, id="open"),
        pytest.param("Incomplete: contains sorry", ProofStatus.CONTAINS_SORRY, id="sorry"),
        pytest.param("Incomplete: contains metavariable(s)", ProofStatus.CONTAINS_MVARS, id="mvars"),
        pytest.param("Error: kernel type check failed: x", ProofStatus.ERROR, id="error"),
        pytest.param("Not verified: more than one initial goal", ProofStatus.NOT_VERIFIED, id="nv"),
        pytest.param(None, ProofStatus.ABSENT, id="absent"),
        pytest.param("Something new", ProofStatus.UNKNOWN, id="unknown"),
    ],
)
def test_proof_status_strings(text: str | None, status: ProofStatus) -> None:
    assert classify_proof_status(text) is status


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        pytest.param("{not json", "invalid JSON", id="not-json"),
        pytest.param("[1, 2]", "JSON object", id="not-object"),
        pytest.param('{"foo": 1}', "unrecognised", id="unknown-shape"),
        pytest.param('{"env": "zero"}', "env must be a natural number", id="env-type"),
        pytest.param(
            '{"env": 0, "messages": [{"severity": "fatal", "pos": {"line": 1, "column": 0}, "data": "x"}]}',
            "severity",
            id="bad-severity",
        ),
        pytest.param('{"env": 0, "sorries": [{"goal": "g", "pos": [1, 2]}]}', "pos must be", id="bad-pos"),
        pytest.param('{"proofState": 1, "goals": "g"}', "goals must be a list", id="goals-str"),
        pytest.param('{"message": 42}', "message must be a string", id="message-type"),
    ],
)
def test_malformed_answers_raise_with_raw_text(raw: str, needle: str) -> None:
    with pytest.raises(ReplProtocolError) as info:
        parse_response(raw)
    assert needle in str(info.value)
    assert info.value.raw == raw and repr(raw[:8])[1:-1] in str(info.value)


def test_requests_encode_on_one_line_and_round_trip() -> None:
    request = CommandRequest(cmd="theorem t : 1 = 1 := by\n  sorry", env=3)
    text = encode(request)
    assert text.endswith("\n\n") and "\n" not in text[:-2]
    assert json.loads(text) == {"cmd": "theorem t : 1 = 1 := by\n  sorry", "env": 3}
    for req in (request, TacticRequest(tactic="simp [h]", proof_state=7)):
        assert request_from_wire(req.to_wire()) == req
    with pytest.raises(ReplProtocolError):
        request_from_wire({"tactic": "simp", "proofState": -1})
