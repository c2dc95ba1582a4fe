"""The final check: a proof found by search counts only after Lean accepts the whole file.

The check writes a temporary copy of the theorem's file (the user's file is never touched)
with the proof in place of the theorem's proof span (``Theorem.proof_start``..``end``) and
runs ``lean`` on it (``lake env lean`` inside a Lake project). The proof is accepted only
when the whole file compiles with no error anywhere and no ``declaration uses 'sorry'``
warning for that theorem. A proof whose code (comments and strings aside) uses
``sorry``/``admit`` or carries a command (``#exit``, ``axiom``, ``theorem``, ``end``, ... --
text that would end the proof and change the file around it) is rejected without running
Lean. A run past the time limit is :attr:`Verdict.TIMEOUT` -- "we do not know",
never a rejection.
"""

from __future__ import annotations

import enum
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lean_env.interactive.filecheck import TheoremFileError
from lean_env.lean.diagnostics import Diagnostic
from lean_env.lean.runner import LeanRunner
from lean_env.proofs.text import offset_of, position_of, proof_problem, splice_proof
from lean_env.records import Theorem

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 600.0


class Verdict(enum.StrEnum):
    """What the final check concluded about one proof."""

    ACCEPTED = "accepted"  # the file compiles with it: no error, no sorry for the theorem
    REJECTED = "rejected"  # Lean reported an error, or the theorem still uses sorry
    TIMEOUT = "timeout"  # Lean did not finish in time: unknown, not a failure


@dataclass(frozen=True, slots=True)
class FinalCheckResult:
    """The verdict on one proof, why, and everything Lean said about the file."""

    full_name: str
    path: str
    proof: str
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    seconds: float = 0.0

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED

    def to_json(self) -> dict[str, object]:
        """A JSON-ready summary (diagnostic positions are 1-based ``[line, column]``)."""
        return {
            "theorem": self.full_name,
            "path": self.path,
            "verdict": str(self.verdict),
            "accepted": self.accepted,
            "reasons": list(self.reasons),
            "seconds": round(self.seconds, 3),
            "diagnostics": [
                {
                    "severity": str(d.severity),
                    "position": d.start.as_list(),
                    "message": d.message,
                }
                for d in self.diagnostics
            ],
        }


def check_proof(
    repo_dir: Path,
    theorem: Theorem,
    proof: str,
    *,
    runner: LeanRunner,
    timeout: float = DEFAULT_TIMEOUT,
) -> FinalCheckResult:
    """Compile ``theorem``'s file with ``proof`` (the text after ``:=``) in place of its proof."""
    problem = proof_problem(proof)
    if problem is not None:
        return FinalCheckResult(theorem.full_name, theorem.path, proof, Verdict.REJECTED, (problem,))
    path = repo_dir / theorem.path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TheoremFileError(f"cannot read {path} for theorem {theorem.full_name}: {e}") from e
    checked, _ = splice_proof(text, theorem, proof)
    # The theorem now ends where its new proof ends; the text after it is unchanged.
    span_end = position_of(checked, len(checked) - (len(text) - offset_of(text, theorem.end)))
    workdir = Path(tempfile.mkdtemp(prefix="leanagent-check-"))
    try:
        file = workdir / Path(theorem.path).name
        file.write_text(checked, encoding="utf-8")
        run = runner.run(file, timeout=timeout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if run.timed_out:
        verdict, reasons = Verdict.TIMEOUT, [f"Lean did not finish within {timeout:g}s"]
    else:
        reasons = []
        for d in run.diagnostics:
            own = theorem.start <= d.start <= span_end
            if d.is_error:
                where = f"in {theorem.full_name}" if own else "elsewhere in the file"
                first = d.message.splitlines()[0] if d.message else ""
                reasons.append(f"error {where} (line {d.start.line}): {first}")
            elif own and d.is_sorry_warning:
                reasons.append(f"theorem {theorem.full_name} still uses sorry (line {d.start.line})")
        verdict = Verdict.REJECTED if reasons else Verdict.ACCEPTED
    log.debug("final check of %s: %s %s", theorem.full_name, verdict, reasons)
    return FinalCheckResult(
        theorem.full_name, theorem.path, proof, verdict, tuple(reasons), run.diagnostics, run.seconds
    )
