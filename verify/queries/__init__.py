"""The verifier's questions (trSAT, robustness, equivalence), one word length at a time: the
words they range over, the interpreter pre-pass, length bounds and the reductions that shrink it.

Imports ``model`` and ``smt``; the CLI, the benchmarks and ``trained`` call it.
"""
