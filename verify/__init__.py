"""Exact bit-vector SMT verification of quantized transformer encoders (trSAT and friends).

Stands alone: it imports nothing from the prover packages and shares only the CLI, and the
process helper below every package (:mod:`lean_env.process`, which imports nothing of the
project): a solver child's process group is killed as a Lean process's is.

Rooms, each importing only the ones above it (and ``errors``, the exception root):

* ``model/``   -- what an encoder is (the spec and its file format) and computes (the interpreter);
* ``smt/``     -- the exact QF_BV encoding of a run and the solvers that answer it;
* ``queries/`` -- the questions (trSAT, robustness, equivalence), length bounds and word reductions;
* ``trained/`` -- tiny PyTorch encoders on formal languages, quantized into specs and verified.
"""
