"""The texts ReProver's public checkpoints were trained on, byte for byte.

A model sees only bytes: ``kaiyuy/leandojo-lean4-retriever-byt5-small`` embeds premises as
ReProver's ``Premise.serialize`` writes them, and
``kaiyuy/leandojo-lean4-retriever-tacgen-byt5-small`` reads the retrieved premises and the
goal as ReProver's ``format_augmented_state`` joins them. Any other text makes them silently
worse, so these functions follow ReProver's rules, their quirks included (each is named
where it is followed). The retriever's index, its training, the generator's training and
proof search all build their inputs here.

* :func:`premise_text`: a premise's code with its declared name marked ``<a>FULL.NAME</a>``.
* :func:`augmented_state`: retrieved premises, best one last (next to the goal), then the goal.
* :func:`remove_marks`: a text without the marks (generated tactics, training targets).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

# A premise as the generator is given it: (full name, code).
PremiseCode = tuple[str, str]
# Goal text -> the premises retrieved for it, best first.
PremisesFor = Callable[[str], Sequence[PremiseCode]]

# ReProver's lengths, in tokens (bytes for its byte-level ByT5 models), as its evaluation
# (prover/evaluate.py) and its retriever's training config (retrieval/confs) set them. The
# defaults of every command; a CPU runs far smaller ones (docs/search.md).
RETRIEVER_LENGTH = 2048  # a goal or premise the retriever embeds when proving
RETRIEVER_TRAIN_LENGTH = 1024  # the same when training the retriever
GENERATOR_INPUT_LENGTH = 2048  # the generator's input; also the premises' byte budget (it trained on 2300)
GENERATOR_OUTPUT_LENGTH = 512  # a generated tactic

MARK_START = "<a>"
MARK_END = "</a>"
# Between two premises, and between the last premise and the goal.
PREMISE_SEPARATOR = "\n\n"


def premise_text(full_name: str, code: str) -> str:
    """What a retriever embeds and a generator reads for the premise ``full_name`` declared
    by ``code`` (LeanDojo's corpus code: comments removed, a theorem's statement only).

    ReProver's rule: ``_root_.FULL.NAME`` becomes ``<a>FULL.NAME</a>`` everywhere; then, for
    the suffixes of the dotted name from the whole name down to its last part, the first one
    that occurs after whitespace (optionally in ``«»``) is marked at every such occurrence.
    Two of its quirks matter for exact bytes and are kept: the suffix goes into a regular
    expression unescaped (a ``.`` matches any character, a ``?`` makes the letter before it
    optional), and the replacement is a template (backslashes in it are escapes).
    """
    marked = f"{MARK_START}{full_name}{MARK_END}"
    code = code.replace(f"_root_.{full_name}", marked)
    parts = full_name.split(".")
    for i in range(len(parts)):
        suffix = ".".join(parts[i:])
        replaced = _mark_after_space(suffix, marked, code)
        if replaced != code:
            return replaced
    return code


def _mark_after_space(suffix: str, marked: str, code: str) -> str:
    try:
        return re.sub(rf"(?<=\s)«?{suffix}»?", marked, code)
    except re.error:
        # A name that is no valid pattern (or a replacement with a bad escape), where
        # ReProver's serialize raises: no bytes to match, so the name is taken literally.
        return re.sub(rf"(?<=\s)«?{re.escape(suffix)}»?", lambda _: marked, code)


def augmented_state(state: str, premises: Sequence[tuple[str, str]], max_len: int) -> str:
    """The generator's input: ``premises`` (``(full_name, code)``, best first) as
    :func:`premise_text` writes them, each followed by a blank line, then ``state``.

    ReProver's rule: the premises may take ``max_len`` UTF-8 bytes minus the state's; each
    one is put *before* those already taken (so the best ends up next to the state), and one
    that would overflow the budget is skipped whole while later, shorter ones may still fit.
    The state is never cut here (a state longer than ``max_len`` comes alone, and the
    tokenizer cuts it).
    """
    budget = max_len - len(state.encode("utf-8"))
    taken: list[str] = []
    used = 0
    for full_name, code in premises:
        piece = premise_text(full_name, code) + PREMISE_SEPARATOR
        size = len(piece.encode("utf-8"))
        if used + size > budget:
            continue
        used += size
        taken.append(piece)
    return "".join(reversed(taken)) + state


def remove_marks(text: str) -> str:
    """``text`` without ``<a>`` and ``</a>``: what a generated tactic (taught on marked
    premises) must become before Lean runs it, and what a training target is."""
    return text.replace(MARK_START, "").replace(MARK_END, "")
