"""Speculative decoding: tokens per verification pass (Leviathan et al. 2023).

A draft proposes k tokens; the target verifies them in one forward. With each token accepted
independently with probability α, a verification yields ``(1 − α^{k+1}) / (1 − α)`` tokens on
average (k + 1 when α = 1). If a draft step costs ``c`` target steps, the expected speed-up in
steps is ``(1 − α^{k+1}) / ((1 − α)(k·c + 1))``.

Measured acceptance falls with the draft position (DeepSeek-V3's MTP, EAGLE's heads): with
``a_i`` the probability that draft token i is accepted given tokens 1 … i − 1 were, a
verification yields ``1 + Σ_{i=1..k} Π_{j≤i} a_j`` tokens (:func:`tokens_per_step`; the first
term is the target's own token, always kept).
"""

from collections.abc import Sequence

from napkin.errors import require
from napkin.specs.model import ModelSpec


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


def tokens_per_step(acceptance: Sequence[float]) -> float:
    """Mean tokens one verification yields with per-position conditional acceptance
    ``acceptance[i]`` of draft token i + 1: ``1 + Σ_i Π_{j≤i} a_j``."""
    require(len(acceptance) >= 1, "acceptance: give one rate per draft token (at least one)")
    total, survive = 1.0, 1.0
    for a in acceptance:
        require(0 <= a <= 1, f"acceptance: each rate must be in [0, 1], got {a}")
        survive *= a
        total += survive
    return total


def mtp_draft_cost(model: ModelSpec) -> float:
    """A multi-token-prediction draft token's cost in target decode steps, by parameters one
    token uses: the MTP module's block (routed experts at top-k), its ``eh_proj`` (2h × h) and
    the shared LM head (h × vocab), over the main model's active parameters less the embedding
    (a lookup). DeepSeek-V3: (585.3 M + 102.8 M + 926.7 M) / 36.6 B = 4.4 %."""
    mtp = model.mtp
    require(mtp is not None, f"draft_cost: {model.name} has no MTP module; give draft_cost "
                             "(a draft token's cost in target decode steps)")
    h = model.hidden_size
    draft = mtp.block.active_params + 2 * h * h + model.vocab_size * h
    return draft / (model.active_params - model.embedding_params)
