"""Why attention divides QKᵀ by √d_k (Vaswani et al. 2017, §3.2.1; question bank q6).

For a query q and a key k of ``d_k`` independent, zero-mean components with variances σ_q² and
σ_k², each product q_i·k_i has variance σ_q²·σ_k², so the score q·k = Σ_i q_i·k_i has variance
``d_k·σ_q²·σ_k²``: d_k = 128 with unit variances gives a standard deviation of √128 ≈ 11.3, a
softmax over such scores is nearly one-hot and its derivatives p(1 − p) nearly zero. Scaling
by ``1/√d_k`` brings the variance back to σ_q²·σ_k² (1 for unit variances).
"""

import math
from dataclasses import dataclass

from napkin.errors import require


@dataclass(frozen=True)
class ScoreScale:
    """Score variance before and after the 1/√d_k scale for one head size."""

    head_dim: int
    var_q: float
    var_k: float

    @property
    def score_var(self) -> float:
        """Var(q·k) = d_k·σ_q²·σ_k²."""
        return self.head_dim * self.var_q * self.var_k

    @property
    def score_std(self) -> float:
        return math.sqrt(self.score_var)

    @property
    def scale(self) -> float:
        """The factor softmax's input is multiplied by: 1/√d_k."""
        return 1.0 / math.sqrt(self.head_dim)

    @property
    def scaled_var(self) -> float:
        """Var(q·k/√d_k) = d_k·σ_q²·σ_k²/d_k = σ_q²·σ_k²."""
        return self.var_q * self.var_k


def score_scale(head_dim: int, var_q: float = 1.0, var_k: float = 1.0) -> ScoreScale:
    """The :class:`ScoreScale` of ``head_dim`` = d_k ≥ 1 components of variances ``var_q``,
    ``var_k`` > 0."""
    require(head_dim >= 1, f"d-k: must be an integer >= 1, got {head_dim}")
    for name, v in (("var-q", var_q), ("var-k", var_k)):
        require(math.isfinite(v) and v > 0, f"{name}: must be a finite number > 0, got {v}")
    return ScoreScale(head_dim, var_q, var_k)
