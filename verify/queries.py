"""The verifier's questions: trSAT, local robustness, and equivalence of two encoders.

Each question is answered one word length at a time: a fresh pysmt ``Environment`` per
length, the encoding of :mod:`verify.encoding`, one solver call. A SAT answer's witness
word is replayed through :mod:`verify.interpreter` before it is reported; if the replay
disagrees, :class:`~verify.errors.WitnessMismatchError` is raised (an internal error, never
a silent answer). An UNSAT answer covers exactly the lengths searched ("no word of length
<= n") unless :mod:`verify.completeness` gives a bound that the search reached.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pysmt.environment import Environment
from pysmt.fnode import FNode
from pysmt.typing import BVType

from verify import interpreter as ref
from verify.completeness import LengthBound, joint_bound, length_bound, padding_position, permutable_positions
from verify.encoding import EncodedRun, EncodingOptions, PositionInput, encode
from verify.errors import VerifyInputError, WitnessMismatchError
from verify.interpreter import EncoderOutput
from verify.solvers import SmtBackend, Verdict, make_backend, smtlib_script
from verify.spec import Accept, EncoderSpec, ReadoutPosition

__all__ = [
    "EquivResult",
    "LengthCheck",
    "QueryOptions",
    "RobustResult",
    "TrsatResult",
    "Verdict",
    "Witness",
    "WordConstraints",
    "equiv",
    "export_smt",
    "robust",
    "trsat",
]


@dataclass(frozen=True, slots=True)
class WordConstraints:
    """Which words a query ranges over."""

    alphabet: tuple[str, ...] | None = None  # allowed symbols (None: the whole word alphabet)
    prefix: tuple[str, ...] = ()  # fixed first symbols
    suffix: tuple[str, ...] = ()  # fixed last symbols


@dataclass(frozen=True, slots=True)
class QueryOptions:
    """How a query is solved."""

    solver: str = "z3"  # z3 | cvc5 | bitwuzla | smtlib:CMD
    timeout: float | None = None  # seconds per solver call (one per length); None = no limit
    encoding: EncodingOptions = EncodingOptions()


@dataclass(frozen=True, slots=True)
class LengthCheck:
    """One solver call: a single word length."""

    length: int
    verdict: Verdict
    encode_seconds: float
    solve_seconds: float


@dataclass(frozen=True, slots=True)
class Witness:
    """A word and the interpreter's output on it (already replayed)."""

    word: tuple[str, ...]
    output: EncoderOutput


@dataclass(frozen=True, slots=True)
class TrsatResult:
    """Is there a word (length exactly n, or 1..n) on which the encoder outputs the target?"""

    verdict: Verdict
    witness: Witness | None  # set iff SAT
    target: str  # "accept" or "class c"
    max_len: int
    exact_len: bool
    checks: tuple[LengthCheck, ...]
    bound: LengthBound  # the completeness bound for this encoder and query
    all_lengths: bool  # an UNSAT verdict covers every length (the search reached the bound)
    claim: str  # the answer in one sentence, never claiming more than was checked
    solver: str


@dataclass(frozen=True, slots=True)
class RobustResult:
    """Do all words within Hamming distance d of ``word`` keep its label?"""

    verdict: Verdict  # SAT: a counterexample exists (not robust); UNSAT: robust
    word: tuple[str, ...]
    distance: int
    original: EncoderOutput
    counterexample: Witness | None
    check: LengthCheck
    claim: str
    solver: str


@dataclass(frozen=True, slots=True)
class EquivResult:
    """Do two encoders output the same label on every word of length 1..n?"""

    verdict: Verdict  # SAT: a distinguishing word exists; UNSAT: equivalent up to n
    counterexample: tuple[Witness, Witness] | None  # the word with each encoder's output
    max_len: int
    checks: tuple[LengthCheck, ...]
    bound: LengthBound
    all_lengths: bool
    claim: str
    solver: str


Progress = Callable[[LengthCheck], None]


# --- words as variables ----------------------------------------------------------------------


class _Words:
    """Symbols, their codes (index into ``alphabet``) and the per-position variables."""

    def __init__(self, spec: EncoderSpec, constraints: WordConstraints) -> None:
        word_alphabet = spec.word_alphabet
        allowed = constraints.alphabet if constraints.alphabet is not None else word_alphabet
        for s in (*allowed, *constraints.prefix, *constraints.suffix):
            if s not in word_alphabet:
                raise VerifyInputError(f"symbol {s!r} is not in the model's word alphabet {list(word_alphabet)}")
        if not allowed:
            raise VerifyInputError("the alphabet restriction leaves no symbol")
        self.alphabet = word_alphabet  # codes index this tuple
        self.allowed = tuple(dict.fromkeys(allowed))
        self.constraints = constraints
        self.code_width = max(1, (len(word_alphabet) - 1).bit_length())

    def domains(self, n: int) -> list[tuple[str, ...]] | None:
        """Allowed symbols per position for length ``n``; None if no word of length n qualifies."""
        c = self.constraints
        if len(c.prefix) > n or len(c.suffix) > n:
            return None
        doms = []
        for i in range(n):
            dom = set(self.allowed)
            if i < len(c.prefix):
                dom &= {c.prefix[i]}
            if i >= n - len(c.suffix):
                dom &= {c.suffix[i - (n - len(c.suffix))]}
            if not dom:
                return None
            doms.append(tuple(s for s in self.allowed if s in dom))
        return doms

    def variables(self, env: Environment, n: int) -> list[FNode]:
        return [env.formula_manager.Symbol(f"w_{i}", BVType(self.code_width)) for i in range(n)]

    def domain_assertions(self, env: Environment, variables: Sequence[FNode], domains: Sequence[tuple[str, ...]]) -> list[FNode]:
        m = env.formula_manager
        return [
            m.Or([m.Equals(v, m.BV(self.alphabet.index(s), self.code_width)) for s in dom])
            for v, dom in zip(variables, domains)
        ]

    def inputs(self, spec: EncoderSpec, variables: Sequence[FNode], domains: Sequence[tuple[str, ...]]) -> list[PositionInput]:
        """The encoder's input positions (the CLS symbol first when the readout uses one)."""
        inputs = [
            PositionInput(v, tuple((self.alphabet.index(s), spec.token_id(s)) for s in dom))
            for v, dom in zip(variables, domains)
        ]
        if spec.readout.position is ReadoutPosition.CLS:
            inputs.insert(0, PositionInput(None, ((0, spec.token_id(spec.readout.cls_token or "")),)))
        return inputs

    def decode(self, model: dict[str, int], variables: Sequence[FNode]) -> tuple[str, ...]:
        word = []
        for v in variables:
            code = model[v.symbol_name()]
            if not 0 <= code < len(self.alphabet):
                raise WitnessMismatchError(f"the solver chose code {code} for {v.symbol_name()}, outside the alphabet")
            word.append(self.alphabet[code])
        return tuple(word)


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
    words: _Words,
    n: int,
    domains: Sequence[tuple[str, ...]],
    goal: Callable[[Environment, list[EncodedRun], list[FNode]], FNode],
    options: QueryOptions,
    *,
    symmetric: bool = True,
) -> _Query:
    start = time.perf_counter()
    env = Environment()
    variables = words.variables(env, n)
    runs = [encode(s, words.inputs(s, variables, domains), env, options=options.encoding) for s in specs]
    assertions = words.domain_assertions(env, variables, domains) + [goal(env, runs, variables)]
    if symmetric:
        assertions += _symmetry_breaking(env, specs, variables, domains)
    return _Query(env, variables, assertions, time.perf_counter() - start)


def _symmetry_breaking(
    env: Environment, specs: Sequence[EncoderSpec], variables: Sequence[FNode], domains: Sequence[tuple[str, ...]]
) -> list[FNode]:
    """Constraints that keep one word of each class of words with the same output(s), if sound.

    * Permutable positions (:func:`~verify.completeness.permutable_positions`): their
      symbols in code order.
    * The first-occurrence class (:func:`~verify.completeness.padding_position`): after the
      first repeated symbol, only the padding symbol.

    Both need every affected position to allow the same symbols (no prefix or suffix that
    fixes one of them), and all encoders of the query to agree on the reduction.
    """
    m = env.formula_manager
    n = len(variables)
    ranges = [permutable_positions(s, n) for s in specs]
    if all(r is not None for r in ranges) and len(set(ranges)) == 1:
        positions = list(ranges[0])  # type: ignore[arg-type]
        if len({domains[i] for i in positions}) <= 1:
            return [m.BVULE(variables[i], variables[j]) for i, j in zip(positions, positions[1:])]
    pads = {padding_position(s) for s in specs}
    if len(pads) != 1 or None in pads or len(set(domains)) != 1:
        return []
    pad = variables[pads.pop()]  # type: ignore[index]
    constraints = []
    for i in range(1, n):
        repeated = m.Or([m.Equals(variables[i], variables[j]) for j in range(i)])
        later = variables[i:]
        constraints.append(m.Implies(repeated, m.And([m.Equals(v, pad) for v in later])))
    return constraints


def _solve(query: _Query, backend: SmtBackend, words: _Words, n: int, timeout: float | None) -> tuple[LengthCheck, tuple[str, ...] | None]:
    outcome = backend.check(query.env, query.assertions, query.variables, timeout=timeout)
    check = LengthCheck(n, outcome.verdict, query.encode_seconds, outcome.seconds)
    word = words.decode(outcome.model, query.variables) if outcome.verdict is Verdict.SAT else None
    return check, word


def _target_label(spec: EncoderSpec, label: int | None) -> int:
    ro = spec.readout
    if label is None:
        return 1 if ro.accept is Accept.POSITIVE else ro.accept_class
    n_labels = 2 if ro.accept is Accept.POSITIVE else ro.weight.shape[1]
    if not 0 <= label < n_labels:
        raise VerifyInputError(f"class {label} is not an output of this model (classes 0..{n_labels - 1})")
    return label


def _lengths(max_len: int, exact_len: bool) -> range:
    if max_len < 1:
        raise VerifyInputError(f"--max-len must be at least 1, got {max_len}")
    return range(max_len, max_len + 1) if exact_len else range(1, max_len + 1)


def _range_text(max_len: int, exact_len: bool) -> str:
    return f"of length exactly {max_len}" if exact_len else f"of length <= {max_len}"


# --- trSAT ---------------------------------------------------------------------------------------


def trsat(
    spec: EncoderSpec,
    *,
    max_len: int,
    exact_len: bool = False,
    label: int | None = None,
    constraints: WordConstraints = WordConstraints(),
    options: QueryOptions = QueryOptions(),
    progress: Progress | None = None,
) -> TrsatResult:
    """Search for a word of length ``max_len`` (or 1..max_len, shortest first) with the target output.

    The target is acceptance, or output label ``label`` when given. Stops at the first SAT
    length; an UNKNOWN length makes the overall answer UNKNOWN unless a later length is SAT.
    """
    backend = make_backend(options.solver)
    words = _Words(spec, constraints)
    target = _target_label(spec, label)
    target_text = "accept" if label is None else f"class {label}"
    bound = length_bound(spec, alphabet_size=len(words.allowed), fixes_affixes=bool(constraints.prefix or constraints.suffix))
    lengths = _lengths(max_len, exact_len)
    _check_length(spec, lengths[-1])
    checks: list[LengthCheck] = []
    witness = None
    for n in lengths:
        domains = words.domains(n)
        if domains is None:
            check = LengthCheck(n, Verdict.UNSAT, 0.0, 0.0)
        else:
            query = _build([spec], words, n, domains, lambda env, runs, vs: runs[0].label_is(target), options)
            check, word = _solve(query, backend, words, n, options.timeout)
            if word is not None:
                witness = _replay_target(spec, word, target, words, n)
        checks.append(check)
        if progress:
            progress(check)
        if witness is not None:
            break
    verdict = _overall(checks)
    all_lengths = (
        verdict is Verdict.UNSAT and not exact_len and bound.bound is not None and max_len >= bound.bound
    )
    if verdict is Verdict.SAT:
        assert witness is not None
        claim = f"the word {' '.join(witness.word)!r} (length {len(witness.word)}) makes the encoder output {target_text}"
    elif verdict is Verdict.UNSAT:
        claim = f"no word {_range_text(max_len, exact_len)} makes the encoder output {target_text}"
        if all_lengths:
            claim = f"no word of any length makes the encoder output {target_text} ({bound.reason})"
        else:
            claim += f"; unknown beyond {max_len}" if not exact_len else ""
    else:
        unknown = [c.length for c in checks if c.verdict is Verdict.UNKNOWN]
        claim = f"unknown: the solver gave up at length(s) {unknown}; no witness at the other lengths"
    return TrsatResult(
        verdict, witness, target_text, max_len, exact_len, tuple(checks), bound, all_lengths, claim, backend.name
    )


def _overall(checks: Sequence[LengthCheck]) -> Verdict:
    verdicts = {c.verdict for c in checks}
    if Verdict.SAT in verdicts:
        return Verdict.SAT
    return Verdict.UNKNOWN if Verdict.UNKNOWN in verdicts else Verdict.UNSAT


def _replay(spec: EncoderSpec, word: tuple[str, ...], words: _Words, n: int) -> EncoderOutput:
    domains = words.domains(n)
    if len(word) != n or domains is None or any(s not in dom for s, dom in zip(word, domains)):
        raise WitnessMismatchError(f"the solver's word {word!r} violates the query's word constraints")
    return ref.run(spec, word)


def _replay_target(spec: EncoderSpec, word: tuple[str, ...], target: int, words: _Words, n: int) -> Witness:
    output = _replay(spec, word, words, n)
    if output.label != target:
        raise WitnessMismatchError(
            f"witness {word!r} replays to label {output.label} (scores {output.scores}), but the encoding claimed {target}"
        )
    return Witness(word, output)


# --- robustness ------------------------------------------------------------------------------------


def robust(
    spec: EncoderSpec,
    word: Sequence[str],
    *,
    distance: int,
    constraints: WordConstraints = WordConstraints(),
    options: QueryOptions = QueryOptions(),
) -> RobustResult:
    """Is the label of ``word`` kept by every word within Hamming distance ``distance``?

    Substitutes range over ``constraints.alphabet``; prefix/suffix fix positions.
    """
    if distance < 0:
        raise VerifyInputError(f"--distance must be >= 0, got {distance}")
    backend = make_backend(options.solver)
    word = tuple(word)
    original = ref.run(spec, word)
    words = _Words(spec, constraints)
    n = len(word)
    _check_length(spec, n)
    domains = words.domains(n)
    if domains is None:
        raise VerifyInputError("the prefix/suffix constraints do not fit the word's length")
    domains = [tuple(dict.fromkeys((*dom, s))) for dom, s in zip(domains, word)]

    def goal(env: Environment, runs: list[EncodedRun], variables: list[FNode]) -> FNode:
        m, b = env.formula_manager, runs[0].builder
        changed = [
            b.ite(m.Not(m.Equals(v, m.BV(words.alphabet.index(s), words.code_width))), b.const(1), b.const(0))
            for v, s in zip(variables, word)
        ]
        within = m.Not(b.gt(b.total(changed), b.const(distance)))
        return m.And(within, m.Not(runs[0].label_is(original.label)))

    # the Hamming ball around one word is not closed under these reductions: no symmetry breaking
    query = _build([spec], words, n, domains, goal, options, symmetric=False)
    check, found = _solve(query, backend, words, n, options.timeout)
    counterexample = None
    if found is not None:
        out = ref.run(spec, found)
        hamming = sum(a != b for a, b in zip(found, word))
        if out.label == original.label or hamming > distance:
            raise WitnessMismatchError(
                f"counterexample {found!r} (distance {hamming}) replays to label {out.label}, original {original.label}"
            )
        counterexample = Witness(found, out)
    if check.verdict is Verdict.SAT:
        assert counterexample is not None
        claim = f"not robust: {' '.join(counterexample.word)!r} is within distance {distance} and changes the label {original.label} -> {counterexample.output.label}"
    elif check.verdict is Verdict.UNSAT:
        claim = f"robust: every word within Hamming distance {distance} keeps label {original.label}"
    else:
        claim = "unknown: the solver gave up"
    return RobustResult(check.verdict, word, distance, original, counterexample, check, claim, backend.name)


# --- equivalence --------------------------------------------------------------------------------------


def equiv(
    first: EncoderSpec,
    second: EncoderSpec,
    *,
    max_len: int,
    constraints: WordConstraints = WordConstraints(),
    options: QueryOptions = QueryOptions(),
    progress: Progress | None = None,
) -> EquivResult:
    """Do the two encoders output the same label on every word of length 1..max_len?"""
    if set(first.word_alphabet) != set(second.word_alphabet):
        raise VerifyInputError(
            f"the encoders have different word alphabets: {list(first.word_alphabet)} vs {list(second.word_alphabet)}"
        )
    backend = make_backend(options.solver)
    words = _Words(first, constraints)
    lengths = _lengths(max_len, False)
    _check_length(first, max_len)
    _check_length(second, max_len)
    affixes = bool(constraints.prefix or constraints.suffix)
    bound = joint_bound([length_bound(s, alphabet_size=len(words.allowed), fixes_affixes=affixes) for s in (first, second)])

    def goal(env: Environment, runs: list[EncodedRun], variables: list[FNode]) -> FNode:
        m = env.formula_manager
        labels = sorted(set(runs[0].labels()) | set(runs[1].labels()))
        return m.Or([m.And(runs[0].label_is(c), m.Not(runs[1].label_is(c))) for c in labels])

    checks: list[LengthCheck] = []
    counterexample = None
    for n in lengths:
        domains = words.domains(n)
        if domains is None:
            check = LengthCheck(n, Verdict.UNSAT, 0.0, 0.0)
        else:
            query = _build([first, second], words, n, domains, goal, options)
            check, found = _solve(query, backend, words, n, options.timeout)
            if found is not None:
                a, b = _replay(first, found, words, n), _replay(second, found, words, n)
                if a.label == b.label:
                    raise WitnessMismatchError(f"distinguishing word {found!r} replays to the same label {a.label}")
                counterexample = (Witness(found, a), Witness(found, b))
        checks.append(check)
        if progress:
            progress(check)
        if counterexample is not None:
            break
    verdict = _overall(checks)
    all_lengths = verdict is Verdict.UNSAT and bound.bound is not None and max_len >= bound.bound
    if verdict is Verdict.SAT:
        assert counterexample is not None
        w, (a, b) = counterexample[0].word, (c.output for c in counterexample)
        claim = f"not equivalent: on {' '.join(w)!r} the first outputs label {a.label}, the second {b.label}"
    elif verdict is Verdict.UNSAT:
        claim = (
            f"equivalent on words of every length ({bound.reason})"
            if all_lengths
            else f"equivalent on every word of length <= {max_len}; unknown beyond {max_len}"
        )
    else:
        unknown = [c.length for c in checks if c.verdict is Verdict.UNKNOWN]
        claim = f"unknown: the solver gave up at length(s) {unknown}; no difference at the other lengths"
    return EquivResult(verdict, counterexample, max_len, tuple(checks), bound, all_lengths, claim, backend.name)


# --- SMT-LIB export ---------------------------------------------------------------------------------


def export_smt(
    spec: EncoderSpec,
    *,
    length: int,
    label: int | None = None,
    constraints: WordConstraints = WordConstraints(),
    encoding: EncodingOptions = EncodingOptions(),
) -> str:
    """The trSAT question for words of exactly ``length`` as an SMT-LIB2 script.

    ``sat`` means a word exists; ``get-value`` prints the codes ``w_i`` (index into the word
    alphabet, listed in a comment at the top).
    """
    words = _Words(spec, constraints)
    target = _target_label(spec, label)
    _lengths(length, True)
    _check_length(spec, length)
    domains = words.domains(length)
    if domains is None:
        raise VerifyInputError(f"no word of length {length} fits the prefix/suffix constraints")
    query = _build([spec], words, length, domains, lambda env, runs, vs: runs[0].label_is(target), QueryOptions(encoding=encoding))
    legend = ", ".join(f"{i}={s}" for i, s in enumerate(words.alphabet))
    header = f"; trSAT: a word of length {length} with output {'accept' if label is None else f'class {label}'}\n; codes: {legend}\n"
    return header + smtlib_script(query.assertions, query.variables)
