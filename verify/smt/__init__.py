"""The exact QF_BV encoding of an encoder run (interval bounds, bit-vector terms) and the SMT
solvers that answer it, each call in a child process under a hard deadline.

Imports ``model`` (the encoding follows the interpreter bit for bit); knows no questions.
"""
