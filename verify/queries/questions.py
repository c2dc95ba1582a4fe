"""The verifier's questions: trSAT, local robustness, and equivalence of two encoders.

Each question is answered one word length at a time: first the interpreter pre-pass of
:mod:`verify.queries.presearch` (which decides a length when its candidate words, or the words that
stand for all of them by :mod:`verify.queries.signatures` or :mod:`verify.queries.words`, are few, and
otherwise may find a witness among a sample), then a fresh pysmt
``Environment`` per length, the encoding of :mod:`verify.smt.encoding`, one solver call. A SAT
answer's witness word is replayed through :mod:`verify.model.interpreter` before it is reported;
if the replay disagrees, :class:`~verify.errors.WitnessMismatchError` is raised (an internal
error, never a silent answer). An UNSAT answer covers exactly the lengths searched ("no word
of length <= n") unless :mod:`verify.queries.completeness` gives a bound that the search reached.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
from pysmt.environment import Environment
from pysmt.fnode import FNode

from verify.errors import Interrupted, VerifyInputError, WitnessMismatchError
from verify.model import interpreter as ref
from verify.model.interpreter import EncoderOutput
from verify.model.spec import Accept, EncoderSpec
from verify.queries.completeness import LengthBound, joint_bound, length_bound, padding_position
from verify.queries.presearch import (
    Hit,
    PresearchResult,
    enumerate_words,
    run_all,
    search_ball,
    search_product,
    word_count,
)
from verify.queries.results import (
    CUBES_PER_JOB,
    CheckMethod,
    EquivResult,
    LengthCheck,
    Progress,
    QueryOptions,
    RobustResult,
    TrsatResult,
    Witness,
)
from verify.queries.signatures import signature_words
from verify.queries.words import WordConstraints, WordSpace, canonical_words, cubes, reduction, symmetry_breaking
from verify.smt.bitvec import Builder, OutOfTime
from verify.smt.encoding import EncodedRun, EncodingOptions, encode
from verify.smt.portfolio import Portfolio, make_portfolio, solve_cubes
from verify.smt.solvers import Problem, Verdict

log = logging.getLogger(__name__)

_Found = TypeVar("_Found")  # what a length's check found: a witness, or a pair of them

__all__ = ["equiv", "export_smt", "robust", "search_lengths", "trsat"]


def _check_length(spec: EncoderSpec, n: int) -> None:
    limit = ref.max_word_length(spec)
    if limit is not None and n > limit:
        raise VerifyInputError(f"length {n} exceeds what the positional table covers (words up to {limit})")


@dataclass(frozen=True, slots=True)
class _Query:
    """One length's formula: the assertions and the word variables to read back."""

    env: Environment
    variables: list[FNode]
    assertions: list[FNode]
    encode_seconds: float


def _build(
    specs: Sequence[EncoderSpec],
    words: WordSpace,
    n: int,
    domains: Sequence[tuple[str, ...]],
    goal: Callable[[Environment, list[EncodedRun], list[FNode]], FNode],
    options: QueryOptions,
    *,
    cube: Sequence[tuple[str, ...]] | None = None,
    symmetric: bool = True,
    deadline: float | None = None,
) -> _Query:
    """One length's formula over the words of ``domains``, or of ``cube`` (a part of them:
    the symmetry breaking still follows the whole length's ``domains``, so the cubes' canonical
    words are together the length's); past ``deadline`` (:func:`time.perf_counter`) the
    encoding raises :class:`~verify.smt.bitvec.OutOfTime`."""
    start = time.perf_counter()
    env = Environment()
    variables = words.variables(env, n)
    part = domains if cube is None else cube
    runs = [
        encode(s, words.inputs(s, variables, part), env, options=options.encoding, deadline=deadline) for s in specs
    ]
    assertions = words.domain_assertions(Builder(env, deadline=deadline), variables, part)
    assertions.append(goal(env, runs, variables))
    if symmetric:
        assertions += symmetry_breaking(env, reduction(specs, domains), variables)
    return _Query(env, variables, assertions, time.perf_counter() - start)


def _deadline(options: QueryOptions) -> float | None:
    """When a length started now must be decided by (:func:`time.perf_counter`), or None."""
    return None if options.timeout is None else time.perf_counter() + options.timeout


Build = Callable[[Sequence[tuple[str, ...]], float | None], _Query]  # (cube, deadline) -> its formula


@contextlib.contextmanager
def _host_heap_frozen() -> Iterator[None]:
    """Keep the objects that existed before a formula is built out of the cyclic garbage
    collector's full collections while it is built and written.

    Encoding a vocabulary of hundreds of thousands of symbols allocates millions of objects,
    which trigger full collections, and a full collection walks the whole process's heap:
    inside a host with a large one (a test suite, a notebook with torch loaded) one pause
    outlasted the stride between two deadline checks, and a length overran its timeout by up
    to a second. Frozen (:func:`gc.freeze`), the host's objects are skipped, so a pause is as
    long as the encoding's own objects make it. A host that froze its heap itself keeps it
    frozen."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _build_and_solve(
    build: Build,
    solvers: Portfolio,
    words: WordSpace,
    domains: Sequence[tuple[str, ...]],
    options: QueryOptions,
    deadline: float | None,
    pre: PresearchResult | None = None,
) -> tuple[LengthCheck, tuple[str, ...] | None]:
    """The encoding and the solver stage of one length, both within ``deadline``: past it,
    the length is UNKNOWN. The solver stage: the formula as text, raced in child processes;
    with ``options.jobs > 1`` one formula per cube of the words (:func:`~verify.queries.words.cubes`),
    ``jobs`` cubes at a time; with ``options.workers > 1`` the cubes on Ray workers
    (:mod:`verify.smt.ray_cubes`)."""
    n = len(domains)
    start = time.perf_counter()
    presearch, ran = (pre.seconds, pre.words) if pre else (0.0, 0)
    parts = cubes(domains, CUBES_PER_JOB * options.parallel) if options.parallel > 1 else [domains]
    try:
        with _host_heap_frozen():
            queries = [build(part, deadline) for part in parts]
    except OutOfTime:
        log.info("length %d: out of time while encoding", n)
        check = LengthCheck(n, Verdict.UNKNOWN, time.perf_counter() - start, 0.0, CheckMethod.SMT, presearch, words=ran)
        return check, None
    encoded = sum(q.encode_seconds for q in queries)
    start = time.perf_counter()
    try:
        with _host_heap_frozen():
            problems = [Problem.of(q.assertions, q.variables, deadline=deadline) for q in queries]
    except OutOfTime:
        log.info("length %d: out of time while writing the formula", n)
        seconds = time.perf_counter() - start
        return LengthCheck(n, Verdict.UNKNOWN, encoded, seconds, CheckMethod.SMT, presearch, words=ran), None
    remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
    log.info("length %d: solving %d cube(s) with %s (timeout %s)", n, len(problems), solvers.name, remaining)
    if options.workers > 1:
        from verify.smt.ray_cubes import solve_cubes_on_ray

        index, outcome = solve_cubes_on_ray(solvers, problems, workers=options.workers, timeout=remaining)
    else:
        index, outcome = solve_cubes(solvers, problems, jobs=options.jobs, timeout=remaining)
    seconds = time.perf_counter() - start
    check = LengthCheck(
        n, outcome.verdict, encoded, seconds, CheckMethod.SMT, presearch, outcome.solver, ran, len(problems)
    )
    word = words.decode(outcome.model, queries[index].variables) if outcome.verdict is Verdict.SAT else None
    return check, word


def _presearched(words: WordSpace, n: int, pre: PresearchResult) -> tuple[LengthCheck, tuple[str, ...] | None] | None:
    """The pre-pass's answer for length ``n`` when it decided it, else None (the solver must)."""
    method = CheckMethod.ENUMERATE if pre.exhaustive else CheckMethod.SAMPLE
    if pre.found is not None:
        check = LengthCheck(n, Verdict.SAT, 0.0, 0.0, method, pre.seconds, words=pre.words)
        return check, words.symbols(pre.found)
    if pre.exhaustive:
        return LengthCheck(n, Verdict.UNSAT, 0.0, 0.0, method, pre.seconds, words=pre.words), None
    return None


def _interpreter_pass(
    specs: Sequence[EncoderSpec],
    words: WordSpace,
    domains: Sequence[tuple[str, ...]],
    hit: Hit,
    options: QueryOptions,
    *,
    seed: int,
    deadline: float | None,
) -> PresearchResult:
    """What the interpreter finds at one length before any solver (:mod:`verify.queries.presearch`).

    A sample of the words of ``domains`` (milliseconds; finds common witnesses, and decides
    short lengths by running every word); then, when a reduction leaves few words that stand
    for all the others, every one of those; then, when running every remaining word costs (at
    the sample's measured cost per word) less than the enumeration budget, every word."""
    start = time.perf_counter()
    codes = words.code_domains(domains)
    sample = search_product(codes, hit, budget=options.presearch, seed=seed, deadline=deadline)
    pre, ran = sample, sample.words
    if pre.found is None and not pre.exhaustive:
        canonical = _canonical(specs, words, domains, codes, limit=options.canonical, deadline=deadline)
        if canonical is not None:
            pre = run_all(canonical, hit, deadline=deadline)
            ran += pre.words
    budget = options.enumeration_budget() - (time.perf_counter() - start)
    if deadline is not None:
        budget = min(budget, deadline - time.perf_counter())
    if pre.found is None and not pre.exhaustive and _affordable(codes, sample, budget):
        log.info("enumerating all %d words of length %d", word_count(codes), len(codes))
        pre = enumerate_words(codes, hit, start=sample.ordered, deadline=deadline)
        ran += pre.words
    return replace(pre, seconds=time.perf_counter() - start, words=ran)


def _affordable(codes: Sequence[Sequence[int]], sample: PresearchResult, seconds: float) -> bool:
    """Whether running the words the sample did not (in order) takes at most ``seconds`` at the
    sample's cost per word."""
    cost = sample.word_seconds
    return cost is not None and (word_count(codes) - sample.ordered) * cost <= seconds


def _answer_length(
    specs: Sequence[EncoderSpec],
    words: WordSpace,
    n: int,
    domains: Sequence[tuple[str, ...]],
    hit: Hit,
    build: Build,
    solvers: Portfolio,
    options: QueryOptions,
) -> tuple[LengthCheck, tuple[str, ...] | None]:
    """One length: the interpreter (:func:`_interpreter_pass`), then, if it did not decide, the solver."""
    deadline = _deadline(options)
    pre = None
    if options.presearch > 0:
        pre = _interpreter_pass(specs, words, domains, hit, options, seed=n, deadline=deadline)
        decided = _presearched(words, n, pre)
        if decided is not None:
            return decided
    return _build_and_solve(build, solvers, words, domains, options, deadline, pre)


def _canonical(
    specs: Sequence[EncoderSpec],
    words: WordSpace,
    domains: Sequence[tuple[str, ...]],
    codes: list[list[int]],
    *,
    limit: int,
    deadline: float | None,
) -> np.ndarray | None:
    """Codes (W, n) of at most ``limit`` words that stand for every word over ``domains`` (one
    per signature for the unique-hardmax class, else the sorted words of averaging models),
    or None when no reduction applies or it leaves too many."""
    found = signature_words(specs, words, codes, limit=limit, deadline=deadline)
    if found is not None:
        return found
    sorted_words = reduction(specs, domains)
    if sorted_words is None or sorted_words.kind != "sorted":
        return None
    few = list(itertools.islice(canonical_words(sorted_words, codes), limit + 1))
    return None if len(few) > limit else np.array(few, dtype=np.int64).reshape(len(few), len(domains))


def _target_label(spec: EncoderSpec, label: int | None) -> int:
    ro = spec.readout
    if label is None:
        return 1 if ro.accept is Accept.POSITIVE else ro.accept_class
    n_labels = 2 if ro.accept is Accept.POSITIVE else ro.weight.shape[1]
    if not 0 <= label < n_labels:
        raise VerifyInputError(f"class {label} is not an output of this model (classes 0..{n_labels - 1})")
    return label


def _lengths(max_len: int, exact_len: bool, option: str = "--max-len") -> range:
    if max_len < 1:
        raise VerifyInputError(f"{option} must be at least 1, got {max_len}")
    return range(max_len, max_len + 1) if exact_len else range(1, max_len + 1)


def _within_bound(lengths: range, bound: LengthBound) -> range:
    """The lengths to solve: ``lengths``, or 1..bound when the completeness bound covers them.

    With a bound (:mod:`verify.queries.completeness`), every word has a word of length <= the bound
    with the same output; so lengths beyond the bound need only 1..bound. An exact length
    beyond it does too when shorter words pad to it keeping their output (``bound.pads``);
    otherwise it is solved as asked.
    """
    if bound.bound is None or lengths[-1] <= bound.bound:
        return lengths
    if lengths[0] > 1 and not bound.pads:
        return lengths
    return range(1, bound.bound + 1)


def _range_text(max_len: int, exact_len: bool) -> str:
    return f"of length exactly {max_len}" if exact_len else f"of length <= {max_len}"


def _bound_for(spec: EncoderSpec, words: WordSpace) -> LengthBound:
    c = words.constraints
    return length_bound(spec, alphabet_size=len(words.allowed), fixes_affixes=bool(c.prefix or c.suffix))


def _undecided(checks: Sequence[LengthCheck]) -> tuple[int, ...]:
    return tuple(c.length for c in checks if c.verdict is Verdict.UNKNOWN)


def _overall(checks: Sequence[LengthCheck]) -> Verdict:
    verdicts = {c.verdict for c in checks}
    if Verdict.SAT in verdicts:
        return Verdict.SAT
    return Verdict.UNKNOWN if Verdict.UNKNOWN in verdicts else Verdict.UNSAT


def _not_shortest(checks: Sequence[LengthCheck], found: str) -> str:
    """The caveat of a witness found after lengths the solver gave up on (empty if none)."""
    undecided = _undecided(checks)
    if not undecided:
        return ""
    return f"; length(s) {list(undecided)} stayed undecided, so a shorter {found} may exist"


def _interrupted_claim(checks: Sequence[LengthCheck], at: int, nothing: str) -> str:
    if not checks:
        return f"unknown: interrupted at length {at}, before any length was decided"
    decided = ", ".join(f"{c.length} {c.verdict.value}" for c in checks)
    return f"unknown: interrupted at length {at}; lengths decided: {decided}; {nothing} at the decided lengths"


# --- trSAT ---------------------------------------------------------------------------------------


def _until_found(
    searched: Sequence[int],
    at_length: Callable[[int], tuple[LengthCheck, _Found | None]],
    checks: list[LengthCheck],
    progress: Progress | None,
    partial: Callable[[int], object],
) -> _Found | None:
    """Check the ``searched`` lengths in order until one finds something, which is returned;
    each length's check is appended to ``checks`` and given to ``progress``. Ctrl-C raises
    :class:`~verify.errors.Interrupted` carrying ``partial(n)``, the result so far when
    length ``n`` was being checked."""
    n = searched[0]
    try:
        for n in searched:
            check, found = at_length(n)
            checks.append(check)
            if progress:
                progress(check)
            if found is not None:
                return found
    except KeyboardInterrupt as e:
        raise Interrupted(partial(n)) from e
    return None


def search_lengths(
    spec: EncoderSpec, *, max_len: int, exact_len: bool = False, constraints: WordConstraints | None = None
) -> range:
    """The word lengths :func:`trsat` solves for this question (e.g. to size a progress bar)."""
    return _within_bound(
        _lengths(max_len, exact_len), _bound_for(spec, WordSpace(spec, constraints or WordConstraints()))
    )


def trsat(
    spec: EncoderSpec,
    *,
    max_len: int,
    exact_len: bool = False,
    label: int | None = None,
    constraints: WordConstraints | None = None,
    options: QueryOptions = QueryOptions(),
    progress: Progress | None = None,
) -> TrsatResult:
    """Search for a word of length ``max_len`` (or 1..max_len, shortest first) with the target output.

    The target is acceptance, or output label ``label`` when given. Stops at the first SAT
    length; an UNKNOWN length makes the overall answer UNKNOWN unless a later length is SAT
    (whose claim then names the undecided lengths: the witness may not be a shortest one).
    For the complete class (:mod:`verify.queries.completeness`) only lengths up to its bound are
    solved; a witness for an exact length beyond it is (without positions) a shorter one padded by
    :func:`~verify.queries.completeness.padding_position`, and replayed at the asked length.

    Ctrl-C raises :class:`~verify.errors.Interrupted` (a ``KeyboardInterrupt``) whose
    ``partial`` is the result so far (``complete`` False), the solver processes killed.
    """
    solvers = make_portfolio(options.solver)
    words = WordSpace(spec, constraints or WordConstraints())
    target = _target_label(spec, label)
    target_text = "accept" if label is None else f"class {label}"
    bound = _bound_for(spec, words)
    lengths = _lengths(max_len, exact_len)
    _check_length(spec, lengths[-1])
    searched = _within_bound(lengths, bound)

    def hit(codes: np.ndarray) -> np.ndarray:
        return ref.run_batch(spec, words.ids(spec, codes)).labels == target

    checks: list[LengthCheck] = []
    witness = None

    def result(interrupted_at: int | None = None) -> TrsatResult:
        complete = interrupted_at is None
        verdict = _overall(checks) if complete else Verdict.UNKNOWN
        all_lengths = (
            verdict is Verdict.UNSAT and bound.bound is not None and searched[0] == 1 and searched[-1] >= bound.bound
        )
        if interrupted_at is not None:
            claim = _interrupted_claim(checks, interrupted_at, "no witness")
        elif verdict is Verdict.SAT:
            assert witness is not None
            shown = f"{' '.join(witness.word)!r} (length {len(witness.word)})"
            claim = f"the word {shown} makes the encoder output {target_text}{_not_shortest(checks, 'witness')}"
        elif verdict is Verdict.UNSAT:
            claim = f"no word {_range_text(max_len, exact_len)} makes the encoder output {target_text}"
            if all_lengths:
                claim = f"no word of any length makes the encoder output {target_text} ({bound.reason})"
            else:
                claim += f"; unknown beyond {max_len}" if not exact_len else ""
        else:
            undecided = list(_undecided(checks))
            claim = f"unknown: the solver gave up at length(s) {undecided}; no witness at the other lengths"
        return TrsatResult(
            verdict,
            witness,
            target_text,
            max_len,
            exact_len,
            tuple(checks),
            bound,
            all_lengths,
            claim,
            solvers.name,
            _undecided(checks),
            complete,
        )

    def at_length(n: int) -> tuple[LengthCheck, Witness | None]:
        domains = words.domains(n)
        if domains is None:
            return LengthCheck(n, Verdict.UNSAT, 0.0, 0.0), None

        def build(cube: Sequence[tuple[str, ...]], deadline: float | None) -> _Query:
            def goal(env: Environment, runs: list[EncodedRun], variables: list[FNode]) -> FNode:
                return runs[0].label_is(target)

            return _build([spec], words, n, domains, goal, options, cube=cube, deadline=deadline)

        check, word = _answer_length([spec], words, n, domains, hit, build, solvers, options)
        if word is None:
            return check, None
        if exact_len and len(word) < max_len:
            pad = padding_position(spec)
            assert pad is not None, "only the class without positions shortens an exact length"
            word = word + (word[pad],) * (max_len - len(word))
        return check, _replay_target(spec, word, target, words, len(word))

    witness = _until_found(searched, at_length, checks, progress, result)
    return result()


def _replay(
    spec: EncoderSpec, word: tuple[str, ...], words: WordSpace, n: int, domains: Sequence[tuple[str, ...]] | None = None
) -> EncoderOutput:
    """The interpreter's output on a solver's word, after checking the word is one the query ranges over."""
    domains = words.domains(n) if domains is None else domains
    if len(word) != n or domains is None or any(s not in dom for s, dom in zip(word, domains)):
        raise WitnessMismatchError(f"the solver's word {word!r} violates the query's word constraints")
    return ref.run(spec, word)


def _replay_target(spec: EncoderSpec, word: tuple[str, ...], target: int, words: WordSpace, n: int) -> Witness:
    output = _replay(spec, word, words, n)
    if output.label != target:
        raise WitnessMismatchError(
            f"witness {word!r} replays to label {output.label} (scores {output.scores}), "
            f"but the encoding claimed {target}"
        )
    return Witness(word, output)


# --- robustness ------------------------------------------------------------------------------------


def robust(
    spec: EncoderSpec,
    word: Sequence[str],
    *,
    distance: int,
    constraints: WordConstraints | None = None,
    options: QueryOptions = QueryOptions(),
) -> RobustResult:
    """Is the label of ``word`` kept by every word within Hamming distance ``distance``?

    Substitutes range over ``constraints.alphabet``; prefix/suffix fix positions. Ctrl-C
    raises :class:`~verify.errors.Interrupted` with no partial result (one length, undecided).
    """
    if distance < 0:
        raise VerifyInputError(f"--distance must be >= 0, got {distance}")
    solvers = make_portfolio(options.solver)
    word = tuple(word)
    original = ref.run(spec, word)
    words = WordSpace(spec, constraints or WordConstraints())
    n = len(word)
    _check_length(spec, n)
    domains = words.domains(n)
    if domains is None:
        raise VerifyInputError("the prefix/suffix constraints do not fit the word's length")
    domains = [tuple(dict.fromkeys((*dom, s))) for dom, s in zip(domains, word)]

    def goal(env: Environment, runs: list[EncodedRun], variables: list[FNode]) -> FNode:
        m, b = env.formula_manager, runs[0].builder
        changed = [
            b.ite(m.Not(m.Equals(v, m.BV(words.code(s), words.code_width))), b.const(1), b.const(0))
            for v, s in zip(variables, word)
        ]
        within = m.Not(b.gt(b.total(changed), b.const(distance)))
        return m.And(within, m.Not(runs[0].label_is(original.label)))

    def hit(codes: np.ndarray) -> np.ndarray:
        return ref.run_batch(spec, words.ids(spec, codes)).labels != original.label

    decided, pre = None, None
    deadline = _deadline(options)
    try:
        if options.presearch > 0:
            centre = [words.code(s) for s in word]
            pre = search_ball(
                centre,
                words.code_domains(domains),
                distance,
                hit,
                budget=options.presearch,
                seed=n,
                deadline=deadline,
            )
            decided = _presearched(words, n, pre)
        if decided is not None:
            check, found = decided
        else:
            # the Hamming ball around one word is not closed under these reductions: no symmetry breaking
            check, found = _build_and_solve(
                lambda cube, d: _build(
                    [spec], words, n, domains, goal, options, cube=cube, symmetric=False, deadline=d
                ),
                solvers,
                words,
                domains,
                options,
                deadline,
                pre,
            )
    except KeyboardInterrupt as e:
        raise Interrupted(None) from e
    counterexample = None
    if found is not None:
        out = _replay(spec, found, words, n, domains)
        hamming = sum(a != b for a, b in zip(found, word))
        if out.label == original.label or hamming > distance:
            raise WitnessMismatchError(
                f"counterexample {found!r} (distance {hamming}) replays to label {out.label}, original {original.label}"
            )
        counterexample = Witness(found, out)
    if check.verdict is Verdict.SAT:
        assert counterexample is not None
        changed = f"{original.label} -> {counterexample.output.label}"
        shown = " ".join(counterexample.word)
        claim = f"not robust: {shown!r} is within distance {distance} and changes the label {changed}"
    elif check.verdict is Verdict.UNSAT:
        claim = f"robust: every word within Hamming distance {distance} keeps label {original.label}"
    else:
        claim = "unknown: the solver gave up"
    return RobustResult(check.verdict, word, distance, original, counterexample, check, claim, solvers.name)


# --- equivalence --------------------------------------------------------------------------------------


def equiv(
    first: EncoderSpec,
    second: EncoderSpec,
    *,
    max_len: int,
    constraints: WordConstraints | None = None,
    options: QueryOptions = QueryOptions(),
    progress: Progress | None = None,
) -> EquivResult:
    """Do the two encoders output the same label on every word of length 1..max_len?

    UNKNOWN lengths and Ctrl-C as for :func:`trsat`."""
    if set(first.word_alphabet) != set(second.word_alphabet):
        raise VerifyInputError(
            f"the encoders have different word alphabets: {list(first.word_alphabet)} vs {list(second.word_alphabet)}"
        )
    solvers = make_portfolio(options.solver)
    words = WordSpace(first, constraints or WordConstraints())
    lengths = _lengths(max_len, False)
    _check_length(first, max_len)
    _check_length(second, max_len)
    c = words.constraints
    bound = joint_bound([first, second], alphabet_size=len(words.allowed), fixes_affixes=bool(c.prefix or c.suffix))

    def hit(codes: np.ndarray) -> np.ndarray:
        return (
            ref.run_batch(first, words.ids(first, codes)).labels
            != ref.run_batch(second, words.ids(second, codes)).labels
        )

    def goal(env: Environment, runs: list[EncodedRun], variables: list[FNode]) -> FNode:
        m = env.formula_manager
        labels = sorted(set(runs[0].labels()) | set(runs[1].labels()))
        return m.Or([m.And(runs[0].label_is(c), m.Not(runs[1].label_is(c))) for c in labels])

    checks: list[LengthCheck] = []
    counterexample = None

    def result(interrupted_at: int | None = None) -> EquivResult:
        complete = interrupted_at is None
        verdict = _overall(checks) if complete else Verdict.UNKNOWN
        all_lengths = verdict is Verdict.UNSAT and bound.bound is not None and max_len >= bound.bound
        if interrupted_at is not None:
            claim = _interrupted_claim(checks, interrupted_at, "no difference")
        elif verdict is Verdict.SAT:
            assert counterexample is not None
            w, (a, b) = counterexample[0].word, (c.output for c in counterexample)
            claim = (
                f"not equivalent: on {' '.join(w)!r} the first outputs label {a.label}, the second {b.label}"
                f"{_not_shortest(checks, 'distinguishing word')}"
            )
        elif verdict is Verdict.UNSAT:
            claim = (
                f"equivalent on words of every length ({bound.reason})"
                if all_lengths
                else f"equivalent on every word of length <= {max_len}; unknown beyond {max_len}"
            )
        else:
            undecided = list(_undecided(checks))
            claim = f"unknown: the solver gave up at length(s) {undecided}; no difference at the other lengths"
        return EquivResult(
            verdict,
            counterexample,
            max_len,
            tuple(checks),
            bound,
            all_lengths,
            claim,
            solvers.name,
            _undecided(checks),
            complete,
        )

    searched = _within_bound(lengths, bound)

    def at_length(n: int) -> tuple[LengthCheck, tuple[Witness, Witness] | None]:
        domains = words.domains(n)
        if domains is None:
            return LengthCheck(n, Verdict.UNSAT, 0.0, 0.0), None

        def build(cube: Sequence[tuple[str, ...]], deadline: float | None) -> _Query:
            return _build([first, second], words, n, domains, goal, options, cube=cube, deadline=deadline)

        check, found = _answer_length([first, second], words, n, domains, hit, build, solvers, options)
        if found is None:
            return check, None
        a, b = _replay(first, found, words, n), _replay(second, found, words, n)
        if a.label == b.label:
            raise WitnessMismatchError(f"distinguishing word {found!r} replays to the same label {a.label}")
        return check, (Witness(found, a), Witness(found, b))

    counterexample = _until_found(searched, at_length, checks, progress, result)
    return result()


# --- SMT-LIB export ---------------------------------------------------------------------------------


def export_smt(
    spec: EncoderSpec,
    *,
    length: int,
    label: int | None = None,
    constraints: WordConstraints | None = None,
    encoding: EncodingOptions = EncodingOptions(),
) -> str:
    """The trSAT question for words of exactly ``length`` as an SMT-LIB2 script.

    ``sat`` means a word exists; ``get-value`` prints the codes ``w_i`` (index into the word
    alphabet, listed in a comment at the top).
    """
    words = WordSpace(spec, constraints or WordConstraints())
    target = _target_label(spec, label)
    _lengths(length, True, "--length")
    _check_length(spec, length)
    domains = words.domains(length)
    if domains is None:
        raise VerifyInputError(f"no word of length {length} fits the prefix/suffix constraints")
    query = _build(
        [spec], words, length, domains, lambda env, runs, vs: runs[0].label_is(target), QueryOptions(encoding=encoding)
    )
    legend = ", ".join(f"{i}={s}" for i, s in enumerate(words.alphabet))
    output = "accept" if label is None else f"class {label}"
    header = f"; trSAT: a word of length {length} with output {output}\n; codes: {legend}\n"
    return header + Problem.of(query.assertions, query.variables).script()
