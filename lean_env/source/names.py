"""Name resolution without elaboration: which declaration does an identifier mean?

Lean resolves an identifier ``x`` written inside ``namespace A.B`` by trying ``A.B.x``,
``A.x`` and ``x``, then the namespaces opened by ``open`` (and the aliases of
``open N (x)`` / ``open N renaming a → b``). We follow the same order and take the first
candidate that names a declaration the current one can see:

* declarations of modules the current file imports (transitively), except their
  ``private`` ones;
* declarations of the same file that start before the current one, and the current
  declaration's own auxiliary declarations (``where`` items), which Lean elaborates with it.

A ``protected`` declaration ``A.B.foo`` is never reached by its last component alone
(``foo`` inside ``namespace A.B`` or after ``open A.B``): Lean requires ``B.foo``. When a
dotted identifier names nothing, its last part is dropped and the rest retried, so that a
projection or field access on a constant (``Nat.lt_irrefl.elim``) still counts the constant.
A leading ``_root_.`` pins the name to the root namespace.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from lean_env.source.lexer import normalize_name, split_name


@dataclass(frozen=True, slots=True)
class Scope:
    """What an identifier is resolved against: namespace, opened namespaces, aliases.

    ``opens`` lists full namespace names, the most recently opened first; ``aliases`` maps a
    short name to the full name an explicit ``open`` gave it.
    """

    namespace: tuple[str, ...] = ()
    opens: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Entry:
    """Where a declared name lives: a module index, its offset there, and its visibility."""

    module: int
    offset: int
    owner: str = ""  # the enclosing declaration for `where` items, constructors and fields
    protected: bool = False
    private: bool = False


@dataclass(frozen=True, slots=True)
class Site:
    """The declaration an identifier is used in: its module, offset and full name, and the
    modules it imports directly or not, as a bit set (bit ``i`` for module ``i``: a few
    hundred bytes per file even when the imports reach thousands of modules)."""

    module: int
    offset: int
    name: str
    imported: int


@dataclass(slots=True)
class NameTable:
    """Every declared full name with where it lives, plus a per-scope resolution cache.

    The cache maps a scope and an identifier to the candidate names that exist at all;
    which of them is visible from a given use site is decided per use, cheaply.
    """

    entries: dict[str, list[Entry]] = field(default_factory=dict)
    # The last part of every declared name: most identifiers in a proof (local variables,
    # tactic words, core names) are none of them and are rejected without a lookup.
    _last_parts: set[str] = field(default_factory=set)
    # Per identifier, scope-independent: False when it cannot name anything declared.
    _plausible: dict[str, bool] = field(default_factory=dict)
    _caches: dict[Scope, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def add(self, name: str, entry: Entry) -> None:
        self.entries.setdefault(name, []).append(entry)
        self._last_parts.add(split_name(name)[-1])
        self._plausible.clear()
        self._caches.clear()

    def resolve(self, ident: str, scope: Scope, site: Site) -> str | None:
        """The full name ``ident`` refers to at ``site``, or None if it names nothing we know."""
        return self.resolve_all([ident], scope, site).get(ident)

    def resolve_all(self, idents: list[str], scope: Scope, site: Site) -> dict[str, str]:
        """:meth:`resolve` for many identifiers used at one site: those that name something,
        mapped to the full name."""
        plausible = self._plausible
        todo = [i for i in idents if plausible.get(i) is not False]
        aliased: set[str] = set()
        if scope.aliases:
            # An alias makes its short name mean something whatever was declared.
            aliased = {alias for alias, _ in scope.aliases}
            todo += [i for i in idents if i.partition(".")[0] in aliased and i not in todo]
        if not todo:
            return {}
        cache = self._caches.get(scope)
        if cache is None:
            cache = self._caches[scope] = {}
        entries = self.entries
        resolved: dict[str, str] = {}
        for ident in todo:
            ok = plausible.get(ident)
            if ok is None:
                ok = plausible[ident] = self._may_name(ident)
            if not ok and ident.partition(".")[0] not in aliased:
                continue
            candidates = cache.get(ident)
            if candidates is None:
                candidates = cache[ident] = tuple(self._existing(ident, scope))
            for name in candidates:
                if name != site.name and any(_visible(e, site) for e in entries[name]):
                    resolved[ident] = name
                    break
        return resolved

    def _may_name(self, ident: str) -> bool:
        """Whether some part of ``ident`` ends a declared name: if none does, no namespace
        or open can make it (or a prefix of it) mean a declaration."""
        return "«" in ident or not self._last_parts.isdisjoint(ident.split("."))

    def _existing(self, ident: str, scope: Scope) -> Iterator[str]:
        parts = split_name(normalize_name(ident))
        while parts:
            for name, needs_qualifier in _candidates(parts, scope):
                entries = self.entries.get(name)
                if entries and (not needs_qualifier or not all(e.protected for e in entries)):
                    yield name
            # Nothing with this spelling: try it as a field access on a shorter constant.
            parts = parts[:-1]


def _visible(entry: Entry, site: Site) -> bool:
    if entry.module == site.module:
        return entry.offset < site.offset or entry.owner == site.name
    return not entry.private and (site.imported >> entry.module) & 1 == 1


def _candidates(parts: list[str], scope: Scope) -> Iterator[tuple[str, bool]]:
    """Full names ``parts`` may mean in ``scope``, best first, each with whether reaching it
    went through a namespace or open by the last component only (protected names refuse that).
    """
    if parts[0] == "_root_":
        if len(parts) > 1:
            yield ".".join(parts[1:]), False
        return
    ident = ".".join(parts)
    short = len(parts) == 1
    namespace = scope.namespace
    for depth in range(len(namespace), 0, -1):
        yield ".".join((*namespace[:depth], ident)), short
    yield ident, False
    for alias, target in scope.aliases:
        if alias == parts[0]:
            yield ".".join((target, *parts[1:])), False
    for opened in scope.opens:
        yield f"{opened}.{ident}", short
