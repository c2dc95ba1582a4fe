"""``python -m agent.cli``: the console script, for environments without it."""

from agent.cli.entry import run

run()
