"""The ``leanagent`` command line: parse, call the library, print, exit (``main.py``), the
options several commands share, and one module per command family (``commands/``)."""
