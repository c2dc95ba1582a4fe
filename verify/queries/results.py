"""What a question is asked with and what it answers: the options, one record per word length
checked, and one result per question (trSAT, robustness, equivalence).

Plain frozen records, apart from the questions themselves (:mod:`verify.queries.questions`),
so that the CLI and the benchmarks read results without the solving machinery.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from verify.model.interpreter import EncoderOutput
from verify.queries.completeness import LengthBound
from verify.smt.encoding import EncodingOptions
from verify.smt.solvers import Verdict


@dataclass(frozen=True, slots=True)
class QueryOptions:
    """How a query is solved."""

    # z3 | cvc5 | bitwuzla | smtlib:CMD, or portfolio: z3, cvc5 and bitwuzla race on each length
    solver: str = "z3"
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


class CheckMethod(enum.Enum):
    """How one length was answered."""

    SMT = "smt"  # the solver, on the exact encoding
    SAMPLE = "sample"  # a random candidate word run through the interpreter was a witness
    ENUMERATE = "enumerate"  # every candidate word was run through the interpreter


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
