"""Parsing ``lean FILE`` output into diagnostics, in Lean's real command-line format."""

from __future__ import annotations

import pytest

from lean_env.lean.diagnostics import Severity, parse_diagnostics
from lean_env.records import Position

# As `lean` prints it (Lean/Message.lean, mkErrorStringWithPos): 1-based line, 0-based column.
UNSOLVED = """\
Demo/Basic.lean:3:40: error: unsolved goals
case h
p : Prop
h : p
⊢ p

case h'
⊢ True
Demo/Basic.lean:6:8: warning: declaration uses 'sorry'
"""

# With -DprintMessageEndPos=true, as in Lean's own test suite (tests/lean/*.expected.out).
WITH_END = """\
1007.lean:8:9-8:17: warning: declaration uses 'sorry'
1007.lean:56:64-56:78: error: failed to synthesize
  IsLin fun x => sum fun i => norm x
use `set_option diagnostics true` to get diagnostic information
"""


def test_unsolved_goals_keep_their_multi_line_body():
    first, second = parse_diagnostics(UNSOLVED).diagnostics
    assert first.severity is Severity.ERROR and first.start == Position(3, 41)
    assert first.unsolved_goals == "case h\np : Prop\nh : p\n⊢ p\n\ncase h'\n⊢ True"
    assert first.path == "Demo/Basic.lean" and not first.is_sorry_warning
    assert second.is_sorry_warning and second.start == Position(6, 9) and second.unsolved_goals is None


def test_end_positions_and_continuation_lines():
    warning, error = parse_diagnostics(WITH_END).diagnostics
    assert warning.start == Position(8, 10) and warning.end == Position(8, 18)
    assert error.message == (
        "failed to synthesize\n  IsLin fun x => sum fun i => norm x\n"
        "use `set_option diagnostics true` to get diagnostic information"
    )
    assert error.end == Position(56, 79)


@pytest.mark.parametrize(
    ("line", "severity", "name", "message", "sorry"),
    [
        pytest.param("f.lean:1:0: error: unknown tactic", Severity.ERROR, None, "unknown tactic", False, id="error"),
        pytest.param(
            "f.lean:2:4: error(lean.unknownIdentifier): Unknown identifier `x`",
            Severity.ERROR,
            "lean.unknownIdentifier",
            "Unknown identifier `x`",
            False,
            id="named-error",
        ),
        pytest.param(
            "f.lean:1:4: warning: declaration uses `sorry`",
            Severity.WARNING,
            None,
            "declaration uses `sorry`",
            True,
            id="sorry-backquotes",
        ),
        pytest.param(
            "f.lean:1:4: warning: declaration uses 'sorry'",
            Severity.WARNING,
            None,
            "declaration uses 'sorry'",
            True,
            id="sorry-quotes",
        ),
        pytest.param(
            "f.lean:1:0: warning: unused variable `h`",
            Severity.WARNING,
            None,
            "unused variable `h`",
            False,
            id="linter",
        ),
        pytest.param("f.lean:1:0: info: 2", Severity.INFO, None, "2", False, id="info"),
        pytest.param("f.lean:1:0: information: 2", Severity.INFO, None, "2", False, id="information"),
        pytest.param("f.lean:3:2: error:", Severity.ERROR, None, "", False, id="empty-message"),
    ],
)
def test_header_variants(line, severity, name, message, sorry):
    (d,) = parse_diagnostics(line + "\n").diagnostics
    assert (d.severity, d.name, d.message, d.is_sorry_warning) == (severity, name, message, sorry)


def test_text_before_the_first_header_is_preamble_not_a_diagnostic():
    parsed = parse_diagnostics("2\nhello\nf.lean:4:0: error: boom\n")
    assert parsed.preamble == "2\nhello"
    assert [d.message for d in parsed.diagnostics] == ["boom"]
    assert parsed.errors == parsed.diagnostics


def test_path_filter_keeps_header_lookalikes_inside_a_message():
    text = "f.lean:1:0: error: type mismatch\ng.lean:2:0: error: quoted\nf.lean:5:0: warning: w\n"
    assert len(parse_diagnostics(text).diagnostics) == 3
    first, second = parse_diagnostics(text, path="f.lean").diagnostics
    assert first.message == "type mismatch\ng.lean:2:0: error: quoted"
    assert second.severity is Severity.WARNING


def test_paths_with_colons_and_no_output():
    (d,) = parse_diagnostics("/tmp/a:b/F.lean:10:3: error: x\n").diagnostics
    assert d.path == "/tmp/a:b/F.lean" and d.start == Position(10, 4)
    assert parse_diagnostics("").diagnostics == ()


def test_render_is_leans_format():
    (d,) = parse_diagnostics("f.lean:2:4: error: unknown tactic\n").diagnostics
    assert d.render() == "f.lean:2:4: error: unknown tactic"
