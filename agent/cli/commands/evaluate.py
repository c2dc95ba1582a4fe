"""``leanagent evaluate``: Pass@1 on stored theorems that have proofs (ReProver's protocol).

For each chosen theorem its own proof is hidden (the file's other theorems keep theirs), the
search runs as ``prove`` runs it, and Lean checks the file with the proof found. The proofs
under evaluation never reach the suggester's memory, found proofs are not learned during the
run (each theorem is proved on its own), and the retriever offers only premises accessible
at the theorem. A found proof is vacuous when it depends on sorryAx or a non-standard axiom
that the original proof does not. Prints Pass@1 with a 95% interval, per repository and per
curriculum bucket, and against the time budget; writes a JSON and Markdown report with a
plot to DATA_DIR/reports. Attempts are recorded under an evaluation run (re-run to resume);
nothing is marked proved or written back.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agent.cli.options import (
    add_prove_options,
    device_option,
    fraction,
    json_option,
    positive_int,
    proving_config,
    recall_target_option,
    repo_option,
    retriever_length_option,
    retriever_option,
    wait_option,
)
from agent.reports.output import emit
from agent.workspace.joblock import holding_job_lock
from agent.workspace.settings import Settings
from lean_env.errors import UserInputError
from retrieval.split import SPLIT_SEED, TEST_FRACTION


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate = subparsers.add_parser(
        "evaluate",
        help="Pass@1 on stored theorems with proofs: each proof hidden in turn, searched, checked by Lean",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    repo_option(evaluate)
    chosen = evaluate.add_mutually_exclusive_group()  # the theorems: all, unless one of these
    chosen.add_argument(
        "--theorems",
        type=Path,
        default=None,
        metavar="FILE",
        help="the theorems to evaluate, one per line: FULL_NAME, or PATH:NAME (NAME the full name or the name "
        "as declared in that file); '#' starts a comment",
    )
    chosen.add_argument(
        "--split",
        choices=("test",),
        default=None,
        help="test: the retriever's held-out split (as 'run' and 'retrieval train' hold theorems out, with "
        "--test-fraction and --split-seed), so a trained retriever is never evaluated on its training theorems",
    )
    chosen.add_argument(
        "--benchmark-split",
        choices=("random", "novel_premises"),
        default=None,
        help="the test split of this strategy of the LeanDojo Benchmark 4 directory --benchmark (its theorems, "
        "stored with their sources, e.g. by ingesting the repository at that commit)",
    )
    evaluate.add_argument(
        "--benchmark", type=Path, default=None, metavar="DIR", help="with --benchmark-split: the benchmark directory"
    )
    evaluate.add_argument(
        "--test-fraction",
        type=fraction,
        default=TEST_FRACTION,
        help="with --split test: the held-out share the retriever was trained with (default: %(default)s)",
    )
    evaluate.add_argument(
        "--split-seed",
        type=int,
        default=SPLIT_SEED,
        help=f"with --split test: the seed of the retriever's split (default: {SPLIT_SEED})",
    )
    evaluate.add_argument(
        "--sample", type=positive_int, default=None, metavar="N", help="a seeded sample of N of the chosen theorems"
    )
    evaluate.add_argument("--seed", type=int, default=None, help="the seed of --sample (default: 0)")
    add_prove_options(evaluate, backend_alias=True)
    retriever_option(evaluate)
    retriever_length_option(evaluate)
    recall_target_option(evaluate)
    device_option(evaluate)
    wait_option(evaluate)
    json_option(evaluate)
    evaluate.set_defaults(handler=_evaluate)


@holding_job_lock("evaluate")
def _evaluate(args: argparse.Namespace, settings: Settings) -> int:
    from agent.evaluation.evaluate import Selection, evaluate
    from agent.evaluation.report import plot_budget_curve, summary_text, theorems_table
    from agent.reports.files import check_directory, write_report
    from agent.workspace.data import open_store

    if args.sample is None and args.seed is not None:
        raise UserInputError("--seed is the seed of --sample; give --sample N too")
    if (args.benchmark is None) != (args.benchmark_split is None):
        raise UserInputError("--benchmark DIR and --benchmark-split STRATEGY go together")
    selection = Selection(
        repo=args.repo,
        theorems=args.theorems,
        split_test=args.split == "test",
        test_fraction=args.test_fraction,
        split_seed=args.split_seed,
        benchmark=args.benchmark,
        benchmark_split=args.benchmark_split or "random",
        sample=args.sample,
        seed=args.seed or 0,
    )
    reports = settings.layout.reports
    check_directory(reports, "the reports")  # before the work, not after
    with open_store(settings) as store:
        result = evaluate(
            store,
            selection,
            proving_config(args),
            data_dir=settings.data_dir,
            retriever=args.retriever,
            retriever_len=args.retriever_len,
        )
    name = f"evaluate-{result.run_id}"
    plot = plot_budget_curve(result, reports / f"{name}-budget.png")
    summary, theorems = summary_text(result), theorems_table(result)
    paths = write_report(
        reports,
        name,
        result.to_json(),
        title=f"leanagent evaluate, run {result.run_id}",
        sections=[("Pass@1", summary), ("Theorems", theorems)],
        images=[("Pass@1 against the time budget", plot)] if plot else [],
    )
    payload = {**result.to_json(), "report": [str(p) for p in paths]}
    human = "\n\n".join([theorems, summary, f"report: {', '.join(map(str, paths))}"])
    emit(payload, human, as_json=args.json)
    return 0
