"""The text forms of list options, shared by the CLI's flags and the web page's fields."""

from napkin.errors import NapkinError


def parse_ints(text: str, field: str) -> list[int]:
    """``"1,8,16"`` → ``[1, 8, 16]``; every value an integer >= 1."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise NapkinError(
            f"{field}: {text!r} must be comma-separated integers, e.g. 1,8,16"
        ) from None
    if not values or min(values) < 1:
        raise NapkinError(f"{field}: values must be integers >= 1, got {text!r}")
    return values
