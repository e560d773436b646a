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


def summary(values: "Sequence[float]", qs: tuple[float, ...] = (0.5, 0.9, 0.95, 0.99)
            ) -> dict[str, float]:
    """Mean and nearest-rank percentiles (keys ``mean``, ``p50``, ``p90``…) of ``values``."""
    import numpy as np

    ordered = np.sort(np.asarray(values, dtype=np.float64))
    n = len(ordered)
    if n == 0:
        return {"mean": math.nan, **{f"p{round(q * 100):d}": math.nan for q in qs}}
    out = {"mean": float(ordered.mean())}
    for q in qs:
        out[f"p{round(q * 100):d}"] = float(ordered[nearest_rank(n, q) - 1])
    return out
