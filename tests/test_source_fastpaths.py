"""Source extraction's shortcuts give the answers of the general rules: a header on the
file's first line, `import` only at a line start, `<;>` without a `;` split, and plain
names declared only in namespaces the scope cannot reach."""

from __future__ import annotations

import pytest

from lean_env.source import extract_file


@pytest.mark.parametrize(
    ("source", "names"),
    [
        pytest.param("theorem a : True := trivial", ["a"], id="header-at-offset-0"),
        pytest.param("@[simp] theorem a : True := trivial", ["a"], id="attribute-at-offset-0"),
        pytest.param("\ntheorem a : True := trivial", ["a"], id="header-after-newline"),
        pytest.param(
            "theorem a : True := trivial\ntheorem b : True := trivial",
            ["a", "b"],
            id="first-and-next",
        ),
    ],
)
def test_headers_from_the_first_line_on(source: str, names: list[str]) -> None:
    assert [p.full_name for p in extract_file(source, path="T.lean").premises] == names


@pytest.mark.parametrize(
    ("source", "imports"),
    [
        pytest.param("import A.B\nimport C\n", ("A.B", "C"), id="line-starts"),
        pytest.param("import A B\n", ("A", "B"), id="several-on-a-line"),
        pytest.param(
            "def reimport := 1\ndef f := x import D\n", (), id="mid-line-is-not-an-import"
        ),
        pytest.param("def f := 1\n  import D\n", (), id="indented-is-not-an-import"),
        pytest.param("import «A».C\n", ("A.C",), id="guillemets-normalized"),
    ],
)
def test_imports_only_at_line_starts(source: str, imports: tuple[str, ...]) -> None:
    assert extract_file(source, path="T.lean").file.imports == imports


@pytest.mark.parametrize(
    ("proof", "steps"),
    [
        pytest.param(
            "by\n  cases h <;> simp\n  rfl", ["cases h <;> simp", "rfl"], id="combinator-only"
        ),
        pytest.param(
            "by\n  cases h <;> simp; rfl",
            ["cases h <;> simp", "rfl"],
            id="combinator-and-semicolon",
        ),
        pytest.param("by\n  simp;rfl\n  omega", ["simp", "rfl", "omega"], id="semicolon-no-space"),
    ],
)
def test_semicolons_split_only_outside_combinators(proof: str, steps: list[str]) -> None:
    (theorem,) = extract_file(f"theorem t : True := {proof}", path="T.lean").theorems
    assert [t.tactic for t in theorem.tactics] == steps


def test_plain_names_resolve_only_where_their_namespace_is_reachable() -> None:
    source = (
        "namespace A\ninductive C | a | b\ndef x := 1\nend A\n"
        "namespace B\ntheorem t1 : True := by exact a\nend B\n"  # `a` is `A.C.a`: unreachable
        "namespace A\ntheorem t2 : True := by exact x\nend A\n"  # `x` is `A.x` inside `A`
        "open A.C in\ntheorem t3 : True := by exact a\n"  # opened: `A.C.a`
        "theorem t4 : True := by exact A.x.foo\n"  # a field access on a constant
    )
    theorems = {t.full_name: t.premises for t in extract_file(source, path="T.lean").theorems}
    assert theorems == {"B.t1": (), "A.t2": ("A.x",), "t3": ("A.C.a",), "t4": ("A.x",)}
