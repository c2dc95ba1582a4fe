"""Reading and writing the LeanDojo Benchmark 4 format, so that our records and LeanDojo's
(and ReProver's, and LeanAgent's) data sets are one format.

A benchmark directory, as LeanDojo's ``generate-benchmark-lean4`` writes it (LeanAgent adds
``traced_files.jsonl`` and ``theorem_statement``)::

    corpus.jsonl            one line per .lean file, dependencies first:
                            {"path", "imports": [file paths], "premises": [
                              {"full_name", "code", "start": [l, c], "end": [l, c], "kind"}]}
    traced_files.jsonl      one line per traced file: {"traced_file_path": path}
    metadata.json           {"creation_time", "from_repo": {"url", "commit"}, ...}
    random/{train,val,test}.json           a JSON array of theorems:
    novel_premises/{train,val,test}.json   {"url", "commit", "file_path", "full_name",
                              "theorem_statement", "start", "end", "traced_tactics": [
                              {"tactic", "annotated_tactic": [text, [{"full_name",
                               "def_path", "def_pos", "def_end_pos"}]],
                               "state_before", "state_after"}]}

Positions are ``[line, column]``, both 1-based (LeanDojo's ``Pos``), exactly as our
:class:`~lean_env.records.Position`; spans are half-open. Both split strategies partition the
same theorems, so reading takes the union of whatever split files exist.

What the standard fields cannot carry (the proof text, the status, the theorem-level premises,
the ``sorry`` positions, the proof start, and tactics without goal states) we write under one
extra key per theorem, ``"leanagent"``, and per repository in ``metadata.json``
(``"repositories"``, as LeanAgent's merged exports have, plus our ``ref``, ``files`` and
``problems``). Readers that do not know these keys (ReProver, LeanAgent) ignore them; when
reading a directory without them we derive what we can. ``docs/benchmark-format.md`` lists
exactly what survives a round trip.

LeanDojo's data shapes are converted in :mod:`lean_env.benchmark.dojo_shapes` (shared with the
tracing backend), the writer lives in :mod:`lean_env.benchmark.write`, the splits in
:mod:`lean_env.benchmark.splits`, and the JSON plumbing that names files and lines in
:mod:`lean_env.benchmark.jsonl`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict, cast

from lean_env.benchmark.dojo_shapes import (
    SORRY_RE,
    annotated_premises,
    position_from_json,
    premise_from_json,
    statement_text,
)
from lean_env.benchmark.jsonl import (
    BenchmarkFormatError,
    iter_json_array,
    iter_json_lines,
    list_of,
    optional_string,
    reason,
    string,
    strings,
)
from lean_env.records import (
    IngestBackend,
    LeanFile,
    ParseProblem,
    Position,
    Premise,
    RepoSpec,
    RepoTrace,
    Theorem,
    TheoremStatus,
    TracedTactic,
    module_of_path,
)

__all__ = ["BenchmarkFormatError", "canonical_order", "read_benchmark"]

logger = logging.getLogger(__name__)

SPLIT_STRATEGIES = ("random", "novel_premises")
SPLIT_NAMES = ("train", "val", "test")
CORPUS_FILE = "corpus.jsonl"
TRACED_FILES_FILE = "traced_files.jsonl"
METADATA_FILE = "metadata.json"
# Our extension key, on theorem entries; other readers ignore unknown keys.
EXTENSION_KEY = "leanagent"


def canonical_order(trace: RepoTrace) -> RepoTrace:
    """``trace`` with files, premises and theorems in the order :func:`read_benchmark` returns.

    Files by path; premises and theorems by (path, start, end, name). Records are otherwise
    unchanged, so ``canonical_order(t) == read_benchmark(write_benchmark([t]))`` (up to
    ``backend``) is the round-trip property.
    """
    return dataclasses.replace(
        trace,
        files=tuple(sorted(trace.files, key=lambda f: f.path)),
        premises=tuple(sorted(trace.premises, key=_span_key)),
        theorems=tuple(sorted(trace.theorems, key=_span_key)),
    )


def _span_key(record: Premise | Theorem) -> tuple[str, Position, Position, str]:
    return (record.path, record.start, record.end, record.full_name)


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _CorpusLine:
    path: str
    imports: tuple[str, ...]
    premises: tuple[Premise, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class _RepoMeta:
    ref: str | None
    lean_version: str | None
    files: tuple[str, ...] | None
    problems: tuple[ParseProblem, ...]


def read_benchmark(root: Path) -> list[RepoTrace]:
    """The repositories of a LeanDojo Benchmark 4 directory, one :class:`RepoTrace` per
    ``url`` + ``commit`` of its theorems (backend ``BENCHMARK``).

    Needs at least one split file (``random/`` or ``novel_premises/``); ``corpus.jsonl``,
    ``traced_files.jsonl`` and ``metadata.json`` are read when present. Which corpus files
    belong to which repository comes from our ``metadata.json`` when it lists them;
    otherwise a file goes to the repositories with theorems in it, and files without
    theorems go to the main repository (``from_repo``, else the one with most theorems).
    Anything malformed raises :class:`BenchmarkFormatError` naming the file and line.
    """
    if not root.is_dir():
        raise BenchmarkFormatError(f"{root} is not a directory (expected a LeanDojo Benchmark 4 directory)")
    split_files = [
        root / s / f"{n}.json" for s in SPLIT_STRATEGIES for n in SPLIT_NAMES if (root / s / f"{n}.json").is_file()
    ]
    if not split_files:
        raise BenchmarkFormatError(
            f"{root} has no split files (random/{{train,val,test}}.json or "
            "novel_premises/{train,val,test}.json); is it a LeanDojo Benchmark 4 directory?"
        )
    from_repo, repo_meta = _read_metadata(root / METADATA_FILE)
    corpus = _read_corpus(root / CORPUS_FILE)
    traced_paths = _read_traced_files(root / TRACED_FILES_FILE)

    theorems: dict[tuple[str, str], dict[tuple[str, Position, str], Theorem]] = {}
    seen: set[str] = set()
    for split_file in split_files:
        for line, index, entry in iter_json_array(split_file):
            # Each theorem is in both strategies' files: parse it once.
            identity = _identity(entry)
            if identity in seen:
                continue
            try:
                key, thm = _theorem_from_json(entry)
            except (ValueError, TypeError, KeyError) as e:
                raise BenchmarkFormatError(f"{split_file}: line {line} (entry {index}): {reason(e)}") from e
            seen.add(identity)
            theorems.setdefault(key, {})[(thm.path, thm.start, thm.full_name)] = thm
    keys = list(dict.fromkeys([*repo_meta, *sorted(theorems)]))
    if not keys and from_repo:
        keys = [from_repo]

    if traced_paths is None and any(m.files is not None for m in repo_meta.values()):
        traced_paths = {p for m in repo_meta.values() for p in m.files or ()}
    real = [c for c in corpus.values() if traced_paths is None or c.path in traced_paths]
    assignment = _assign_files(real, keys, theorems, repo_meta, from_repo)

    traces = []
    for url, commit in keys:
        meta = repo_meta.get((url, commit), _RepoMeta(commit, None, None, ()))
        lines = assignment[(url, commit)]
        try:
            spec = RepoSpec(url, meta.ref)
        except ValueError as e:
            raise BenchmarkFormatError(f"{root}: repository {url!r} at {commit!r}: {e}") from e
        trace = RepoTrace(
            spec=spec,
            commit=commit,
            backend=IngestBackend.BENCHMARK,
            lean_version=meta.lean_version,
            files=tuple(LeanFile(c.path, tuple(module_of_path(i) for i in c.imports)) for c in lines),
            premises=tuple(p for c in lines for p in c.premises),
            theorems=tuple(theorems.get((url, commit), {}).values()),
            problems=meta.problems,
        )
        traces.append(canonical_order(trace))
    logger.info("read %d repositories from %s", len(traces), root)
    return traces


def split_members(root: Path, strategy: str, split: str = "test") -> list[tuple[str, str, str]]:
    """``(url, file_path, full_name)`` of every theorem in ``root/strategy/split.json`` (a
    benchmark's held-out theorems: LeanDojo's evaluation set is ``test``), in file order."""
    if strategy not in SPLIT_STRATEGIES or split not in SPLIT_NAMES:
        raise BenchmarkFormatError(f"no split {strategy}/{split}: the splits are {SPLIT_STRATEGIES} x {SPLIT_NAMES}")
    path = root / strategy / f"{split}.json"
    if not path.is_file():
        raise BenchmarkFormatError(f"{root} has no {strategy}/{split}.json; is it a LeanDojo Benchmark 4 directory?")
    members = []
    for line, index, entry in iter_json_array(path):
        try:
            if not isinstance(entry, Mapping):
                raise ValueError(f"a theorem must be an object, got {type(entry).__name__}")
            members.append((string(entry, "url"), string(entry, "file_path"), string(entry, "full_name")))
        except ValueError as e:
            raise BenchmarkFormatError(f"{path}: line {line} (entry {index}): {reason(e)}") from e
    return members


def _assign_files(
    lines: Sequence[_CorpusLine],
    keys: Sequence[tuple[str, str]],
    theorems: Mapping[tuple[str, str], Mapping[Any, Theorem]],
    repo_meta: Mapping[tuple[str, str], _RepoMeta],
    from_repo: tuple[str, str] | None,
) -> dict[tuple[str, str], list[_CorpusLine]]:
    assignment: dict[tuple[str, str], list[_CorpusLine]] = {k: [] for k in keys}
    if not keys:
        return assignment
    listed = {k: set(m.files) for k, m in repo_meta.items() if m.files is not None}
    owners: dict[str, list[tuple[str, str]]] = {}
    for key, thms in theorems.items():
        for thm in thms.values():
            if key not in owners.setdefault(thm.path, []):
                owners[thm.path].append(key)
    main = from_repo if from_repo in assignment else max(keys, key=lambda k: len(theorems.get(k, {})))
    for line in lines:
        if listed:
            targets = [k for k in keys if line.path in listed.get(k, ())]
        else:
            targets = owners.get(line.path) or [main]
        for k in targets:
            assignment[k].append(line)
    return assignment


def _identity(entry: Any) -> str:
    """A cheap key for one theorem entry (url, commit, path, name, start), before parsing it."""
    if not isinstance(entry, Mapping):
        return ""
    return repr([entry.get(k) for k in ("url", "commit", "file_path", "full_name", "start")])


class _CommonFields(TypedDict):
    """The :class:`Theorem` fields that both kinds of entry read the same way."""

    full_name: str
    path: str
    start: Position
    end: Position
    statement: str


def _theorem_from_json(entry: Any) -> tuple[tuple[str, str], Theorem]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"a theorem must be an object, got {type(entry).__name__}")
    url, commit, path, name = (string(entry, k) for k in ("url", "commit", "file_path", "full_name"))
    statement = entry.get("theorem_statement") or ""
    if not isinstance(statement, str):
        raise ValueError("theorem_statement must be a string or null")
    statement = statement_text(statement)
    raw_tactics = entry.get("traced_tactics")
    if not isinstance(raw_tactics, list):
        raise ValueError("traced_tactics must be a list")
    tactics = tuple(_tactic_from_json(t, i) for i, t in enumerate(raw_tactics))
    ext = entry.get(EXTENSION_KEY)
    common: _CommonFields = {
        "full_name": name,
        "path": path,
        "start": position_from_json(entry.get("start")),
        "end": position_from_json(entry.get("end")),
        "statement": statement,
    }
    if ext is None:
        # A LeanDojo/LeanAgent file: status from the tactics; no proof text, no positions.
        premises = tuple(dict.fromkeys(n for t in tactics for n in t.premises))
        gave_up = any(SORRY_RE.search(t.tactic) for t in tactics)
        thm = Theorem(
            **common,
            proof=None,
            status=TheoremStatus.SORRY if gave_up else TheoremStatus.PROVEN,
            tactics=tactics,
            premises=premises,
        )
        return (url, commit), thm
    if not isinstance(ext, Mapping):
        raise ValueError(f"{EXTENSION_KEY} must be an object")
    proof = ext.get("proof")
    if proof is not None and not isinstance(proof, str):
        raise ValueError(f"{EXTENSION_KEY}.proof must be a string or null")
    if "tactics" in ext:
        if not isinstance(ext["tactics"], list):
            raise ValueError(f"{EXTENSION_KEY}.tactics must be a list")
        tactics = tuple(_extension_tactic(t) for t in ext["tactics"])
    proof_start = ext.get("proof_start")
    thm = Theorem(
        **common,
        proof=proof,
        # Not checked here: anything but a status's string, None included, is TheoremStatus's ValueError.
        status=TheoremStatus(cast(str, ext.get("status"))),
        tactics=tactics,
        premises=strings(ext.get("premises", []), f"{EXTENSION_KEY}.premises"),
        sorries=tuple(position_from_json(p) for p in list_of(ext.get("sorries", []), "sorries")),
        proof_start=None if proof_start is None else position_from_json(proof_start),
    )
    return (url, commit), thm


def _tactic_from_json(data: Any, index: int) -> TracedTactic:
    if not isinstance(data, Mapping):
        raise ValueError(f"traced_tactics[{index}] must be an object")
    try:
        tactic = string(data, "tactic")
        state_before = string(data, "state_before")
        state_after = string(data, "state_after")
        premises = annotated_premises(data["annotated_tactic"]) if "annotated_tactic" in data else ()
    except (ValueError, KeyError) as e:
        raise ValueError(f"traced_tactics[{index}]: {reason(e)}") from e
    return TracedTactic(tactic, state_before, state_after, premises)


def _extension_tactic(data: Any) -> TracedTactic:
    if not isinstance(data, Mapping):
        raise ValueError(f"{EXTENSION_KEY}.tactics entries must be objects")
    states = [data.get("state_before"), data.get("state_after")]
    if not all(s is None or isinstance(s, str) for s in states):
        raise ValueError(f"{EXTENSION_KEY}.tactics states must be strings or null")
    return TracedTactic(string(data, "tactic"), states[0], states[1], strings(data.get("premises", []), "premises"))


def _read_corpus(path: Path) -> dict[str, _CorpusLine]:
    lines: dict[str, _CorpusLine] = {}
    if not path.is_file():
        return lines
    for number, data in iter_json_lines(path):
        try:
            if not isinstance(data, Mapping):
                raise ValueError("a corpus line must be an object")
            file_path = string(data, "path")
            imports = strings(data.get("imports"), "imports")
            premises = tuple(
                p
                for p in (premise_from_json(q, file_path) for q in list_of(data.get("premises"), "premises"))
                if p is not None
            )
        except (ValueError, TypeError, KeyError) as e:
            raise BenchmarkFormatError(f"{path}: line {number}: {reason(e)}") from e
        if file_path in lines:
            raise BenchmarkFormatError(f"{path}: line {number}: {file_path} appears twice")
        lines[file_path] = _CorpusLine(file_path, imports, premises)
    return lines


def _read_traced_files(path: Path) -> set[str] | None:
    if not path.is_file():
        return None
    paths = set()
    for number, data in iter_json_lines(path):
        if not isinstance(data, Mapping) or not isinstance(data.get("traced_file_path"), str):
            raise BenchmarkFormatError(f'{path}: line {number}: expected {{"traced_file_path": "<path>"}}')
        paths.add(data["traced_file_path"])
    return paths


def _read_metadata(
    path: Path,
) -> tuple[tuple[str, str] | None, dict[tuple[str, str], _RepoMeta]]:
    """``from_repo`` (LeanDojo) and the per-repository entries (LeanAgent + ours)."""
    if not path.is_file():
        return None, {}
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise BenchmarkFormatError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from e
    except (OSError, UnicodeDecodeError) as e:
        raise BenchmarkFormatError(f"{path}: cannot be read ({e})") from e
    try:
        if not isinstance(data, Mapping):
            raise ValueError("metadata must be a JSON object")
        from_repo = None
        if isinstance(data.get("from_repo"), Mapping):
            from_repo = (string(data["from_repo"], "url"), string(data["from_repo"], "commit"))
        repos: dict[tuple[str, str], _RepoMeta] = {}
        for entry in list_of(data.get("repositories", []), "repositories"):
            if not isinstance(entry, Mapping):
                raise ValueError("repositories entries must be objects")
            files = entry.get("files")
            key = (string(entry, "url"), string(entry, "commit"))
            repos[key] = _RepoMeta(
                # Our spec's ref, which may be None ("whatever is checked out"); others
                # (LeanAgent) write no ref, and then the commit is the ref.
                ref=optional_string(entry, "ref") if "ref" in entry else key[1],
                lean_version=optional_string(entry, "lean_version"),
                files=None if files is None else strings(files, "files"),
                problems=tuple(
                    ParseProblem(string(p, "path"), int(p["line"]), string(p, "reason"))
                    for p in list_of(entry.get("problems", []), "problems")
                ),
            )
    except (ValueError, TypeError, KeyError) as e:
        raise BenchmarkFormatError(f"{path}: {reason(e)}") from e
    return from_repo, repos
