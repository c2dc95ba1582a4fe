"""Everything that talks to Lean: repository specs, tracing and source extraction,
interactive proof environments (LeanDojo, Lean REPL, file check), final proof checking and
writing proofs back. The data records every layer speaks live in :mod:`lean_env.records`."""
