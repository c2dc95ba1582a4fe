"""The CLI's subcommands, one module per family.

Each module exposes ``register(subparsers)``, which adds its parsers and binds each to a
handler with ``parser.set_defaults(handler=...)``. A handler takes the parsed arguments and
the :class:`~agent.workspace.settings.Settings`, does its work through the library, prints through
:mod:`agent.reports.output`, and returns the process exit code. Handlers raise project errors for
bad input; :func:`agent.cli.main.main` turns those into one line on stderr and exit code 2.
"""
