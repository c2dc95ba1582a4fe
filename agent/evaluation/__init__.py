"""Pass@1 on held-out theorems that have proofs (``leanagent evaluate``), ReProver's protocol,
and its report."""
