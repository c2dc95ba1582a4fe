"""The lifelong job (``leanagent run``) as a library: ingest, curriculum, progressive retriever
training, proving after each step, write-back and pull requests, and its report."""
