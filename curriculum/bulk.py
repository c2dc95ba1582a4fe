"""Moving whole traces in and out of the database fast: records <-> rows.

A mathlib-sized trace has ~10^5 theorems, ~10^5 premises and a few times as many tactic
steps, so the ORM's unit of work (one object per row) is far too slow. Writes here are
SQLAlchemy Core ``insert()`` executemany calls in batches, except on PostgreSQL through
psycopg, where they stream through ``COPY ... FROM STDIN`` (psycopg's executemany sends one
INSERT per row: several times slower there). Reads are Core ``select()``\\ s ordered by ``idx``
and grouped in Python. Ids of parent rows are read back with one ``select`` per table
rather than ``RETURNING``, which keeps every write path on its fast path.

These functions run on a :class:`~sqlalchemy.engine.Connection` inside a transaction the
caller owns (:mod:`curriculum.store`); they never commit.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any

from sqlalchemy import JSON, ColumnElement, Connection, Table, delete, insert, select
from sqlalchemy.types import TypeEngine

from curriculum.db import (
    FileRow,
    ImportRow,
    PremiseRow,
    ProblemRow,
    TacticPremiseRow,
    TacticRow,
    TheoremRow,
    VersionRow,
)
from lean_env.records import (
    LeanFile,
    ParseProblem,
    Position,
    Premise,
    RepoSpec,
    RepoTrace,
    Theorem,
    TheoremStatus,
    TracedTactic,
)

# Rows per executemany call: big enough to amortise the round trip, small enough to keep
# memory flat.
BATCH_ROWS = 5000


def insert_rows(conn: Connection, table: Table, rows: Iterable[dict[str, Any]]) -> int:
    """Insert ``rows`` (dicts with the same keys) into ``table``; return how many.

    Every bulk write goes through here (tests inject faults at this seam). It runs in the
    caller's transaction whichever path it takes.
    """
    if conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg":
        return _copy_rows(conn, table, rows)
    count, it = 0, iter(rows)
    while batch := list(islice(it, BATCH_ROWS)):
        conn.execute(insert(table), batch)
        count += len(batch)
    return count


def _copy_rows(conn: Connection, table: Table, rows: Iterable[dict[str, Any]]) -> int:
    """PostgreSQL's COPY on the connection's own psycopg connection (same transaction)."""
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return 0
    columns = list(first)
    # COPY bypasses SQLAlchemy's type processing: apply it here, as an INSERT would (JSON is
    # left to the driver there, which would send a list as an ARRAY here).
    processors = [_copy_processor(conn, table.c[name].type) for name in columns]
    quote = conn.dialect.identifier_preparer
    statement = f"COPY {quote.format_table(table)} ({', '.join(quote.quote(c) for c in columns)}) FROM STDIN"
    count = 0
    with conn.connection.dbapi_connection.cursor() as cursor, cursor.copy(statement) as copy:  # type: ignore[union-attr]
        for row in itertools.chain([first], it):
            copy.write_row([f(row[name]) for name, f in zip(columns, processors, strict=True)])
            count += 1
    return count


def _copy_processor(conn: Connection, type_: TypeEngine[Any]) -> Callable[[Any], Any]:
    if isinstance(type_, JSON):
        return lambda value: None if value is None else json.dumps(value)
    return type_.bind_processor(conn.dialect) or _identity


def _identity(value: Any) -> Any:
    return value


def write_trace(conn: Connection, trace: RepoTrace, *, version_id: int) -> dict[str, int]:
    """Store every record of ``trace`` under the (already inserted) version; row counts."""
    files = _table(FileRow)
    insert_rows(
        conn,
        files,
        ({"version_id": version_id, "idx": i, "path": f.path} for i, f in enumerate(trace.files)),
    )
    file_ids = _ids_by_idx(conn, files, version_id)
    insert_rows(
        conn,
        _table(ImportRow),
        (
            {"file_id": file_ids[i], "idx": j, "module": module}
            for i, f in enumerate(trace.files)
            for j, module in enumerate(f.imports)
        ),
    )
    premises = _table(PremiseRow)
    insert_rows(conn, premises, (_premise_row(version_id, i, p) for i, p in enumerate(trace.premises)))
    theorems = _table(TheoremRow)
    insert_rows(conn, theorems, (_theorem_row(version_id, i, t) for i, t in enumerate(trace.theorems)))
    theorem_ids = _ids_by_idx(conn, theorems, version_id)
    tactics = _table(TacticRow)
    num_tactics = insert_rows(
        conn,
        tactics,
        (
            _tactic_row(theorem_ids[i], version_id, j, step)
            for i, t in enumerate(trace.theorems)
            for j, step in enumerate(t.tactics)
        ),
    )
    num_links = _write_tactic_premises(conn, trace, version_id=version_id, theorem_ids=theorem_ids)
    insert_rows(
        conn,
        _table(ProblemRow),
        (
            {"version_id": version_id, "idx": i, "path": p.path, "line": p.line, "reason": p.reason}
            for i, p in enumerate(trace.problems)
        ),
    )
    return {
        "files": len(trace.files),
        "premises": len(trace.premises),
        "theorems": len(trace.theorems),
        "tactic_steps": num_tactics,
        "tactic_premises": num_links,
    }


def _write_tactic_premises(conn: Connection, trace: RepoTrace, *, version_id: int, theorem_ids: Sequence[int]) -> int:
    tactics = _table(TacticRow)
    tactic_ids = {
        (theorem_id, idx): id_
        for id_, theorem_id, idx in conn.execute(
            select(tactics.c.id, tactics.c.theorem_id, tactics.c.idx).where(tactics.c.version_id == version_id)
        )
    }
    premises = _table(PremiseRow)
    premise_ids: dict[str, int] = {}
    # The first definition wins when a name repeats (source extraction can see duplicates).
    for id_, name in conn.execute(
        select(premises.c.id, premises.c.full_name).where(premises.c.version_id == version_id).order_by(premises.c.idx)
    ):
        premise_ids.setdefault(name, id_)
    return insert_rows(
        conn,
        _table(TacticPremiseRow),
        (
            {
                "tactic_id": tactic_ids[(theorem_ids[i], j)],
                "version_id": version_id,
                "idx": k,
                "name": name,
                "premise_id": premise_ids.get(name),
            }
            for i, t in enumerate(trace.theorems)
            for j, step in enumerate(t.tactics)
            for k, name in enumerate(step.premises)
        ),
    )


def replace_steps(conn: Connection, theorem_id: int, version_id: int, steps: Sequence[TracedTactic]) -> None:
    """Make ``steps`` the tactic steps of the theorem row ``theorem_id`` (its premises
    linked to this version's premise rows by name, as :func:`write_trace` links them)."""
    tactics, links = _table(TacticRow), _table(TacticPremiseRow)
    old = select(tactics.c.id).where(tactics.c.theorem_id == theorem_id)
    conn.execute(delete(links).where(links.c.tactic_id.in_(old)))
    conn.execute(delete(tactics).where(tactics.c.theorem_id == theorem_id))
    insert_rows(
        conn,
        tactics,
        (_tactic_row(theorem_id, version_id, j, step) for j, step in enumerate(steps)),
    )
    ids = dict(conn.execute(select(tactics.c.idx, tactics.c.id).where(tactics.c.theorem_id == theorem_id)).all())
    premises = _table(PremiseRow)
    names = {name for step in steps for name in step.premises}
    premise_ids: dict[str, int] = {}
    for id_, name in conn.execute(
        select(premises.c.id, premises.c.full_name)
        .where(premises.c.version_id == version_id, premises.c.full_name.in_(names))
        .order_by(premises.c.idx)
    ):
        premise_ids.setdefault(name, id_)
    insert_rows(
        conn,
        links,
        (
            {"tactic_id": ids[j], "version_id": version_id, "idx": k, "name": name, "premise_id": premise_ids.get(name)}
            for j, step in enumerate(steps)
            for k, name in enumerate(step.premises)
        ),
    )


def _tactic_row(theorem_id: int, version_id: int, idx: int, step: TracedTactic) -> dict[str, Any]:
    return {
        "theorem_id": theorem_id,
        "version_id": version_id,
        "idx": idx,
        "tactic": step.tactic,
        "state_before": step.state_before,
        "state_after": step.state_after,
    }


def _declaration_columns(version_id: int, idx: int, d: Premise | Theorem) -> dict[str, Any]:
    """The :class:`~curriculum.db.DeclarationColumns` of a premise or theorem row."""
    return {
        "version_id": version_id,
        "idx": idx,
        "full_name": d.full_name,
        "path": d.path,
        "start_line": d.start.line,
        "start_column": d.start.column,
        "end_line": d.end.line,
        "end_column": d.end.column,
    }


def _span(r: Any) -> tuple[Position, Position]:
    """``(start, end)`` of a premise or theorem row."""
    return Position(r.start_line, r.start_column), Position(r.end_line, r.end_column)


def _premise_row(version_id: int, idx: int, p: Premise) -> dict[str, Any]:
    return {**_declaration_columns(version_id, idx, p), "kind": p.kind, "code": p.code}


def _theorem_row(version_id: int, idx: int, t: Theorem) -> dict[str, Any]:
    return {
        **_declaration_columns(version_id, idx, t),
        "statement": t.statement,
        "proof": t.proof,
        "status": t.status,
        "num_steps": t.num_steps,
        "premises": list(t.premises),
        "sorries": [s.as_list() for s in t.sorries],
        "proof_start_line": t.proof_start.line if t.proof_start else None,
        "proof_start_column": t.proof_start.column if t.proof_start else None,
    }


def read_trace(conn: Connection, version: VersionRow, location: str) -> RepoTrace:
    """The trace stored under ``version``, records in the order they were written."""
    vid = version.id
    files, imports = _table(FileRow), _table(ImportRow)
    modules: dict[int, list[str]] = defaultdict(list)
    for file_id, module in conn.execute(
        select(imports.c.file_id, imports.c.module)
        .join(files, files.c.id == imports.c.file_id)
        .where(files.c.version_id == vid)
        .order_by(imports.c.file_id, imports.c.idx)
    ):
        modules[file_id].append(module)
    lean_files = tuple(
        LeanFile(path, tuple(modules.get(id_, ())))
        for id_, path in conn.execute(
            select(files.c.id, files.c.path).where(files.c.version_id == vid).order_by(files.c.idx)
        )
    )
    premises = _table(PremiseRow)
    premise_records = tuple(
        Premise(r.full_name, r.path, *_span(r), kind=r.kind, code=r.code)
        for r in conn.execute(select(premises).where(premises.c.version_id == vid).order_by(premises.c.idx))
    )
    problems = _table(ProblemRow)
    problem_records = tuple(
        ParseProblem(r.path, r.line, r.reason)
        for r in conn.execute(select(problems).where(problems.c.version_id == vid).order_by(problems.c.idx))
    )
    return RepoTrace(
        spec=RepoSpec(location, version.requested_ref),
        commit=version.commit,
        backend=version.backend,
        lean_version=version.lean_version,
        files=lean_files,
        premises=premise_records,
        theorems=tuple(t for _, t in read_theorems(conn, [vid])),
        problems=problem_records,
    )


def read_theorems(
    conn: Connection, version_ids: Sequence[int], *, status: TheoremStatus | None = None
) -> list[tuple[int, Theorem]]:
    """(row id, record) of every theorem of the given versions, in the order of
    ``version_ids`` and then trace order."""
    if not version_ids:
        return []
    theorems, tactics, links = _table(TheoremRow), _table(TacticRow), _table(TacticPremiseRow)
    where: list[ColumnElement[bool]] = [theorems.c.version_id.in_(version_ids)]
    if status is not None:
        where.append(theorems.c.status == status)
    rows = list(conn.execute(select(theorems).where(*where).order_by(theorems.c.version_id, theorems.c.idx)))
    step_query = select(tactics).where(tactics.c.version_id.in_(version_ids))
    link_query = select(links.c.tactic_id, links.c.name).where(links.c.version_id.in_(version_ids))
    if status is not None:  # only the steps of the selected theorems
        step_query = step_query.where(tactics.c.theorem_id.in_(select(theorems.c.id).where(*where)))
        link_query = link_query.where(links.c.tactic_id.in_(step_query.with_only_columns(tactics.c.id)))
    step_premises: dict[int, list[str]] = defaultdict(list)
    for tactic_id, name in conn.execute(link_query.order_by(links.c.tactic_id, links.c.idx)):
        step_premises[tactic_id].append(name)
    steps: dict[int, list[TracedTactic]] = defaultdict(list)
    for r in conn.execute(step_query.order_by(tactics.c.theorem_id, tactics.c.idx)):
        steps[r.theorem_id].append(
            TracedTactic(r.tactic, r.state_before, r.state_after, tuple(step_premises.get(r.id, ())))
        )
    # In the caller's version order (the SQL order is by version id, which is ingest order).
    version_rank = {vid: rank for rank, vid in enumerate(version_ids)}
    rows.sort(key=lambda r: version_rank[r.version_id])
    return [(r.id, _theorem_record(r, steps.get(r.id, ()))) for r in rows]


def _theorem_record(r: Any, tactics: Iterable[TracedTactic]) -> Theorem:
    proof_start = Position(r.proof_start_line, r.proof_start_column) if r.proof_start_line is not None else None
    start, end = _span(r)
    return Theorem(
        full_name=r.full_name,
        path=r.path,
        start=start,
        end=end,
        statement=r.statement,
        proof=r.proof,
        status=r.status,
        tactics=tuple(tactics),
        premises=tuple(r.premises),
        sorries=tuple(Position(line, col) for line, col in r.sorries),
        proof_start=proof_start,
    )


def _ids_by_idx(conn: Connection, table: Table, version_id: int) -> list[int]:
    return list(
        conn.execute(select(table.c.id).where(table.c.version_id == version_id).order_by(table.c.idx)).scalars()
    )


def _table(model: type[Any]) -> Table:
    table: Table = model.__table__
    return table
