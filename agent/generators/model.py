"""Tactic generation with a Hugging Face language model, conditioned on retrieved premises.

The input is ReProver's, byte for byte (:func:`retrieval.formats.augmented_state`): the
retrieved premises, each with its name marked ``<a>...</a>`` and followed by a blank line,
best one last, within a byte budget of ``max_input_tokens`` (ReProver's ``max_inp_seq_len``,
which for its byte-level ByT5 is the same count), then the goal. Encoder-decoder models
(ReProver's ByT5 generators, or any T5) read it as ReProver's tokenizer call does, cut on the
right past ``max_input_tokens`` (only a goal longer than that is cut: the premises were
chosen to fit), and write the tactic; decoder-only models (GPT-2 and the like) continue it
after a separator, cut on the left so that the separator stays. Beam search returns ``n``
tactics with their log-probabilities (the sum over the tactic's tokens, no length
normalisation, so that search can add them along a path). A generator taught on marked
premises writes marks too (ReProver's was taught on tactics whose premises were marked):
they are removed before a tactic leaves here for Lean, as ReProver removes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    GenerationConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from agent.search.tree import Candidate
from retrieval.devices import Placement, placement
from retrieval.formats import (
    GENERATOR_INPUT_LENGTH,
    GENERATOR_OUTPUT_LENGTH,
    PremiseCode,
    augmented_state,
    remove_marks,
)
from retrieval.pretrained import ModelLoadError, load_pretrained, save_pretrained

# Between the input and the tactic, for decoder-only models.
SEPARATOR = "\n<tactic>"


class HFTacticGenerator:
    """A :class:`~agent.search.tree.TacticGenerator` backed by a ``transformers`` model, run where
    ``placement`` says (default: the CPU, in float32)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        max_input_tokens: int = GENERATOR_INPUT_LENGTH,
        max_tactic_tokens: int = GENERATOR_OUTPUT_LENGTH,
        placement: Placement | None = None,
    ) -> None:
        self.placement = placement or Placement.cpu()
        # transformers wraps .to with functools.wraps, which hides the bound self from mypy.
        self.model = model.to(self.placement.device).eval()  # type: ignore[arg-type]
        self.tokenizer = tokenizer
        self.max_input_tokens = max_input_tokens
        self.max_tactic_tokens = max_tactic_tokens
        self.decoder_only = not model.config.is_encoder_decoder
        if self.decoder_only and tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        # ReProver's tokenizer call cuts on the right; a decoder-only model's input must keep
        # its separator, the end, and is cut on the left.
        self.tokenizer.truncation_side = "left" if self.decoder_only else "right"
        # A decoder-only model's tactic ends at the end of its line: every token holding a
        # newline ends a beam, so a beam's score is its tactic's (newline included) and beams
        # differ in the tactic, not in text after it.
        self._stop_ids = [tokenizer.eos_token_id]
        if self.decoder_only:
            self._stop_ids += [i for i in range(len(tokenizer)) if "\n" in tokenizer.decode([i])]

    @classmethod
    def load(cls, name_or_path: str | Path, *, device: str = "auto", **options: int) -> HFTacticGenerator:
        """The generator at a local directory or Hugging Face name, on ``device`` (see
        :func:`retrieval.devices.placement`); ``options`` are the token budgets."""
        where = placement(device)
        loaded = load_pretrained(
            name_or_path,
            "tactic generator",
            lambda c: AutoModelForSeq2SeqLM if c.is_encoder_decoder else AutoModelForCausalLM,
        )
        if loaded.max_positions:  # absolute positions: input and output share them in a decoder-only model
            limit = loaded.max_positions - (
                0 if loaded.config.is_encoder_decoder else options.get("max_tactic_tokens", GENERATOR_OUTPUT_LENGTH)
            )
            if limit < 16:
                raise ModelLoadError(
                    f"the tactic generator {str(name_or_path)!r} has only {loaded.max_positions} positions: "
                    "too few for a goal and a tactic"
                )
            options["max_input_tokens"] = min(options.get("max_input_tokens", GENERATOR_INPUT_LENGTH), limit)
        return cls(loaded.model, loaded.tokenizer, placement=where, **options)

    def save(self, directory: Path) -> None:
        save_pretrained(self.model, self.tokenizer, directory)

    def input_text(self, state: str, premises: Sequence[PremiseCode]) -> str:
        """The text the model reads for ``state`` with ``premises`` (``(full_name, code)``, best
        first): ReProver's augmented state, and the separator for a decoder-only model."""
        text = augmented_state(state, premises, self.max_input_tokens)
        return text + SEPARATOR if self.decoder_only else text

    def generate(self, state: str, *, premises: Sequence[PremiseCode] = (), n: int) -> list[Candidate]:
        """Up to ``n`` tactics by beam search, best first, with their log-probabilities; marks
        removed (they are no Lean)."""
        text = self.input_text(state, premises)
        # A decoder-only model continues the text: no end-of-sequence token may close it.
        inputs = self.tokenizer(
            text,
            truncation=True,
            max_length=self.max_input_tokens,
            return_tensors="pt",
            add_special_tokens=not self.decoder_only,
        ).to(self.placement.device)
        with torch.inference_mode(), self.placement.autocast():
            # A configuration of our own, so that no default of the model's (repetition
            # penalties, forced tokens, minimum lengths) alters the scores.
            config = GenerationConfig(
                num_beams=max(n, 2),  # one beam would be greedy search, which reports no sequence scores
                num_return_sequences=n,
                max_new_tokens=self.max_tactic_tokens,
                do_sample=False,
                length_penalty=0.0,  # beam scores are then plain sums of token log-probabilities
                # Not True: that ends the search once n beams have finished, even junk that
                # finished early while a likelier tactic was still being written. With plain
                # sums, a running beam's score only falls, so False stops exactly when no
                # running beam can beat the finished ones.
                early_stopping=False,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self._stop_ids,
                decoder_start_token_id=self.model.generation_config.decoder_start_token_id,
            )
            out = self.model.generate(**inputs, generation_config=config)
        sequences = out.sequences[:, inputs["input_ids"].shape[1] :] if self.decoder_only else out.sequences
        tactics = self.tokenizer.batch_decode(sequences, skip_special_tokens=True)
        if self.decoder_only:  # a tactic ends at the end of its line
            tactics = [t.split("\n", 1)[0] for t in tactics]
        return [
            Candidate(remove_marks(t).strip(), float(s)) for t, s in zip(tactics, out.sequences_scores, strict=True)
        ]
