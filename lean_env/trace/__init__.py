"""From a checkout to records: LeanDojo tracing (:mod:`.dojo`), Lean-free source
extraction (:mod:`.source`) and the choice between them that ``--tracer`` makes
(:mod:`.choice`)."""
