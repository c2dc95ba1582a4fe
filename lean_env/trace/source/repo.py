"""Source extraction of a whole repository: every ``.lean`` file, resolved across imports.

The repository's own files are found by walking its directory (build output and fetched
dependencies skipped). Imports that no file of the repository provides are looked up in
the Lake package directories (``.lake/packages/<dep>/``, or the older ``lake-packages/``):
only the dependency modules the repository imports, transitively, are read, and only for
their declarations. Core modules (``Init``, ``Std``, ``Lean``, ``Lake``) ship with the
toolchain, not with the repository: they are read from the toolchain's sources when the
caller found them (``core``; see :func:`lean_env.lean.toolchain.core_sources`), and every
file but a ``prelude`` then imports ``Init``, as Lean makes it; without them their names
stay unresolved.

Dependency files appear in the trace as files and premises (their paths keep the
``.lake/packages/<dep>/`` prefix, as LeanDojo's do, and core files LeanDojo's
``.lake/packages/lean4/src/lean/``) but never as theorems.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from itertools import chain
from pathlib import Path

from lean_env.errors import UserInputError
from lean_env.records import CORE_PREFIX, IngestBackend, LeanFile, ParseProblem, RepoSpec, RepoTrace
from lean_env.repos import lean_sources
from lean_env.syntax.lexer import mask
from lean_env.syntax.names import NameTable
from lean_env.syntax.reader import ReadFile, read_file
from lean_env.trace.source.extract import FileExtract, build, register

log = logging.getLogger(__name__)

# Build output, fetched dependencies and VCS data: never the project's own sources.
_PACKAGE_DIRS = (".lake/packages", "lake-packages")
# The modules the toolchain ships, by their first component; `Init` every file imports.
_CORE_ROOTS = frozenset({"Init", "Std", "Lean", "Lake"})
_IMPLICIT = "Init"


class SourceExtractionError(UserInputError):
    """A repository directory that cannot be read for source extraction."""


def extract_repo(
    repo_dir: Path, *, spec: RepoSpec, commit: str, lean_version: str | None, core: Path | None = None
) -> RepoTrace:
    """Extract every ``.lean`` file under ``repo_dir`` into one trace (backend SOURCE).

    Premises resolve across the repository's files through their imports, and against
    the declarations of imported dependency modules when their sources are present under
    ``.lake/packages``, or in ``core`` (the toolchain's directory of ``Init.lean``) for its
    modules. Files come in path order, repository files before dependencies;
    premises and theorems in file order, then source order.
    """
    root = Path(repo_dir)
    if not root.is_dir():
        raise SourceExtractionError(f"cannot extract {spec}: {root} is not a directory")
    problems: list[ParseProblem] = []
    reads: dict[str, ReadFile] = {}
    for path in _own_files(root, problems):
        _read_into(reads, path, root / path, problems, core=core)
    own = list(reads)
    modules = {LeanFile(p).module: p for p in own}
    dep_paths = _read_dependencies(root, reads, modules, problems, core=core)
    paths = own + sorted(dep_paths)
    index = {p: i for i, p in enumerate(paths)}
    table = NameTable()
    for path in paths:
        register(table, reads[path], module=index[path])
    closures = _import_closures(paths, reads, modules, index)
    extracts: list[FileExtract] = [
        build(
            reads[p],
            path=p,
            table=table,
            module=index[p],
            imported=closures[index[p]],
            with_theorems=p not in dep_paths,
        )
        for p in paths
    ]
    log.info("source extraction of %s: %d files (%d from dependencies)", spec, len(paths), len(dep_paths))
    return RepoTrace(
        spec=spec,
        commit=commit,
        backend=IngestBackend.SOURCE,
        lean_version=lean_version,
        files=tuple(e.file for e in extracts),
        premises=tuple(chain.from_iterable(e.premises for e in extracts)),
        theorems=tuple(chain.from_iterable(e.theorems for e in extracts)),
        problems=tuple(chain(problems, chain.from_iterable(e.problems for e in extracts))),
    )


def _own_files(root: Path, problems: list[ParseProblem]) -> list[str]:
    """The repository's ``.lean`` files, as sorted POSIX paths relative to ``root``; those
    that are no readable files (dangling or looping symlinks, FIFOs, ...) become problems."""
    sources = lean_sources(root)
    problems += [ParseProblem(path, 1, f"skipped: {why}") for path, why in sources.skipped]
    # The Lake build script is configuration, not part of any library.
    return [p for p in sources.paths if p != "lakefile.lean"]


def _read_into(
    reads: dict[str, ReadFile], path: str, file: Path, problems: list[ParseProblem], *, core: Path | None
) -> bool:
    """Read and parse ``file`` into ``reads`` as ``path`` (with Lean's implicit ``import
    Init`` when the ``core`` library is read); an unreadable file becomes a problem."""
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        problems.append(ParseProblem(path, 1, f"not UTF-8 text ({e.reason} at byte {e.start})"))
        return False
    except OSError as e:
        problems.append(ParseProblem(path, 1, f"cannot be read: {e.strerror or e}"))
        return False
    read = read_file(mask(text))
    if core is not None and not read.prelude and _IMPLICIT not in read.imports:
        read = dataclasses.replace(read, imports=(_IMPLICIT, *read.imports))
    reads[path] = read
    return True


def _read_dependencies(
    root: Path, reads: dict[str, ReadFile], modules: dict[str, str], problems: list[ParseProblem], *, core: Path | None
) -> set[str]:
    """Read the dependency modules imported (transitively) by the files in ``reads``;
    return their paths. ``modules`` gains an entry for every module found."""
    packages = [
        d for base in _PACKAGE_DIRS if (root / base).is_dir() for d in sorted((root / base).iterdir()) if d.is_dir()
    ]
    if not packages and core is None:
        return set()
    found: set[str] = set()
    queue = deque(imp for p in sorted(reads) for imp in reads[p].imports)
    missing: set[str] = set()
    while queue:
        module = queue.popleft()
        if module in modules or module in missing:
            continue
        located = _find_module(root, packages, core, module)
        if located is None or not _read_into(reads, *located, problems, core=core):
            missing.add(module)
            continue
        path = located[0]
        modules[module] = path
        found.add(path)
        queue.extend(reads[path].imports)
    if missing:
        log.debug("imports with no source in the repository, its packages or the toolchain: %s", sorted(missing))
    return found


def _find_module(root: Path, packages: list[Path], core: Path | None, module: str) -> tuple[str, Path] | None:
    """The trace's path of ``module``'s file and where it lies, or None when no package
    (nor, for a core module, the toolchain) has it."""
    relative = Path(*module.split(".")).with_suffix(".lean")
    if core is not None and module.split(".", 1)[0] in _CORE_ROOTS:
        file = core / relative
        return (f"{CORE_PREFIX}{relative.as_posix()}", file) if file.is_file() else None
    for package in packages:
        candidate = package / relative
        if candidate.is_file():
            return candidate.relative_to(root).as_posix(), candidate
    return None


def _import_closures(
    paths: list[str], reads: dict[str, ReadFile], modules: dict[str, str], index: dict[str, int]
) -> list[int]:
    """For each file (by number), the bit set of the files it imports directly or not."""
    direct = [
        sorted({index[modules[m]] for m in reads[p].imports if m in modules and modules[m] in index}) for p in paths
    ]
    closures: list[int | None] = [None] * len(paths)
    for root in range(len(paths)):
        if closures[root] is not None:
            continue
        # Iterative post-order walk; an import cycle (invalid Lean) just stops the walk.
        stack = [(root, iter(direct[root]))]
        on_path = {root}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(node)
                reach = 0
                for d in direct[node]:
                    reach |= (1 << d) | (closures[d] or 0)
                closures[node] = reach
            elif closures[child] is None and child not in on_path:
                on_path.add(child)
                stack.append((child, iter(direct[child])))
    return [c or 0 for c in closures]
