"""Exact bit-vector SMT verification of quantized transformer encoders (trSAT and friends).

Stands alone: it imports nothing from the prover packages and shares only the CLI."""
