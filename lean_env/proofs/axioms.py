"""The axiom audit of a checked proof: the axioms its theorem depends on, as Lean's
``#print axioms`` prints them, read from the final check's own Lean run.

``#print axioms NAME`` (``printAxiomsOf`` in Lean's ``src/Lean/Elab/Print.lean``) logs one
info message, the axioms sorted by name::

    'Demo.two' depends on axioms: [propext, sorryAx]
    'Demo.two' does not depend on any axioms

The list is Lean's ``MessageData.ofList``: when it does not fit on a line, every element
gets a line of its own (``[propext,\\n Classical.choice,\\n Quot.sound]``). ``lean FILE``
prints info messages without a position header (``SerialMessage.toString`` gives only
warnings and errors their ``FILE:LINE:COL: severity:``, in Lean versions from 2021 to
today), so the message is bare text: after a diagnostic it reads as that diagnostic's last
lines. A header in front of it (``FILE:LINE:COL: info:``) is read too.

A theorem that depends on ``sorryAx`` is *vacuous*: a placeholder stands somewhere in its
statement or among the declarations its proof uses (a ``sorry`` definition, a ``sorry``
lemma), so its proof may prove nothing, as a statement about a ``sorry`` definition does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# The axioms of Lean's own logic, which every classical proof (Mathlib's) may use.
STANDARD_AXIOMS = frozenset({"propext", "Quot.sound", "Classical.choice"})
# What `sorry` (and error recovery) elaborates to.
SORRY_AXIOM = "sorryAx"

_AXIOMS_RE = re.compile(
    r"'(?P<name>[^\n]+?)' (?:depends on axioms: \[(?P<axioms>[^\]]*)\]|does not depend on any axioms)"
)
# A position header in front of the message, as tools that print info messages with one do.
_INFO_HEADER_RE = re.compile(r".*:\d+:\d+(?:-\d+:\d+)?: info(?:rmation)?: ?")
# Errors of the audit command itself, not of the file: a `module` file (Lean's module system
# refuses the command there), a name Lean resolves to nothing or to several declarations.
_AUDIT_FAILURE_RE = re.compile(r"#print axioms|unknown (?:constant|identifier)|ambiguous", re.IGNORECASE)


def audit_command(full_name: str) -> str:
    """The command that prints the axioms of ``full_name``; it goes after everything else in
    the file, where every namespace is closed and the full name means the theorem (private
    names resolve in their own file)."""
    return f"#print axioms {full_name}"


@dataclass(frozen=True, slots=True)
class AxiomsFound:
    """The audit's message in Lean's output, and that output without it."""

    axioms: tuple[str, ...]  # sorted, as Lean prints them
    rest: str  # the output with the message (and any header of it) cut out


def find_axioms(output: str, full_name: str) -> AxiomsFound | None:
    """The axioms Lean printed for ``full_name`` in ``output`` (the last such message), or
    None when it printed none."""
    found = [m for m in _AXIOMS_RE.finditer(output) if _same_name(m["name"], full_name)]
    if not found:
        return None
    match = found[-1]
    start = output.rfind("\n", 0, match.start()) + 1
    if not _INFO_HEADER_RE.fullmatch(output[start : match.start()]):
        start = match.start()
    listed = match["axioms"] or ""
    axioms = tuple(name.strip() for name in listed.split(",") if name.strip())
    return AxiomsFound(axioms, output[:start] + output[match.end() :])


def is_audit_failure(message: str) -> bool:
    """True for an error of the audit command itself (the axioms are then unknown), as
    opposed to an error of the file that Lean happens to report at the command."""
    return bool(_AUDIT_FAILURE_RE.search(message.splitlines()[0] if message else ""))


def nonstandard(axioms: Iterable[str]) -> tuple[str, ...]:
    """The axioms beyond Lean's own (:data:`STANDARD_AXIOMS`), ``sorryAx`` included."""
    return tuple(a for a in axioms if a not in STANDARD_AXIOMS)


def _same_name(printed: str, full_name: str) -> bool:
    """Lean prints the resolved name: escaped with ``«»`` where needed, and a private
    declaration as ``_private.<module>.0.<name>``."""
    printed, full_name = printed.replace("«", "").replace("»", ""), full_name.replace("«", "").replace("»", "")
    return printed == full_name or (printed.startswith("_private.") and printed.endswith(f".0.{full_name}"))
