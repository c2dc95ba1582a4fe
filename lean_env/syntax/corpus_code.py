"""A premise's code as LeanDojo's corpus holds it: what ReProver's retriever was trained to
embed (LeanDojo's ``TracedFile.get_premise_definitions`` and ``get_code_without_comments``).

* A ``theorem``'s code is its statement: the declaration up to its ``:=`` (or equations'
  first ``|``, or a ``where``), without it. Every other declaration's code is all of it,
  Mathlib's ``lemma`` included: LeanDojo cuts only the nodes of Lean's own ``theorem``
  command, and ``lemma`` is Mathlib's syntax.
* Comments are removed, as LeanDojo removes them: a doc comment (``/-- -/``) exactly its
  span; a ``--`` comment that follows a token after nothing but whitespace, with everything
  up to the next token (LeanDojo cuts it out of the token's trailing text: the following
  comments and the next line's indentation go too); any other ``--`` comment up to and
  including its newline, a ``/- -/`` comment exactly its span (LeanDojo's regular
  expressions). Then the text is stripped.

Two differences, where LeanDojo's regular expressions go wrong: a nested block comment
goes whole (LeanDojo's stops at the first ``-/``), and ``--`` inside a string stays a string.
"""

from __future__ import annotations

from bisect import bisect_left
from operator import itemgetter

from lean_env.records import DeclKind
from lean_env.syntax.lexer import MaskedText, mask, skip_space
from lean_env.syntax.reader import read_file

_START = itemgetter(0)


def corpus_code(source: MaskedText, start: int, stop: int) -> str:
    """``source.text[start:stop]`` without its comments (LeanDojo's way, see the module), stripped."""
    text, comments = source.text, source.comments
    i = bisect_left(comments, start, key=_START)
    if i == len(comments) or comments[i][0] >= stop:  # most declarations have no comment
        return text[start:stop].strip()
    pieces = []
    done = start
    while i < len(comments) and comments[i][0] < stop:
        begin, end = comments[i]
        if end > stop:  # runs out of the region: LeanDojo removes only comments inside it
            break
        i += 1
        if text.startswith("--", begin):
            if _follows_a_token(text, comments, i - 1, start):
                end, i = _next_token(text, comments, i, end, stop)
            elif end < stop:
                end += 1  # the newline goes with it
        pieces.append(text[done:begin])
        done = end
    pieces.append(text[done:stop])
    return "".join(pieces).strip()


def _is_doc(text: str, begin: int, end: int) -> bool:
    # The lexer's rule: `/--` or `/-!` opening more than an empty `/--/`.
    return text.startswith(("/--", "/-!"), begin) and end - begin > 4


def _follows_a_token(text: str, comments: tuple[tuple[int, int], ...], i: int, start: int) -> bool:
    """Whether comment ``i`` comes after a token with only whitespace between (the first
    thing of that token's trailing text); a doc comment is a token of its own."""
    begin = comments[i][0]
    before = start + len(text[start:begin].rstrip())
    if i == 0 or comments[i - 1][1] != before or before == start:
        return True
    previous = comments[i - 1]
    return _is_doc(text, *previous)


def _next_token(text: str, comments: tuple[tuple[int, int], ...], i: int, pos: int, stop: int) -> tuple[int, int]:
    """Where the next token after offset ``pos`` starts (past whitespace and comments that
    are not doc comments; at most ``stop``), and the index of the first comment after it."""
    while True:
        pos = skip_space(text, pos, stop)
        if i < len(comments) and comments[i][0] == pos and comments[i][1] <= stop and not _is_doc(text, *comments[i]):
            pos = comments[i][1]
            i += 1
            continue
        return pos, i


def premise_code(code: str, kind: DeclKind) -> str:
    """The corpus code of a premise given only its ``code`` (as a LeanDojo Benchmark 4
    corpus holds it, or the whole source text of the declaration): comments removed and a
    theorem cut before its ``:=``, as :func:`corpus_code` does for a file. LeanDojo's own
    corpus code (no comments; a theorem's statement) comes back as it was."""
    cut = kind is DeclKind.THEOREM and ":=" in code
    if "--" not in code and "/-" not in code and not cut:
        return code.strip()
    source = mask(code)
    stop = len(code)
    if cut:
        decls = read_file(source).decls
        if decls:
            stop = decls[0].header_end
    return corpus_code(source, 0, stop)
