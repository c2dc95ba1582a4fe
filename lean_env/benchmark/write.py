"""Writing the LeanDojo Benchmark 4 layout (see :mod:`lean_env.benchmark.read` for the format).

Both split strategies, ``corpus.jsonl`` in dependency order, ``traced_files.jsonl`` and
``metadata.json``, with our extension keys for what the standard fields cannot carry; the
reader in :mod:`lean_env.benchmark.read` gives the records back (``canonical_order`` of them).
"""

from __future__ import annotations

import dataclasses
import datetime
import graphlib
import json
import logging
import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lean_env.benchmark.dojo_shapes import premise_to_json
from lean_env.benchmark.jsonl import write_json_array
from lean_env.benchmark.read import (
    CORPUS_FILE,
    EXTENSION_KEY,
    METADATA_FILE,
    SPLIT_NAMES,
    TRACED_FILES_FILE,
    BenchmarkFormatError,
)
from lean_env.benchmark.splits import split_by_premise, split_randomly
from lean_env.records import (
    LeanFile,
    Position,
    Premise,
    RepoTrace,
    Theorem,
    TracedTactic,
    module_of_path,
)

__all__ = ["write_benchmark"]

logger = logging.getLogger(__name__)

# A character that continues a Lean identifier (so a match next to it is not the name).
_IDENT_CHAR_RE = re.compile(r"[\w'!?\u2080-\u209c\u2100-\u214f]")


def write_benchmark(traces: Sequence[RepoTrace], out_dir: Path, *, seed: int) -> None:
    """Write ``traces`` to ``out_dir`` as one LeanDojo Benchmark 4 directory.

    Both split strategies are written (seeded: the same traces and seed give the same
    files). Several traces share one ``corpus.jsonl`` keyed by file path, as LeanAgent's
    merged exports do: when two traces hold different contents for one path the first
    wins (a warning is logged) and the others will not read back exactly. Imports that no
    written file defines get an empty corpus line of their own (path from the module name)
    so that ReProver's corpus loader, which requires every import to be a line above,
    accepts the file; those lines are not listed in ``traced_files.jsonl``.
    """
    try:
        _write(traces, out_dir, seed=seed)
    except OSError as e:
        raise BenchmarkFormatError(f"cannot write a benchmark directory at {out_dir}: {e}") from e


def _write(traces: Sequence[RepoTrace], out_dir: Path, *, seed: int) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    owners = [_trace_key(t) for t in traces]
    entries: list[tuple[tuple[str, str, str, Position, Position, str], dict[str, Any], Theorem]] = []
    all_premises = {p.full_name: p for t in reversed(traces) for p in t.premises}
    for trace, (url, commit) in zip(traces, owners, strict=True):
        own = {p.full_name: p for p in reversed(trace.premises)}
        for thm in trace.theorems:
            key = (url, commit, thm.path, thm.start, thm.end, thm.full_name)
            entries.append((key, _theorem_to_json(thm, url, commit, own, all_premises), thm))
    # Sorted so that the split depends on the records and the seed, not on their order.
    entries.sort(key=lambda e: e[0])
    theorems = [thm for _, _, thm in entries]
    rng = random.Random(seed)
    for strategy, splitter in (("random", split_randomly), ("novel_premises", split_by_premise)):
        split = splitter(theorems, rng)
        (out_dir / strategy).mkdir(exist_ok=True)
        for name in SPLIT_NAMES:
            write_json_array(out_dir / strategy / f"{name}.json", [entries[i][1] for i in split[name]])
        logger.info(
            "%s split: %d train, %d val, %d test",
            strategy,
            len(split["train"]),
            len(split["val"]),
            len(split["test"]),
        )
    real_paths = _write_corpus(traces, out_dir / CORPUS_FILE)
    with (out_dir / TRACED_FILES_FILE).open("w", encoding="utf-8") as out:
        out.writelines(json.dumps({"traced_file_path": p}) + "\n" for p in real_paths)
    _write_metadata(traces, out_dir / METADATA_FILE, seed=seed)


def _trace_key(trace: RepoTrace) -> tuple[str, str]:
    return trace.spec.location, trace.commit


def _theorem_to_json(
    thm: Theorem,
    url: str,
    commit: str,
    own: Mapping[str, Premise],
    everywhere: Mapping[str, Premise],
) -> dict[str, Any]:
    traced = all(t.state_before is not None and t.state_after is not None for t in thm.tactics)
    extension: dict[str, Any] = {
        "proof": thm.proof,
        "status": thm.status.value,
        "premises": list(thm.premises),
        "sorries": [p.as_list() for p in thm.sorries],
        "proof_start": thm.proof_start.as_list() if thm.proof_start else None,
    }
    if not traced:
        extension["tactics"] = [
            {
                "tactic": t.tactic,
                "state_before": t.state_before,
                "state_after": t.state_after,
                "premises": list(t.premises),
            }
            for t in thm.tactics
        ]
    return {
        "url": url,
        "commit": commit,
        "file_path": thm.path,
        "full_name": thm.full_name,
        "theorem_statement": thm.statement,
        "start": thm.start.as_list(),
        "end": thm.end.as_list(),
        "traced_tactics": [
            {
                "tactic": t.tactic,
                "annotated_tactic": _annotate(t, own, everywhere),
                "state_before": t.state_before,
                "state_after": t.state_after,
            }
            for t in thm.tactics
            if t.state_before is not None and t.state_after is not None
        ],
        EXTENSION_KEY: extension,
    }


def _annotate(tactic: TracedTactic, own: Mapping[str, Premise], everywhere: Mapping[str, Premise]) -> list[Any]:
    """``[text with <a>name</a> marks, provenances]`` for a tactic and its premises.

    Each premise is marked at its first occurrence after the previous mark, written as its
    full name or any dotted suffix of it (``add_comm`` for ``Nat.add_comm``). A premise
    that cannot be found in the text, or whose definition is not among the traces'
    premises, gets no mark and no provenance: the format pairs them one to one.
    ``def_pos``/``def_end_pos`` are the premise's span (LeanDojo gives the name's span,
    which lies inside it; ReProver only asks that it does).
    """
    text = tactic.tactic
    pieces: list[str] = []
    provenances: list[dict[str, Any]] = []
    cursor = 0
    for name in tactic.premises:
        premise = own.get(name) or everywhere.get(name)
        found = _find_name(text, name, cursor) if premise else None
        if premise is None or found is None:
            continue
        start, end = found
        pieces += [text[cursor:start], "<a>", text[start:end], "</a>"]
        cursor = end
        provenances.append(
            {
                "full_name": name,
                "def_path": premise.path,
                "def_pos": premise.start.as_list(),
                "def_end_pos": premise.end.as_list(),
            }
        )
    pieces.append(text[cursor:])
    return ["".join(pieces), provenances]


def _find_name(text: str, full_name: str, start: int) -> tuple[int, int] | None:
    """The first ``(start, end)`` at or after ``start`` where a dotted suffix of ``full_name``
    stands as a whole identifier, longest suffix first."""
    parts = full_name.split(".")
    for i in range(len(parts)):
        suffix = ".".join(parts[i:])
        pos = text.find(suffix, start)
        while pos >= 0:
            end = pos + len(suffix)
            before = text[pos - 1] if pos > 0 else " "
            after = text[end] if end < len(text) else " "
            if before != "." and not _IDENT_CHAR_RE.match(before) and not _IDENT_CHAR_RE.match(after):
                return pos, end
            pos = text.find(suffix, pos + 1)
    return None


def _write_corpus(traces: Sequence[RepoTrace], path: Path) -> list[str]:
    """Write corpus.jsonl (dependencies first); return the real (non-placeholder) paths."""
    files: dict[str, LeanFile] = {}
    premises: dict[str, list[Premise]] = {}
    for trace in traces:
        mine: dict[str, list[Premise]] = {}
        for premise in trace.premises:  # not `p`: below, `p` is a path
            mine.setdefault(premise.path, []).append(premise)
        for f in trace.files:
            if f.path not in files:
                files[f.path] = f
                premises[f.path] = mine.get(f.path, [])
            elif files[f.path] != f or premises[f.path] != mine.get(f.path, []):
                logger.warning("%s differs between repositories; keeping the first (%s)", f.path, trace.spec)
    module_paths: dict[str, str] = {}
    for p in files:
        module_paths.setdefault(module_of_path(p), p)
    imports = {p: [module_paths.get(m) or m.replace(".", "/") + ".lean" for m in f.imports] for p, f in files.items()}
    placeholders = {i for deps in imports.values() for i in deps if i not in files}
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for p in sorted(placeholders):
        sorter.add(p)
    for p in files:
        sorter.add(p, *imports[p])
    try:
        order = list(sorter.static_order())
    except graphlib.CycleError as e:
        raise BenchmarkFormatError(
            f"cannot write {path}: the files import each other in a cycle ({' -> '.join(e.args[1])})"
        ) from e
    with path.open("w", encoding="utf-8") as out:
        for p in order:
            line = {
                "path": p,
                "imports": imports.get(p, []),
                "premises": [premise_to_json(q) for q in premises.get(p, [])],
            }
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return [p for p in order if p in files]


def _write_metadata(traces: Sequence[RepoTrace], path: Path, *, seed: int) -> None:
    metadata: dict[str, Any] = {
        "dataset_name": "LeanDojo Benchmark 4 format, written by leanagent",
        "creation_time": datetime.datetime.now(datetime.UTC).isoformat(),
        "seed": seed,
        "repositories": [
            {
                "url": t.spec.location,
                "name": t.spec.name,
                "commit": t.commit,
                "ref": t.spec.commit,
                "lean_version": t.lean_version,
                "files": [f.path for f in t.files],
                "problems": [dataclasses.asdict(p) for p in t.problems],
            }
            for t in traces
        ],
    }
    if len(traces) == 1:
        metadata["from_repo"] = {"url": traces[0].spec.location, "commit": traces[0].commit}
    path.write_text(json.dumps(metadata, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
