"""Small formal languages to train, quantize and verify encoders on.

Each :class:`FormalLanguage` is a finite alphabet and a membership test. Words are plain
strings with one character per symbol, so ``"(()"`` or ``"abba"`` read naturally in logs,
JSON and counterexamples. The datasets here are what the training and the evaluation of
:mod:`verify.trained.training` and :mod:`verify.trained.quantize` use:

* :func:`sample_dataset` -- a seeded, class-balanced sample of words up to a length, about
  half of them *near misses* (a symbol or two away from the other class) so that a model
  cannot separate the classes by a shortcut such as the first symbol;
* :func:`sample_words` -- uniformly random words (unbalanced), for longer test lengths;
* :func:`all_words` -- every word up to a small length, for exhaustive evaluation.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verify.errors import VerifyInputError

# Bound on the nesting depth of the bounded-Dyck language; 2 keeps it learnable by a tiny
# encoder while still excluding words such as "((()))".
DYCK_MAX_DEPTH = 2
# Tries of rejection sampling before a requested (length, label) pair is given up.
_REJECTION_TRIES = 64


@dataclass(frozen=True, slots=True)
class FormalLanguage:
    """A language over a small alphabet: a name, its symbols, and a membership test."""

    # Command-line name, e.g. "majority".
    name: str
    # One character per symbol; the order fixes the token ids of the trained models.
    alphabet: str
    # One sentence for humans (CLI output, docs).
    description: str
    # Membership test; it defines the labels, so every other function here trusts it.
    accepts: Callable[[str], bool]
    # sample(rng, length, label): a word of that length and label, or None if none exists.
    # Tailored per language so that both classes, and near misses, are reachable at any
    # length (rejection sampling never finds a long non-member of "contains ab").
    sample: Callable[[random.Random, int, bool], str | None]

    def label(self, word: str) -> int:
        """1 if ``word`` is in the language, else 0 (after checking its symbols)."""
        unknown = set(word) - set(self.alphabet)
        if unknown:
            raise VerifyInputError(
                f"word {word!r} has symbols {sorted(unknown)} outside the alphabet "
                f"{self.alphabet!r} of task {self.name!r}"
            )
        return int(self.accepts(word))


@dataclass(frozen=True, slots=True)
class Dataset:
    """Words with their 0/1 labels, aligned by index."""

    words: tuple[str, ...]
    labels: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.words)

    @property
    def positive_rate(self) -> float:
        """Fraction of members; 0.5 for the balanced samples, skewed for exhaustive sets."""
        return sum(self.labels) / len(self.labels) if self.labels else 0.0


def _majority(word: str) -> bool:
    return word.count("a") > word.count("b")


def _contains_ab(word: str) -> bool:
    return "ab" in word


def _parity(word: str) -> bool:
    return word.count("a") % 2 == 1


def _bounded_dyck(word: str) -> bool:
    depth = 0
    for symbol in word:
        depth += 1 if symbol == "(" else -1
        if depth < 0 or depth > DYCK_MAX_DEPTH:
            return False
    return depth == 0


def _sample_majority(rng: random.Random, length: int, label: bool) -> str | None:
    # Half of the words sit at the boundary (one a more, or a tie / one b more).
    half = length // 2
    counts = range(half + 1, length + 1) if label else range(0, half + 1)
    near = half + 1 if label else half
    a_count = near if (rng.random() < 0.5 and near <= length) else rng.choice(counts)
    symbols = ["a"] * a_count + ["b"] * (length - a_count)
    rng.shuffle(symbols)
    return "".join(symbols)


def _sample_contains_ab(rng: random.Random, length: int, label: bool) -> str | None:
    if not label:
        # The non-members are exactly b^i a^j.
        b_count = rng.randint(0, length)
        return "b" * b_count + "a" * (length - b_count)
    if length < 2:
        return None
    word = list(_uniform_word("ab", rng, length))
    at = rng.randrange(length - 1)
    if rng.random() < 0.5:
        # A near miss: a non-member b^i a^j with one "ab" planted in it.
        word = sorted(word, reverse=True)
    word[at : at + 2] = ["a", "b"]
    return "".join(word)


def _sample_parity(rng: random.Random, length: int, label: bool) -> str | None:
    word = _uniform_word("ab", rng, length)
    if _parity(word) != label:
        word = _flip_one("ab", rng, word)
    return word


def _sample_dyck(rng: random.Random, length: int, label: bool) -> str | None:
    member = _dyck_member(rng, length)
    if label:
        return member
    if member is not None and rng.random() < 0.5:
        return _flip_one("()", rng, member)
    for _ in range(_REJECTION_TRIES):
        word = _uniform_word("()", rng, length)
        if not _bounded_dyck(word):
            return word
    return None


TASKS: tuple[FormalLanguage, ...] = (
    FormalLanguage("majority", "ab", "strictly more a's than b's", _majority, _sample_majority),
    FormalLanguage("contains-ab", "ab", "the factor 'ab' occurs", _contains_ab, _sample_contains_ab),
    FormalLanguage("parity", "ab", "an odd number of a's", _parity, _sample_parity),
    FormalLanguage(
        "dyck",
        "()",
        f"balanced parentheses nested at most {DYCK_MAX_DEPTH} deep",
        _bounded_dyck,
        _sample_dyck,
    ),
)


def task_names() -> tuple[str, ...]:
    """The names :func:`get_task` knows, in a stable order (for CLI choices and benches)."""
    return tuple(task.name for task in TASKS)


def get_task(name: str) -> FormalLanguage:
    """The language called ``name``; an unknown name is a user error naming the known ones."""
    for task in TASKS:
        if task.name == name:
            return task
    raise VerifyInputError(f"unknown task {name!r}; known tasks: {', '.join(task_names())}")


def all_words(task: FormalLanguage, *, max_len: int, min_len: int = 1) -> Dataset:
    """Every word of length ``min_len..max_len`` over the task's alphabet, labelled.

    There are ``|alphabet|^n`` words of length ``n``; keep ``max_len`` small (the callers
    use at most 12, i.e. 8190 words over two symbols)."""
    _check_lengths(min_len, max_len)
    words = tuple(
        "".join(symbols)
        for length in range(min_len, max_len + 1)
        for symbols in itertools.product(task.alphabet, repeat=length)
    )
    return Dataset(words, tuple(task.label(w) for w in words))


def sample_dataset(task: FormalLanguage, *, size: int, max_len: int, min_len: int = 1, seed: int) -> Dataset:
    """A seeded sample of ``size`` words with lengths in ``min_len..max_len``, half of them members.

    Labels alternate; each word is drawn for its label at a random length (a length with no
    word of that label -- e.g. an odd length for Dyck members -- is redrawn). About half of
    the words are near misses, one or two symbols away from the other class."""
    _check_lengths(min_len, max_len)
    if size < 1:
        raise VerifyInputError(f"dataset size must be at least 1, got {size}")
    rng = random.Random(seed)
    words = [_draw(task, rng, label=i % 2 == 0, min_len=min_len, max_len=max_len) for i in range(size)]
    return Dataset(tuple(words), tuple(task.label(w) for w in words))


def sample_words(task: FormalLanguage, *, size: int, min_len: int, max_len: int, seed: int) -> Dataset:
    """``size`` words drawn uniformly at random (lengths uniform), labelled as they fall.

    Unlike :func:`sample_dataset` this is not balanced: it measures accuracy on the natural
    distribution of longer words, where exhaustive enumeration is out of reach."""
    _check_lengths(min_len, max_len)
    rng = random.Random(seed)
    words = tuple(_uniform_word(task.alphabet, rng, rng.randint(min_len, max_len)) for _ in range(size))
    return Dataset(words, tuple(task.label(w) for w in words))


def _check_lengths(min_len: int, max_len: int) -> None:
    if not 1 <= min_len <= max_len:
        raise VerifyInputError(f"word lengths need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")


def _uniform_word(alphabet: str, rng: random.Random, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _flip_one(alphabet: str, rng: random.Random, word: str) -> str:
    i = rng.randrange(len(word))
    other = rng.choice([s for s in alphabet if s != word[i]])
    return word[:i] + other + word[i + 1 :]


def _draw(task: FormalLanguage, rng: random.Random, *, label: bool, min_len: int, max_len: int) -> str:
    """One word with the wanted label at a random length (redrawn if none exists there)."""
    for _ in range(_REJECTION_TRIES):
        word = task.sample(rng, rng.randint(min_len, max_len), label)
        if word is not None:
            if task.accepts(word) != label:
                raise AssertionError(f"sampler of {task.name!r} drew {word!r} for label {label}")
            return word
    raise VerifyInputError(
        f"task {task.name!r} has no {'member' if label else 'non-member'} of length "
        f"{min_len}..{max_len}; widen the length range"
    )


def _dyck_member(rng: random.Random, length: int) -> str | None:
    """A uniformly random bounded-Dyck word of ``length``, or None if there is none.

    Counts, for every (step, depth), the ways to finish at depth 0 without leaving
    ``0..DYCK_MAX_DEPTH``, then walks forward choosing each step with its share of them."""
    if length % 2:
        return None
    ways = _dyck_completions(length)
    depth, symbols = 0, []
    for step in range(length):
        up = ways[step + 1][depth + 1] if depth < DYCK_MAX_DEPTH else 0
        down = ways[step + 1][depth - 1] if depth > 0 else 0
        go_up = rng.random() * (up + down) < up
        depth += 1 if go_up else -1
        symbols.append("(" if go_up else ")")
    return "".join(symbols)


def _dyck_completions(length: int) -> Sequence[Sequence[int]]:
    """``ways[t][d]``: paths from depth ``d`` after ``t`` steps to depth 0 at step ``length``."""
    top = DYCK_MAX_DEPTH
    ways = [[0] * (top + 1) for _ in range(length + 1)]
    ways[length][0] = 1
    for t in range(length - 1, -1, -1):
        for d in range(top + 1):
            ways[t][d] = (ways[t + 1][d + 1] if d < top else 0) + (ways[t + 1][d - 1] if d else 0)
    return ways
