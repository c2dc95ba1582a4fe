"""What a question is asked with and what it answers: the options, one record per word length
checked, and one result per question (trSAT, robustness, equivalence).

Plain frozen records, apart from the questions themselves (:mod:`verify.queries.questions`),
so that the CLI and the benchmarks read results without the solving machinery.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from verify.errors import VerifyInputError
from verify.model.interpreter import EncoderOutput
from verify.queries.completeness import LengthBound
from verify.smt.encoding import EncodingOptions
from verify.smt.portfolio import AUTO
from verify.smt.solvers import Verdict

# The enumeration budget of a length without a timeout. Enumeration beat the solver below about
# 3e4 words (vocabulary 2) to 3e5 (vocabulary 4) on one-layer encoders, where the solver takes a
# second or so, and at every size from 256 words with two layers of two heads, where it takes
# minutes; 10 s of interpreter runs (1e5 to 1e7 words at 1-40 us each) lose little to the first
# and win the second.
ENUMERATION_SECONDS = 10.0


# Cubes per parallel job: more cubes than jobs, so that a hard cube does not leave a core idle
# while the others wait (their hardness differs by 10x and more).
CUBES_PER_JOB = 4


@dataclass(frozen=True, slots=True)
class QueryOptions:
    """How a query is solved."""

    # auto: z3 and bitwuzla race on each length (those installed); portfolio: z3, cvc5 and
    # bitwuzla race; z3 | cvc5 | bitwuzla | smtlib:CMD alone; or names separated by commas race
    solver: str = AUTO
    # Wall-clock seconds of each length, from its pre-pass through its encoding to its solver
    # stage (the child processes are killed past it, an encoding stops): past it the length
    # is UNKNOWN; None = no limit. (The pre-pass itself is bounded by `presearch` words.)
    timeout: float | None = None
    encoding: EncodingOptions = EncodingOptions()
    # Candidate words per length run through the interpreter before the solver
    # (:mod:`verify.queries.presearch`): all of them when there are at most this many, else a random
    # sample that can only find witnesses. 0 = off: every length goes to the solver.
    presearch: int = 1024
    # With presearch on: when a sound reduction (verify.queries.signatures, verify.queries.words) leaves at
    # most this many words that stand for all words of a length, all of them are run and
    # decide it. An interpreter run costs microseconds, a solver call rarely under 0.1 s.
    canonical: int = 1 << 15
    # With presearch on: seconds a length may spend running *every* candidate word through the
    # interpreter, which decides it, when the words times the cost of one word (measured on the
    # sample) fit; else the solver answers. None: half of `timeout`, or ENUMERATION_SECONDS
    # without one. 0: never beyond `presearch` words.
    enumeration: float | None = None
    # Solver stage: a length's words are split on their first symbols into CUBES_PER_JOB * jobs
    # cubes, decided `jobs` at a time in child processes (SAT at the first SAT cube, UNSAT when
    # every cube is UNSAT). 1: the whole length as one question.
    jobs: int = 1
    # The same cubes (CUBES_PER_JOB * workers) decided on Ray workers instead, `workers` at a
    # time, each racing the solvers in its worker (verify.smt.ray_cubes). 1: not on Ray.
    workers: int = 1

    def __post_init__(self) -> None:
        if self.jobs > 1 and self.workers > 1:
            raise VerifyInputError(
                "--jobs decides cubes in child processes here and --workers on Ray workers: give one of them"
            )

    @property
    def parallel(self) -> int:
        """How many cubes are decided at once, here or on Ray."""
        return max(self.jobs, self.workers)

    def enumeration_budget(self) -> float:
        """The seconds of :attr:`enumeration`, its default resolved."""
        if self.enumeration is not None:
            return self.enumeration
        return ENUMERATION_SECONDS if self.timeout is None else self.timeout / 2


class CheckMethod(enum.Enum):
    """How one length was answered."""

    SMT = "smt"  # the solver, on the exact encoding
    SAMPLE = "sample"  # a random candidate word run through the interpreter was a witness
    ENUMERATE = "enumerate"  # every candidate word (or every word of a sound reduction) ran through the interpreter


@dataclass(frozen=True, slots=True)
class LengthCheck:
    """One word length: the pre-pass over candidate words and, unless it decided, one solver call."""

    length: int
    verdict: Verdict
    encode_seconds: float
    solve_seconds: float
    method: CheckMethod = CheckMethod.SMT
    presearch_seconds: float = 0.0
    solver: str | None = None  # the solver that answered (a portfolio's winner); None: the pre-pass
    words: int = 0  # words run through the interpreter (sample, reduced words, enumeration)
    cubes: int = 0  # the solver stage's questions (QueryOptions.jobs > 1: the cubes); 0: no solver stage

    @property
    def seconds(self) -> float:
        return self.encode_seconds + self.solve_seconds + self.presearch_seconds


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
    # Lengths the solver gave up on: a SAT witness is then not known to be a shortest one.
    undecided: tuple[int, ...] = ()
    # False: interrupted (Ctrl-C); ``checks`` are the lengths decided before, the verdict is UNKNOWN.
    complete: bool = True


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
    undecided: tuple[int, ...] = ()  # as for TrsatResult: a distinguishing word may not be a shortest one
    complete: bool = True  # as for TrsatResult


Progress = Callable[[LengthCheck], None]
