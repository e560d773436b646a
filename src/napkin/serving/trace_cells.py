"""One cell of a trace file at a time: datetimes, token counts and numbers, and how an error
quotes a cell (:mod:`napkin.serving.traces`' readers share these)."""

import math
import re
from datetime import UTC, date, datetime

from napkin.serving.requests import MAX_REQUEST_TOKENS

PER_SECOND = {"s": 1.0, "ms": 1e3, "us": 1e6}
"""Units of a numeric arrival column (``time_unit``) per second."""
COUNT = f"a token count (a whole number up to {MAX_REQUEST_TOKENS:,})"
"""What a token-count cell must hold, as an error says it."""

_MISSING = {"", "nan", "na", "n/a", "null", "none"}
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?",
    re.IGNORECASE,
)


def short(value: object, most: int = 60) -> str:
    """A cell's value as an error quotes it: its repr, cut to ``most`` characters (an error
    never carries more of a file than the field's own value, truncated)."""
    text = repr(value)
    return text if len(text) <= most else text[:most - 3] + "..."


class Clock:
    """Datetime strings → float seconds relative to the first one parsed.

    Whole seconds stay integers until the subtraction, so nanosecond digits survive even though
    epoch seconds as a float64 only resolve ~0.2 µs.
    """

    def __init__(self) -> None:
        self.ref: int | None = None

    def seconds(self, text: str) -> float:
        """Seconds since the first parsed time; raises ValueError when ``text`` is no datetime."""
        whole, frac = parse_datetime(text)
        if self.ref is None:
            self.ref = whole
        return float(whole - self.ref) + frac


def parse_datetime(text: str) -> tuple[int, float]:
    """``text`` as (whole seconds since the Unix epoch, UTC; fraction of a second)."""
    s = text.strip()
    m = _DATETIME.fullmatch(s)
    if m is None:  # other ISO 8601 spellings Python knows (e.g. basic format)
        dt = datetime.fromisoformat(s)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        whole = math.floor(dt.replace(microsecond=0).timestamp())
        return whole, dt.microsecond / 1e6
    y, mo, d, hh, mi, ss, digits, zone = m.groups()
    hour, minute, second = int(hh or 0), int(mi or 0), int(ss or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"time of day out of range in {s!r}")
    days = date(int(y), int(mo), int(d)).toordinal() - _EPOCH_ORDINAL
    offset = 0
    if zone and zone.upper() != "Z":
        sign = -1 if zone[0] == "-" else 1
        z = zone[1:].replace(":", "")
        zone_h, zone_m = int(z[:2]), int(z[2:4] or 0)
        if zone_h * 60 + zone_m > 14 * 60 or zone_m > 59:  # UTC−12:00 … UTC+14:00 exist
            raise ValueError(f"zone offset {zone} beyond ±14:00 in {s!r}")
        offset = sign * (zone_h * 3600 + zone_m * 60)
    whole = days * 86400 + hour * 3600 + minute * 60 + second - offset
    frac = int(digits) / 10 ** len(digits) if digits else 0.0
    return whole, frac


def _bounded(n: int) -> int:
    if n > MAX_REQUEST_TOKENS:
        raise ValueError(f"{n} is more than {MAX_REQUEST_TOKENS:,} tokens")
    return n


def parse_count(text: str) -> int | None:
    """A token count from a table cell; None when the cell is empty or NaN; ValueError when
    it is no whole number or above :data:`MAX_REQUEST_TOKENS`."""
    s = text.strip()
    if s.lower() in _MISSING:
        return None
    try:
        return _bounded(int(s))
    except ValueError:
        value = float(s)  # "374.0" from tools that wrote an int column as float
    if math.isnan(value):
        return None
    if not value.is_integer():
        raise ValueError(f"{s!r} is not a whole number")
    return _bounded(int(value))


def parse_number(text: str) -> float:
    """A finite number from a table cell; ValueError when it is none."""
    value = float(text.strip())
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not finite")
    return value
