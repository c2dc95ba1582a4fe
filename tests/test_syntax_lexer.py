"""The lexical layer of Lean syntax: masking comments and literals, names, positions."""

from __future__ import annotations

import pytest

from lean_env.records import Position
from lean_env.syntax.lexer import IDENT_RE, mask, normalize_name, split_name


@pytest.mark.parametrize(
    ("text", "hidden", "kept"),
    [
        pytest.param("a /- x /- y -/ z -/ b", ["x", "y", "z"], ["a", "b"], id="nested-block-comment"),
        pytest.param("a -- sorry\nb", ["sorry"], ["a", "b"], id="line-comment"),
        pytest.param('a "x -- y" b', ["x", "y", "--"], ["a", "b"], id="string-hides-dashes"),
        pytest.param('a "q\\"sorry" b', ["sorry"], ["a", "b"], id="escaped-quote"),
        pytest.param("a '\"' sorry", ['"'], ["a", "sorry"], id="char-literal-quote"),
        pytest.param("h' = h'' -- c", ["c"], ["h'", "h''"], id="primes-not-char-literals"),
        pytest.param('a r#"x "y" z"# b', ["x", "y", "z"], ["a", "b"], id="raw-string"),
        pytest.param("a /-- doc sorry -/ b", ["doc", "sorry"], ["a", "b"], id="doc-comment"),
        pytest.param('a "multi\nline sorry" b', ["multi", "sorry"], ["a", "b"], id="multiline-string"),
        pytest.param("x /- -- not a line comment -/ y", ["not"], ["x", "y"], id="dashes-in-block"),
    ],
)
def test_mask_hides_comments_and_literals(text: str, hidden: list[str], kept: list[str]) -> None:
    masked = mask(text)
    assert len(masked.masked) == len(text)
    assert [i for i, c in enumerate(masked.masked) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]
    for word in hidden:
        assert word not in masked.masked
    for word in kept:
        assert word in masked.masked
    assert masked.problems == ()


def test_doc_comment_spans_are_recorded() -> None:
    text = "/-- first -/\ndef a := 1\n/-! module -/\n/- plain -/"
    masked = mask(text)
    assert [text[s:e] for s, e in masked.doc_spans] == ["/-- first -/", "/-! module -/"]


@pytest.mark.parametrize(
    ("text", "reason", "offset"),
    [
        pytest.param("a /- open /- inner -/ b\nc", "unterminated block comment", 2, id="comment"),
        pytest.param('a "open\ntheorem t : True := trivial', "unterminated string literal", 2, id="string"),
        pytest.param('a r#"open', "unterminated raw string literal", 2, id="raw-string"),
    ],
)
def test_unterminated_literals_are_problems_and_recover(text: str, reason: str, offset: int) -> None:
    masked = mask(text)
    assert [(p.offset, p.reason) for p in masked.problems] == [(offset, reason)]
    # Recovery ends the literal at its own line: what follows is still visible.
    assert masked.masked.splitlines()[1:] == text.splitlines()[1:]


def test_positions_are_one_based_codepoint_columns() -> None:
    text = "∀ α,\n  «x y» := sorry"
    masked = mask(text)
    assert masked.position(0) == Position(1, 1)
    assert masked.position(text.index("α")) == Position(1, 3)
    assert masked.position(text.index("sorry")) == Position(2, 12)
    assert masked.line_of(text.index("sorry")) == 2


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        pytest.param("Foo.bar", "Foo.bar", id="plain"),
        pytest.param("«Foo».bar", "Foo.bar", id="needless-guillemets"),
        pytest.param("A.«my thm»", "A.«my thm»", id="needed-guillemets"),
        pytest.param("«end»", "«end»", id="keyword-part"),
        pytest.param("«a.b».c", "«a.b».c", id="dot-inside"),
    ],
)
def test_normalize_name(written: str, canonical: str) -> None:
    assert normalize_name(written) == canonical


def test_split_name_keeps_guillemet_dots() -> None:
    assert split_name("A.«b.c».d") == ["A", "«b.c»", "d"]


@pytest.mark.parametrize(
    ("text", "idents"),
    [
        pytest.param("Nat.add_comm a b", ["Nat.add_comm", "a", "b"], id="dotted"),
        pytest.param("h.1 (x).foo .inl", ["h", "x"], id="projections-and-dot-notation"),
        pytest.param("fun x₁ => h' x₁", ["fun", "x₁", "h'", "x₁"], id="subscripts-primes"),
        pytest.param("λ x => ℕ", ["x", "ℕ"], id="lambda-is-a-token"),
        pytest.param("«my thm».mp", ["«my thm».mp"], id="guillemets"),
        pytest.param("simp [foo!, bar?]", ["simp", "foo!", "bar?"], id="bang-question"),
    ],
)
def test_identifier_regex(text: str, idents: list[str]) -> None:
    assert IDENT_RE.findall(text) == idents
