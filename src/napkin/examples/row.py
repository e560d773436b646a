"""A worked-example row: a computed value beside the value its source printed."""

from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_TOLERANCE = 0.005

Published = float | tuple[float, float] | None


@dataclass(frozen=True)
class Row:
    """``value`` computed by the library; ``published`` as printed (a number, a (low, high) range,
    or None for exercises without a printed answer). Both in ``unit``."""

    label: str
    value: float
    published: Published
    unit: str = ""
    tolerance: float = DEFAULT_TOLERANCE
    note: str = ""

    @property
    def deviation(self) -> float | None:
        """Relative deviation from the published value (0 inside a published range)."""
        p = self.published
        if p is None:
            return None
        if isinstance(p, tuple):
            lo, hi = p
            if lo <= self.value <= hi:
                return 0.0
            nearest = lo if self.value < lo else hi
            return (self.value - nearest) / abs(nearest)
        if p == 0:
            return abs(self.value)
        return (self.value - p) / abs(p)

    @property
    def status(self) -> str:
        """``ok``, ``FAIL``, or ``computed`` (nothing published to compare with)."""
        dev = self.deviation
        if dev is None:
            return "computed"
        return "ok" if abs(dev) <= self.tolerance + 1e-12 else "FAIL"


def rounded(label: str, value: float, published: float, decimals: int = 0, unit: str = "",
            note: str = "") -> Row:
    """A row whose published value is rounded to ``decimals``: it passes when the computed value
    rounds to it (within half a unit of the last printed digit)."""
    half_unit = 0.5 * 10.0 ** (-decimals)
    why = f"published figure rounded to {decimals} decimals (±{half_unit:g})"
    return Row(label, value, published, unit, half_unit / abs(published),
               f"{note}; {why}" if note else why)


@dataclass(frozen=True)
class Example:
    """A worked example: where it is printed, and how to compute its rows."""

    id: str
    title: str
    source: str
    compute: Callable[[], list[Row]]

    def rows(self) -> list[Row]:
        return self.compute()
