"""``leanagent run``: the lifelong job over a repos file.

Ingest every repository of the file (stored commits are not traced again), order the
database by the curriculum, take one retriever training step for every repository (at its
newest commit) the learner has not learned yet, scoring every repository seen after each
step, and, with ``--generator``, search proofs for the ``sorry`` theorems of the file's
repositories, each right after its repository's step, with premises from the retriever as
trained so far. Found proofs count only after Lean's final check. A report (JSON and
Markdown) goes to DATA_DIR/reports. Everything is resumable: the learner is kept in
DATA_DIR/learner after every step, attempts are recorded per run, and a run that was killed,
interrupted or failed is resumed under its own id when started again with the same options.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.commands.data import (
    backend_option,
    curriculum_text,
    ingest_with_progress,
    json_option,
    jsonable,
    open_store,
    outcomes_text,
    short_commit,
    tracked_run,
)
from agent.commands.prove import (
    ProveOptions,
    add_prove_options,
    attempted_rows,
    attempts_table,
    backend_opener,
    checkout_all,
    prove_options,
    prove_targets,
)
from agent.commands.retrieval import (
    add_train_options,
    model_key,
    save_model,
    traces_in_curriculum_order,
    train_config,
    training_payload,
    training_text,
)
from agent.output import emit
from agent.report import check_directory, plot_matrix, write_report, write_text_atomically
from agent.settings import Settings
from lean_env.records import TheoremStatus

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from agent.prove import TheoremProver
    from agent.scale import ProofDone, ProofJob, ProverRecipe
    from curriculum.results import StoredTheorem
    from curriculum.store import Store
    from lean_env.records import RepoTrace
    from retrieval.encoder import TextEncoder
    from retrieval.progressive import ProgressiveReport, ProgressRow
    from retrieval.train import TrainConfig


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = subparsers.add_parser(
        "run",
        help="the lifelong job over a repos file: ingest, order, train the retriever, prove sorries, report",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    run.add_argument("repos", type=Path, metavar="FILE", help="a repos file: one 'LOCATION [COMMIT]' per line")
    backend_option(run)
    run.add_argument("--no-train", action="store_true",
                     help="ingest and order only, no retriever training (with --generator: prove without premises)")
    add_train_options(run)
    add_prove_options(run, backend_flag="--proof-backend", generator_required=False)
    json_option(run)
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from curriculum.ordering import curriculum_of
    from lean_env.repos import parse_repos_file

    specs = parse_repos_file(args.repos)
    train = None if args.no_train else train_config(args)
    prove = prove_options(args) if args.generator else None
    config = {
        "command": "run",
        "repos": str(args.repos.resolve()),
        "backend": args.backend,
        "train": None if train is None else {**dataclasses.asdict(train), "model": model_key(args.model), "test_fraction": args.test_fraction},
        "prove": None if prove is None else {"generator": model_key(args.generator), **prove.as_dict()},
    }
    reports = settings.data_dir / "reports"
    check_directory(reports, "the reports")  # before hours of work, not after
    with open_store(settings) as store, tracked_run(store, config) as (run, resumed):
        outcomes = ingest_with_progress(store, args, settings, specs)
        order = curriculum_of(store)
        ordered = traces_in_curriculum_order(store, order)
        # The file's repositories are the proving targets, in curriculum order.
        mine = {o.location for o in outcomes}
        prover = _Prover.start(store, run.id, ordered, [t.spec.location for t in ordered if t.spec.location in mine], args, prove, settings) if prove else None
        training: ProgressiveReport | None = None
        try:
            if train is not None:
                training = _train(ordered, args, train, settings, prover)
            elif prover is not None:
                for location in prover.locations:
                    prover.prove(location, retriever=None)
        finally:
            if prover is not None:
                prover.close()
        payload: dict[str, Any] = {
            "run": run.id,
            "resumed": resumed,
            "ingest": [jsonable(o) for o in outcomes],
            "curriculum": order.as_dict(),
            "training": None if training is None else {"model": str(settings.data_dir / "retriever"), **training_payload(training)},
            "proving": None if prover is None else {
                "attempts": prover.rows, "targets": prover.target_count, "patches": prover.write_patches(reports, f"run-{run.id}"),
            },
        }
        sections = [
            ("Ingest", outcomes_text(outcomes)),
            ("Curriculum", curriculum_text(order)),
            ("Retriever training", _training_section(training, settings)),
            ("Proving", _proving_section(prover, ordered, mine, payload["proving"])),
        ]
        images = _plots(training, reports, f"run-{run.id}")
        if training is not None and not images:
            sections.append(("Plots", "not drawn: they need matplotlib (pip install 'leanagent[plots]')"))
        # Inside the run: a report that cannot be written fails the run, which is then
        # resumed (its work kept) rather than left finished without a report.
        paths = write_report(reports, f"run-{run.id}", payload, title=f"leanagent run {run.id}", sections=sections, images=images)
    payload["report"] = [str(p) for p in paths]
    header = f"run {run.id}" + (" (resumed)" if resumed else "")
    human = "\n\n".join([header, *(text for _, text in sections), f"report: {', '.join(map(str, paths))}"])
    emit(payload, human, as_json=args.json)
    return 0


def _train(
    ordered: list[RepoTrace], args: argparse.Namespace, config: TrainConfig, settings: Settings, prover: _Prover | None
) -> ProgressiveReport:
    """One step per repository the learner has not learned at its newest commit; with a
    prover, each file repository's sorries are attempted after its step."""
    from tqdm import tqdm

    from retrieval.encoder import TextEncoder
    from retrieval.progressive import learner_id, prepare_checkpoint, run_progressive

    model_id = model_key(args.model)
    # One learner per database, starting model and options, kept across runs: it is the
    # lifelong state (another database or model starts another learner, it never mixes).
    name = learner_id(config, test_fraction=args.test_fraction, model_id=model_id, place=settings.db_url)
    learner = settings.data_dir / "learner" / f"{name}.pt"
    prepare_checkpoint(learner)
    encoder = TextEncoder.load(args.model)
    newest = {t.spec.location: t.commit for t in ordered}

    def after_step(row: ProgressRow) -> None:
        bar.update()
        # A repository is proved after the step of its newest commit (a row of an older
        # commit picked up from the learner is history), if it has sorries left to try.
        if prover is not None and row.commit == newest.get(row.repo) and prover.has_work(row.repo):
            prover.prove(row.repo, retriever=encoder)

    with tqdm(desc="training", unit="repo", disable=None) as bar:
        report = run_progressive(ordered, encoder, config, test_fraction=args.test_fraction, on_step=after_step,
                                 checkpoint=learner, model_id=model_id)
    save_model(encoder, settings.data_dir / "retriever", kept_in=learner)
    return report


@dataclasses.dataclass(slots=True)
class _Prover:
    """Proves the sorries of the file's repositories, each repository at most once per run,
    with the premises of the retriever as trained so far: in this process, or on Ray workers
    (which load the retriever as saved after the step)."""

    store: Store
    run_id: int
    locations: list[str]  # in curriculum order
    targets: dict[str, list[StoredTheorem]]
    checkouts: dict[str, Path]
    traces: dict[str, RepoTrace]  # each repository's newest trace: the premises its theorems may use
    recipe: ProverRecipe  # how a Ray worker builds its prover (without a retriever)
    workers: int
    snapshot: Path  # where the retriever is saved for Ray workers
    here: TheoremProver | None  # the in-process prover (one worker)
    known: dict[tuple[str, str], StoredTheorem]  # (repository, full name) -> its stored theorem
    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # every attempt of the run
    _proved: set[str] = dataclasses.field(default_factory=set)

    @classmethod
    def start(cls, store: Store, run_id: int, ordered: list[RepoTrace], locations: list[str], args: argparse.Namespace,
              options: ProveOptions, settings: Settings) -> _Prover:
        """Check out the repositories, make sure Lean is there and load the generator, before
        any training: a missing toolchain or a bad generator is reported before hours of
        work, not after."""
        from agent.generator import HFTacticGenerator
        from agent.prove import TheoremProver
        from agent.scale import ProverRecipe
        from lean_env.lean.runner import LeanRunner

        targets = {loc: store.theorems(status=TheoremStatus.SORRY, location=loc) for loc in locations}
        known = [t for loc in locations for t in store.theorems(location=loc)]
        # Every repository, not only those with sorries left: a resumed run writes the
        # patches of proofs it found before the interruption too.
        checkouts = checkout_all(known, settings)
        for directory in checkouts.values():
            LeanRunner.for_project(directory)  # raises LeanNotFoundError, with how to install
        generator = HFTacticGenerator.load(args.generator)
        recipe = ProverRecipe(args.generator, backend_opener(options, settings), options.config, premises=options.premises)
        here = TheoremProver(generator, open_backend=recipe.open_backend, config=options.config) if options.workers == 1 else None
        # A resumed run reports the attempts it made before the interruption too (by then
        # proved_by_us, those it proved are no sorry targets any more).
        earlier = attempted_rows(store, run_id, known)
        return cls(store, run_id, locations, targets, checkouts, {t.spec.location: t for t in ordered}, recipe, options.workers,
                   settings.data_dir / "retriever", here, {(t.location, t.theorem.full_name): t for t in known}, rows=earlier)

    def has_work(self, location: str) -> bool:
        return location not in self._proved and bool(self.targets.get(location))

    @property
    def target_count(self) -> int:
        return sum(len(found) for found in self.targets.values())

    def prove(self, location: str, *, retriever: TextEncoder | None) -> None:
        from agent.prove import premise_source
        from agent.scale import prove_here, prove_on_ray

        if location in self._proved:
            return  # once per run
        self._proved.add(location)
        # Only the repository's own premises: no other repository's are accessible from its
        # theorems (imports are followed within a repository), so embedding them is waste.
        corpus = (self.traces[location],)
        execute: Callable[[list[ProofJob]], Iterator[ProofDone]]
        if self.here is not None:
            here = self.here
            here.premises = premise_source(corpus, retriever, k=self.recipe.premises) if retriever else None
            execute = lambda jobs: prove_here(jobs, here)  # noqa: E731
        else:
            recipe = self.recipe
            if retriever is not None:
                save_model(retriever, self.snapshot)
                recipe = dataclasses.replace(recipe, retriever=str(self.snapshot), corpus=corpus)
            execute = lambda jobs: prove_on_ray(jobs, recipe, workers=self.workers)  # noqa: E731
        self.rows += prove_targets(self.store, self.run_id, self.targets[location], checkouts=self.checkouts, prove=execute)

    def write_patches(self, directory: Path, name: str) -> dict[str, str]:
        """One patch per repository with proofs found in this run (``git apply`` format),
        written to ``directory``; returns repository -> patch file."""
        from lean_env.proofs.writeback import ProofEdit, render_diff

        patches = {}
        for number, location in enumerate(self.locations, start=1):
            edits = [ProofEdit(self.known[(location, r["theorem"])].theorem, r["proof"])
                     for r in self.rows if r["repository"] == location and r["outcome"] == "proved"]
            if edits:
                path = directory / f"{name}-{number}-{Path(location).name or 'repo'}.patch"
                write_text_atomically(path, render_diff(self.checkouts[location], edits))
                patches[location] = str(path)
        return patches

    def close(self) -> None:
        if self.here is not None:
            self.here.close()


def _plots(training: ProgressiveReport | None, directory: Path, name: str) -> list[tuple[str, Path]]:
    """The recall@10 and MRR matrices as line plots, one line per repository."""
    if training is None or not training.rows:
        return []
    steps = [f"{Path(r.repo).name or r.repo} @ {short_commit(r.commit)}" for r in training.rows]
    images = []
    for metric, pick in (("recall@10", lambda s: s.recall[10]), ("MRR", lambda s: s.mrr)):
        path = plot_matrix(directory / f"{name}-{metric.replace('@', '')}.png", steps=steps, repos=training.repos,
                           matrix=training.matrix(pick), metric=metric)
        if path is not None:
            images.append((f"{metric} on each repository after each step", path))
    return images


def _training_section(training: ProgressiveReport | None, settings: Settings) -> str:
    if training is None:
        return "not asked (--no-train)"
    return f"{training_text(training)}\nretriever saved to {settings.data_dir / 'retriever'}"


def _proving_section(prover: _Prover | None, ordered: list[RepoTrace], mine: set[str], proving: dict[str, Any] | None) -> str:
    if prover is None:
        sorries = sum(t.status is TheoremStatus.SORRY for trace in ordered if trace.spec.location in mine for t in trace.theorems)
        return f"not asked: give --generator NAME|DIR to search proofs of the {sorries} sorry theorem(s)"
    proved = sum(r["outcome"] == "proved" for r in prover.rows)
    summary = f"{proved} of {len(prover.rows)} attempted proved and checked by Lean ({prover.target_count} sorry theorem(s) in all)"
    patches = [f"proofs of {location} as a patch: {path}" for location, path in (proving or {}).get("patches", {}).items()]
    return "\n".join(([attempts_table(prover.rows)] if prover.rows else []) + [summary, *patches])
