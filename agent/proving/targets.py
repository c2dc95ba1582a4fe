"""Which sorry theorems a job proves, and where: chosen by name, repository and skip globs
(:func:`chosen_targets`, ``prove``), or per repository of a lifelong run (:func:`job_targets`),
the exercises left alone; checked out at their stored commit (:func:`checkout_all`)
and built before Lean is asked about them (:func:`build_checkout`)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.proving.config import ProvingConfig
from agent.proving.theorem_refs import TheoremRef, resolve_refs
from curriculum.results import StoredTheorem, TheoremKey
from curriculum.store import Store
from lean_env.data_layout import DataLayout
from lean_env.errors import UserInputError
from lean_env.records import RepoSpec, RepoTrace, TheoremStatus
from lean_env.repos import is_skipped, parse_spec, resolve, unmatched_globs

if TYPE_CHECKING:
    from lean_env.lean.build import BuildOutcome

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Targets:
    """The sorry theorems a job proves, and how many each repository leaves alone (their paths
    are skipped)."""

    theorems: list[StoredTheorem]
    skipped: dict[str, int]


def select_targets(store: Store, names: Sequence[str] | None, repo: str | None, *, skip: Sequence[str] = ()) -> Targets:
    """The stored sorry theorems to prove: all, those of the repository ``repo`` (a spec),
    or those ``names`` name (``NAME`` or ``PATH:NAME``, :mod:`agent.proving.theorem_refs`; each must
    name exactly one); none in a path ``skip`` leaves alone (:func:`lean_env.repos.is_skipped`),
    and naming one of those is an error."""
    location = parse_spec(repo).location if repo else None
    sorries = store.theorems(status=TheoremStatus.SORRY, location=location)
    if repo and not store.theorems(location=location):
        raise UserInputError(f"no stored repository is {location}")
    if names is None:
        kept, _ = left_alone(sorries, skip)
        return Targets(kept, dict(Counter(t.location for t in sorries if is_skipped(t.theorem.path, skip))))
    chosen = resolve_refs(
        [TheoremRef.parse(n) for n in names], sorries, what="stored sorry theorem", whats="stored sorry theorems"
    )
    for stored in chosen:
        if is_skipped(stored.theorem.path, skip):
            raise UserInputError(f"{stored.theorem.full_name!r} is in {stored.theorem.path}, which --skip leaves alone")
    return Targets(chosen, {})


def left_alone(sorries: Sequence[StoredTheorem], skip: Sequence[str]) -> tuple[list[StoredTheorem], int]:
    """The sorries no ``skip`` glob leaves alone, and how many it does."""
    kept = [t for t in sorries if not is_skipped(t.theorem.path, skip)]
    return kept, len(sorries) - len(kept)


@dataclass(frozen=True, slots=True)
class JobTargets:
    """The sorries a job proves, by repository (a lifelong run's in curriculum order), checked out."""

    targets: dict[str, list[StoredTheorem]]  # location -> its sorry theorems to prove
    skipped: dict[str, int]  # location -> its sorries the skip globs leave alone (not targets)
    exercises: dict[TheoremKey, str]  # sorry -> why it is an exercise, left alone (not a target)
    known: list[StoredTheorem]  # every theorem of the repositories (their newest versions)
    checkouts: dict[str, Path]  # location -> its directory at the stored commit


def job_targets(
    store: Store,
    traces: Sequence[RepoTrace],
    locations: Sequence[str],
    *,
    skip: Mapping[str, Sequence[str]],
    include_exercises: bool,
    cache_dir: Path,
) -> JobTargets:
    """A lifelong run's targets: the sorries of ``locations`` to prove, but those in the paths
    ``skip`` gives a repository (globs; one that matches no file is warned of) and, unless
    ``include_exercises``, the exercises (:mod:`agent.proving.exercises`); every repository
    checked out (a resumed run writes the patches of proofs it found before too)."""
    by_location = {t.spec.location: t for t in traces}
    for loc in locations:
        files = [f.path for f in by_location[loc].files] if loc in by_location else []
        for glob in unmatched_globs(files, skip.get(loc, ())):
            log.warning("skip=%s matches no file of %s: it leaves nothing alone", glob, loc)
    targets, skipped = {}, {}
    for loc in locations:
        targets[loc], count = left_alone(store.theorems(status=TheoremStatus.SORRY, location=loc), skip.get(loc, ()))
        if count:
            skipped[loc] = count
    known = [t for loc in locations for t in store.theorems(location=loc)]
    return _checked_out(targets, skipped, known, by_location, include_exercises=include_exercises, cache_dir=cache_dir)


def chosen_targets(
    store: Store,
    traces: Sequence[RepoTrace],
    names: Sequence[str] | None,
    repo: str | None,
    *,
    skip: Sequence[str],
    include_exercises: bool,
    cache_dir: Path,
) -> JobTargets:
    """``prove``'s targets: the sorries :func:`select_targets` chooses, unless
    ``include_exercises`` but the exercises, checked out."""
    chosen = select_targets(store, names, repo, skip=skip)
    targets: dict[str, list[StoredTheorem]] = {}
    for stored in chosen.theorems:
        targets.setdefault(stored.location, []).append(stored)
    by_location = {t.spec.location: t for t in traces}
    return _checked_out(
        targets, chosen.skipped, chosen.theorems, by_location, include_exercises=include_exercises, cache_dir=cache_dir
    )


def _checked_out(
    targets: dict[str, list[StoredTheorem]],
    skipped: dict[str, int],
    known: list[StoredTheorem],
    traces: Mapping[str, RepoTrace],
    *,
    include_exercises: bool,
    cache_dir: Path,
) -> JobTargets:
    from agent.proving.exercises import exercises

    checkouts = checkout_all(known, cache_dir=cache_dir)
    sorries = [t for here in targets.values() for t in here]
    left = {} if include_exercises else exercises(sorries, traces, checkouts)
    targets = {loc: [t for t in here if t.key not in left] for loc, here in targets.items()}
    return JobTargets(targets, skipped, left, known, checkouts)


def checkout_all(theorems: Sequence[StoredTheorem], *, cache_dir: Path) -> dict[str, Path]:
    """The directory of every repository of ``theorems``, at its stored commit (clones of
    URLs live in ``cache_dir``); a repository changed since ingestion is the user's error."""
    return {loc: _checkout(loc, commit, cache_dir) for loc, commit in {(t.location, t.commit) for t in theorems}}


def _checkout(location: str, commit: str, cache_dir: Path) -> Path:
    local = not RepoSpec(location).is_remote
    # A local directory is proved where it is (its stored commit may be a content hash).
    checkout = resolve(RepoSpec(location, None if local else commit), cache_dir=cache_dir)
    if checkout.commit != commit:
        raise UserInputError(
            f"{location} changed since it was ingested (now {checkout.commit[:16]}, stored {commit[:16]}); "
            "run 'leanagent ingest' on it again first"
        )
    return checkout.path


def build_checkout(
    trace: RepoTrace | None, directory: Path, paths: Iterable[str], config: ProvingConfig, *, data_dir: Path
) -> BuildOutcome | None:
    """Build the checkout ``directory`` for the files ``paths`` of ``trace`` (their imports),
    dependencies shared in DATA_DIR/builds, as ``config`` asks; None when it asks for none."""
    return build_imports(trace, directory, paths, timeout=config.build_timeout, data_dir=data_dir)


def build_imports(
    trace: RepoTrace | None, directory: Path, paths: Iterable[str], *, timeout: float | None, data_dir: Path
) -> BuildOutcome | None:
    """Build the checkout ``directory`` for the files ``paths`` of ``trace`` (their imports)
    within ``timeout`` seconds, dependencies shared in DATA_DIR/builds; None: no build asked
    (``timeout`` None)."""
    from lean_env.lean.build import build_project

    if timeout is None:
        return None
    wanted = set(paths)
    imports = [m for f in (trace.files if trace is not None else ()) if f.path in wanted for m in f.imports]
    outcome = build_project(directory, imports, shared_root=DataLayout(data_dir).builds, timeout=timeout)
    (log.info if outcome.usable else log.error)("%s: %s", directory, outcome.text())
    return outcome
