"""Tactic generation, best-first proof search, the lifelong loop and the ``leanagent`` CLI."""
