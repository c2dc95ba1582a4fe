"""Training a tactic generator on traced tactics: (goal, premises) -> tactic.

As ReProver trains its tactic generator: every traced tactic with a goal state is an example
(LeanDojo traces and LeanDojo Benchmark 4 data have goals; source extraction sees none, so
its tactics teach nothing here). With a retriever, the input carries the premises it
retrieves for that goal among those accessible from the theorem, as at proving time (ReProver
conditions its generator on retrieved premises too, so that training sees what search will
give). Training is teacher forcing with the tactic's token cross-entropy; the input is built
and cut exactly as :meth:`agent.generators.model.HFTacticGenerator.generate` builds it, so the
model learns on the inputs it will be asked with.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from agent.generators.model import HFTacticGenerator
from agent.generators.premises import PremiseSource
from agent.generators.train_config import GeneratorTrainConfig
from lean_env.records import RepoTrace, TheoremStatus
from retrieval.formats import PremiseCode, remove_marks


@dataclass(frozen=True, slots=True)
class TacticExample:
    """One traced tactic: the goal before it, the premises shown with it, the tactic."""

    repo: str  # the repository's location
    theorem: str  # the theorem's full name (the split keeps a theorem's steps together)
    state: str
    tactic: str  # as Lean runs it: no <a> marks
    premises: tuple[PremiseCode, ...] = ()  # (full_name, code), best first


def tactic_examples(traces: Sequence[RepoTrace], *, premises: PremiseSource | None = None) -> list[TacticExample]:
    """Every traced tactic with a goal state of the proven theorems of ``traces`` (a ``sorry``
    proof teaches nothing worth saying), in trace order."""
    out: list[TacticExample] = []
    for trace in traces:
        repo = trace.spec.location
        for theorem in trace.theorems:
            if theorem.status is not TheoremStatus.PROVEN:
                continue
            steps = [t for t in theorem.tactics if t.state_before and t.tactic.strip()]
            if not steps:
                continue
            retrieve = premises.premises_for(repo, theorem) if premises else None
            for step in steps:
                assert step.state_before is not None
                shown = tuple(retrieve(step.state_before)) if retrieve else ()
                # Marked tactics (LeanDojo's annotated ones) are taught without their marks, as
                # ReProver teaches them: the generator's tactics go to Lean as they are written.
                tactic = remove_marks(step.tactic).strip()
                out.append(TacticExample(repo, theorem.full_name, step.state_before, tactic, shown))
    return out


@dataclass(frozen=True, slots=True)
class GeneratorReport:
    """What training did: examples seen, those left out, batches, and the mean loss."""

    examples: int
    left_out: int  # tactics the generator cannot write whole (see :func:`can_write`)
    batches: int
    mean_loss: float


def train_generator(
    generator: HFTacticGenerator,
    examples: Sequence[TacticExample],
    config: GeneratorTrainConfig = GeneratorTrainConfig(),
    *,
    progress: Callable[[int], None] | None = None,
) -> GeneratorReport:
    """Fine-tune ``generator`` on ``examples``; it is left in eval mode. The example order and
    torch's global generator (dropout) are seeded from ``config.seed``."""
    usable = [e for e in examples if can_write(generator, e)]
    model = generator.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    rng = random.Random(config.seed)
    torch.manual_seed(config.seed)
    losses: list[float] = []
    model.train()
    try:
        for _ in range(config.epochs):
            order = list(usable)
            rng.shuffle(order)
            for start in range(0, len(order), config.batch_size):
                batch = order[start : start + config.batch_size]
                loss = tactic_loss(generator, batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
                if progress:
                    progress(len(batch))
    finally:
        model.eval()
    return GeneratorReport(len(usable), len(examples) - len(usable), len(losses), sum(losses) / max(len(losses), 1))


@dataclass(frozen=True, slots=True)
class GeneratorScores:
    """Held-out quality: the mean loss per tactic token, and how often the first tactic
    generated is exactly the traced one (whitespace-trimmed), over the first ``generated``
    examples; None where there was nothing to score."""

    examples: int
    mean_loss: float | None
    generated: int
    exact_top1: float | None


def evaluate_generator(
    generator: HFTacticGenerator,
    examples: Sequence[TacticExample],
    *,
    batch_size: int = 8,
    max_generated: int | None = None,
) -> GeneratorScores:
    """Score ``examples`` the generator can write: the loss on all, exact match on the first
    ``max_generated`` (beam search costs far more than a loss)."""
    usable = [e for e in examples if can_write(generator, e)]
    if not usable:
        return GeneratorScores(0, None, 0, None)
    total, tokens = 0.0, 0
    with torch.inference_mode():
        for i in range(0, len(usable), batch_size):
            batch = usable[i : i + batch_size]
            # Batch losses are means over their tokens: weight each by its token count.
            count = sum(len(_tactic_ids(generator, e.tactic)) for e in batch)
            total += tactic_loss(generator, batch).item() * count
            tokens += count
    generated = usable[:max_generated]
    hits = sum(generator.generate(e.state, premises=e.premises, n=1)[0].tactic == e.tactic for e in generated)
    return GeneratorScores(len(usable), total / tokens, len(generated), hits / len(generated) if generated else None)


def tactic_loss(generator: HFTacticGenerator, batch: Sequence[TacticExample]) -> torch.Tensor:
    """Mean cross-entropy of the tactics' tokens given their inputs (teacher forcing), on the
    generator's device and in its precision (bfloat16 autocast on a recent GPU, as ReProver
    trains)."""
    tokenizer, model, where = generator.tokenizer, generator.model, generator.placement
    prompts = [generator.input_text(e.state, e.premises) for e in batch]
    if not generator.decoder_only:
        inputs = tokenizer(
            prompts, truncation=True, max_length=generator.max_input_tokens, padding=True, return_tensors="pt"
        ).to(where.device)
        targets = [_tactic_ids(generator, e.tactic) for e in batch]
        labels = _padded(targets, -100).to(where.device)
        with where.autocast():
            return model(**inputs, labels=labels).loss
    # Decoder-only: the input (cut from the left, as generate() does) then the tactic's line;
    # only the tactic's tokens are learned.
    rows, label_rows = [], []
    for text, example in zip(prompts, batch, strict=True):
        context = tokenizer(text, add_special_tokens=False)["input_ids"][-generator.max_input_tokens :]
        tactic = _tactic_ids(generator, example.tactic)
        rows.append(context + tactic)
        label_rows.append([-100] * len(context) + tactic)
    input_ids = _padded(rows, tokenizer.pad_token_id).to(where.device)
    attention = _padded([[1] * len(r) for r in rows], 0).to(where.device)
    labels = _padded(label_rows, -100).to(where.device)
    with where.autocast():
        return model(input_ids=input_ids, attention_mask=attention, labels=labels).loss


def _tactic_ids(generator: HFTacticGenerator, tactic: str) -> list[int]:
    """The tokens the generator should write for ``tactic``, its end marker included: the
    end-of-sequence token for an encoder-decoder, the line's end for a decoder-only model
    (where generation stops)."""
    if generator.decoder_only:
        return generator.tokenizer(tactic + "\n", add_special_tokens=False)["input_ids"]
    return generator.tokenizer(tactic)["input_ids"]  # ends in </s>


def can_write(generator: HFTacticGenerator, example: TacticExample) -> bool:
    """Whether ``generator`` can write ``example``'s tactic whole: within its token budget,
    and on one line for a decoder-only model (whose tactic ends at its line's end)."""
    if generator.decoder_only and "\n" in example.tactic:
        return False
    return len(_tactic_ids(generator, example.tactic)) <= generator.max_tactic_tokens


def _padded(rows: Sequence[Sequence[int]], pad: int) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows], dtype=torch.long)
