"""The one error type napkin raises for bad input.

The CLI prints ``str(error)`` as a single line and exits with status 2; the library raises it
wherever an input is outside what a formula allows, naming the field and the allowed values.
"""


class NapkinError(ValueError):
    """Bad input: the message names the field, the value and what is allowed."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`NapkinError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise NapkinError(message)
