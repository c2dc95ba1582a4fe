"""Lean 4 syntax read as text, without Lean: the bottom of ``lean_env``, shared by the
source tracer, proof-text surgery, the interactive backends, retrieval and the agent.

Modules, bottom up: :mod:`.lexer` (comments, literals, identifiers, positions, brackets),
:mod:`.names` (scopes and name resolution without elaboration), :mod:`.reader` (commands,
declarations, scopes of one file), :mod:`.tactics` (top-level tactic steps of a ``by``
block) and :mod:`.corpus_code` (a premise's code as LeanDojo's corpus holds it).

It imports nothing of ``lean_env`` but the records (:mod:`lean_env.records`), so that every
layer that reads Lean text can use it (``tests/test_import_layers.py`` checks this).
"""
