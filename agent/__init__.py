"""The prover: tactic generators, best-first proof search, proving a job's theorems, the
lifelong job and Pass@1 evaluation, behind the ``leanagent`` command line.

Rooms, each importing only those listed after it (and retrieval/, curriculum/, lean_env/)::

    cli/          the command line: parsing, shared options, one module per command family
    lifelong/     the lifelong job (``run``) and its report, pull requests of its proofs
    evaluation/   Pass@1 on held-out theorems (``evaluate``) and its report
    reports/      output for people and machines: reports on disk, shared tables, JSON or text
    proving/      one theorem's proof, a job's targets and attempts, Ray, checks after the search
    generators/   tactic generators (a Hugging Face model and its training, the built-in
                  suggester) and the premises they are conditioned on
    search/       best-first search over a proof session, and the seam to generators that learn
    workspace/    the data directory: settings, the store and its ingestion, the job lock
"""
