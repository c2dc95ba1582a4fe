"""Command-line options that several commands share, each read into the typed options the
library takes (checked here, at the edge, so that bad input fails before any work)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any

from agent.generators.premises import PREMISES_PER_GOAL
from agent.proving.config import TACTIC_SHARE, ProvingConfig
from agent.search.tree import CANDIDATES_PER_EXPANSION, SearchConfig
from lean_env.errors import UserInputError
from lean_env.interactive.choice import ProofBackendChoice
from lean_env.interactive.interface import TACTIC_TIMEOUT
from lean_env.interactive.repl.pool import Recycling
from lean_env.lean.build import DEFAULT_BUILD_TIMEOUT
from lean_env.proofs.final_check import DEFAULT_TIMEOUT as FINAL_CHECK_TIMEOUT
from lean_env.trace.choice import TracerChoice
from retrieval.formats import (
    GENERATOR_INPUT_LENGTH,
    GENERATOR_OUTPUT_LENGTH,
    RETRIEVER_LENGTH,
)
from retrieval.index_options import RECALL_TARGET, IndexOptions
from retrieval.split import TEST_FRACTION
from retrieval.train_config import Consolidation, Loss, Schedule, TrainConfig

# The options' defaults are the configs' own (one default per value): proving's (the search's
# budgets, the tactic timeout, workers and servers) and retriever training's hyper-parameters.
_PROVING = ProvingConfig()
_TRAIN = TrainConfig()

MODEL_HELP = "encoder: a local directory or a Hugging Face name (default: the bundled MiniLM, offline)"


# ---- value types: argparse calls them while parsing, so every command rejects bad values
# ---- the same way (one line, exit 2) before any work or heavy import


def at_least(minimum: int) -> Callable[[str], int]:
    """A whole number >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = f"at_least_{minimum}"
    return parse


positive_int = at_least(1)


def _number(text: str, valid: Callable[[float], bool], what: str) -> float:
    """``text`` as a finite number that is ``valid``, else "must be ``what``"."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and valid(value)):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    return _number(text, lambda v: v > 0, "a positive number of seconds")


def short_number(value: float) -> str:
    """``value`` as a help text writes it: 2e-5, 5e-4 and 1e10, not Python's 2e-05, 0.0005 and 1e+10."""
    if value and not 1e-3 <= abs(value) < 1e5:
        mantissa, exponent = f"{value:e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    return f"{value:g}"


def positive_number(text: str) -> float:
    return _number(text, lambda v: v > 0, "a positive number")


def non_negative_number(text: str) -> float:
    return _number(text, lambda v: v >= 0, "a non-negative number")


def fraction(text: str) -> float:
    """A number strictly between 0 and 1."""
    return _number(text, lambda v: 0 < v < 1, "between 0 and 1")


def glob(text: str) -> str:
    """A non-empty glob of repository paths."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a glob of repository paths, got an empty one")
    return text


def skip_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--skip",
        action="append",
        type=glob,
        default=None,
        metavar="GLOB",
        help="leave the sorries of the files matching GLOB alone (exercises), in every repository: "
        "counted, never proved; a path relative to the repository root, '*' matching across '/', a "
        "directory meaning everything in it (repeatable)",
    )


def include_exercises_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--include-exercises",
        action="store_true",
        help="prove the sorries that look like exercises too (an exercise file or folder, a solutions twin, a "
        "proved declaration with the same statement, a comment saying exercise), which are left alone by default",
    )


def device(text: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (whether this machine has it is checked when
    a model is placed, after parsing: that needs torch)."""
    from retrieval.devices import DeviceError, check_device

    try:
        return check_device(text)
    except DeviceError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def device_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device",
        type=device,
        default="auto",
        metavar="auto|cpu|cuda[:N]",
        help="where the models run: auto (the first CUDA device when torch sees one, else the CPU; default), "
        "cpu, cuda or cuda:N; bfloat16 on GPUs of compute capability 8 and up, float32 elsewhere",
    )


def retriever_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retriever",
        default=None,
        metavar="NAME|DIR",
        help="premise encoder to condition the generator on (default: no premises)",
    )


def repo_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo", default=None, metavar="LOCATION", help="only the theorems of this stored repository (its URL or path)"
    )


def retriever_length_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retriever-len",
        type=positive_int,
        default=RETRIEVER_LENGTH,
        metavar="N",
        help=f"tokens of a goal or premise the retriever embeds (default: {RETRIEVER_LENGTH}, ReProver's; bytes "
        "for ByT5; at most the model's positions; 256 is CPU-friendly)",
    )


def recall(text: str) -> float:
    """A recall between 0 and 1 (both included)."""
    return _number(text, lambda v: 0 <= v <= 1, "between 0 and 1")


def recall_target_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--recall-target",
        type=recall,
        default=RECALL_TARGET,
        metavar="R",
        help="recall@10 against exact search that an approximate premise index must measure on calibration "
        "queries (its own premises held out, and stored theorems' goal states) and keep on the goals it serves "
        f"(a share of them answered exactly too), else it scans more or searches exactly (default: {RECALL_TARGET}); "
        "small corpora and GPU indexes are exact anyway",
    )


def index_options(args: argparse.Namespace) -> IndexOptions:
    """The premise index's options of :func:`recall_target_option`."""
    return IndexOptions(recall_target=args.recall_target)


def generator_length_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-len",
        type=at_least(16),
        default=GENERATOR_INPUT_LENGTH,
        metavar="N",
        help=f"tokens of the generator's input, also the premises' budget in UTF-8 bytes (default: "
        f"{GENERATOR_INPUT_LENGTH}, ReProver's; 1024 is CPU-friendly)",
    )
    parser.add_argument(
        "--tactic-len",
        type=positive_int,
        default=GENERATOR_OUTPUT_LENGTH,
        metavar="N",
        help=f"tokens of a generated tactic (default: {GENERATOR_OUTPUT_LENGTH}, ReProver's; 128 is CPU-friendly)",
    )


def check_timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check-timeout",
        type=positive_seconds,
        default=FINAL_CHECK_TIMEOUT,
        metavar="S",
        help=f"seconds for the final check's Lean run over a theorem's file (default: {FINAL_CHECK_TIMEOUT:g})",
    )


def build_options(parser: argparse.ArgumentParser, *, before: str) -> None:
    """``--build-timeout S`` and ``--no-build``: how a Lake checkout is built ``before`` Lean
    checks its files (read back by :func:`build_timeout`)."""
    parser.add_argument(
        "--build-timeout",
        type=positive_seconds,
        default=DEFAULT_BUILD_TIMEOUT,
        metavar="S",
        help=f"seconds to build a Lake checkout before {before}: `lake exe cache get` when it uses Mathlib, "
        f"then `lake build` of the modules its files import (default: {DEFAULT_BUILD_TIMEOUT:g})",
    )
    parser.add_argument(
        "--no-build", action="store_true", help=f"do not build checkouts before {before} (you built them)"
    )


def build_timeout(args: argparse.Namespace) -> float | None:
    """The seconds :func:`build_options` allow a build; None: no build."""
    return None if args.no_build else float(args.build_timeout)


def json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def wait_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        action="store_true",
        help="when another job holds the data directory or the database, wait for it to end "
        "(default: exit 2 at once, naming it)",
    )


class _Renamed(argparse.Action):
    """An option's old name, kept for one release: it sets what the new name sets and says
    on stderr, in one line, which name to use; ``--help`` does not show it."""

    def __init__(self, option_strings: list[str], dest: str, *, new: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"leanagent: warning: {option_string} is deprecated, use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def renamed_option(parser: argparse.ArgumentParser, old: str, new: argparse.Action) -> None:
    """``old``: a deprecated name of the option ``new`` (same destination and choices)."""
    parser.add_argument(old, action=_Renamed, dest=new.dest, choices=new.choices, new=new.option_strings[0])


def tracer_option(parser: argparse.ArgumentParser) -> None:
    tracer = parser.add_argument(
        "--tracer",
        choices=[c.value for c in TracerChoice],
        default=TracerChoice.AUTO.value,
        help="how to trace: dojo (LeanDojo, needs Lean), source (no Lean needed) or auto (dojo "
        "when Lean and lean_dojo are available, else source; default)",
    )
    renamed_option(parser, "--backend", tracer)  # its name until the next release


# ---- retriever training ----------------------------------------------------------------


def model_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=None, metavar="NAME|DIR", help=MODEL_HELP)


def split_options(parser: argparse.ArgumentParser, *, test_fraction: float = TEST_FRACTION) -> None:
    parser.add_argument(
        "--test-fraction",
        type=fraction,
        default=test_fraction,
        help=f"share of each repository's theorems held out (default: {test_fraction:g})",
    )
    parser.add_argument(
        "--seed", type=int, default=_TRAIN.seed, help="seed of the split and the training (default: %(default)s)"
    )


def add_train_options(parser: argparse.ArgumentParser) -> None:
    """The starting model and the training options (``retrieval train`` and ``run`` share them)."""
    model_option(parser)
    parser.add_argument(
        "--consolidation",
        choices=[c.value for c in Consolidation],
        default=_TRAIN.consolidation.value,
        help="against forgetting (default: %(default)s)",
    )
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=_TRAIN.epochs,
        help="passes over each repository's examples (default: %(default)s)",
    )
    # A contrastive batch needs a negative: two examples at least.
    parser.add_argument(
        "--batch-size",
        type=at_least(2),
        default=_TRAIN.batch_size,
        help="examples per contrastive batch, at least 2 (default: %(default)s)",
    )
    parser.add_argument(
        "--lr",
        type=positive_number,
        default=_TRAIN.learning_rate,
        help=f"AdamW learning rate (default: {short_number(_TRAIN.learning_rate)})",
    )
    parser.add_argument(
        "--train-len",
        type=positive_int,
        default=_TRAIN.max_length,
        metavar="N",
        help="tokens of a goal or premise in training (default: %(default)s, ReProver's; 256 is CPU-friendly)",
    )
    parser.add_argument(
        "--ewc-lambda",
        type=non_negative_number,
        default=_TRAIN.ewc_lambda,
        help=f"weight of the EWC penalty (default: {short_number(_TRAIN.ewc_lambda)})",
    )
    parser.add_argument(
        "--loss",
        choices=[c.value for c in Loss],
        default=_TRAIN.loss.value,
        help="infonce (in-batch negatives; default: it learned the benchmark best) or mse (ReProver's: cosine "
        "similarity against used/unused, with in-batch and hard negatives); docs/retrieval.md compares them",
    )
    parser.add_argument(
        "--negatives",
        type=at_least(0),
        default=_TRAIN.negatives,
        metavar="N",
        help="hard negatives per example of the mse loss (default: %(default)s, ReProver's)",
    )
    parser.add_argument(
        "--in-file-negatives",
        type=at_least(0),
        default=_TRAIN.in_file_negatives,
        metavar="N",
        help="of them from the used premise's file (default: %(default)s, ReProver's)",
    )
    parser.add_argument(
        "--schedule",
        choices=[c.value for c in Schedule],
        default=_TRAIN.schedule.value,
        help="learning rate in each repository's step: constant (default) or cosine (ReProver's: linear "
        "warmup, then a cosine to 0)",
    )
    parser.add_argument(
        "--warmup-steps",
        type=at_least(0),
        default=_TRAIN.warmup_steps,
        metavar="N",
        help="batches of linear warmup of the cosine schedule (default: %(default)s, LeanAgent's)",
    )
    split_options(parser)


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The options of :func:`add_train_options` (each checked by its type while parsing; the
    in-file negatives, a share of the negatives, here)."""
    if args.in_file_negatives > args.negatives:
        raise UserInputError(f"--in-file-negatives {args.in_file_negatives} is more than --negatives {args.negatives}")
    return TrainConfig(
        consolidation=Consolidation(args.consolidation),
        loss=Loss(args.loss),
        negatives=args.negatives,
        in_file_negatives=args.in_file_negatives,
        schedule=Schedule(args.schedule),
        warmup_steps=args.warmup_steps,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        max_length=args.train_len,
        ewc_lambda=args.ewc_lambda,
        seed=args.seed,
    )


# ---- proving ---------------------------------------------------------------------------


def premises_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--premises",
        type=positive_int,
        default=PREMISES_PER_GOAL,
        metavar="K",
        help=f"premises per goal from the retriever, of which those that fit the input are shown (default: "
        f"{PREMISES_PER_GOAL}, ReProver's; 10 is CPU-friendly)",
    )


def add_prove_options(parser: argparse.ArgumentParser, *, backend_alias: bool) -> None:
    """The generator, proof environment and search budgets (``prove``, ``evaluate`` and
    ``run`` share them); ``backend_alias``: ``--backend`` is a deprecated name of
    ``--proof-backend`` (where it does not name the tracer)."""
    parser.add_argument(
        "--generator",
        default=None,
        metavar="NAME|DIR",
        help="a trained tactic generator: a local directory or a Hugging Face name "
        "(e.g. kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small; needs the network once); "
        "default: the built-in suggester (stored proofs' tactics, premise templates, closing tactics)",
    )
    parser.add_argument(
        "--with-suggester",
        action="store_true",
        help="with --generator: merge the built-in suggester's candidates with the model's (half the probability each)",
    )
    premises_option(parser)
    proof_backend = parser.add_argument(
        "--proof-backend",
        choices=[c.value for c in ProofBackendChoice],
        default=ProofBackendChoice.AUTO.value,
        help="proof environment: repl (Lean REPL), dojo (LeanDojo), server (file checks through `lean --server`: "
        "the file before the theorem elaborated once), file (one `lean` run per batch of candidates), auto (repl "
        "when found, else server)",
    )
    if backend_alias:
        renamed_option(parser, "--backend", proof_backend)  # its name until the next release
    parser.add_argument(
        "--candidates",
        type=positive_int,
        default=CANDIDATES_PER_EXPANSION,
        help=f"tactics asked per expanded goal, the beams of beam search (default: {CANDIDATES_PER_EXPANSION}, "
        "LeanDojo's evaluation; 8 is CPU-friendly: docs/search.md)",
    )
    generator_length_options(parser)
    parser.add_argument(
        "--max-expansions",
        type=positive_int,
        default=_PROVING.search.max_expansions,
        help=f"goals expanded per theorem (default: {_PROVING.search.max_expansions})",
    )
    parser.add_argument(
        "--time-limit",
        type=positive_seconds,
        default=_PROVING.search.time_limit,
        metavar="S",
        help="wall seconds per theorem: opening it, the search and the final check, every Lean run cut to what "
        f"is left (default: {_PROVING.search.time_limit:g})",
    )
    parser.add_argument(
        "--tactic-timeout",
        type=positive_seconds,
        default=None,
        metavar="S",
        help=f"seconds per tactic (default: {TACTIC_SHARE * 100:g}%% of --time-limit, at most {TACTIC_TIMEOUT:g})",
    )
    check_timeout_option(parser)
    build_options(parser, before="proving it")
    parser.add_argument(
        "--repl-max-uses",
        type=positive_int,
        default=None,
        metavar="N",
        help="replace a Lean REPL process by a fresh one after N requests (its states are replayed there; "
        "default: no limit)",
    )
    parser.add_argument(
        "--repl-max-memory",
        type=positive_int,
        default=Recycling().max_memory_mb,
        metavar="MB",
        help=f"replace a Lean REPL process whose process tree holds more than MB of resident memory, between "
        f"requests (default: {Recycling().max_memory_mb})",
    )
    parser.add_argument(
        "--lean-servers",
        type=positive_int,
        default=_PROVING.servers,
        metavar="N",
        help="with the server backend: N language servers per theorem, checking N candidates at once on N cores "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--ranking",
        action="store_true",
        help="reweight the candidates by how likely Lean is to accept each, as learned from every tactic earlier "
        "attempts tried (once 200 are recorded; default: off, it has not yet proved more: docs/search.md)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=_PROVING.workers,
        metavar="N",
        help="prove on N Ray workers (pip install 'leanagent[ray]'; same results as in-process; "
        "default: %(default)s, in this process)",
    )


def proving_config(args: argparse.Namespace) -> ProvingConfig:
    """The options of :func:`add_prove_options` (values checked by their types while
    parsing); Ray must be importable for more than one worker."""
    if args.workers > 1:
        from agent.proving.scale import require_ray

        require_ray()
    return ProvingConfig(
        generator=args.generator,
        with_suggester=args.with_suggester,
        device=args.device,
        backend=ProofBackendChoice(args.proof_backend),
        search=SearchConfig(
            num_candidates=args.candidates, max_expansions=args.max_expansions, time_limit=args.time_limit
        ),
        premises=args.premises,
        input_len=args.input_len,
        tactic_len=args.tactic_len,
        tactic_timeout=args.tactic_timeout,
        repl=Recycling(max_uses=args.repl_max_uses, max_memory_mb=args.repl_max_memory),
        servers=args.lean_servers,
        check_timeout=args.check_timeout,
        build_timeout=build_timeout(args),
        workers=args.workers,
        index=index_options(args),
        ranking=args.ranking,
    )
