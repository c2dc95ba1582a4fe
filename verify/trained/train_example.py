"""From a trained model to a verified one: train, quantize, measure the gap, verify.

:func:`run_train_example` is what ``leanagent verify train-example TASK`` and
``bench/verify_training.py`` run:

1. train a :class:`~verify.trained.training.TinyEncoder` on the task (:func:`verify.trained.training.recipe`);
2. quantize it post-training into an :class:`~verify.model.spec.EncoderSpec` and save it;
3. measure float versus quantized accuracy exhaustively on every word up to a small length
   and on a uniform sample of longer words (the quantized model runs through the
   reference interpreter) -- the quantization gap;
4. optionally verify the quantized model with the SMT queries. When
   :mod:`verify.trained.exact_models` has an exact encoder for the language, the question is an
   equivalence ("is there a word of length <= n the model misclassifies?"): UNSAT proves the
   quantized model right on every such word. Otherwise it is plain trSAT ("is there an
   accepted word of length <= n?"), and the witness is checked against the language.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from verify.errors import VerifyInputError
from verify.model import interpreter
from verify.model.spec import Attention, EncoderSpec, save_spec
from verify.queries.questions import equiv, trsat
from verify.queries.results import Progress, QueryOptions
from verify.smt.portfolio import make_portfolio
from verify.smt.solvers import Verdict
from verify.trained.exact_models import exact_max_length, exact_model
from verify.trained.quantize import GapRow, QuantConfig, measure_gap, quantize
from verify.trained.tasks import FormalLanguage, all_words, sample_dataset, sample_words
from verify.trained.training import Recipe, TrainResult, recipe, train

# Calibration sample size: enough to see the extremes of every activation.
CALIBRATION_WORDS = 500


class VerifyQuery(enum.Enum):
    """Which SMT question the example asked."""

    EQUIV_EXACT = "equiv-exact"  # equivalence with an exact encoder of the language
    TRSAT = "trsat"  # plain trSAT: some accepted word exists


@dataclass(frozen=True, slots=True)
class ExampleOptions:
    """Everything the example can be asked to do differently from its task's recipe."""

    attention: Attention | None = None  # None: the recipe's kind
    steps: int | None = None  # None: the recipe's budget
    seed: int = 0
    quant: QuantConfig = QuantConfig()
    # Every word up to this length is evaluated (None: min(10, training max length)).
    exhaustive_len: int | None = None
    # Uniform words longer than that, up to the training max length.
    sample_size: int = 1000
    # Verify words up to this length with SMT; 0 = no verification.
    verify_len: int = 0
    query: QueryOptions = QueryOptions()  # how the verification is solved


@dataclass(frozen=True, slots=True)
class VerificationOutcome:
    """The SMT query the example ran and its answer."""

    query: VerifyQuery
    max_len: int
    verdict: str  # sat | unsat | unknown
    claim: str  # the query's own one-sentence answer
    summary: str  # what it means for this task
    witness: str | None  # the witness or distinguishing word
    model_accepts: bool | None  # the quantized model's decision on it
    in_language: bool | None  # the truth on it
    seconds: float
    solver: str


@dataclass(frozen=True, slots=True)
class ExampleReport:
    """One run of train -> quantize -> evaluate -> (verify)."""

    task: FormalLanguage
    recipe: Recipe
    trained: TrainResult
    spec: EncoderSpec
    spec_path: Path
    quant: QuantConfig
    rows: tuple[GapRow, ...]
    verification: VerificationOutcome | None

    @property
    def gap(self) -> float:
        """The largest accuracy loss over the evaluation sets."""
        return max(row.gap for row in self.rows)


def run_train_example(
    task: FormalLanguage,
    out: Path,
    options: ExampleOptions = ExampleOptions(),
    *,
    progress: Callable[[int, float], None] | None = None,
    on_length: Progress | None = None,
) -> ExampleReport:
    """Train, quantize, save the spec to ``out``, measure the gap and optionally verify.

    ``progress`` sees each training step and its loss, ``on_length`` each verified length."""
    chosen = recipe(task, attention=options.attention)
    train_config = replace(chosen.train, seed=options.seed)
    if options.steps is not None:
        train_config = replace(train_config, steps=options.steps)
    chosen = replace(chosen, train=train_config)
    _check_verify_options(chosen, options)
    trained = train(task, chosen.model, chosen.train, progress=progress)
    max_len = chosen.train.max_len
    calibration = sample_dataset(task, size=CALIBRATION_WORDS, max_len=max_len, seed=options.seed + 1)
    spec = quantize(trained.model, calibration.words, options.quant)
    spec_path = save_spec(spec, out)
    exhaustive_len = min(options.exhaustive_len or min(10, max_len), max_len)
    rows = [
        measure_gap(trained.model, spec, f"all words len<={exhaustive_len}", all_words(task, max_len=exhaustive_len))
    ]
    if exhaustive_len < max_len and options.sample_size > 0:
        longer = sample_words(
            task, size=options.sample_size, min_len=exhaustive_len + 1, max_len=max_len, seed=options.seed + 2
        )
        rows.append(measure_gap(trained.model, spec, f"sampled len {exhaustive_len + 1}..{max_len}", longer))
    verification = _verify(task, spec, options, on_length) if options.verify_len > 0 else None
    return ExampleReport(
        task=task,
        recipe=chosen,
        trained=trained,
        spec=spec,
        spec_path=spec_path,
        quant=options.quant,
        rows=tuple(rows),
        verification=verification,
    )


def _check_verify_options(chosen: Recipe, options: ExampleOptions) -> None:
    """Reject a verification that cannot run before spending the training time on it."""
    if options.verify_len <= 0:
        return
    make_portfolio(options.query.solver)
    limit = chosen.model.max_word_length
    if limit is not None and options.verify_len > limit:
        raise VerifyInputError(
            f"--verify-len {options.verify_len} exceeds the longest word the model's positional table covers ({limit})"
        )


def _verify(
    task: FormalLanguage, spec: EncoderSpec, options: ExampleOptions, on_length: Progress | None
) -> VerificationOutcome:
    n = options.verify_len
    query_options = options.query
    reference = exact_model(task.name)
    limit = exact_max_length(task.name)
    started = time.perf_counter()
    summary = "unknown: the solver gave up before settling every length"
    if reference is not None and (limit is None or n <= limit):
        query = VerifyQuery.EQUIV_EXACT
        result = equiv(spec, reference, max_len=n, options=query_options, progress=on_length)
        verdict, claim, solver = result.verdict, result.claim, result.solver
        word = None if result.counterexample is None else "".join(result.counterexample[0].word)
        if verdict is Verdict.UNSAT:
            summary = f"proved: the quantized model decides {task.name!r} correctly on every word of length <= {n}"
        elif word is not None:
            summary = f"the quantized model misclassifies {word!r} (a shortest such word)"
    else:
        query = VerifyQuery.TRSAT
        found = trsat(spec, max_len=n, options=query_options, progress=on_length)
        verdict, claim, solver = found.verdict, found.claim, found.solver
        word = None if found.witness is None else "".join(found.witness.word)
        if verdict is Verdict.UNSAT:
            summary = f"the model accepts no word of length <= {n}"
        elif word is not None:
            truth = "a member" if task.accepts(word) else "NOT a member (a false accept)"
            summary = f"the model accepts {word!r}, which is {truth} of {task.name!r}"
    return VerificationOutcome(
        query=query,
        max_len=n,
        verdict=verdict.value,
        claim=claim,
        summary=summary,
        witness=word,
        model_accepts=None if word is None else interpreter.run(spec, word).accepted,
        in_language=None if word is None else task.accepts(word),
        seconds=time.perf_counter() - started,
        solver=solver,
    )
