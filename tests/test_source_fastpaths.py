"""Source extraction's shortcuts give the answers of the general rules: a header on the
file's first line, `import` only at a line start, `<;>` without a `;` split, plain names
declared only in namespaces the scope cannot reach, block comments matched whole unless
nested, raw strings found at their quote, doc comments attached by a lookup, steps split at
`;` only where a `;` is, modifiers read only when they may say `private` or `protected`,
the identifier scan and the bracket class written for speed, multi-line comments blanked
line by line, commands that change nothing skipped, and names looked up through the index
of their last parts."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from lean_env.records import Position, RepoSpec
from lean_env.syntax.lexer import IDENT_RE, mask
from lean_env.syntax.reader import _NOT_BRACKET
from lean_env.trace.source import extract_file, extract_repo


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
        pytest.param("def reimport := 1\ndef f := x import D\n", (), id="mid-line-is-not-an-import"),
        pytest.param("def f := 1\n  import D\n", (), id="indented-is-not-an-import"),
        pytest.param("import «A».C\n", ("A.C",), id="guillemets-normalized"),
        pytest.param("\ufeffimport A\nimport B\n", ("A", "B"), id="after-a-byte-order-mark"),
    ],
)
def test_imports_only_at_line_starts(source: str, imports: tuple[str, ...]) -> None:
    assert extract_file(source, path="T.lean").file.imports == imports


@pytest.mark.parametrize(
    ("proof", "steps"),
    [
        pytest.param("by\n  cases h <;> simp\n  rfl", ["cases h <;> simp", "rfl"], id="combinator-only"),
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


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        pytest.param("a /--/ b", "a      b", id="shortest-comment"),
        pytest.param("a /- x - / y -/ b", "a               b", id="lone-dash-and-slash"),
        pytest.param("a /- x -/-/ b", "a        -/ b", id="first-close-ends-it"),
        pytest.param("a /- x -/ b /- y -/ c", "a         b         c", id="two-comments"),
        pytest.param("a /-/ x -/ b", "a          b", id="slash-right-after-open"),
        pytest.param("a /--- x ---/ b", "a             b", id="dashes-inside"),
        pytest.param("a /- x /- y -/ z -/ b", "a                   b", id="nested-counted"),
    ],
)
def test_block_comments_matched_whole_or_counted(text: str, masked: str) -> None:
    assert mask(text).masked == masked


@pytest.mark.parametrize(
    ("text", "docs"),
    [
        pytest.param("/-- a - b -/\ndef x := 1", [(0, 12)], id="flat-doc"),
        pytest.param("a /-- doc /- nested -/ still -/ b", [(2, 31)], id="nested-doc"),
    ],
)
def test_doc_spans_of_flat_and_nested_comments(text: str, docs: list[tuple[int, int]]) -> None:
    assert list(mask(text).doc_spans) == docs


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        pytest.param('a r"x" b', "a      b", id="raw"),
        pytest.param('a r##"x "# y"## b', "a               b", id="raw-with-hashes"),
        pytest.param('for"x" b', "for    b", id="r-ending-a-name"),
        pytest.param('a #"x" b', "a #    b", id="hashes-without-r"),
        pytest.param("'r'\"x\" b", "       b", id="r-inside-a-char-literal"),
    ],
)
def test_raw_strings_found_at_their_quote(text: str, masked: str) -> None:
    assert mask(text).masked == masked


def test_unterminated_raw_string_starts_at_its_r() -> None:
    masked = mask('a r#"x" b\nc')
    assert [(p.offset, p.reason) for p in masked.problems] == [(2, "unterminated raw string literal")]
    assert masked.masked == "a        \nc"


def test_unterminated_nested_comment_is_still_a_problem() -> None:
    masked = mask("a /- open /- inner -/ \nb")
    assert [(p.offset, p.reason) for p in masked.problems] == [(2, "unterminated block comment")]
    assert masked.masked.endswith("\nb")


@pytest.mark.parametrize(
    ("source", "start", "code"),
    [
        pytest.param(
            "/-- one -/\n/-- two -/\ntheorem t : True := trivial",
            Position(2, 1),
            "/-- two -/\ntheorem",
            id="last-of-several",
        ),
        pytest.param(
            "/-- doc -/\n-- a note\ntheorem t : True := trivial",
            Position(1, 1),
            "/-- doc -/\n-- a note\ntheorem",
            id="across-a-comment",
        ),
        pytest.param("/-- doc -/ theorem t : True := trivial", Position(1, 1), "/-- doc -/ theorem", id="same-line"),
        pytest.param(
            "open Nat in\n/-- doc -/\n@[simp] theorem t : True := trivial",
            Position(2, 1),
            "/-- doc -/\n@[simp] theorem",
            id="after-open-in",
        ),
        pytest.param(
            "/-- doc -/\ndef x := 1\ntheorem t : True := trivial",
            Position(3, 1),
            "theorem",
            id="not-another-declarations-doc",
        ),
    ],
)
def test_doc_comments_attach_to_the_next_command(source: str, start: Position, code: str) -> None:
    premise = extract_file(source, path="T.lean").premises[-1]
    assert premise.full_name == "t"
    assert premise.start == start
    lines = source.split("\n")
    assert "\n".join([lines[start.line - 1][start.column - 1 :], *lines[start.line :]]).startswith(code)
    # The premise's code is the corpus's: the doc comment and the proof are not in it.
    assert premise.code in ("theorem t : True", "@[simp] theorem t : True")


@pytest.mark.parametrize(
    ("proof", "steps"),
    [
        pytest.param("by\r\n  simp\r\n  rfl", ["simp", "rfl"], id="crlf"),
        pytest.param("by\n\tsimp\n\trfl", ["simp", "rfl"], id="tabs"),
        pytest.param("by\n  simp\n    \n  rfl  -- done", ["simp", "rfl"], id="blank-line-and-trailing-comment"),
        pytest.param("by\n  simp\n  )\n  rfl", ["simp\n  )", "rfl"], id="closer-line-continues"),
        pytest.param("by simp\n     rfl\n  omega", ["simp", "rfl", "omega"], id="first-step-sets-column"),
        pytest.param(
            "by\n  constructor\n  · simp; rfl\n  · simp only [a, b]; rfl",
            ["constructor", "· simp; rfl", "· simp only [a, b]; rfl"],
            id="bullets-in-a-block-with-semicolons",
        ),
        pytest.param(
            "by\n  simp [f (x; y)]; rfl\n  omega",
            ["simp [f (x; y)]", "rfl", "omega"],
            id="semicolon-in-brackets-does-not-split",
        ),
    ],
)
def test_step_layout_and_semicolon_edge_cases(proof: str, steps: list[str]) -> None:
    (theorem,) = extract_file(f"theorem t : True := {proof}", path="T.lean").theorems
    assert [t.tactic for t in theorem.tactics] == steps


@pytest.mark.parametrize(
    ("modifiers", "premises"),
    [
        pytest.param("private ", (), id="private"),
        pytest.param("@[simp] private ", (), id="attribute-then-private"),
        pytest.param("@[aesop_private] ", ("P.a",), id="private-inside-an-attribute-name"),
        pytest.param("@[simp] ", ("P.a",), id="attribute-only"),
    ],
)
def test_only_a_private_modifier_hides_a_declaration(tmp_path: Path, modifiers: str, premises: tuple[str, ...]) -> None:
    (tmp_path / "P").mkdir()
    (tmp_path / "P" / "A.lean").write_text(f"{modifiers}def P.a : Nat := 1\n", encoding="utf-8")
    (tmp_path / "P" / "B.lean").write_text("import P.A\ntheorem P.b : P.a = 1 := by simp [P.a]\n", encoding="utf-8")
    trace = extract_repo(tmp_path, spec=RepoSpec(str(tmp_path)), commit="c", lean_version=None)
    (theorem,) = trace.theorems
    assert theorem.premises == premises


# The identifier scan as the rules read, one alternative per kind of first character; the
# fast `IDENT_RE` must find exactly the same identifiers.
_REST = r"[\w'!?\u2080-\u209c\u1d62-\u1d6a\u2c7c\u2100-\u214f]*"
_PART = rf"(?:«[^»\n]*»|(?:[^\W\dλΠΣ]|[\u2100-\u214f]){_REST})"
_NOT_AFTER = r"(?<![\w'!?.»\u2080-\u209c].)"
_PLAIN_IDENT_RE = re.compile(
    rf"(?:«{_NOT_AFTER}[^»\n]*»|[^\W\dλΠΣ]{_NOT_AFTER}{_REST}|[\u2100-\u214f]{_NOT_AFTER}{_REST})"
    rf"(?:\.{_PART})*"
)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("simp [Nat.add_comm, h.symm] at h' ⊢", id="ascii-tactic"),
        pytest.param("x₁' ℕ.succ αβ Éa ∀ x ∈ s, f x", id="unicode-names"),
        pytest.param("λx Πy Σz 3abc a3 x.1 _x __", id="tokens-and-digits"),
        pytest.param("«a b».c h.«b» «» «x y d.«z» «unclosed\n» x", id="guillemets"),
        pytest.param("a..b .foo (f x).bar ·x h!.c? a«b» 1«x»", id="dots-and-neighbours"),
    ],
)
def test_identifier_scan_finds_what_the_plain_alternation_finds(text: str) -> None:
    assert IDENT_RE.findall(text) == _PLAIN_IDENT_RE.findall(text)
    for start in range(len(text) + 1):  # a scan may start anywhere (proofs are slices)
        assert IDENT_RE.findall(text, start) == _PLAIN_IDENT_RE.findall(text, start)


def test_identifier_scan_agrees_on_random_text() -> None:
    rng = random.Random(7)
    alphabet = list("ab_Z19.«» \n'!?λΠΣℕ₁ᵢαÉ-(")
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        start, end = sorted((rng.randint(0, len(text)), rng.randint(0, len(text))))
        assert IDENT_RE.findall(text, start, end) == _PLAIN_IDENT_RE.findall(text, start, end), text


def test_bracket_free_class_is_the_complement_of_the_brackets() -> None:
    written = re.compile(_NOT_BRACKET)
    negated = re.compile(r"[^()\[\]{}⟨⟩⦃⦄]")
    # Every code point up to the brackets' blocks and beyond them, and the top of the range.
    for code in [*range(0x3000), *range(0x1D400, 0x1D800), *range(0x10FF00, 0x110000)]:
        char = chr(code)
        assert (written.match(char) is None) == (negated.match(char) is None), hex(code)


def test_multi_line_comments_are_blanked_line_by_line() -> None:
    text = "a /- one\r\n  two\n\n three -/ b\n/-- doc\nmore -/\nc"
    expected = (
        "a "
        + " " * len("/- one\r")
        + "\n"
        + " " * len("  two")
        + "\n\n"
        + " " * len(" three -/")
        + " b\n"
        + " " * len("/-- doc")
        + "\n"
        + " " * len("more -/")
        + "\nc"
    )
    assert mask(text).masked == expected


@pytest.mark.parametrize(
    ("between", "names"),
    [
        pytest.param("#align foo bar\n", ["A.t"], id="align"),
        pytest.param("variable (x : Nat)\nuniverse u\n", ["A.t"], id="variable-and-universe"),
        pytest.param("attribute [simp] foo\nset_option maxHeartbeats 400\n", ["A.t"], id="attribute"),
        pytest.param("end A\n#check 1\n", ["t"], id="after-an-end"),
    ],
)
def test_commands_that_change_nothing_leave_scopes_alone(between: str, names: list[str]) -> None:
    source = f"namespace A\n{between}theorem t : True := trivial\n"
    assert [p.full_name for p in extract_file(source, path="T.lean").premises] == names


_SCOPES = (
    "namespace N\ndef x := 1\nnamespace B\ndef c := 1\nend B\nend N\n"
    "def x := 0\nnamespace A\ndef x := 2\nnamespace B\ndef c := 2\nend B\n"
    "protected def p := 3\nend A\n"
)


@pytest.mark.parametrize(
    ("use", "premises"),
    [
        pytest.param("namespace A\ntheorem t : True := by exact x\nend A", ("A.x",), id="namespace-first"),
        pytest.param("open N in\ntheorem t : True := by exact x", ("x",), id="root-before-opens"),
        pytest.param("open N in\ntheorem t : True := by exact B.c", ("N.B.c",), id="dotted-through-open"),
        pytest.param(
            "namespace A\nopen N in\ntheorem t : True := by exact B.c\nend A",
            ("A.B.c",),
            id="dotted-namespace-before-open",
        ),
        pytest.param("namespace A\ntheorem t : True := by exact p\nend A", (), id="protected-alone"),
        pytest.param("open A in\ntheorem t : True := by exact A.p.foo", ("A.p",), id="field-of-protected"),
        pytest.param("open N.B (c) in\ntheorem t : True := by exact c", ("N.B.c",), id="alias"),
        pytest.param("namespace A\ntheorem t : True := by exact _root_.x\nend A", ("x",), id="root-prefix"),
    ],
)
def test_lookup_order_through_the_last_part_index(use: str, premises: tuple[str, ...]) -> None:
    (theorem,) = extract_file(_SCOPES + use, path="T.lean").theorems
    assert theorem.premises == premises
