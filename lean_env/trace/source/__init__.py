"""Lean-free source extraction: theorems, premises, proof steps and sorries read from
``.lean`` text by a lexer-aware reader, with namespace- and ``open``-aware name resolution.

Modules: :mod:`.extract` (one file to records) and :mod:`.repo` (a whole repository and
its Lake dependencies), over the Lean text reading of :mod:`lean_env.syntax` (lexer,
commands and declarations, tactic steps, name resolution, corpus code). See
``docs/source-extraction.md``.
"""

from lean_env.trace.source.extract import FileExtract, extract_file
from lean_env.trace.source.repo import SourceExtractionError, extract_repo

__all__ = ["FileExtract", "SourceExtractionError", "extract_file", "extract_repo"]
