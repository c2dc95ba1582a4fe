"""``prove_theorem``: the final check runs inside the search, so a proof it rejects does not
end the search; against the fake ``lean`` (file check and final check)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from fakes import fake_lean

from agent.proving.config import ProvingConfig
from agent.proving.theorem import REJECTIONS, prove_theorem
from agent.search.tree import Candidate, SearchConfig
from lean_env.interactive.filecheck import FileCheckBackend, ServerCheckBackend
from lean_env.interactive.interface import TacticResult, TacticState
from lean_env.lean import budget
from lean_env.lean.mock import MockLean
from lean_env.lean.runner import LeanRunner
from lean_env.records import AttemptOutcome, TacticOutcome

GOALS = {"start": "p : Prop\n⊢ p → p", "intro": "p : Prop\nh : p\n⊢ p"}
# Proofs the file check takes, which sees the file only up to the theorem, and the final check
# rejects (:func:`_later_breaks`): a declaration after the theorem breaks with them.
BREAK_LATER = ["exact (h)", "exact (id h)", "exact (id (id h))"]
SCRIPT = {
    "theorems": {
        "Demo.imp_self'": {
            "goals": GOALS["start"],
            "steps": {
                "intro h": {"goals": GOALS["intro"]},
                **{f"intro h\n{tactic}": {"done": True} for tactic in BREAK_LATER},
                # No error and no theorem, as the 2021 Lean does: the file check's probe sees it.
                "intro h\nrename List α => xs": {"done": True, "undeclared": True},
                "intro h\nexact h": {"done": True},
            },
            "terms": {"by\n  intro h\n  exact h": {"done": True}},
        }
    }
}


def _later_breaks(path: str, text: str) -> str:
    """The final check's Lean: an error after the theorem for the proofs of BREAK_LATER."""
    if any(f"  {tactic}\n" in text for tactic in BREAK_LATER):
        return f"{path}:9:0: error: type mismatch\n"
    return "'Demo.imp_self'' does not depend on any axioms\n"


class Scripted:
    """An episode proposing fixed tactics per goal, best first."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    def generate(self, state: str, *, n: int) -> list[Candidate]:
        return [Candidate(t, math.log(0.9 - 0.1 * i)) for i, t in enumerate(self.table.get(state, []))][:n]

    def observe(self, state: TacticState, tactic: str, outcome: TacticResult) -> None:
        """Nothing to learn here."""


def _prove(tmp_path: Path, monkeypatch, at_intro: list[str], final_check: MockLean | None = None):
    repo = fake_lean.demo_repo(tmp_path, monkeypatch, SCRIPT)
    theorem = fake_lean.theorem_record(fake_lean.DEMO_SOURCE, "Demo.imp_self'", "Demo.lean")
    episode = Scripted({GOALS["start"]: ["intro h"], GOALS["intro"]: at_intro})
    return prove_theorem(
        theorem,
        repo_dir=repo,
        backend=FileCheckBackend(timeout=20),
        generator=episode,
        runner=final_check.for_project(repo) if final_check else LeanRunner.for_project(repo),
        config=ProvingConfig(search=SearchConfig(num_candidates=8), check_timeout=20),
    )


@pytest.mark.parametrize(
    ("rejected", "outcome", "proof"),
    [
        pytest.param(1, AttemptOutcome.PROVED, "by\n  intro h\n  exact h", id="the-next-proof-counts"),
        pytest.param(
            REJECTIONS, AttemptOutcome.FAILED, f"by\n  intro h\n  {BREAK_LATER[-1]}", id="the-search-gives-up"
        ),
    ],
)
def test_a_proof_the_final_check_rejects_does_not_end_the_search(
    tmp_path: Path, monkeypatch, rejected: int, outcome: AttemptOutcome, proof: str
) -> None:
    attempt = _prove(tmp_path, monkeypatch, [*BREAK_LATER[:rejected], "exact h"], MockLean(_later_breaks))
    assert attempt.outcome is outcome and attempt.proof == proof
    assert attempt.search is not None and attempt.search.rejected == (1 if rejected == 1 else REJECTIONS - 1)
    if outcome is AttemptOutcome.PROVED:
        assert attempt.detail.endswith("(after 1 proof(s) the final check rejected)")
    else:
        assert "error elsewhere in the file (line 9): type mismatch" in attempt.detail


def test_a_theorem_lean_drops_is_the_tactics_error_not_a_found_proof(tmp_path: Path, monkeypatch) -> None:
    """The file check's probe turns `rename List α => xs` (no error, no theorem) into an
    error of the tactic: the final check never sees it."""
    final_check = MockLean(_later_breaks)
    attempt = _prove(tmp_path, monkeypatch, ["rename List α => xs", "exact h"], final_check)
    assert (attempt.outcome, attempt.proof) == (AttemptOutcome.PROVED, "by\n  intro h\n  exact h")
    assert attempt.search is not None and (attempt.search.rejected, attempt.search.lean_errors) == (0, 1)
    assert len(final_check.texts) == 1 and "rename" not in final_check.texts[0]


def test_the_final_checks_lean_is_injected(tmp_path: Path, monkeypatch) -> None:
    """An in-memory Lean (lean_env.lean.mock) stands for the final check's: it is given each
    found proof spliced into the file with the axiom audit after it."""
    mock = MockLean(_later_breaks)
    attempt = _prove(tmp_path, monkeypatch, [BREAK_LATER[0], "exact h"], mock)
    assert (attempt.outcome, attempt.proof) == (AttemptOutcome.PROVED, "by\n  intro h\n  exact h")
    assert attempt.check is not None and attempt.check.axioms == ()
    assert [(BREAK_LATER[0] in t, "exact h\n" in t) for t in mock.texts] == [(True, False), (False, True)]
    assert all(t.rstrip().endswith("#print axioms Demo.imp_self'") for t in mock.texts)


def test_every_tactic_tried_is_kept_with_what_it_did_and_the_accepted_proof_marked(tmp_path: Path, monkeypatch) -> None:
    attempt = _prove(tmp_path, monkeypatch, ["exact x", BREAK_LATER[0], "exact h"], MockLean(_later_breaks))
    assert attempt.outcome is AttemptOutcome.PROVED
    assert [(t.goal, t.tactic, t.outcome, t.goals_after, t.on_proof) for t in attempt.tried] == [
        (GOALS["start"], "intro h", TacticOutcome.STATE, 1, True),
        (GOALS["intro"], "exact x", TacticOutcome.ERROR, None, False),
        (GOALS["intro"], BREAK_LATER[0], TacticOutcome.PROOF, 0, False),  # the final check rejected it
        (GOALS["intro"], "exact h", TacticOutcome.PROOF, 0, True),
    ]


# --- the time limit bounds the whole attempt -------------------------------------------------

LIMIT = 1.5
# What an attempt may run past its limit: killing the cut Lean's process group and reaping it,
# and starting the fake's Python on a loaded 2-core machine (docs/evaluate.md, "Time budget").
MARGIN = 2.5
# A theorem after the one proved: the search's checks never see it, the final check does.
LATER_SOURCE = fake_lean.DEMO_SOURCE.replace("theorem two : 1 + 1 = 2 := sorry", "theorem later : True := trivial")
HANGS = {"hang": True}


def _group_running(pgid: int) -> bool:
    """Whether a process of the group ``pgid`` is alive (zombies awaiting a reaper are not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended while we looked
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


@pytest.mark.parametrize(
    ("kind", "at_intro", "hanging"),
    [
        pytest.param(FileCheckBackend, ["spin"], {"intro h\nspin": HANGS}, id="tactic-lean-run"),
        pytest.param(ServerCheckBackend, ["spin"], {"intro h\nspin": HANGS}, id="tactic-server"),
        pytest.param(ServerCheckBackend, [], {"opening": HANGS}, id="opening-server"),
        pytest.param(FileCheckBackend, ["exact h"], {"later": HANGS}, id="final-check"),
    ],
)
def test_an_attempt_ends_within_its_time_limit_when_lean_hangs(
    tmp_path: Path, monkeypatch, kind: type[FileCheckBackend], at_intro: list[str], hanging: dict
) -> None:
    """Lean hanging anywhere in an attempt (opening the theorem, a tactic whose own timeout is
    60 s, the final check whose own is 120 s) ends it at the time limit as a timeout; once the
    backend is closed (the server backend keeps an idle server for the file's next theorem),
    no Lean process is left."""
    entry = {**SCRIPT["theorems"]["Demo.imp_self'"]}
    entry["steps"] = {**entry["steps"], **{k: v for k, v in hanging.items() if "\n" in k}}
    if "opening" in hanging:
        entry["opening"] = hanging["opening"]
    script = {"theorems": {"Demo.imp_self'": entry, "Demo.later": {"terms": {"trivial": hanging.get("later", {})}}}}
    repo = fake_lean.demo_repo(tmp_path, monkeypatch, script)
    (repo / "Demo.lean").write_text(LATER_SOURCE, encoding="utf-8")
    monkeypatch.setenv("FAKE_LEAN_LOG", str(tmp_path / "lean.log"))
    theorem = fake_lean.theorem_record(LATER_SOURCE, "Demo.imp_self'", "Demo.lean")
    backend = kind(timeout=60)
    started = time.monotonic()
    try:
        attempt = prove_theorem(
            theorem,
            repo_dir=repo,
            backend=backend,
            generator=Scripted({GOALS["start"]: ["intro h"], GOALS["intro"]: at_intro}),
            runner=LeanRunner.for_project(repo),
            config=ProvingConfig(search=SearchConfig(num_candidates=8, time_limit=LIMIT), check_timeout=120),
        )
        wall = time.monotonic() - started
    finally:
        backend.close()
    assert attempt.outcome is AttemptOutcome.TIMEOUT, attempt.detail
    assert wall < LIMIT + MARGIN
    assert wall - 0.5 < attempt.seconds <= wall  # the final check's time is counted once
    pids = {json.loads(line)["pid"] for line in (tmp_path / "lean.log").read_text().splitlines()}
    # A killed process group's last members may take a moment to go (SIGKILL is delivered
    # asynchronously, and a grandchild has no parent here to wait for it).
    deadline = time.monotonic() + 5
    while any(_group_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids and not any(_group_running(pid) for pid in pids)


def test_a_lean_run_does_not_start_once_the_budget_is_spent(tmp_path: Path, monkeypatch) -> None:
    repo = fake_lean.demo_repo(tmp_path, monkeypatch, SCRIPT)
    monkeypatch.setenv("FAKE_LEAN_LOG", str(tmp_path / "lean.log"))
    with budget.time_budget(1e-9):
        time.sleep(1e-3)
        run = LeanRunner.for_project(repo).run(repo / "Demo.lean", timeout=60)
    assert run.timed_out and run.returncode is None
    assert not (tmp_path / "lean.log").exists()
