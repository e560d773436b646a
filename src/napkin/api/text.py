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


def parse_loads(text: str, field: str = "rates") -> list[float] | None:
    """``auto`` → None; else comma-separated numbers (the API checks that they are > 0)."""
    if text.strip() == "auto":
        return None
    values = []
    for part in text.split(","):
        try:
            values.append(float(part))
        except ValueError:
            raise NapkinError(f"{field}: {part.strip()!r} is not a number; give auto or "
                              "comma-separated loads such as 1,2,4") from None
    return values


def parse_numbers(text: str, field: str) -> list[float]:
    """``"50,90,99.9"`` → ``[50.0, 90.0, 99.9]`` (the API checks their range)."""
    values = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            values.append(float(part))
        except ValueError:
            raise NapkinError(f"{field}: {part.strip()!r} is not a number; give "
                              "comma-separated numbers such as 50,90,99") from None
    if not values:
        raise NapkinError(f"{field}: give at least one number, e.g. 50,90,99")
    return values
