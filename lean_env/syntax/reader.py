"""Reading the commands of one Lean file: declarations, scopes, imports, problems.

A command starts on its own line: optional doc comment, attributes (``@[simp]``) and
modifiers (``private``, ``protected``, ``noncomputable``, ``partial``, ``unsafe``,
``nonrec``, ``scoped``, ``local``), then a command keyword. Declaration and scope keywords
(``theorem``, ``def``, ``namespace``, ``end``, ...) may be indented (``mutual`` blocks);
keywords that also occur inside proofs (``open``, ``set_option``, ``attribute``, ``#eval``,
``macro``, ...) count only at column 1. A command runs until the next one starts; its end
is its last non-blank character, so trailing comments belong to nobody.

Every declaration yields a :class:`Decl` carrying offsets into the file and the
:class:`~lean_env.syntax.names.Scope` its body is resolved in; turning offsets into records
is :mod:`lean_env.trace.source.extract`'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from lean_env.records import DeclKind
from lean_env.syntax.lexer import (
    BOM,
    IDENT,
    IDENT_RE,
    MaskedText,
    normalize_name,
    rstrip_end,
    skip_space,
    split_name,
)
from lean_env.syntax.names import Scope

_MODIFIERS = r"(?:private|protected|noncomputable|partial|unsafe|nonrec|scoped(?:\[[^\]\n]*\])?|local)"
# What may precede a declaration's `private` (a declaration's visibility is its first
# modifier): its doc comment and one attribute list. A declaration's code begins so.
DOC_AND_ATTRIBUTES = r"\s*(?:/--.*?-/\s*)?(?:@\[[^\]]*\]\s*)?"
# Everything before a declaration's keyword (`theorem`, `def`, ...); with re.DOTALL.
DECLARATION_PREFIX = DOC_AND_ATTRIBUTES + rf"(?:{_MODIFIERS}\s+)*"
_ATTRIBUTE = r"@\[(?:[^\[\]]|\[[^\[\]]*\])*\]"
_DECL_KEYWORDS = {
    "theorem": DeclKind.THEOREM,
    "lemma": DeclKind.LEMMA,
    "def": DeclKind.DEF,
    "abbrev": DeclKind.ABBREV,
    "instance": DeclKind.INSTANCE,
    "structure": DeclKind.STRUCTURE,
    "inductive": DeclKind.INDUCTIVE,
    "class": DeclKind.CLASS,
    "axiom": DeclKind.AXIOM,
    "opaque": DeclKind.OPAQUE,
    "example": DeclKind.EXAMPLE,
}
_SCOPE_KEYWORDS = ("namespace", "section", "end", "mutual", "variable", "universe")
# Also tactic or term syntax (`open Foo in`, `set_option ... in`): commands only at column 1.
_COLUMN1_KEYWORDS = (
    "open set_option attribute export macro_rules macro syntax elab_rules elab notation infixl "
    "infixr infix prefix postfix initialize builtin_initialize run_cmd declare_syntax_cat omit "
    "include add_decl_doc alias assert_not_exists suppress_compilation unseal seal deriving "
    "import prelude unif_hint register_simp_attr register_option binder_predicate "
    "universes"  # the 2021 Lean 4's `universe` for several names
).split()
# The commands whose text is read: the others only end the command before them.
_READ_KEYWORDS = frozenset([*_DECL_KEYWORDS, "open", "set_option", "alias", "namespace", "section", "end", "mutual"])
_HEADER_AT_LINE_START = (
    # The lookahead fails most proof lines at once, before the long keyword alternation;
    # the possessive `*+` keeps a failed line from being retried with less indentation.
    rf"(?P<indent>[ \t]*+)(?=[a-z@#])"
    rf"(?P<pre>(?:(?:open|set_option)[ \t][^\n]*?[ \t]in\s+)*)"
    rf"(?P<mods>(?:{_ATTRIBUTE}\s*|{_MODIFIERS}\s+)*)"
    rf"(?P<kw>{'|'.join([*_DECL_KEYWORDS, *_SCOPE_KEYWORDS, *_COLUMN1_KEYWORDS])}|#[a-z_]+)"
    r"(?![\w'!?.])"
)
# Headers after the first line start with a literal `\n` rather than `^`: `re` then jumps
# from newline to newline instead of trying the pattern at every offset.
_FIRST_HEADER = re.compile(_HEADER_AT_LINE_START)
_HEADER = re.compile("\n" + _HEADER_AT_LINE_START)
_IDENT_AT = re.compile(rf"\s*({IDENT})")
# `import` anywhere (a literal prefix is fast to search for); only line starts count.
_IMPORT = re.compile(rf"import[ \t]+((?:(?>{IDENT})[ \t]+)*(?>{IDENT}))")
# `prelude`, the first command of a file (comments are masked to blanks).
_PRELUDE = re.compile(r"\s*prelude(?![\w'!?.])")
_PRIORITY = re.compile(r"\s*\(priority\s*:=[^)]*\)")
# What a header scan stops at. `|` counts only first on its line (the absolute value `|x|`
# may appear in a statement) except for inductive types, whose constructors use it inline.
# Every alternative starts with a literal character (no group, no lookbehind first): `re`
# then skips to candidate characters in C instead of trying the whole pattern at each one.
# `let` too: in a type (`let x := 1; x < 2`) its `:=` is not the proof's.
_HEADER_STOPS = re.compile(
    r"\n[ \t]*+\||:=|\||w(?<![\w'!?.]w)here(?![\w'!?])|d(?<![\w'!?.]d)eriving(?![\w'!?])|l(?<![\w'!?.]l)et(?![\w'!?])"
)
# A `fun`, `λ` or `match ... with` whose alternatives follow (`fun\n  | some x => ...`): the
# bars at line starts after it, in a header, are its alternatives, not the declaration's equations.
_ALTERNATIVES = re.compile(r"(?<![\w'!?.])(?:fun|λ|with)\s*\|")
_COLON_TOKENS = re.compile(r"(?<!:):(?![=:])|[(\[{⟨⦃]|[)\]}⟩⦄]")
_BARS = re.compile(r"[(\[{⟨⦃]|[)\]}⟩⦄]|(?<![\w'!?.])deriving(?![\w'!?])|\|")
_OPEN_BRACKETS = "([{⟨⦃"
_CLOSE_BRACKETS = ")]}⟩⦄"
# Text whose brackets, if any, are unnested pairs, like most binders (`(a b : α) {c : β}`):
# its bracket depth is 0 without counting.
# The non-brackets are written as the ranges between the brackets rather than as
# `[^()\[\]{}⟨⟩⦃⦄]`: `re` checks a positive set's ASCII part with one bitmap lookup, which
# makes this match a third faster than testing each character against the ten brackets.
_NOT_BRACKET = r"[\x00-'*-Z\\^-z|~-\u27e7\u27ea-\u2982\u2985-\U0010ffff]"
_FLAT_BRACKETS = re.compile(rf"{_NOT_BRACKET}*+(?:[(\[{{⟨⦃]{_NOT_BRACKET}*+[)\]}}⟩⦄]{_NOT_BRACKET}*+)*+")
# Clauses that end a proof when they begin a line (`\n` rather than `^`: a literal first
# character lets `re` jump from line to line).
_TRAILER = re.compile(r"\n[ \t]*+(?:where|termination_by|decreasing_by|deriving)(?![\w'!?])")
_WHERE_LINE = re.compile(r"\n[ \t]*+where(?![\w'!?])")
_CLASS_VARIANT = re.compile(r"\s+(inductive|abbrev)(?![\w'!?])")
# Words that may follow a declaration keyword but are not its name.
_NOT_NAMES = frozenset({"where", "extends", "deriving"})
_BY = re.compile(r"\s*by(?![\w'!?])")
_LINE_FIRST = re.compile(r"^[ \t]*(?=\S)", re.MULTILINE)
_ITEM_NAME = re.compile(rf"\s*(?:{_ATTRIBUTE}\s*|{_MODIFIERS}\s+)*({IDENT})")
_FIELD_NAMES = re.compile(
    rf"(?:{_ATTRIBUTE}\s*|{_MODIFIERS}\s+)*[(\[{{⦃]?\s*((?:{IDENT}[ \t]+)*{IDENT})\s*(?::(?!=)|[(\[{{⦃])"
)
_CTOR_PREFIX = re.compile(rf"\s*({IDENT})\s*::")
# Names are separated by whitespace and each is matched whole (atomic): with `\s*` between
# them, `(?:{IDENT}\s*)+` could split one long name in exponentially many ways before
# failing on a `[Class x]` binder (seconds for a 22-letter class name in Mathlib).
_BINDER_NAMES = re.compile(rf"[(\[{{⦃]\s*((?:(?>{IDENT})\s+)*(?>{IDENT}))\s*(?=[:)}}⦄])")
_OPEN_EXPLICIT = re.compile(rf"({IDENT})\s*\(([^)]*)\)")
_OPEN_RENAMING = re.compile(rf"({IDENT})\s+renaming\s+(.*)", re.DOTALL)
_RENAME_PAIR = re.compile(rf"({IDENT})\s*(?:→|->)\s*({IDENT})")
_DERIVING_INSTANCE = re.compile(r"\s+instance(?![\w'!?])")
_ALIAS = re.compile(rf"\s*(⟨[^⟩]*⟩|{IDENT})\s*:=")
_IN_SPLIT = re.compile(r"\s+in(?:\s+|$)")
_PRIVATE = re.compile(r"(?<![\w.])private\s")
_PROTECTED = re.compile(r"(?<![\w.])protected\s")
_ENDS_WITH_IN = re.compile(r"\sin\s*$")
_CONTAINERS = frozenset({DeclKind.STRUCTURE, DeclKind.CLASS, DeclKind.INDUCTIVE})


# `Child`, `Decl` and the private results of reading a declaration are NamedTuples rather
# than frozen dataclasses: they are as immutable, and a file has thousands of them, while a
# frozen dataclass's __init__ sets every field through `object.__setattr__` (building a
# `Decl` costs ~3.5 µs that way, ~1 µs as a NamedTuple).
class Child(NamedTuple):
    """A name a declaration introduces besides its own: constructor, field, ``where`` item."""

    name: str
    start: int
    end: int


class Decl(NamedTuple):
    """One declaration, as offsets into its file; ``name`` is None for an ``example`` only
    (it declares nothing; anonymous instances get a generated name).

    ``start`` includes the doc comment; ``end`` is the whole declaration's last character
    (``where`` items included). ``proof_start`` is the proof's first token after ``:=`` (or the first ``|``
    of equations, or at a structure-instance ``where``); ``body_end`` ends the proof before
    any ``where``/``termination_by``/``decreasing_by`` trailer. ``scope`` is what names in
    the body resolve against (the declaration's own namespace prefix included).
    """

    kind: DeclKind
    name: str | None
    start: int
    keyword_start: int
    header_end: int
    proof_start: int | None
    body_end: int
    end: int
    scope: Scope
    is_tactic: bool
    private: bool
    protected: bool
    children: tuple[Child, ...] = ()


@dataclass(frozen=True, slots=True)
class Issue:
    """A problem found while reading: its offset and a reason."""

    offset: int
    reason: str


@dataclass(frozen=True, slots=True)
class ReadFile:
    """What reading one file produced."""

    source: MaskedText
    imports: tuple[str, ...]
    decls: tuple[Decl, ...]
    issues: tuple[Issue, ...]
    # The file starts with `prelude`: it does not import Init, as every other file does.
    prelude: bool = False


@dataclass(slots=True)
class _Frame:
    kind: str  # "file", "namespace", "section" or "mutual"
    name: str
    opens: list[str]
    aliases: list[tuple[str, str]]


class _ScopeStack:
    """The namespace/section/mutual nesting at the current command, with its opens.

    A file-level frame that no ``end`` closes holds the opens made outside any section.
    """

    def __init__(self) -> None:
        self.file = _Frame("file", "", [], [])
        self.frames: list[_Frame] = []
        self._current: Scope | None = None  # the scope until the next change

    def namespace(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.frames if f.kind == "namespace")

    def scope(self, *, pending: Scope | None = None) -> Scope:
        """The current scope; ``pending`` holds the opens of an ``open ... in`` prefix.

        Equal scopes are the same object between changes, which keeps resolution caches hot.
        """
        if self._current is None:
            frames = [self.file, *self.frames]
            opens = tuple(o for f in reversed(frames) for o in reversed(f.opens))
            aliases = tuple(a for f in reversed(frames) for a in reversed(f.aliases))
            self._current = Scope(self.namespace(), opens, aliases)
        if pending is None:
            return self._current
        current = self._current
        return Scope(current.namespace, pending.opens + current.opens, pending.aliases + current.aliases)

    def open(self, opened: Scope) -> None:
        frame = self.frames[-1] if self.frames else self.file
        frame.opens.extend(opened.opens)
        frame.aliases.extend(opened.aliases)
        self._current = None

    def push(self, kind: str, name: str = "") -> None:
        self.frames.append(_Frame(kind, name, [], []))
        self._current = None

    def pop(self, count: int) -> bool:
        """Close ``count`` frames; False (closing all there are) if fewer are open."""
        self._current = None
        if count > len(self.frames):
            self.frames.clear()
            return False
        del self.frames[len(self.frames) - count :]
        return True


def read_file(source: MaskedText) -> ReadFile:
    """Split ``source`` into commands and read every declaration, scope and import."""
    masked = source.masked
    issues = [Issue(p.offset, p.reason) for p in source.problems]
    headers = [m for m in _headers(masked) if _is_command(m, masked)]
    # A command's text reaches back over its doc comment; what precedes ends before that.
    doc_before = _doc_starts(source)
    starts = [doc_before.get(m.end("indent"), m.end("indent")) for m in headers]
    stack = _ScopeStack()
    pending: Scope | None = None
    decls: list[Decl] = []
    # Each command ends where the next one starts (before its doc comment).
    limits = [*starts[1:], len(masked)] if starts else []
    for m, start, limit in zip(headers, starts, limits, strict=True):
        kw = m.group("kw")
        if kw not in _READ_KEYWORDS:
            # `#align`, `variable`, `attribute`, ... change nothing read here, and in Mathlib
            # they are a third of the commands: not even their end is needed.
            pending = None
            continue
        # `rstrip_end` spelled out: once per command, where the call would cost as much.
        kw_start = m.start("kw")
        end = kw_start + len(masked[kw_start:limit].rstrip())
        if m.group("pre"):
            pending = _merge(pending, _parse_opens(masked[m.start("pre") : m.end("pre")], stack.namespace()))
            # Past an `open ... in` prefix, the declaration itself starts at its modifiers.
            start = doc_before.get(m.start("mods"), m.start("mods"))
        if kw in _DECL_KEYWORDS:
            decl = _read_decl(source, m, start, end, stack, pending, issues)
            if decl is not None:
                decls.append(decl)
            pending = None
        elif kw in ("open", "set_option"):
            text = masked[m.start("kw") : end]
            opened = _parse_opens(text, stack.namespace()) if kw == "open" else Scope()
            if _ENDS_WITH_IN.search(text):
                pending = _merge(pending, opened)
            else:
                stack.open(opened)
        elif kw == "alias":
            decls.extend(_read_alias(source, m, start, end, stack, pending))
            pending = None
        else:
            _scope_command(kw, masked, m, end, stack, issues)
            pending = None
    first = len(BOM) if source.text.startswith(BOM) else 0  # the file's first character
    imports = tuple(
        normalize_name(name)
        for m in _IMPORT.finditer(masked)
        if m.start() == first or masked[m.start() - 1] == "\n"
        for name in m.group(1).split()
    )
    issues.sort(key=lambda issue: issue.offset)
    prelude = _PRELUDE.match(masked, first) is not None
    return ReadFile(source, imports, tuple(decls), tuple(issues), prelude)


def _headers(masked: str) -> list[re.Match[str]]:
    """Every match of a command header at a line start, in order (not all are commands)."""
    first = _FIRST_HEADER.match(masked)
    if first is None:
        return list(_HEADER.finditer(masked))
    return [first, *_HEADER.finditer(masked, first.end())]


def _is_command(m: re.Match[str], masked: str) -> bool:
    kw = m.group("kw")
    if kw in _DECL_KEYWORDS or kw in _SCOPE_KEYWORDS:
        return True
    if kw == "deriving":  # `deriving Repr` closes a structure; `deriving instance` is a command
        return not m.group("indent") and _DERIVING_INSTANCE.match(masked, m.end("kw")) is not None
    return not m.group("indent")


def _doc_starts(source: MaskedText) -> dict[int, int]:
    """Where doc comments attach: the offset of the first non-blank character after each
    (comments are blank in the masked text), mapped to the doc comment's start. A command
    starting there reaches back over it; of doc comments in a row, the last one wins.
    One lookup per command instead of a search for the doc comment before it."""
    masked = source.masked
    return {skip_space(masked, end, len(masked)): start for start, end in source.doc_spans}


def _scope_command(kw: str, masked: str, m: re.Match[str], end: int, stack: _ScopeStack, issues: list[Issue]) -> None:
    """Apply ``namespace``/``section``/``end``/``mutual``."""
    arg = _IDENT_AT.match(masked, m.end("kw"), end)
    name = normalize_name(arg.group(1)) if arg else ""
    if kw == "namespace":
        if not name:
            issues.append(Issue(m.start("kw"), "namespace without a name"))
            return
        for part in split_name(name):
            stack.push("namespace", part)
    elif kw == "section":
        stack.push("section", name)
    elif kw == "mutual":
        stack.push("mutual")
    elif kw == "end":
        count = len(split_name(name)) if name else 1
        if not stack.pop(count):
            issues.append(Issue(m.start("kw"), f"'{f'end {name}'.strip()}' closes no open namespace or section"))


def _read_alias(
    source: MaskedText,
    m: re.Match[str],
    start: int,
    end: int,
    stack: _ScopeStack,
    pending: Scope | None,
) -> list[Decl]:
    """``alias new := old`` and ``alias ⟨mp, mpr⟩ := iff`` (Batteries): new names for old
    declarations, so premises too, of unknown kind (what they alias is not read). The
    command spans ``start``..``end``."""
    names = _ALIAS.match(source.masked, m.end("kw"), end)
    if names is None:
        return []
    written = [w for w in IDENT_RE.findall(names.group(1)) if w != "_"]
    private, protected = _visibility(m.group("mods"))
    decls = []
    for name in written:
        full, scope = _naming(normalize_name(name), stack, pending)
        decls.append(
            Decl(
                kind=DeclKind.UNKNOWN,
                name=full,
                start=start,
                keyword_start=m.start("kw"),
                header_end=end,
                proof_start=None,
                body_end=end,
                end=end,
                scope=scope,
                is_tactic=False,
                private=private,
                protected=protected,
            )
        )
    return decls


def _parse_opens(text: str, namespace: tuple[str, ...]) -> Scope:
    """The namespaces and aliases that ``open`` clauses add (``text`` may chain several
    ``open ... in`` and ``set_option ... in`` prefixes; only the opens count)."""
    opens: list[str] = []
    aliases: list[tuple[str, str]] = []
    for clause in _IN_SPLIT.split(text.strip()):
        if not clause.startswith("open"):
            continue
        body = clause[4:].strip()
        if body.startswith("scoped"):  # only activates scoped notation and instances
            continue
        explicit = _OPEN_EXPLICIT.fullmatch(body)
        renaming = _OPEN_RENAMING.fullmatch(body)
        if explicit:
            target = _expand(explicit.group(1), namespace)[0]
            aliases += [(normalize_name(n), f"{target}.{normalize_name(n)}") for n in explicit.group(2).split()]
        elif renaming:
            target = _expand(renaming.group(1), namespace)[0]
            pairs = _RENAME_PAIR.findall(renaming.group(2))
            aliases += [(normalize_name(new), f"{target}.{normalize_name(old)}") for old, new in pairs]
        else:
            for word in IDENT_RE.findall(body.split(" hiding ")[0]):
                opens.extend(_expand(word, namespace))
    return Scope((), tuple(opens), tuple(aliases))


def _merge(first: Scope | None, second: Scope) -> Scope:
    if first is None:
        return second
    return Scope((), second.opens + first.opens, second.aliases + first.aliases)


def _expand(name: str, namespace: tuple[str, ...]) -> list[str]:
    """The namespaces ``open name`` may mean inside ``namespace``, innermost first."""
    name = normalize_name(name)
    if name.startswith("_root_."):
        return [name.removeprefix("_root_.")]
    return [".".join((*namespace[:depth], name)) for depth in range(len(namespace), -1, -1)]


def _read_decl(
    source: MaskedText,
    m: re.Match[str],
    start: int,
    end: int,
    stack: _ScopeStack,
    pending: Scope | None,
    issues: list[Issue],
) -> Decl | None:
    masked = source.masked
    keyword = m.group("kw")
    kind = _DECL_KEYWORDS[keyword]
    keyword_start, pos = m.span("kw")
    # The keyword, not `kind`, is tested where either will do: comparing short strings is
    # several times cheaper than looking up an enum member (~0.1 µs each in Python 3.11).
    if keyword == "class":
        sub = _CLASS_VARIANT.match(masked, pos, end)
        if sub:
            kind = DeclKind.INDUCTIVE if sub.group(1) == "inductive" else DeclKind.CLASS
            pos = sub.end()
    if keyword == "instance":
        prio = _PRIORITY.match(masked, pos, end)
        pos = prio.end() if prio else pos
    written: str | None = None
    if keyword != "example":
        ident = _IDENT_AT.match(masked, pos, end)
        if ident is not None and ident.group(1) not in _NOT_NAMES:
            written = normalize_name(ident.group(1))
            pos = ident.end()
        elif keyword != "instance":
            issues.append(Issue(keyword_start, f"{keyword} without a name"))
            return None
    split = _scan_header(masked, pos, end, inline_bar=kind in _CONTAINERS)
    if split.unbalanced:
        issues.append(
            Issue(
                split.unbalanced,
                f"unbalanced bracket in the header of {keyword} {written or ''}".rstrip(),
            )
        )
    if written is None and keyword == "instance":
        written = _instance_name(masked, pos, split)
    full, scope = _naming(written, stack, pending)
    header_end, proof_start, body_end, is_tactic, missing, children = _read_body(
        masked, kind, full, keyword_start, split, end
    )
    if children and kind not in _CONTAINERS and written is not None:
        # `where` items are local to the body: `go` there means `<decl>.go`.
        scope = Scope((*scope.namespace, split_name(written)[-1]), scope.opens, scope.aliases)
    if missing and not split.unbalanced and kind not in (DeclKind.AXIOM, DeclKind.OPAQUE, *_CONTAINERS):
        issues.append(
            Issue(
                keyword_start,
                f"no ':=', 'where' or equations found for {keyword} {written or ''}".rstrip(),
            )
        )
    private, protected = _visibility(m.group("mods"))
    # Positional: keyword arguments cost a NamedTuple twice as much, once per declaration.
    # The order is Decl's: kind, name, start, keyword_start, header_end, proof_start,
    # body_end, end, scope, is_tactic, private, protected, children.
    return Decl(
        kind,
        full,
        start,
        keyword_start,
        header_end,
        proof_start,
        body_end,
        end,
        scope,
        is_tactic,
        private,
        protected,
        children,
    )


def _visibility(mods: str) -> tuple[bool, bool]:
    """Whether the modifiers ``mods`` make a declaration private, and protected."""
    if not mods:
        return False, False
    # The substring tests spare the regex searches for the usual `@[simp]`-only modifiers.
    private = "private" in mods and _PRIVATE.search(mods) is not None
    protected = "protected" in mods and _PROTECTED.search(mods) is not None
    return private, protected


def _naming(written: str | None, stack: _ScopeStack, pending: Scope | None) -> tuple[str | None, Scope]:
    """The full name of a declaration written ``written`` here, and the scope of its body.

    Lean elaborates the body of ``def Foo.bar`` inside namespace ``Foo`` as well, and
    ``_root_.Foo.bar`` ignores the surrounding namespaces for both.
    """
    scope = stack.scope(pending=pending)
    if written is None:
        return None, scope
    if "." not in written:  # a plain name (most are): nothing to split, same scope
        return ".".join((*scope.namespace, written)), scope
    parts = split_name(written)
    if parts[0] == "_root_" and len(parts) > 1:
        namespace: tuple[str, ...] = ()
        parts = parts[1:]
    else:
        namespace = scope.namespace
    full = ".".join((*namespace, *parts))
    if len(parts) == 1 and namespace is scope.namespace:
        return full, scope
    return full, Scope((*namespace, *parts[:-1]), scope.opens, scope.aliases)


# NamedTuples, like `Decl`, for the same reason: one of each per declaration.
class _HeaderSplit(NamedTuple):
    stop: int  # offset of what ended the header, or the declaration's end
    token: str  # ":=", "where", "|", "deriving" or "" (nothing found)
    unbalanced: int  # where the brackets went wrong (a stray closer, or the header start), or 0


def _scan_header(masked: str, pos: int, end: int, *, inline_bar: bool) -> _HeaderSplit:
    """Find what ends a declaration header: the first ``:=``, ``where``, ``deriving`` or
    equation ``|`` outside brackets. Bracket depth is counted between candidate stops with
    ``str.count``, so the Python work is per candidate, not per bracket."""
    depth = 0
    last = pos
    lets = 0  # `let`s outside brackets whose `:=` is still to come
    # `search` from stop to stop rather than `finditer`: most headers end at their first
    # stop, and an iterator costs more to set up than the one search it would make.
    t = _HEADER_STOPS.search(masked, pos, end)
    while t is not None:
        token = t.group()
        bar = token.endswith("|")
        if not bar or inline_bar or token[0] == "\n":  # else an inline `|`: skipped
            depth += _depth(masked, last, t.start())
            last = t.start()
            if depth < 0:
                return _HeaderSplit(end, "", last)
            if depth == 0 and token == "let":
                lets += 1
            elif depth == 0 and token == ":=" and lets:
                lets -= 1
            elif depth == 0 and not (bar and _ALTERNATIVES.search(masked, pos, t.end())):
                return _HeaderSplit(t.end() - 1, "|", 0) if bar else _HeaderSplit(t.start(), token, 0)
        t = _HEADER_STOPS.search(masked, t.end(), end)
    depth += _depth(masked, last, end)
    return _HeaderSplit(end, "", pos if depth else 0)


def _depth(masked: str, start: int, end: int) -> int:
    """How much ``masked[start:end]`` deepens the bracket nesting (negative: it closes)."""
    if _FLAT_BRACKETS.fullmatch(masked, start, end) is not None:
        return 0  # one C-level match settles most header stretches
    s = masked[start:end]
    # Spelled out rather than `sum(map(s.count, ...))`, which costs a third more: this runs
    # for every declaration header.
    opened = s.count("(") + s.count("[") + s.count("{") + s.count("⟨") + s.count("⦃")
    return opened - s.count(")") - s.count("]") - s.count("}") - s.count("⟩") - s.count("⦄")


def _type_colon(masked: str, pos: int, stop: int) -> int:
    """The offset of the header's type ``:`` (outside brackets), or -1."""
    depth = 0
    for t in _COLON_TOKENS.finditer(masked, pos, stop):
        token = t.group()
        if token in _OPEN_BRACKETS:
            depth += 1
        elif token in _CLOSE_BRACKETS:
            depth -= 1
        elif depth == 0:
            return t.start()
    return -1


# What `_read_body` finds: header_end, proof_start, body_end, is_tactic, missing (no body
# found where one was due) and children. A plain tuple, unpacked at once by its one caller.
_Body = tuple[int, int | None, int, bool, bool, tuple[Child, ...]]


def _read_body(
    masked: str, kind: DeclKind, full: str | None, keyword_start: int, split: _HeaderSplit, end: int
) -> _Body:
    # `rstrip_end` spelled out, as in `read_file`: once per declaration.
    header_end = keyword_start + len(masked[keyword_start : split.stop].rstrip()) if split.token else end
    if kind in _CONTAINERS:
        children = _container_children(masked, kind, full, keyword_start, header_end, split, end) if full else ()
        return header_end, None, end, False, False, children
    if not split.token or split.token == "deriving":
        return header_end, None, end, False, True, ()
    # The proof starts at its first token (records.Theorem.proof_start), past `:=` and the
    # whitespace or comments (blank in `masked`) after it.
    proof_start = skip_space(masked, split.stop + 2, end) if split.token == ":=" else split.stop
    trailer = _TRAILER.search(masked, proof_start, end)
    # Without a trailer the proof ends where the declaration does: `end` is already stripped.
    body_end = rstrip_end(masked, proof_start, trailer.start()) if trailer else end
    where = _WHERE_LINE.search(masked, trailer.start(), end) if trailer else None
    children = _where_items(masked, full, where.end(), end) if where and full else ()
    is_tactic = split.token == ":=" and _BY.match(masked, proof_start, body_end) is not None
    return header_end, proof_start, body_end, is_tactic, False, children


def _instance_name(masked: str, pos: int, split: _HeaderSplit) -> str:
    """Lean's generated name for an anonymous instance, approximately: ``inst`` followed by
    the capitalised constants of the class application (``instance : Add Point`` ->
    ``instAddPoint``), leaving out the header's binder names and auto-bound variables."""
    colon = _type_colon(masked, pos, split.stop)
    if colon < 0:
        return "inst"
    bound = {n for group in _BINDER_NAMES.findall(masked, pos, colon) for n in group.split()}
    lasts = [split_name(normalize_name(w))[-1] for w in IDENT_RE.findall(masked, colon, split.stop) if w not in bound]
    return "inst" + "".join(last for last in lasts if "A" <= last[:1] <= "Z")


def _container_children(
    masked: str,
    kind: DeclKind,
    full: str,
    keyword_start: int,
    header_end: int,
    split: _HeaderSplit,
    end: int,
) -> tuple[Child, ...]:
    """Constructors of an inductive type; constructor and fields of a structure or class.

    The default constructor ``mk`` is written nowhere: its span is the header's.
    """
    if kind is DeclKind.INDUCTIVE:
        return _constructors(masked, full, split.stop, end)
    if split.token not in (":=", "where"):
        return (Child(f"{full}.mk", keyword_start, header_end),)
    body = split.stop + (2 if split.token == ":=" else 5)
    trailer = _TRAILER.search(masked, body, end)
    body_end = trailer.start() if trailer else end
    ctor = _CTOR_PREFIX.match(masked, body, body_end)
    if ctor is not None:
        children = [Child(f"{full}.{normalize_name(ctor.group(1))}", ctor.start(1), ctor.end())]
        body = ctor.end()
    else:
        children = [Child(f"{full}.mk", keyword_start, header_end)]
    for item_start, item_end in _items(masked, body, body_end):
        names = _FIELD_NAMES.match(masked, item_start, item_end)
        if names is not None:
            children += [Child(f"{full}.{normalize_name(n)}", item_start, item_end) for n in names.group(1).split()]
    return tuple(children)


def _constructors(masked: str, full: str, pos: int, end: int) -> tuple[Child, ...]:
    bars: list[int] = []
    depth = 0
    stop = end
    for t in _BARS.finditer(masked, pos, end):
        token = t.group()
        if token in _OPEN_BRACKETS:
            depth += 1
        elif token in _CLOSE_BRACKETS:
            depth -= 1
        elif depth == 0 and token == "|":
            bars.append(t.start())
        elif depth == 0 and token == "deriving":
            stop = t.start()
            break
    children = []
    for i, bar in enumerate(bars):
        item_end = rstrip_end(masked, bar, bars[i + 1] if i + 1 < len(bars) else stop)
        name = _ITEM_NAME.match(masked, bar + 1, item_end)
        if name is not None:
            children.append(Child(f"{full}.{normalize_name(name.group(1))}", bar, item_end))
    return tuple(children)


def _where_items(masked: str, full: str, pos: int, end: int) -> tuple[Child, ...]:
    """The auxiliary declarations of a ``where`` clause, named ``<decl>.<item>``."""
    children = []
    for item_start, item_end in _items(masked, pos, end):
        name = _ITEM_NAME.match(masked, item_start, item_end)
        if name is not None:
            children.append(Child(f"{full}.{normalize_name(name.group(1))}", item_start, item_end))
    return tuple(children)


def _items(masked: str, pos: int, end: int) -> list[tuple[int, int]]:
    """Layout items: runs of lines starting at the column of the first non-blank line."""
    first = skip_space(masked, pos, end)
    if first >= end:
        return []
    column = first - masked.rfind("\n", 0, first)
    starts = [first]
    newline = masked.find("\n", first, end)
    if newline >= 0:
        for m in _LINE_FIRST.finditer(masked, newline + 1, end):
            if m.end() - m.start() + 1 <= column:
                starts.append(m.end())
    return [(s, rstrip_end(masked, s, starts[i + 1] if i + 1 < len(starts) else end)) for i, s in enumerate(starts)]
