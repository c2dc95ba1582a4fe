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

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from lean_env.syntax.lexer import normalize_name, split_name


@dataclass(frozen=True, slots=True)
class Scope:
    """What an identifier is resolved against: namespace, opened namespaces, aliases.

    ``opens`` lists full namespace names, the most recently opened first; ``aliases`` maps a
    short name to the full name an explicit ``open`` gave it.
    """

    namespace: tuple[str, ...] = ()
    opens: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()


# `Entry` and `Site` are NamedTuples rather than frozen dataclasses: one is built per
# declared name and per theorem, and a frozen dataclass's __init__ is several times slower.
class Entry(NamedTuple):
    """Where a declared name lives: a module index, its offset there, and its visibility."""

    module: int
    offset: int
    owner: str = ""  # the enclosing declaration for `where` items, constructors and fields
    protected: bool = False
    private: bool = False


class Site(NamedTuple):
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
    # The last part of every declared name, mapped to the prefixes it is declared under
    # (`A.B.` for `A.B.foo`, `""` for a root name). Most identifiers in a proof (local
    # variables, tactic words, core names) are no last part and are rejected at once; a
    # plain identifier whose prefixes meet none of its scope's means nothing there either.
    _parents: dict[str, set[str]] = field(default_factory=dict)
    # Identifiers that cannot name anything declared, whatever the scope: a proof's
    # identifiers are filtered against this set in one C-level set difference.
    _names_nothing: set[str] = field(default_factory=set)
    _views: dict[Scope, _ScopeView] = field(default_factory=dict)
    # The last scope looked up and its view: consecutive declarations share one `Scope`
    # object, and an identity test is much cheaper than hashing the scope's tuples.
    _last_view: tuple[Scope, _ScopeView] | None = None

    def add_all(self, named: Iterable[tuple[str, Entry]]) -> None:
        """Add many ``(full name, entry)`` pairs: a file's declarations at once."""
        entries = self.entries
        parents = self._parents
        for name, entry in named:
            same = entries.get(name)
            if same is None:
                entries[name] = [entry]
            else:
                same.append(entry)
            # `rpartition` unless guillemets may hide a dot: no list built per name.
            last = split_name(name)[-1] if "«" in name else name.rpartition(".")[2]
            prefixes = parents.get(last)
            if prefixes is None:
                prefixes = parents[last] = set()
            prefixes.add(name[: len(name) - len(last)])
        # New names can give old identifiers a meaning.
        self._names_nothing.clear()
        self._views.clear()
        self._last_view = None

    def resolve(self, ident: str, scope: Scope, site: Site) -> str | None:
        """The full name ``ident`` refers to at ``site``, or None if it names nothing we know."""
        return self.resolve_all([ident], scope, site).get(ident)

    def resolve_all(self, idents: Collection[str], scope: Scope, site: Site) -> dict[str, str]:
        """:meth:`resolve` for many identifiers used at one site (repeats allowed): those
        that name something, mapped to the full name."""
        last = self._last_view
        view = last[1] if last is not None and last[0] is scope else self._view(scope)
        # `difference`, not `difference_update`: it walks the (few) identifiers rather
        # than the (many) names known to mean nothing.
        todo = set(idents).difference(self._names_nothing)
        if view.aliased:
            # An alias makes its short name mean something whatever was declared.
            todo.update(i for i in idents if i.partition(".")[0] in view.aliased)
        if not todo:
            return {}
        entries = self.entries
        parents = self._parents
        memo = view.memo
        resolved: dict[str, str] = {}
        for ident in todo:
            candidates = memo.get(ident)
            if candidates is None:
                # Most identifiers new to a file (local names, tactic words, core names) are
                # plain and end no declared name: settled here, without a `_lookup` call.
                if ident not in parents and "." not in ident and "«" not in ident and not view.aliased:
                    self._names_nothing.add(ident)
                    continue
                candidates = self._lookup(ident, view)
                if candidates is None:
                    self._names_nothing.add(ident)
                    continue
                memo[ident] = candidates
            for name in candidates:
                if name != site.name and _visible(entries[name], site):
                    resolved[ident] = name
                    break
        return resolved

    def _view(self, scope: Scope) -> _ScopeView:
        """The view of ``scope`` (made once per scope), remembered as the last one used."""
        view = self._views.get(scope)
        if view is None:
            view = self._views[scope] = _ScopeView.of(scope)
        self._last_view = (scope, view)
        return view

    def _lookup(self, ident: str, view: _ScopeView) -> tuple[str, ...] | None:
        """The declared names ``ident`` may mean in ``view``'s scope, or None if it can
        mean nothing in any scope (no part of it ends a declared name)."""
        if view.aliased and ident.partition(".")[0] in view.aliased:
            # An alias makes its short name mean something whatever was declared.
            return self._existing(ident, view)
        if "." in ident or "«" in ident:
            plausible = "«" in ident or not self._parents.keys().isdisjoint(ident.split("."))
            return self._existing(ident, view) if plausible else None
        # A plain name means something here only if it is declared under a prefix the
        # scope reaches: one set operation instead of trying every spelling (`a` inside
        # `namespace Gen5` when the file declares only `Gen1.C1.a`, `Gen2.C2.a`, ...).
        prefixes = self._parents.get(ident)
        if prefixes is None:
            return None
        return () if prefixes.isdisjoint(view.prefixes) else self._existing(ident, view)

    def _existing(self, ident: str, view: _ScopeView) -> tuple[str, ...]:
        """The declared names ``ident`` may mean in ``view``'s scope, best first: inside
        ``namespace A.B``, ``A.B.x``, ``A.x``, ``x``, then the aliases and opens. After the
        full spelling's candidates come those of its prefixes, so that a field access on a
        constant (``Nat.lt_irrefl.elim``) still finds the constant."""
        found: list[str] = []
        parts = split_name(normalize_name(ident))
        if parts[0] == "_root_":
            # `_root_.x` means exactly `x` (or, as a field access, a prefix of it).
            for length in range(len(parts), 1, -1):
                if (name := ".".join(parts[1:length])) in self.entries:
                    found.append(name)
            return tuple(found)
        parents = self._parents
        for length in range(len(parts), 0, -1):
            spelling = ".".join(parts[:length])
            # Through a namespace or an open, a protected name needs a qualifier.
            qualified = length > 1
            # `prefix + spelling` is declared only if `last` is declared under
            # `prefix + head`: set lookups, without building a name per prefix.
            last = parts[length - 1]
            under = parents.get(last)
            head = spelling[: len(spelling) - len(last)]
            if under is not None:
                self._add_existing(found, view.namespaces, head, spelling, under, qualified=qualified)
                self._add_existing(found, ("",), head, spelling, under, qualified=True)
            for alias, target in view.aliases:
                if alias == parts[0]:
                    name = ".".join((target, *parts[1:length]))
                    if name in self.entries:
                        found.append(name)
            if under is not None:
                self._add_existing(found, view.opens, head, spelling, under, qualified=qualified)
        return tuple(found)

    def _add_existing(
        self,
        found: list[str],
        prefixes: tuple[str, ...],
        head: str,
        spelling: str,
        under: set[str],
        *,
        qualified: bool,
    ) -> None:
        """Append ``prefix + spelling`` to ``found`` for each of ``prefixes`` (in order)
        under which it is declared and reachable (``spelling`` is ``head`` and a last part
        declared under the prefixes ``under``): a protected declaration is not reached by
        its last component alone."""
        for prefix in prefixes:
            if prefix + head in under:
                name = prefix + spelling
                if qualified or not all(e.protected for e in self.entries[name]):
                    found.append(name)


@dataclass(slots=True)
class _ScopeView:
    """A scope's candidate prefixes, precomputed once per scope, and the memo of what each
    identifier may mean there (a file has few distinct scopes and many identifiers)."""

    namespaces: tuple[str, ...]  # "A.B.", "A." inside `namespace A.B`: innermost first
    aliases: tuple[tuple[str, str], ...]
    aliased: frozenset[str]  # the short names of `aliases`
    opens: tuple[str, ...]  # "N." for every opened namespace `N`, most recent first
    prefixes: frozenset[str]  # the namespaces, the opens and "" (the root), unordered
    memo: dict[str, tuple[str, ...]]

    @classmethod
    def of(cls, scope: Scope) -> _ScopeView:
        namespace = scope.namespace
        namespaces = tuple(".".join(namespace[:depth]) + "." for depth in range(len(namespace), 0, -1))
        opens = tuple(f"{opened}." for opened in scope.opens)
        return cls(
            namespaces=namespaces,
            aliases=scope.aliases,
            aliased=frozenset(alias for alias, _ in scope.aliases),
            opens=opens,
            prefixes=frozenset((*namespaces, "", *opens)),
            memo={},
        )


def _visible(entries: list[Entry], site: Site) -> bool:
    """Whether any of a name's declarations can be seen from ``site``."""
    for entry in entries:
        if entry.module == site.module:
            if entry.offset < site.offset or entry.owner == site.name:
                return True
        elif not entry.private and (site.imported >> entry.module) & 1 == 1:
            return True
    return False
