"""The Switch Transformer's auxiliary load-balancing loss (Fedus et al. 2021, eq. 4; question
bank q17), beside the routing loads of :mod:`napkin.accounting.routing`.

For N experts, ``f_i`` is the fraction of a batch's tokens dispatched to expert i and ``P_i``
the mean router probability it received; the loss is ``α·N·Σ_i f_i·P_i``. Uniform routing
(f_i = P_i = 1/N) gives ``α·N·N·(1/N²) = α``, its minimum; collapse onto one expert
(f = P = one-hot) gives ``α·N``. The gradient flows through P (differentiable), not through the
counts f, which is why a penalty on Σ f_i² alone teaches the router nothing.
"""

import math
from collections.abc import Sequence

from napkin.errors import require

SWITCH_ALPHA = 0.01
"""α of the Switch Transformer (Fedus et al. 2021, §2.2: 10⁻²)."""

SUM_TOLERANCE = 0.01
"""How far each of f and P may sum from 1 (inputs rounded to two or three decimals)."""


def _shares(values: Sequence[float], field: str) -> list[float]:
    out = [float(v) for v in values]
    require(len(out) >= 1, f"{field}: give one share per expert, got none")
    require(all(math.isfinite(v) and 0 <= v <= 1 for v in out),
            f"{field}: every share must be in [0, 1], got {values!r}")
    require(abs(sum(out) - 1) <= SUM_TOLERANCE,
            f"{field}: the shares must sum to 1 (±{SUM_TOLERANCE}), got {sum(out):.6g}")
    return out


def switch_balance_loss(fractions: Sequence[float], probs: Sequence[float],
                        alpha: float = SWITCH_ALPHA) -> float:
    """``α·N·Σ_i f_i·P_i`` for per-expert token fractions ``fractions`` (f) and mean router
    probabilities ``probs`` (P), one of each per expert, each summing to 1; ``alpha`` ≥ 0."""
    f, p = _shares(fractions, "f"), _shares(probs, "p")
    require(len(f) == len(p), f"p: one probability per expert: {len(f)} fractions, "
                              f"{len(p)} probabilities")
    require(math.isfinite(alpha) and alpha >= 0, f"alpha: must be a finite number >= 0, "
                                                 f"got {alpha}")
    return alpha * len(f) * sum(a * b for a, b in zip(f, p, strict=True))
