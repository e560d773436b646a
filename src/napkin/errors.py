"""The one error type napkin raises for bad input.

The CLI prints ``str(error)`` as a single line and exits with status 2; the library raises it
wherever an input is outside what a formula allows, naming the field and the allowed values.
"""


class NapkinError(ValueError):
    """Bad input: the message names the field, the value and what is allowed."""


class _State:
    """How errors name the fields: ``flag_names`` (set for a command-line run by
    :func:`napkin.cli.main.main`): the API's boundary names an argument as the CLI's flag
    (``prompt-len``) instead of the keyword (``prompt_len``)."""

    flag_names = False


state = _State()


def require(condition: bool, message: str) -> None:
    """Raise :class:`NapkinError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise NapkinError(message)


def refuse_unused(given: dict[str, object], needs: str) -> None:
    """Refuse options the user gave (not None) that nothing will use without ``needs``: a
    silently ignored ``--mfu -1`` would look accepted. The first one is named."""
    used = [name for name, value in given.items() if value is not None]
    require(not used, f"{used[0] if used else ''}: only used with {needs}; give {needs} or "
                      "drop it")
