"""Everything that talks to Lean, arranged by job:

* :mod:`lean_env.syntax` -- Lean syntax read as text (lexer, declarations, tactic steps,
  name resolution, corpus code), below everything else but the records;
* :mod:`lean_env.lean` -- the toolchain on PATH, one ``lean FILE`` run, its diagnostics;
* :mod:`lean_env.trace` -- a checkout turned into records: LeanDojo tracing, Lean-free
  source extraction, and the choice between them;
* :mod:`lean_env.benchmark` -- the LeanDojo Benchmark 4 format, read and written;
* :mod:`lean_env.interactive` -- proof environments behind one interface (file check,
  LeanDojo, Lean REPL), the choice between them, replaying a proof step by step;
* :mod:`lean_env.proofs` -- proof text surgery, the final check, writing proofs back.

At the top: the data records every layer speaks (:mod:`lean_env.records`), the project's
errors (:mod:`lean_env.errors`), repository specs and checkouts (:mod:`lean_env.repos`), the
one git runner (:mod:`lean_env.git`), and below everything, for every package (the verifier
too), the process helper (:mod:`lean_env.process`: a child in a session of its own, the
tail of its stderr, its process group killed) and the close-on-exit mixin
(:mod:`lean_env.closing`).
"""
