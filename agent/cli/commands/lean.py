"""Lean commands: ``check`` (the final check of one proof) and ``env doctor``.

``leanagent check REPO FILE THEOREM --proof '…'`` compiles FILE with the proof in place of
THEOREM's proof and says whether Lean accepts it (exit 0), rejects it or ran out of time
(exit 1). ``--proof-backend`` first replays the proof's tactics one by one in an interactive
backend, to show where a rejected proof goes wrong; ``--diff`` / ``--apply`` write an
accepted proof back as a patch or onto a new git branch.

``leanagent env doctor`` says which Lean, Lake, Lean REPL, LeanDojo and git are found, with
versions, and how to install what is missing (exit 2, a missing toolchain, when no ``lean``
is found);
``--build-repl`` first builds the REPL for the project's Lean version into the data dir.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.cli.options import positive_seconds, renamed_option
from agent.reports.output import emit, table
from agent.reports.tables import axioms_line
from agent.workspace.settings import Settings
from lean_env.errors import LeanAgentError, UserInputError
from lean_env.interactive.choice import ProofBackendChoice
from lean_env.proofs.final_check import DEFAULT_TIMEOUT as FINAL_CHECK_TIMEOUT

if TYPE_CHECKING:
    from lean_env.proofs.final_check import FinalCheckResult
    from lean_env.records import Theorem

NO_REPLAY = "none"
EXIT_ACCEPTED, EXIT_NOT_ACCEPTED = 0, 1
# The report is printed, and the exit says what a missing toolchain says everywhere.
EXIT_NO_LEAN = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    check = subparsers.add_parser(
        "check",
        help="final check of one proof: compile the file with it in place of a theorem's proof",
        description=(
            "Compile FILE with PROOF in place of THEOREM's proof. Accepted (exit 0) only when the "
            "whole file compiles with no error and no 'declaration uses sorry' for THEOREM; "
            "rejected or timed out gives exit 1. A proof using sorry/admit, or carrying a command "
            "(#exit, axiom, theorem, end, ...), is rejected without running Lean. The same Lean run "
            "prints THEOREM's axioms: one that depends on sorryAx (a sorry definition in its statement, "
            "a sorry lemma its proof uses) is vacuous (exit 1) and never written back; axioms beyond "
            "propext, Quot.sound and Classical.choice are listed. FILE itself is never modified. Needs "
            "lean (or lake) on PATH."
        ),
        epilog="example: leanagent check . Demo/Basic.lean Demo.add_comm --proof 'by omega' --diff",
    )
    check.add_argument("repo", type=Path, metavar="REPO", help="the repository (Lake project) directory")
    check.add_argument("file", type=Path, metavar="FILE", help="the .lean file, relative to REPO")
    check.add_argument("theorem", metavar="THEOREM", help="the theorem's full name, e.g. Demo.add_comm")
    proof = check.add_mutually_exclusive_group(required=True)
    proof.add_argument("--proof", metavar="TEXT", help="the proof: what follows ':=' (e.g. 'by simp')")
    proof.add_argument("--proof-file", type=Path, metavar="PATH", help="read the proof from PATH")
    replay = check.add_argument(
        "--proof-backend",
        choices=(NO_REPLAY, *(c.value for c in ProofBackendChoice)),
        default="none",
        help="first replay the proof's tactics step by step in this backend: file (any lean), "
        "repl (Lean REPL), dojo (LeanDojo), auto (repl when found, else file); default none",
    )
    renamed_option(check, "--backend", replay)  # its name until the next release
    check.add_argument(
        "--timeout",
        type=positive_seconds,
        default=FINAL_CHECK_TIMEOUT,
        metavar="S",
        help=f"seconds per Lean run (default {FINAL_CHECK_TIMEOUT:g})",
    )
    write = check.add_mutually_exclusive_group()
    write.add_argument("--diff", action="store_true", help="print the accepted proof as a unified diff")
    write.add_argument(
        "--apply",
        action="store_true",
        help="commit the accepted proof on a new git branch (working tree and HEAD untouched)",
    )
    check.add_argument("--branch", metavar="NAME", help="branch for --apply (default leanagent/proofs-DATE)")
    check.add_argument("--json", action="store_true", help="print JSON")
    check.set_defaults(handler=_check)

    env = subparsers.add_parser("env", help="the Lean toolchain this machine offers")
    env_commands = env.add_subparsers(dest="env_command", metavar="ENV_COMMAND", required=True)
    doctor = env_commands.add_parser(
        "doctor",
        help="which Lean, Lake, REPL, LeanDojo and git are found; how to install the rest",
        description=(
            "Report which lean, lake, elan, git, Lean REPL and lean-dojo this machine offers "
            "for the project (versions, where they are, how to install what is missing) and "
            "which proof backends (file, repl, dojo) can run. Exit 2 (a missing toolchain) when no lean is found."
        ),
    )
    doctor.add_argument("--project", type=Path, default=Path("."), metavar="DIR", help="the Lean project (default: .)")
    doctor.add_argument(
        "--build-repl",
        action="store_true",
        help="first clone leanprover-community/repl at the project's Lean version and build it "
        "with lake into the data dir (needs git, lake and the network; takes minutes)",
    )
    doctor.add_argument("--json", action="store_true", help="print JSON")
    doctor.set_defaults(handler=_doctor)


def _check(args: argparse.Namespace, settings: Settings) -> int:
    from lean_env.lean.runner import LeanRunner
    from lean_env.proofs.final_check import check_proof
    from lean_env.proofs.theorem_source import locate_theorem

    repo = args.repo.expanduser().resolve()
    theorem = locate_theorem(repo, args.file, args.theorem)
    proof = _read_proof(args)
    runner = LeanRunner.for_project(repo)
    steps = _replay(args.proof_backend, repo, theorem, proof, timeout=args.timeout, data_dir=settings.data_dir)
    result = check_proof(repo, theorem, proof, runner=runner, timeout=args.timeout)
    payload: dict[str, Any] = {**result.to_json(), "replay": steps}
    if result.accepted and (args.diff or args.apply):
        try:
            payload.update(_write_back(repo, theorem, proof, apply=args.apply, branch=args.branch))
        except LeanAgentError:
            # The verdict took a Lean run: show it before the write-back's one-line error.
            emit(payload, _render_check(result, steps, payload), as_json=args.json)
            raise
    emit(payload, _render_check(result, steps, payload), as_json=args.json)
    return EXIT_ACCEPTED if result.accepted else EXIT_NOT_ACCEPTED


def _read_proof(args: argparse.Namespace) -> str:
    if args.proof is not None:
        proof = args.proof
    else:
        try:
            proof = args.proof_file.read_text(encoding="utf-8")
        except OSError as e:
            raise UserInputError(f"cannot read the proof file {args.proof_file}: {e.strerror or e}") from e
    if not proof.strip():
        raise UserInputError("the proof is empty")
    return proof.strip("\n")


def _write_back(repo: Path, theorem: Theorem, proof: str, *, apply: bool, branch: str | None) -> dict[str, Any]:
    from lean_env.proofs.writeback import ProofEdit, commit_to_branch, render_diff

    edits = [ProofEdit(theorem, proof)]
    if apply:
        done = commit_to_branch(repo, edits, branch=branch)
        return {"branch": done.branch, "commit": done.commit}
    return {"diff": render_diff(repo, edits)}


def _render_check(result: FinalCheckResult, steps: list[dict[str, Any]], payload: dict[str, Any]) -> str:
    from lean_env.proofs.final_check import Verdict

    lines = []
    if steps:
        rows = [
            [i, _first_line(s["tactic"]), s["outcome"], _first_line(s.get("error") or s.get("goals") or "")]
            for i, s in enumerate(steps, start=1)
        ]
        lines += [table(["step", "tactic", "outcome", "detail"], rows), ""]
    lines.append(f"{result.full_name}: {result.verdict} ({result.seconds:.1f}s)")
    lines += [f"  - {reason}" for reason in result.reasons]
    if result.verdict in (Verdict.ACCEPTED, Verdict.VACUOUS):
        lines.append(axioms_line(result.axioms, result.audit_note))
    if "branch" in payload:
        lines.append(f"committed on branch {payload['branch']} ({payload['commit'][:12]})")
    if "diff" in payload:
        lines += ["", payload["diff"].rstrip("\n")]
    return "\n".join(lines)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _replay(
    choice: str, repo: Path, theorem: Theorem, proof: str, *, timeout: float, data_dir: Path
) -> list[dict[str, Any]]:
    """Run the proof's tactics one by one in the chosen backend; one entry per step."""
    from tqdm import tqdm

    from lean_env.interactive.choice import open_backend
    from lean_env.interactive.replay import replay_tactics
    from lean_env.proofs.text import split_tactics

    tactics = split_tactics(proof)
    if choice == NO_REPLAY or not tactics:
        return []
    backend = open_backend(ProofBackendChoice(choice), repo, timeout=timeout, data_dir=data_dir)
    try:
        with tqdm(total=len(tactics), desc=f"replay ({backend.name})", unit="tactic", disable=None) as bar:
            steps = replay_tactics(backend, repo, theorem, tactics, on_step=lambda _: bar.update())
    finally:
        backend.close()
    return [step.to_json() for step in steps]


def _doctor(args: argparse.Namespace, settings: Settings) -> int:
    from lean_env.interactive.doctor import probe_toolchain

    project = args.project.expanduser().resolve()
    if not project.is_dir():
        raise UserInputError(f"project directory {project} does not exist (or is not a directory)")
    if args.build_repl:
        from tqdm import tqdm

        from lean_env.interactive.repl.find import build_repl

        with tqdm(total=1, desc="building the Lean REPL (git clone, lake build)", disable=None) as bar:
            build_repl(project, cache_dir=settings.layout.repl)
            bar.update()
    report = probe_toolchain(project, repl_cache=settings.layout.repl)
    rows = [[t.name, "yes" if t.found else "MISSING", t.version or "-", t.path or t.detail] for t in report.tools]
    human = "\n".join(
        [
            f"project {project} (lean-toolchain: {report.lean_toolchain or 'none'})",
            table(["tool", "found", "version", "where / how to install"], rows),
            "",
            "proof backends: "
            + ", ".join(f"{k} {'ready' if v else 'unavailable'}" for k, v in report.backends.items()),
        ]
    )
    emit(report.to_json(), human, as_json=args.json)
    return 0 if report.lean_found else EXIT_NO_LEAN
