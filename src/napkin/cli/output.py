"""How the CLI prints tables: ``--wide`` (every column, whatever the terminal's width)."""

wide = False
"""Set by :func:`napkin.cli.main.main` when the command line holds ``--wide``."""
