"""How the CLI prints results: ``--wide`` (every column, whatever the terminal's width) and
``--timing`` (the run's wall-clock figures, otherwise left out so that the same inputs print
the same bytes)."""

wide = False
"""Set by :func:`napkin.cli.main.main` when the command line holds ``--wide``."""
timing = False
"""Set by :func:`napkin.cli.main.main` when the command line holds ``--timing``."""
