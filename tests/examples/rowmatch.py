"""Which worked-example rows a command's JSON reproduces: a row counts as reproduced when some
number in the output equals the row's value in the row's unit, allowing the unit prefixes and
binary, time and percent scales napkin's tables use over JSON's base units."""

import bisect
import math
from collections.abc import Iterator

SCALES: tuple[float, ...] = tuple(sorted(
    {10.0 ** k for k in range(-30, 31)}
    | {2.0 ** (10 * k) for k in range(-4, 5)}
    | {f * 10.0 ** k for f in (60.0, 3600.0, 86400.0) for k in (-3, 0, 3)}
    | {1 / (f * 10.0 ** k) for f in (60.0, 3600.0, 86400.0) for k in (-3, 0, 3)}))
"""A row's value × scale is compared with each JSON number (GB, GiB, ms, %, h, days …)."""

REL = 1e-6


def numbers(doc: object) -> Iterator[float]:
    """Every finite number in a JSON document (booleans as 0/1)."""
    if isinstance(doc, bool):
        yield float(doc)
    elif isinstance(doc, int | float):
        if math.isfinite(doc):
            yield float(doc)
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from numbers(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from numbers(v)


def reproduced(value: float, found: list[float]) -> bool:
    """Whether ``value`` (a row's figure in its unit) is among ``found`` at some scale."""
    if value == 0:
        return any(x == 0 for x in found)
    targets = sorted(abs(value) * s for s in SCALES)
    absolute = sorted(abs(x) for x in found if x != 0)
    for t in targets:
        i = bisect.bisect_left(absolute, t * (1 - REL))
        if i < len(absolute) and absolute[i] <= t * (1 + REL):
            return True
    return False
