"""How long one expansion of proof search takes on this machine with a ByT5-small-shaped
tactic generator: beam search of ``--beams`` tactics over ReProver's augmented input.

The model is a ``T5ForConditionalGeneration`` with ByT5-small's shape (12 encoder and 4
decoder layers, d_model 1472, 6 heads, gated-GELU feed-forward of 3584, 384 byte tokens),
randomly initialised and seeded: no weights can be downloaded here, and the time of beam
search depends on the shape, not on the weights. A random model seldom ends a tactic, so
every beam runs to ``--tactic-len`` tokens: that length stands for the tactic's (ReProver's
``max_oup_seq_len`` of 512 is the worst case, most tactics are tens of bytes). The input is a
goal and as many synthetic premises as fit ``--input-len`` bytes (ReProver's rule), so the
encoder reads about that many bytes. Reported: the best wall time and CPU time (all threads)
of ``--repeats`` runs per expansion, and the wall time per decoding step (one token for every
beam). On a shared machine the CPU time says more than the wall time.

    python bench/generation_beams.py [--beams 64 8] [--input-len 2048 1024] [--tactic-len 64] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
from transformers import ByT5Tokenizer, T5Config, T5ForConditionalGeneration

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.generators.model import HFTacticGenerator  # noqa: E402
from agent.reports.output import table  # noqa: E402

GOAL = "α : Type u_1\ninst✝ : CommRing α\na b c : α\nh : a * b = c\n⊢ (a + b) ^ 2 = a ^ 2 + 2 * c + b ^ 2"
PREMISES = [
    (f"Mathlib.Algebra.Ring.lemma_{i}", f"theorem lemma_{i} [CommRing α] (a b : α) : (a + b) ^ {i} = a ^ {i} + b * {i}")
    for i in range(100)
]


def byt5_small_shape() -> T5ForConditionalGeneration:
    """ByT5-small's architecture (google/byt5-small's config), random weights."""
    config = T5Config(
        vocab_size=384,
        d_model=1472,
        d_kv=64,
        d_ff=3584,
        num_layers=12,
        num_decoder_layers=4,
        num_heads=6,
        feed_forward_proj="gated-gelu",
        relative_attention_num_buckets=32,
        tie_word_embeddings=False,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return T5ForConditionalGeneration(config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beams", type=int, nargs="+", default=[64, 8])
    parser.add_argument("--input-len", type=int, nargs="+", default=[2048, 1024])
    parser.add_argument("--tactic-len", type=int, default=64, help="tokens every beam is generated to")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", metavar="OUT", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = byt5_small_shape()
    tokenizer = ByT5Tokenizer()
    rows, payload = [], []
    for input_len in args.input_len:
        generator = HFTacticGenerator(model, tokenizer, max_input_tokens=input_len, max_tactic_tokens=args.tactic_len)
        input_bytes = len(generator.input_text(GOAL, PREMISES).encode())
        for beams in args.beams:
            walls, cpus = [], []
            for _ in range(args.repeats):
                wall, cpu = time.perf_counter(), time.process_time()
                generator.generate(GOAL, premises=PREMISES, n=beams)
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
            best, cpu = min(walls), min(cpus)
            rows.append(
                [
                    beams,
                    input_bytes,
                    args.tactic_len,
                    round(best, 2),
                    round(cpu, 2),
                    round(1000 * best / args.tactic_len),
                ]
            )
            payload.append(
                {
                    "beams": beams,
                    "input_bytes": input_bytes,
                    "tactic_len": args.tactic_len,
                    "seconds": best,
                    "cpu_seconds": cpu,
                }
            )
            print(f"{beams} beams, {input_bytes} input bytes: {best:.2f} s ({cpu:.2f} s CPU)", file=sys.stderr)
    print(table(["beams", "input bytes", "tactic tokens", "s per expansion", "CPU s", "ms per step"], rows))
    load = os.getloadavg()[0]
    print(f"{args.threads} threads; load average {load:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps({"runs": payload, "threads": args.threads, "load_average": load}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
