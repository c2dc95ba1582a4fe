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

The same run audits the theorem's axioms: ``#print axioms`` on it goes at the end of the
temporary file (:mod:`lean_env.proofs.axioms`), so no second Lean run is needed. A theorem
that then depends on ``sorryAx`` -- a ``sorry`` in its statement, or in a definition or lemma
its proof uses -- is :attr:`Verdict.VACUOUS`, not accepted: the file compiles, but the proof
may prove nothing. The audit command's own output and failures (Lean refuses it in a
``module`` file) are not problems of the file; when Lean prints no axioms the proof is judged
as before and ``axioms`` is None (``audit_note`` says why). But when the audit finds no such
constant, one more run asks whether the file declares the theorem with ``sorry`` for its
proof: if so, the proof, not the name, is what lost it, and it is rejected (the 2021 Lean 4
accepts a file whose theorem it silently dropped, for ``rename`` of an unbound type).

An error on the file's import header (Lean puts "unknown package 'Foo'", "unknown module
prefix", "object file ... does not exist" there) means the checkout's imports are not built:
every declaration after it fails too, the theorem's included, and none of that is the
proof's fault. Such a rejection is :attr:`FinalCheckResult.only_elsewhere`.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lean_env.lean.diagnostics import Diagnostic, parse_diagnostics
from lean_env.lean.runner import FileRunner, LeanRun
from lean_env.proofs.axioms import SORRY_AXIOM, audit_command, find_axioms, is_audit_failure, nonstandard
from lean_env.proofs.text import offset_of, position_of, proof_problem, splice_proof
from lean_env.proofs.theorem_source import TheoremSourceError, read_theorem_file
from lean_env.records import Position, Theorem
from lean_env.syntax.header import split_header

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 600.0
# The audit's failure when the name is not declared after the file.
_UNDECLARED_RE = re.compile(r"unknown (?:constant|identifier)")


class Verdict(enum.StrEnum):
    """What the final check concluded about one proof."""

    ACCEPTED = "accepted"  # the file compiles with it: no error, no sorry for the theorem
    REJECTED = "rejected"  # Lean reported an error, or the theorem still uses sorry
    # The file compiles with it, but the theorem depends on sorryAx: a placeholder in its
    # statement or in what the proof uses. Not a proof; never written back.
    VACUOUS = "vacuous"
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
    # The axioms the theorem depends on, sorted, as `#print axioms` printed them; None when
    # Lean printed none (no run, a timeout, the audit refused: see `audit_note`).
    axioms: tuple[str, ...] | None = None
    audit_note: str = ""
    # REJECTED only for errors outside the theorem (an upstream declaration broken), or with
    # an error on the import header (its imports not built, whatever fails after it): the
    # file or its checkout is at fault, and the proof may be sound.
    only_elsewhere: bool = False

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED

    @property
    def nonstandard_axioms(self) -> tuple[str, ...]:
        """The axioms beyond ``propext``, ``Quot.sound`` and ``Classical.choice``."""
        return nonstandard(self.axioms or ())

    def to_json(self) -> dict[str, object]:
        """A JSON-ready summary (diagnostic positions are 1-based ``[line, column]``)."""
        return {
            "theorem": self.full_name,
            "path": self.path,
            "verdict": str(self.verdict),
            "accepted": self.accepted,
            "reasons": list(self.reasons),
            "axioms": None if self.axioms is None else list(self.axioms),
            "nonstandard_axioms": list(self.nonstandard_axioms),
            "audit_note": self.audit_note,
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
    runner: FileRunner,
    timeout: float = DEFAULT_TIMEOUT,
) -> FinalCheckResult:
    """Compile ``theorem``'s file with ``proof`` (the text after ``:=``) in place of its proof."""
    problem = proof_problem(proof)
    if problem is not None:
        return FinalCheckResult(theorem.full_name, theorem.path, proof, Verdict.REJECTED, (problem,))
    text = read_theorem_file(repo_dir, theorem)
    checked, _ = splice_proof(text, theorem, proof)
    # The theorem now ends where its new proof ends; the text after it is unchanged.
    span_end = position_of(checked, len(checked) - (len(text) - offset_of(text, theorem.end)))
    audited, audit_line = _with_audits(checked, [theorem.full_name])
    run = _run_copy(runner, theorem.path, audited, timeout=timeout)
    if run.timed_out:
        reason = f"Lean did not finish within {timeout:g}s"
        result = FinalCheckResult(theorem.full_name, theorem.path, proof, Verdict.TIMEOUT, (reason,), run.diagnostics)
    else:
        result = _judge(
            theorem,
            proof,
            run.stdout,
            own=(theorem.start, span_end),
            audit_line=audit_line,
            header_line=header_end_line(checked),
        )
    seconds = run.seconds
    if result.verdict is Verdict.ACCEPTED and result.axioms is None and _UNDECLARED_RE.search(result.audit_note):
        declared, more = _declared_with_sorry(runner, text, theorem, timeout=timeout)
        seconds += more
        if declared:
            reason = (
                f"Lean reported no error, but {theorem.full_name} is not declared after the file with this "
                "proof (it is with `sorry` in its place): something in the proof stopped Lean silently"
            )
            result = dataclasses.replace(result, verdict=Verdict.REJECTED, reasons=(reason,), audit_note="")
    log.debug("final check of %s: %s %s axioms=%s", theorem.full_name, result.verdict, result.reasons, result.axioms)
    return dataclasses.replace(result, seconds=seconds)


def _declared_with_sorry(runner: FileRunner, text: str, theorem: Theorem, *, timeout: float) -> tuple[bool, float]:
    """Whether the file with ``sorry`` for the theorem's proof declares it (its audit finds
    it), and Lean's seconds. Asked when the audit of a proof that Lean accepted found no such
    constant: the 2021 Lean 4 drops a theorem without a word when its proof has ``rename``
    of an unbound type. Declared so, the name is right, and the proof is what lost it;
    not declared either, the name is what the audit got wrong (the proof stays accepted)."""
    placeholder, _ = splice_proof(text, theorem, "sorry")
    run = _run_copy(runner, theorem.path, _with_audits(placeholder, [theorem.full_name])[0], timeout=timeout)
    return not run.timed_out and find_axioms(run.stdout, theorem.full_name) is not None, run.seconds


def audit_original(
    repo_dir: Path, path: str, full_names: Sequence[str], *, runner: FileRunner, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, tuple[str, ...] | None]:
    """The axioms each theorem ``full_names`` of the file ``path`` depends on with the proofs
    the file has: one Lean run over a copy with the audit commands at its end. What a found
    proof's axioms are compared with (a proof that needs ``sorryAx`` where the original needs
    it too is no worse than the original). None for a theorem Lean printed nothing about (a
    timeout, an error that stops the file early)."""
    file = repo_dir / path
    try:
        text = file.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise TheoremSourceError(f"cannot read {file}: {e}") from e
    run = _run_copy(runner, path, _with_audits(text, full_names)[0], timeout=timeout)
    found = {name: None if run.timed_out else find_axioms(run.stdout, name) for name in full_names}
    return {name: None if axioms is None else axioms.axioms for name, axioms in found.items()}


def _with_audits(text: str, full_names: Sequence[str]) -> tuple[str, int]:
    """``text`` with an audit command per name after everything else, and the line of the
    first of them."""
    text += "" if text.endswith("\n") else "\n"
    return text + "".join(f"{audit_command(name)}\n" for name in full_names), text.count("\n") + 1


def _run_copy(runner: FileRunner, path: str, text: str, *, timeout: float) -> LeanRun:
    """Lean's run over ``text`` as a temporary file named like ``path`` (never the user's)."""
    workdir = Path(tempfile.mkdtemp(prefix="leanagent-check-"))
    try:
        file = workdir / Path(path).name
        file.write_text(text, encoding="utf-8")
        return runner.run(file, timeout=timeout)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def header_end_line(text: str) -> int:
    """The line (1-based) of the last command of ``text``'s import header; 0 without one."""
    body_start = split_header(text).body_start
    return text.count("\n", 0, body_start) + 1 if body_start else 0


def _judge(
    theorem: Theorem,
    proof: str,
    output: str,
    *,
    own: tuple[Position, Position],
    audit_line: int,
    header_line: int = 0,
) -> FinalCheckResult:
    """The verdict on a finished run's ``output``: the theorem spans ``own`` in the checked
    file, the audit command is on ``audit_line``, after everything else, and the import
    header ends on ``header_line`` (0: none)."""
    found = find_axioms(output, theorem.full_name)
    # Printed bare, the audit's message would read as the last diagnostic's last lines.
    diagnostics = parse_diagnostics(output if found is None else found.rest).diagnostics
    axioms = None if found is None else found.axioms
    reasons, note = [], ""
    blamed = False  # a reason within the theorem's own span
    # Errors on the import header: what fails after them (the theorem too) says nothing.
    unbuilt: list[str] = []
    for d in diagnostics:
        first = d.message.splitlines()[0] if d.message else ""
        inside = own[0] <= d.start <= own[1]
        if d.is_error and d.start.line >= audit_line and is_audit_failure(d.message):
            note = f"Lean did not print the axioms: {first}"
        elif d.is_error and d.start.line <= header_line:
            unbuilt.append(f"an import failed (line {d.start.line}; are the imports built?): {first}")
        elif d.is_error:
            where = f"in {theorem.full_name}" if inside else "elsewhere in the file"
            reasons.append(f"error {where} (line {d.start.line}): {first}")
            blamed = blamed or inside
        elif inside and d.is_sorry_warning:
            reasons.append(f"theorem {theorem.full_name} still uses sorry (line {d.start.line})")
            blamed = True
    if unbuilt:
        reasons = unbuilt
    verdict = Verdict.REJECTED if reasons else Verdict.ACCEPTED
    if reasons:
        note = ""  # the audit of a rejected proof tells nothing
    elif SORRY_AXIOM in (axioms or ()):
        verdict = Verdict.VACUOUS
        reasons.append(
            f"{theorem.full_name} depends on {SORRY_AXIOM}: a sorry stands in its statement or in a "
            "declaration its proof uses, so the proof may prove nothing"
        )
    elif axioms is None:
        # Unknown is no failure: the proof is judged as the check without the audit judged it.
        note = note or "Lean printed no axioms for the theorem (does something in the file stop it early?)"
        log.warning("the axioms of %s were not audited: %s", theorem.full_name, note)
    return FinalCheckResult(
        theorem.full_name,
        theorem.path,
        proof,
        verdict,
        tuple(reasons),
        diagnostics,
        axioms=axioms,
        audit_note=note,
        only_elsewhere=verdict is Verdict.REJECTED and (bool(unbuilt) or not blamed),
    )
