"""Premise code as LeanDojo's corpus has it, from source extraction and from a premise's code
alone (Benchmark 4 data): comments removed LeanDojo's way, a theorem cut before its ``:=``."""

from __future__ import annotations

import pytest

from lean_env.benchmark.dojo_shapes import premise_from_json
from lean_env.records import DeclKind
from lean_env.syntax.corpus_code import premise_code
from lean_env.trace.source import extract_file


@pytest.mark.parametrize(
    ("source", "codes"),
    [
        pytest.param(
            "theorem t (n : Nat) : n = n := rfl", {"t": "theorem t (n : Nat) : n = n"}, id="theorem-statement-only"
        ),
        pytest.param(
            "@[simp]\ntheorem t\n    (n : Nat) :\n    n + 0 = n := by\n  simp",
            {"t": "@[simp]\ntheorem t\n    (n : Nat) :\n    n + 0 = n"},
            id="theorem-over-lines-with-a-tactic-proof",
        ),
        pytest.param(
            "theorem t : ∀ n : Nat, n = n\n  | 0 => rfl\n  | _ => rfl",
            {"t": "theorem t : ∀ n : Nat, n = n"},
            id="theorem-by-equations",
        ),
        pytest.param("lemma l : True := trivial", {"l": "lemma l : True := trivial"}, id="lemma-keeps-its-proof"),
        pytest.param("def d : Nat := 1", {"d": "def d : Nat := 1"}, id="def-keeps-its-body"),
        pytest.param("/-- doc -/\ntheorem t : True := trivial", {"t": "theorem t : True"}, id="doc-comment"),
        pytest.param(
            "theorem t : -- why\n    -- and more\n    True := trivial",
            {"t": "theorem t : True"},
            id="line-comments-after-a-token-go-with-the-indentation",
        ),
        pytest.param(
            "def d := 1 /- a -/ -- b\n  + 2",
            {"d": "def d := 1    + 2"},
            id="after-a-block-comment-a-line-comment-takes-only-its-newline",
        ),
        pytest.param("def d := 1 /- a /- b -/ c -/ + 2", {"d": "def d := 1  + 2"}, id="nested-block-comment-whole"),
        pytest.param('def s := ("a -- b").length', {"s": 'def s := ("a -- b").length'}, id="dashes-in-a-string-stay"),
        pytest.param(
            "structure C where\n  /-- the step -/\n  step : Nat -- per tick\n  size : Nat",
            dict.fromkeys(["C", "C.mk", "C.step", "C.size"], "structure C where\n  \n  step : Nat size : Nat"),
            id="fields-carry-their-structures-code",
        ),
        pytest.param(
            "inductive T where\n  | leaf -- a leaf\n  | node (l r : T)",
            dict.fromkeys(["T", "T.leaf", "T.node"], "inductive T where\n  | leaf | node (l r : T)"),
            id="constructors-carry-their-types-code",
        ),
    ],
)
def test_source_extraction_gives_corpus_code(source: str, codes: dict[str, str]) -> None:
    assert {p.full_name: p.code for p in extract_file(source, path="A.lean").premises} == codes


@pytest.mark.parametrize(
    ("code", "kind", "expected"),
    [
        pytest.param(
            "theorem foo (n : Nat) : n = n", DeclKind.THEOREM, "theorem foo (n : Nat) : n = n", id="leandojo-theorem"
        ),
        pytest.param(
            "theorem foo (n : Nat := 0) : n = n",
            DeclKind.THEOREM,
            "theorem foo (n : Nat := 0) : n = n",
            id="leandojo-theorem-with-a-default-argument",
        ),
        pytest.param("lemma l : True := by simp", DeclKind.LEMMA, "lemma l : True := by simp", id="leandojo-lemma"),
        pytest.param("def f := 1", DeclKind.DEF, "def f := 1", id="leandojo-def"),
        pytest.param(
            "/-- d -/\n@[simp] theorem foo : True := by\n  trivial -- done",
            DeclKind.THEOREM,
            "@[simp] theorem foo : True",
            id="whole-source-of-a-theorem",
        ),
        pytest.param("def f := 1 -- one", DeclKind.DEF, "def f := 1", id="whole-source-of-a-def"),
    ],
)
def test_a_premises_code_alone_becomes_corpus_code(code: str, kind: DeclKind, expected: str) -> None:
    assert premise_code(code, kind) == expected


def test_benchmark_premises_are_read_in_corpus_form() -> None:
    entry = {"full_name": "A.t", "code": "theorem t : T := by simp -- x", "start": [1, 1], "end": [1, 30]}
    premise = premise_from_json({**entry, "kind": "commanddeclaration"}, "A.lean")
    assert premise is not None and (premise.kind, premise.code) == (DeclKind.THEOREM, "theorem t : T")
