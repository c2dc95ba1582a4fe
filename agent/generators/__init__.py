"""Tactic generators: a Hugging Face language model and its training, the built-in,
model-free suggester with the goal features it reads, and the premises they are conditioned on."""
