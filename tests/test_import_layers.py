"""The package's imports, read from the source (ast: nothing is imported, so no import side
effect hides or adds an edge): no circle between modules, and every import along the layers
of DESIGN.md, ``agent -> {retrieval, curriculum} -> lean_env``, with ``verify`` apart
(only the CLI imports it), and inside ``agent`` and ``verify`` along their rooms' order
(``agent/__init__.py``, ``verify/__init__.py``). Folders do not import one another around a
loop either (a package's top folders, each taken whole), and ``lean_env.syntax``, the Lean
text reading that every layer uses, sits at the bottom of ``lean_env``; below every package
sit the few shared modules (``SHARED``), which any package may import.

Every import counts, those under ``if TYPE_CHECKING:`` and inside functions too: either one
ties two modules together as much as a module-level import (a circle of annotations is
a circle that a refactoring or a runtime annotation lookup turns into an import error)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "retrieval", "curriculum", "lean_env", "verify")

# Package -> the packages it may import. retrieval and curriculum are siblings: neither
# imports the other (DESIGN.md, "Layout").
ALLOWED = {
    "agent": {"retrieval", "curriculum", "lean_env", "verify"},
    "retrieval": {"lean_env"},
    "curriculum": {"lean_env"},
    "lean_env": set(),
    "verify": set(),
}
# verify shares only the command line with the prover.
VERIFY_IMPORTERS = "agent.cli"
# Below every package: modules any package may import, verify too, because they import
# nothing of the project but each other (checked below), so importing one ties no layer to
# another. The process helper is one: the prover's Lean and git processes and the verifier's
# solver children are killed the same way (its process group), and one copy of that is enough.
SHARED = frozenset({"lean_env.process", "lean_env.closing"})
# Rooms from the top down: a room imports only itself and the rooms below it (and the
# modules of its package outside any room, such as verify.errors).
ROOMS = {
    "agent": ("cli", "lifelong", "evaluation", "reports", "proving", "generators", "search", "workspace"),
    "verify": ("trained", "queries", "smt", "model"),
}
# Circles known and left for later, each with the reason; none at present.
KNOWN_CIRCLES: frozenset[frozenset[str]] = frozenset()
# The bottom of lean_env: Lean syntax read as text, used by every folder of lean_env and by
# retrieval and the agent; it imports only itself and these.
SYNTAX = "lean_env.syntax"
SYNTAX_IMPORTS = frozenset({"lean_env.records", "lean_env.errors"})


@dataclass(frozen=True, slots=True)
class Edge:
    """One import of one module by another."""

    importer: str
    imported: str
    line: int

    def text(self) -> str:
        return f"{self.importer}:{self.line} imports {self.imported}"


def modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> its file, for every module of ``packages`` under ``root``."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(root: Path, packages: Iterable[str]) -> list[Edge]:
    """Every import between the modules of ``packages``, resolved to the deepest module
    named (``from a.b import c`` is a.b.c when c is a module, else a.b)."""
    known = modules(root, packages)

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges = []
    for importer, path in known.items():
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importer's package, one level up per extra dot
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                names = [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                imported = resolve(name)
                if imported is not None and imported != importer:
                    edges.append(Edge(importer, imported, node.lineno))
    return edges


def circles(edges: Iterable[Edge]) -> list[frozenset[str]]:
    """The sets of modules that import one another, directly or around a loop."""
    graph = nx.DiGraph((e.importer, e.imported) for e in edges)
    return [frozenset(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


def folder_circles(edges: Iterable[Edge]) -> list[frozenset[str]]:
    """The sets of folders (a package's top folders, ``lean_env.trace`` for
    ``lean_env.trace.source.repo``; a module at a package's top stands for itself) that
    import one another, directly or around a loop."""
    edges = list(edges)
    names = {name for e in edges for name in (e.importer, e.imported)}
    folders = {".".join(name.split(".")[:2]) for name in names if name.count(".") >= 2}

    def folder(name: str) -> str:
        top = ".".join(name.split(".")[:2])
        return top if top in folders else name

    between = [Edge(folder(e.importer), folder(e.imported), e.line) for e in edges]
    return circles(e for e in between if e.importer != e.imported)


def inside(module: str, package: str) -> bool:
    """Whether ``module`` is ``package`` or one of its modules."""
    return f"{module}.".startswith(f"{package}.")


def against_layers(
    edges: Iterable[Edge],
    allowed: Mapping[str, set[str]],
    rooms: Mapping[str, tuple[str, ...]],
    verify_importers: str,
    shared: frozenset[str] = SHARED,
) -> list[Edge]:
    """The imports that go up or sideways: against ``allowed`` between packages, into
    ``verify`` from outside ``verify_importers``, or up the order of a package's ``rooms``;
    a ``shared`` module may be imported from anywhere, and may import only another one."""
    wrong = []
    for edge in edges:
        source, target = edge.importer.split("."), edge.imported.split(".")
        if edge.importer in shared or edge.imported in shared:
            bad = edge.importer in shared and edge.imported not in shared
        elif source[0] != target[0]:
            bad = target[0] not in allowed[source[0]] or (
                target[0] == "verify" and not f"{edge.importer}.".startswith(f"{verify_importers}.")
            )
        else:
            order = rooms.get(source[0], ())
            here, there = (parts[1] if len(parts) > 1 and parts[1] in order else None for parts in (source, target))
            bad = here is not None and there is not None and order.index(there) < order.index(here)
        if bad:
            wrong.append(edge)
    return wrong


@pytest.fixture(scope="module")
def package_imports() -> list[Edge]:
    return imports(REPO_ROOT, PACKAGES)


def test_the_reader_sees_the_package_imports(package_imports: list[Edge]) -> None:
    """Not vacuous: imports of each kind are read, at module level, under TYPE_CHECKING and
    inside functions."""
    found = {(e.importer, e.imported) for e in package_imports}
    assert ("agent.lifelong.job", "agent.lifelong.results") in found  # module level
    assert ("agent.lifelong.report", "agent.lifelong.results") in found  # under TYPE_CHECKING
    assert ("agent.lifelong.job", "curriculum.runs") in found  # inside a method
    assert len(found) > 500


def test_no_circle_between_modules(package_imports: list[Edge]) -> None:
    found = set(circles(package_imports))
    new = found - KNOWN_CIRCLES
    lines = [
        f"{sorted(circle)}: "
        + "; ".join(sorted({e.text() for e in package_imports if {e.importer, e.imported} <= circle}))
        for circle in new
    ]
    assert not new, "modules that import one another:\n" + "\n".join(lines)
    assert not KNOWN_CIRCLES - found, f"circles no longer there, to drop from KNOWN_CIRCLES: {KNOWN_CIRCLES - found}"


def test_no_import_against_the_layers(package_imports: list[Edge]) -> None:
    wrong = against_layers(package_imports, ALLOWED, ROOMS, VERIFY_IMPORTERS)
    assert not wrong, "imports against the layers:\n" + "\n".join(e.text() for e in wrong)


def test_no_circle_between_folders(package_imports: list[Edge]) -> None:
    found = folder_circles(package_imports)
    lines = [
        f"{sorted(circle)}: "
        + "; ".join(
            sorted(
                e.text()
                for e in package_imports
                if any(inside(e.importer, f) for f in circle)
                and any(inside(e.imported, f) for f in circle)
                and not any(inside(e.importer, f) and inside(e.imported, f) for f in circle)
            )
        )
        for circle in found
    ]
    assert not found, "folders that import one another:\n" + "\n".join(lines)


def test_lean_syntax_is_the_bottom_of_lean_env(package_imports: list[Edge]) -> None:
    """``lean_env.syntax`` imports only itself, the records and the errors; not vacuous: it
    imports itself and the records, and the tracer and the agent import it."""
    found = {(e.importer, e.imported) for e in package_imports}
    assert ("lean_env.syntax.reader", "lean_env.syntax.names") in found
    assert ("lean_env.syntax.lexer", "lean_env.records") in found
    assert ("lean_env.trace.source.extract", "lean_env.syntax.reader") in found
    assert ("agent.search.tree", "lean_env.syntax.lexer") in found
    wrong = [
        e
        for e in package_imports
        if inside(e.importer, SYNTAX) and not inside(e.imported, SYNTAX) and e.imported not in SYNTAX_IMPORTS
    ]
    assert not wrong, f"{SYNTAX} imports above it:\n" + "\n".join(e.text() for e in wrong)


def write_tree(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_circle_through_type_checking_and_a_relative_import_is_found(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
            "pkg/b.py": "def f():\n    from . import c\n",
            "pkg/c.py": "from .a import thing\nimport os\n",
            "pkg/d.py": "import pkg.a\n",
        },
    )
    edges = imports(tmp_path, ["pkg"])
    assert {(e.importer, e.imported, e.line) for e in edges} >= {
        ("pkg.a", "pkg.b", 3),
        ("pkg.b", "pkg.c", 2),
        ("pkg.c", "pkg.a", 1),
        ("pkg.d", "pkg.a", 1),
    }
    assert circles(edges) == [frozenset({"pkg.a", "pkg.b", "pkg.c"})]


def test_a_circle_between_folders_is_found_where_modules_make_none(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/top.py": "",
            "pkg/a/__init__.py": "",
            "pkg/a/x.py": "from pkg.b.y import thing\nimport pkg.top\n",
            "pkg/a/z.py": "",
            "pkg/b/__init__.py": "",
            "pkg/b/y.py": "",
            "pkg/b/deep/__init__.py": "",
            "pkg/b/deep/w.py": "from pkg.a import z\n",
            "pkg/c/__init__.py": "",
            "pkg/c/v.py": "import pkg.a.x\nimport pkg.top\n",
        },
    )
    edges = imports(tmp_path, ["pkg"])
    assert circles(edges) == []
    assert folder_circles(edges) == [frozenset({"pkg.a", "pkg.b"})]


@pytest.mark.parametrize(
    ("importer", "imported", "wrong"),
    [
        pytest.param("agent.cli.main", "retrieval.index", False, id="down-a-layer"),
        pytest.param("agent.search.tree", "lean_env.records", False, id="down-two-layers"),
        pytest.param("retrieval.index", "curriculum.store", True, id="sideways-between-siblings"),
        pytest.param("lean_env.records", "agent.cli.main", True, id="up"),
        pytest.param("agent.cli.main", "verify.errors", False, id="cli-imports-verify"),
        pytest.param("agent.proving.repositories", "verify.errors", True, id="verify-outside-the-cli"),
        pytest.param("verify.model.spec", "lean_env.errors", True, id="verify-stands-alone"),
        pytest.param("agent.search.tree", "agent.proving.repositories", True, id="up-the-rooms"),
        pytest.param("agent.proving.repositories", "agent.search.tree", False, id="down-the-rooms"),
        pytest.param("verify.smt.encoding", "verify.errors", False, id="outside-any-room"),
        pytest.param("verify.smt.portfolio", "lean_env.process", False, id="verify-imports-a-shared-module"),
        pytest.param("lean_env.process", "lean_env.closing", False, id="shared-imports-shared"),
        pytest.param("lean_env.process", "lean_env.errors", True, id="shared-imports-the-rest"),
    ],
)
def test_the_layer_rules(importer: str, imported: str, wrong: bool) -> None:
    edge = Edge(importer, imported, 1)
    assert against_layers([edge], ALLOWED, ROOMS, VERIFY_IMPORTERS) == ([edge] if wrong else [])
