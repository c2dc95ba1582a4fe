"""What a quantized encoder is (the spec and its JSON file format) and what it computes (the
reference interpreter, the semantics every other room must agree with).

Imports nothing of ``verify`` but ``errors``: the encoding, the queries and the training build on it.
"""
