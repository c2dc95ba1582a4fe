"""The proofs our search found, as the database keeps them: how a found proof is stored on
its theorem, and how it carries over to the repository's next version.

A found proof lives on the theorem's row in the version it was found in: the status
``proved_by_us`` and the proof's tactic steps (goals and premises), which the suggester and
the retriever read from the merged view. A new commit of the repository is ingested fresh,
without them, and the learner takes one step per commit, never a second one for a commit it
learned; so, left there, a proof found at a learned commit would never reach training, and
its theorem would be a `sorry` target again in every later commit. Carrying it over to the
next version (:func:`carry_found_proofs`) makes its steps examples of that version's step.

A carried proof was checked by Lean at the commit it was found in, not at the new one, where
a lemma it uses may be gone. Proving a repository therefore first has Lean check each
carried proof no attempt has checked at the new version (:func:`found_proofs`); one
that Lean rejects there is withdrawn (:func:`withdraw_found_proof`), and its theorem is a
`sorry` target again.

These functions run on a :class:`~sqlalchemy.engine.Connection` inside a transaction the
caller owns (:mod:`curriculum.store`); they never commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Connection, select, update

from curriculum import bulk
from curriculum.db import AttemptRow, TheoremRow, VersionRow
from lean_env.records import AttemptOutcome, Theorem, TheoremStatus, TracedTactic


def store_found_proof(conn: Connection, theorem_id: int, version_id: int, steps: Sequence[TracedTactic]) -> None:
    """Mark the `sorry` theorem row ``theorem_id`` (of the version ``version_id``)
    ``proved_by_us``. ``steps`` (the proof's tactics with their goals and premises), when
    there are any, become its tactic steps in place of the source's, and set its
    ``num_steps`` and its premises (in first-use order); its proof text stays the source's:
    what writing the proof back replaces."""
    values: dict[str, Any] = {"status": TheoremStatus.PROVED_BY_US}
    if steps:
        bulk.replace_steps(conn, theorem_id, version_id, steps)
        values |= {
            "num_steps": len(steps),
            "premises": list(dict.fromkeys(p for s in steps for p in s.premises)),
        }
    conn.execute(update(TheoremRow).where(TheoremRow.id == theorem_id).values(**values))


def carry_found_proofs(conn: Connection, *, earlier_version_id: int, version_id: int) -> list[str]:
    """Store the proofs found in the version ``earlier_version_id`` again in ``version_id``
    (a newer version of the same repository, just written): every theorem of it that is
    still `sorry` and has the :func:`carry_key` (file, full name, statement whitespace aside,
    as write-back's staleness check compares them) of a ``proved_by_us`` theorem of the
    earlier version gets that proof's steps, as :func:`store_found_proof` stores them. A
    theorem whose statement changed, or is not known, is left `sorry`: the proof may be of
    another statement. Returns the full names carried over, in trace order."""
    proved: dict[tuple[str, str, str], Theorem] = {}
    for _, theorem in bulk.read_theorems(conn, [earlier_version_id], status=TheoremStatus.PROVED_BY_US):
        key = carry_key(theorem)
        if key is not None:
            # Source extraction can see a name twice; the first of a statement wins.
            proved.setdefault(key, theorem)
    if not proved:
        return []
    carried = []
    for theorem_id, theorem in bulk.read_theorems(conn, [version_id], status=TheoremStatus.SORRY):
        key = carry_key(theorem)
        earlier = None if key is None else proved.get(key)
        if earlier is not None:
            store_found_proof(conn, theorem_id, version_id, earlier.tactics)
            carried.append(theorem.full_name)
    return carried


def found_proofs(conn: Connection, version_id: int, *, unconfirmed: bool) -> list[tuple[int, Theorem, str, str]]:
    """The proofs our search found for the `proved_by_us` theorems of the version
    ``version_id``: (row id, theorem, proof text, commit Lean last accepted it at), in trace
    order. A proof checked at this version (a PROVED attempt of its own) is the newest such
    attempt's, at this version's commit; with ``unconfirmed``, only the others are listed,
    those carried over. A carried proof's text is that of the newest PROVED attempt at a
    theorem with its :func:`carry_key` in the newest earlier version of the repository that
    has one (a proof carried on over several commits is the one last checked); within a
    version, the first such theorem's, as :func:`carry_found_proofs` picks the steps it
    carries."""
    checked_here = _proved_attempts(conn, version_id)
    repository_id, commit = conn.execute(
        select(VersionRow.repository_id, VersionRow.commit).where(VersionRow.id == version_id)
    ).one()
    listed = [
        (theorem_id, theorem, carry_key(theorem))
        for theorem_id, theorem in bulk.read_theorems(conn, [version_id], status=TheoremStatus.PROVED_BY_US)
        if not (unconfirmed and theorem_id in checked_here)
    ]
    wanted = {key for theorem_id, _, key in listed if theorem_id not in checked_here and key is not None}
    found: dict[tuple[str, str, str], tuple[str, str]] = {}  # carry key -> (proof, commit)
    earlier = conn.execute(
        select(VersionRow.id, VersionRow.commit)
        .where(VersionRow.repository_id == repository_id, VersionRow.id < version_id)
        .order_by(VersionRow.id.desc())  # newest first, as ingested
    ).all()
    for earlier_id, earlier_commit in earlier if wanted else ():
        if wanted <= found.keys():
            break
        proofs = _proved_attempts(conn, earlier_id)
        if not proofs:
            continue
        for theorem_id, theorem in bulk.read_theorems(conn, [earlier_id], status=TheoremStatus.PROVED_BY_US):
            key = carry_key(theorem)
            if theorem_id in proofs and key in wanted and key not in found:
                found[key] = (proofs[theorem_id], earlier_commit)
    result = []
    for theorem_id, theorem, key in listed:
        if theorem_id in checked_here:
            result.append((theorem_id, theorem, checked_here[theorem_id], commit))
        elif key in found:
            result.append((theorem_id, theorem, *found[key]))
    return result


def _proved_attempts(conn: Connection, version_id: int) -> dict[int, str]:
    """Theorem row -> the proof of its newest PROVED attempt, for the theorems of a version."""
    rows = conn.execute(
        select(AttemptRow.theorem_id, AttemptRow.proof)
        .join(TheoremRow, TheoremRow.id == AttemptRow.theorem_id)
        .where(TheoremRow.version_id == version_id, AttemptRow.outcome == AttemptOutcome.PROVED)
        .order_by(AttemptRow.id)  # the newest attempt at a theorem wins
    ).all()
    # The column is nullable, but a PROVED attempt always has its proof (Store.record_attempt refuses one without).
    return dict(cast("Sequence[tuple[int, str]]", rows))


def withdraw_found_proof(conn: Connection, theorem_id: int, version_id: int) -> None:
    """Make the `proved_by_us` theorem row ``theorem_id`` (of the version ``version_id``)
    `sorry` again, with no tactic steps, no premises and ``num_steps`` 0: its carried proof
    did not pass Lean at this version. (The source's steps of the `sorry`, replaced when the
    proof was carried, are not restored: a `sorry` theorem is proved from its statement.)"""
    bulk.replace_steps(conn, theorem_id, version_id, ())
    conn.execute(
        update(TheoremRow)
        .where(TheoremRow.id == theorem_id)
        .values(status=TheoremStatus.SORRY, num_steps=0, premises=[])
    )


def carry_key(theorem: Theorem) -> tuple[str, str, str] | None:
    """What a theorem of the next version shares with one whose found proof carries over to
    it: the file, the full name (which other files may repeat) and the statement, whitespace
    aside; None when the statement is not known (a benchmark file may give none), so "the
    same" cannot be told."""
    return (theorem.path, theorem.full_name, theorem.plain_statement) if theorem.plain_statement else None
