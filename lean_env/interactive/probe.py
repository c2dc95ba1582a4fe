"""The file check's declaration probe: a command after the theorem that says whether Lean
declared it.

The 2021 Lean 4 drops a theorem without a word when its proof has ``rename`` of an unbound
type (``rename List α => xs``): no error, no goal, and no theorem. To the file check that
reads as a finished proof, which the final check then rejects, one whole-file run and one
of the search's few rejections later. The probe,
``example : True := (fun _ => trivial) @NAME``, elaborates without a word when ``NAME`` is
declared (universe-polymorphic, private and ``«»`` names included, on the 2021 Lean and on
today's) and fails with "unknown identifier" when it is not; a ``#check`` would print the
type, which ``lean FILE`` prints bare, among the diagnostics."""

from __future__ import annotations

import re
from collections.abc import Iterable

from lean_env.lean.diagnostics import Diagnostic

# The tactic's error when the theorem's run had no error and yet the probe did not find it.
DROPPED = (
    "Lean reported no error, but the theorem is not declared after this proof: Lean dropped it "
    "without a word (the 2021 Lean 4 does so for `rename` of an unbound type)"
)
_UNKNOWN_RE = re.compile(r"unknown (?:identifier|constant)")


def declaration_probe(full_name: str) -> str:
    """The probe command for ``full_name`` (a line of its own, after the declaration)."""
    return f"example : True := (fun _ => trivial) @{full_name}"


def says_undeclared(diagnostics: Iterable[Diagnostic]) -> bool:
    """Whether a probe's diagnostics say its name is not declared."""
    return any(d.is_error and _UNKNOWN_RE.search(d.message) for d in diagnostics)
