"""Progressive training of the premise retriever: one training step per new repository,
with replay or elastic weight consolidation (EWC) against forgetting the earlier ones.

Losses (each example contributes its goal ``q`` and one of its used premises ``p``, drawn,
seeded; texts are cut to ``max_length`` tokens, ReProver's 1024):

* ``infonce``: the other premises of the batch are its negatives, except those the example
  also used: ``loss = CE(q . P^T / temperature, own column)``.
* ``mse`` (ReProver's): each example also draws ``negatives`` hard negatives among the
  accessible premises, ``in_file_negatives`` of them from the used premise's file; every
  goal is compared with every premise of the batch, ``loss = MSE(q . P^T, used)`` where
  ``used`` is 1 for the premises the goal's step used and 0 for the others.

With the ``cosine`` schedule each repository's step warms the learning rate up linearly
over ``warmup_steps`` batches and then lowers it along a cosine to 0 at its last batch, as
ReProver's and LeanAgent's trainers do (LeanAgent starts a trainer per repository).

Against forgetting:

* ``replay``: a reservoir (uniform over every example seen so far, seeded) of earlier
  examples is mixed into each later batch, one replayed example per new one.
* ``ewc``: after a repository, a diagonal approximation ``F`` of the Fisher information
  (squared batch-loss gradients on its examples, averaged) is added to a running total
  (``F <- decay * F + F_new``) and the weights are remembered as ``theta*``; later steps add
  ``lambda / 2 * sum F (theta - theta*)^2``. LeanAgent's code has EWC but ships it off
  (``use_fisher = False`` in leanagent.py; its README calls it an ablation that "resulted in
  suboptimal lifelong learning performance"); its main runs train each repository for an
  epoch from the previous checkpoint, with neither.
* ``none``: plain fine-tuning (the baseline that forgets; LeanAgent's main setting).

The reservoir keeps each example with the names of its premises, and every step reads them
against that step's corpus: a repository's newer commit may drop, add or move premises, so
corpus indices from an earlier step would point at the wrong premise, or past the end.

Same examples, options and seed give bit-identical weights (on one machine, at one number
of threads: torch's CPU kernels split their sums by thread). Every random draw comes from the
trainer's own streams, seeded by ``TrainConfig.seed`` and saved with its state: Python's for
the data order and the positives, and a torch generator state for dropout, which a step puts
in place of torch's global generator while it runs. The global one cannot be relied on: a
fresh process seeds it at random, and anything else the process runs between two steps (a
proof search sampling tactics) draws from it, while a resumed run restarts without those draws.

Training recomputes each layer's activations in the backward pass instead of keeping them
(gradient checkpointing, where the model supports it). Kept, the attention activations of a
batch of 16 goals and 16 premises at MiniLM's 512 tokens come to about 11 GB, and replay's
doubled batches did not fit in 24 GB; recomputed, the batch peaks near 3 GB
(``bench/training_memory.py``). The recomputation replays the saved random state, so the
dropout masks, and the weights, are the same bit for bit as without it (tested).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from transformers import get_cosine_schedule_with_warmup

from lean_env.records import Position
from retrieval.corpus import PremiseCorpus, RetrievalExample, premise_text
from retrieval.encoder import TextEncoder
from retrieval.train_config import Consolidation, Loss, Schedule, TrainConfig

log = logging.getLogger(__name__)


class _Kept(NamedTuple):
    """A reservoir example and the full names of its premises (see the module notes)."""

    example: RetrievalExample
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StepReport:
    """What one training step did."""

    examples: int
    batches: int
    mean_loss: float  # contrastive loss, averaged over the step's batches
    mean_penalty: float  # EWC penalty, averaged over the step's batches (0 without EWC)


class ProgressiveTrainer:
    """Trains one encoder repository after repository; holds the anti-forgetting state."""

    def __init__(
        self, encoder: TextEncoder, config: TrainConfig = TrainConfig(), *, recompute_activations: bool = True
    ) -> None:
        self.encoder = encoder
        self.config = config
        # Not a TrainConfig field: it changes memory and time, never the weights (module notes).
        self.recompute_activations = recompute_activations
        self._rng = random.Random(config.seed)
        # torch's random state for dropout: the trainer's own, not the process's (module notes)
        self._torch_rng = torch.Generator().manual_seed(config.seed).get_state()
        self._optimizer = torch.optim.AdamW(encoder.model.parameters(), lr=config.learning_rate)
        self._fisher: dict[str, torch.Tensor] = {}
        self._anchor: dict[str, torch.Tensor] = {}
        self._reservoir: list[_Kept] = []
        self._seen = 0  # examples offered to the reservoir so far

    def step(
        self,
        corpus: PremiseCorpus,
        examples: Sequence[RetrievalExample],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> StepReport:
        """Train on one repository's ``examples`` (premises from ``corpus``), then consolidate."""
        with self._own_randomness(), self._recomputing():
            return self._step(corpus, examples, progress)

    def _step(
        self, corpus: PremiseCorpus, examples: Sequence[RetrievalExample], progress: Callable[[int], None] | None
    ) -> StepReport:
        config = self.config
        model = self.encoder.model
        model.train()
        losses, penalties = [], []
        replay = self._replay_against(corpus)
        schedule = self._schedule(len(examples), len(replay))
        for _ in range(config.epochs):
            order = list(examples)
            self._rng.shuffle(order)
            for start in range(0, len(order), config.batch_size):
                batch = order[start : start + config.batch_size]
                if replay:
                    batch = batch + self._rng.sample(replay, min(len(batch), len(replay)))
                if len(batch) < 2:
                    continue  # a contrastive batch needs a negative
                loss = self.loss(corpus, batch)
                penalty = self.penalty()
                self._optimizer.zero_grad()
                (loss + penalty).backward()
                self._optimizer.step()
                if schedule:
                    schedule.step()
                losses.append(loss.item())
                penalties.append(penalty.item())
                if progress:
                    progress(len(batch))
        self._consolidate(corpus, examples)
        n = max(len(losses), 1)
        return StepReport(len(examples), len(losses), sum(losses) / n, sum(penalties) / n)

    def _schedule(self, examples: int, replayed: int) -> torch.optim.lr_scheduler.LambdaLR | None:
        """The cosine schedule of one repository's step, over exactly the batches it will
        train on (None: a constant rate). Each step starts again from ``learning_rate``, as
        LeanAgent's fresh trainer per repository does, so a resumed run schedules as an
        uninterrupted one."""
        config = self.config
        if config.schedule is Schedule.CONSTANT:
            return None
        sizes = [min(config.batch_size, examples - start) for start in range(0, examples, config.batch_size)]
        batches = config.epochs * sum(size + min(size, replayed) >= 2 for size in sizes)
        for group in self._optimizer.param_groups:
            group["lr"] = group["initial_lr"] = config.learning_rate
        return get_cosine_schedule_with_warmup(self._optimizer, config.warmup_steps, max(batches, 1))

    @contextlib.contextmanager
    def _own_randomness(self) -> Iterator[None]:
        """Run with the trainer's torch random state in place of the global one (which is
        given back unchanged afterwards) and with torch's deterministic kernels only. That
        makes a step bit-reproducible on the CPU; on a GPU, dropout draws from the device's
        own generator and cuBLAS has no deterministic mode without CUBLAS_WORKSPACE_CONFIG,
        so there a kernel without a deterministic twin warns instead of stopping training."""
        deterministic = torch.are_deterministic_algorithms_enabled()
        on_cpu = self.encoder.placement.device.type == "cpu"
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(self._torch_rng)
            torch.use_deterministic_algorithms(True, warn_only=not on_cpu)
            try:
                yield
            finally:
                torch.use_deterministic_algorithms(deterministic)
                self._torch_rng = torch.get_rng_state()

    @contextlib.contextmanager
    def _recomputing(self) -> Iterator[None]:
        """Run with gradient checkpointing on (when asked for and the model has it), off again
        afterwards: embedding without gradients gains nothing from it."""
        model = self.encoder.model
        if not (self.recompute_activations and getattr(model, "supports_gradient_checkpointing", False)):
            yield
            return
        # The non-reentrant kind: it needs no input that requires grad (token ids do not).
        # transformers 5 renamed gradient checkpointing to activation checkpointing.
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
            disable = model.activation_checkpointing_disable
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
            disable = model.gradient_checkpointing_disable
        # An encoder caches nothing, but its config may say use_cache (BERT's does), and
        # transformers then warns that checkpointing turns the cache off: say so first.
        use_cache = getattr(model.config, "use_cache", None)
        if use_cache is not None:
            model.config.use_cache = False
        try:
            yield
        finally:
            disable()
            if use_cache is not None:
                model.config.use_cache = use_cache

    def loss(self, corpus: PremiseCorpus, batch: Sequence[RetrievalExample]) -> torch.Tensor:
        """The loss of one batch (differentiable): each example's goal against one of its
        used premises (drawn) and the other examples' (see :class:`Loss`)."""
        chosen = [e.positives[self._rng.randrange(len(e.positives))] for e in batch]
        if self.config.loss is Loss.MSE:
            return self._mse(corpus, batch, chosen)
        length = self.config.max_length
        queries = self.encoder.embed([e.context for e in batch], max_length=length)  # (B, d)
        keys = self.encoder.embed([premise_text(corpus.premises[i]) for i in chosen], max_length=length)  # (B, d)
        logits = queries @ keys.T / self.config.temperature  # (B, B)
        # Another example's premise that this example also used is not a negative.
        used = torch.tensor(
            [[j != i and chosen[j] in e.positives for j in range(len(batch))] for i, e in enumerate(batch)],
            device=logits.device,
        )
        logits = logits.masked_fill(used, float("-inf"))
        return torch.nn.functional.cross_entropy(logits, torch.arange(len(batch), device=logits.device))

    def _mse(self, corpus: PremiseCorpus, batch: Sequence[RetrievalExample], chosen: list[int]) -> torch.Tensor:
        """ReProver's loss: every goal against every premise of the batch (the chosen ones,
        then each example's hard negatives), labelled 1 where the goal's step used it."""
        columns = chosen + [i for e, p in zip(batch, chosen, strict=True) for i in self._negatives(corpus, e, p)]
        length = self.config.max_length
        queries = self.encoder.embed([e.context for e in batch], max_length=length)  # (B, d)
        keys = self.encoder.embed([premise_text(corpus.premises[i]) for i in columns], max_length=length)  # (C, d)
        similarity = queries @ keys.T  # (B, C), cosines: the embeddings are unit vectors
        label = torch.tensor([[float(c in e.positives) for c in columns] for e in batch], device=similarity.device)
        return torch.nn.functional.mse_loss(similarity, label)

    def _negatives(self, corpus: PremiseCorpus, example: RetrievalExample, positive: int) -> list[int]:
        """Hard negatives for ``example`` with its used premise ``positive``, as ReProver
        draws them: up to ``in_file_negatives`` accessible premises of the positive's file,
        the rest of ``negatives`` from the other accessible ones (fewer when there are not
        so many). They may be premises the example also used: the label says so."""
        config = self.config
        allowed = corpus.accessible(example.repo, example.path, example.start)
        same_file = corpus.file_premises(example.repo, corpus.premises[positive].path)
        in_file = [int(i) for i in same_file[allowed[same_file]] if i != positive]
        allowed[same_file] = False
        others = np.flatnonzero(allowed)
        k = min(len(in_file), config.in_file_negatives, config.negatives)
        rest = min(len(others), config.negatives - k)
        picked = [in_file[j] for j in self._rng.sample(range(len(in_file)), k)]
        return picked + [int(others[j]) for j in self._rng.sample(range(len(others)), rest)]

    def penalty(self) -> torch.Tensor:
        """The EWC penalty for the current weights: ``lambda / 2`` times :meth:`fisher_distance`."""
        return self.config.ewc_lambda / 2 * self.fisher_distance()

    def fisher_distance(self) -> torch.Tensor:
        """``sum F (theta - theta*)^2``: how far the weights moved where earlier repositories
        need them (0 before the first consolidation; differentiable)."""
        total = torch.zeros((), device=self.encoder.placement.device)
        for name, param in self.encoder.model.named_parameters():
            if name in self._fisher:
                total = total + (self._fisher[name] * (param - self._anchor[name]) ** 2).sum()
        return total

    def _consolidate(self, corpus: PremiseCorpus, examples: Sequence[RetrievalExample]) -> None:
        config = self.config
        if config.consolidation is Consolidation.EWC and len(examples) >= 2:
            fisher = self._fisher_information(corpus, examples)
            for name, value in fisher.items():
                self._fisher[name] = config.ewc_decay * self._fisher.get(name, torch.zeros_like(value)) + value
            self._anchor = {name: p.detach().clone() for name, p in self.encoder.model.named_parameters()}
        elif config.consolidation is Consolidation.REPLAY:
            for example in examples:  # reservoir sampling: every example seen is kept with equal chance
                self._seen += 1
                kept = _Kept(example, tuple(corpus.premises[i].full_name for i in example.positives))
                if len(self._reservoir) < config.replay_size:
                    self._reservoir.append(kept)
                else:
                    slot = self._rng.randrange(self._seen)
                    if slot < config.replay_size:
                        self._reservoir[slot] = kept

    def _fisher_information(
        self, corpus: PremiseCorpus, examples: Sequence[RetrievalExample]
    ) -> dict[str, torch.Tensor]:
        """A diagonal approximation of the Fisher information: the squared gradient of the
        batch loss, averaged over batches (dropout off, so it measures the model itself)."""
        model = self.encoder.model
        model.eval()
        params = {n: p for n, p in model.named_parameters() if p.requires_grad}
        fisher = {n: torch.zeros_like(p) for n, p in params.items()}
        order = list(examples)
        self._rng.shuffle(order)
        size = self.config.batch_size
        batches = [order[i : i + size] for i in range(0, len(order), size) if len(order[i : i + size]) >= 2]
        batches = batches[: self.config.fisher_batches]
        for batch in batches:
            model.zero_grad()
            self.loss(corpus, batch).backward()
            for name, p in params.items():
                if p.grad is not None:
                    fisher[name] += p.grad.detach() ** 2 / len(batches)
        model.zero_grad()
        return fisher

    def _replay_against(self, corpus: PremiseCorpus) -> list[RetrievalExample]:
        """The reservoir's examples with their premises found by name in ``corpus``; those
        whose premises are all gone (or whose repository is not in it) are left out."""
        if self.config.consolidation is not Consolidation.REPLAY:
            return []
        replay = []
        for example, names in self._reservoir:
            positives = tuple(i for i in (corpus.index_of(example.repo, n) for n in names) if i is not None)
            if positives:
                replay.append(
                    example if positives == example.positives else dataclasses.replace(example, positives=positives)
                )
        return replay

    @property
    def reservoir_size(self) -> int:
        return len(self._reservoir)

    def state_dict(self) -> dict[str, Any]:
        """Everything but the encoder's weights that a resumed run needs to continue exactly,
        in two parts that need no pickled classes: ``tensors`` (the optimizer's state, the
        EWC Fisher information and anchor, the trainer's torch random state: tensors in dicts and lists
        of numbers, which ``torch.load(weights_only=True)`` reads) and ``meta`` (plain JSON:
        the reservoir, how many examples it was offered, Python's random state)."""
        version, internal, gauss_next = self._rng.getstate()
        return {
            "tensors": {
                "optimizer": self._optimizer.state_dict(),
                "fisher": self._fisher,
                "anchor": self._anchor,
                "torch_rng": self._torch_rng,
            },
            "meta": {
                "reservoir": [_kept_to_json(kept) for kept in self._reservoir],
                "seen": self._seen,
                "rng": {"version": version, "internal": list(internal), "gauss_next": gauss_next},
            },
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from what :meth:`state_dict` gave (its JSON part read back from text);
        KeyError, TypeError or ValueError when ``meta`` is not of that shape."""
        tensors, meta = state["tensors"], state["meta"]
        # The JSON part is parsed first: a malformed one fails before anything is set.
        rng = meta["rng"]
        random_state = (rng["version"], tuple(rng["internal"]), rng["gauss_next"])
        reservoir = [_kept_from_json(kept) for kept in meta["reservoir"]]
        seen = meta["seen"]
        torch_rng = tensors["torch_rng"]
        if not (isinstance(torch_rng, torch.Tensor) and torch_rng.dtype == torch.uint8):
            raise TypeError(f"torch_rng is not a random state (a uint8 tensor) but {type(torch_rng).__name__}")
        self._optimizer.load_state_dict(tensors["optimizer"])  # moves its state to the weights' device
        device = self.encoder.placement.device
        self._fisher = {name: value.to(device) for name, value in tensors["fisher"].items()}
        self._anchor = {name: value.to(device) for name, value in tensors["anchor"].items()}
        self._reservoir, self._seen = reservoir, seen
        self._rng.setstate(random_state)
        self._torch_rng = torch_rng


def _kept_to_json(kept: _Kept) -> dict[str, Any]:
    example = kept.example
    return {
        "repo": example.repo,
        "theorem": example.theorem,
        "path": example.path,
        "start": example.start.as_list(),
        "context": example.context,
        "positives": list(example.positives),
        "names": list(kept.names),
    }


def _kept_from_json(kept: dict[str, Any]) -> _Kept:
    line, column = kept["start"]
    example = RetrievalExample(
        kept["repo"], kept["theorem"], kept["path"], Position(line, column), kept["context"], tuple(kept["positives"])
    )
    return _Kept(example, tuple(kept["names"]))
