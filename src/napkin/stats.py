"""Statistics with the chapter's conventions.

Percentiles are nearest-rank (chapter 3.1.2): sort the n observations ascending and take the
``⌈q·n⌉``-th (1-based). For 4 observations p95 is the largest; for 480 it is the 456th.
"""

import math
from collections.abc import Sequence

from napkin.errors import require


def nearest_rank(n: int, q: float) -> int:
    """1-based rank of the q-quantile among n observations: ``max(1, ⌈q·n⌉)``."""
    require(n >= 1, f"percentile: needs at least one observation, got {n}")
    require(0 < q <= 1, f"percentile: q must be in (0, 1], got {q}")
    # round first so that e.g. 0.95·480 = 456.00000000000006 is not pushed to 457
    return max(1, math.ceil(round(q * n, 9)))


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank q-quantile of ``values`` (q in (0, 1], e.g. 0.95)."""
    ordered = sorted(values)
    return ordered[nearest_rank(len(ordered), q) - 1]
