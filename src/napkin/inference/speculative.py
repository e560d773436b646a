"""Speculative decoding: tokens per verification pass (Leviathan et al. 2023).

A draft proposes k tokens; the target verifies them in one forward. With each token accepted
independently with probability α, a verification yields ``(1 − α^{k+1}) / (1 − α)`` tokens on
average (k + 1 when α = 1). If a draft step costs ``c`` target steps, the expected speed-up in
steps is ``(1 − α^{k+1}) / ((1 − α)(k·c + 1))``.
"""

from napkin.errors import require


def expected_tokens(alpha: float, k: int) -> float:
    """Mean tokens produced per verification of ``k`` drafted tokens at acceptance ``alpha``."""
    require(0 <= alpha <= 1, f"alpha: acceptance rate must be in [0, 1], got {alpha}")
    require(k >= 1, f"k: draft length must be >= 1, got {k}")
    if alpha == 1:
        return k + 1.0
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def speedup(alpha: float, k: int, draft_cost: float) -> float:
    """Expected speed-up over plain decode when a draft step costs ``draft_cost`` target steps."""
    require(0 <= draft_cost < float("inf"),
            f"draft-cost: must be finite and >= 0, got {draft_cost}")
    return expected_tokens(alpha, k) / (k * draft_cost + 1)
