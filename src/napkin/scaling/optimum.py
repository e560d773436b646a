"""Compute-optimal sizing under a training budget (chapter 3.6.1; Hoffmann et al. 2022, eq. 4).

With C training FLOPs and ``C = 6ND`` (N parameters, D tokens), substitute ``D = C/(6N)`` into
``L = E + A/N^α + B/D^β`` and set dL/dN = 0: ``αA·N^(−α−1) = βB·(6/C)^β·N^(β−1)``, so

    N_opt = (αA/(βB))^(1/(α+β)) · (C/6)^(β/(α+β)),    D_opt = C/(6·N_opt),

hence ``N_opt ∝ C^(β/(α+β))`` and ``D_opt ∝ C^(α/(α+β))``. E does not move the optimum. The
optimum minimizes training loss for the budget only: it ignores inference cost and whether that
many tokens exist. The Chinchilla rule of thumb, D = 20N, gives ``N = √(C/120)`` (question bank
q19).
"""

import math

from napkin.accounting.rules import train_flops_6nd
from napkin.errors import require
from napkin.scaling.law import AllocationExponents, FittedAllocation, ScalingLaw

FLOPS_PER_PARAM_TOKEN = train_flops_6nd(1.0, 1.0)  # the 6 in C = 6ND
CHINCHILLA_TOKENS_PER_PARAM = 20.0  # Hoffmann et al. 2022, Table 3: ~20 tokens per parameter
COMPUTE_FLOPS_RANGE = (1.0, 1e40)
"""Training budgets C accepted (FLOPs): from one FLOP to ~10^15 times today's largest runs;
outside it the optimum's N or D underflow or overflow a float."""
PARAMS_RANGE = (1.0, 1e16)
"""Parameter counts N accepted (a model larger than 10^16 parameters has no data to train on)."""


def _require_budget(compute_flops: float, field: str = "flops") -> None:
    lo, hi = COMPUTE_FLOPS_RANGE
    require(math.isfinite(compute_flops) and lo <= compute_flops <= hi,
            f"{field}: training compute C must be in [{lo:g}, {hi:g}] FLOPs, "
            f"got {compute_flops:g}")


def check_param_count(params: float, field: str) -> None:
    """Refuse a parameter count outside :data:`PARAMS_RANGE`, naming ``field``."""
    lo, hi = PARAMS_RANGE
    require(math.isfinite(params) and lo <= params <= hi,
            f"{field}: parameter counts must be in [{lo:g}, {hi:g}], got {params:g}")


def _require_exponents(law: ScalingLaw) -> None:
    require(law.alpha > 0 and law.beta > 0,
            f"alpha, beta: must be > 0 for an interior optimum, got {law.alpha}, {law.beta}")


def n_opt(law: ScalingLaw, compute_flops: float) -> float:
    """Loss-minimizing parameters for C FLOPs: ``(αA/(βB))^(1/(α+β)) · (C/6)^(β/(α+β))``."""
    _require_budget(compute_flops)
    _require_exponents(law)
    s = law.alpha + law.beta
    g = (law.alpha * law.A / (law.beta * law.B)) ** (1.0 / s)
    return g * (compute_flops / FLOPS_PER_PARAM_TOKEN) ** (law.beta / s)


def fitted_allocation(alloc: FittedAllocation, compute_flops: float) -> tuple[float, float]:
    """(N, D) of a directly fitted allocation: ``N = n_ref · (C/c_ref)^a``, ``D = C/(6N)``.

    Kaplan et al. 2020 (:data:`~napkin.scaling.law.KAPLAN_2020_ALLOCATION`): 1 PF-day
    (8.64e19 FLOPs) → N = 1.3e9, D = 8.64e19/(6 · 1.3e9) ≈ 1.11e10 tokens.
    """
    _require_budget(compute_flops)
    n = alloc.n_ref * (compute_flops / alloc.c_ref_flops) ** alloc.exponents.n_exponent
    return n, compute_flops / train_flops_6nd(n, 1.0)


def d_opt(law: ScalingLaw, compute_flops: float) -> float:
    """Training tokens at the optimum: ``C/(6·N_opt)``."""
    return compute_flops / train_flops_6nd(n_opt(law, compute_flops), 1.0)


def loss_at_optimum(law: ScalingLaw, compute_flops: float) -> float:
    """``L(N_opt, D_opt)`` in nats/token: the lowest loss C FLOPs can buy under this law."""
    return float(law.loss(n_opt(law, compute_flops), d_opt(law, compute_flops)))


def allocation_exponents(law: ScalingLaw) -> AllocationExponents:
    """``(β/(α+β), α/(α+β))``: N_opt and D_opt grow as these powers of C."""
    _require_exponents(law)
    s = law.alpha + law.beta
    return AllocationExponents(n_exponent=law.beta / s, d_exponent=law.alpha / s)


def scale_factors(law: ScalingLaw | AllocationExponents,
                  budget_factor: float) -> tuple[float, float]:
    """How much N_opt and D_opt grow when C grows ``budget_factor``-fold: ``(k^a, k^b)``.

    a, b are the allocation exponents of ``law`` (or given directly, e.g. :data:`KAPLAN_2020`).
    With α = β both are ½: ×4 budget → N and D ×2, ×9 → ×3 (Exercise 3-8).
    """
    require(math.isfinite(budget_factor) and budget_factor > 0,
            f"budget_factor: must be > 0, got {budget_factor}")
    exps = allocation_exponents(law) if isinstance(law, ScalingLaw) else law
    return budget_factor**exps.n_exponent, budget_factor**exps.d_exponent


def chinchilla_rule(compute_flops: float) -> tuple[float, float]:
    """(N, D) with D = 20N and C = 6ND: ``N = √(C/120)``, ``D = 20N`` (question bank q19).

    4.0e20 FLOPs (task 4) gives N ≈ 1.83e9 parameters, D ≈ 3.65e10 tokens.
    """
    _require_budget(compute_flops)
    n = math.sqrt(compute_flops / (FLOPS_PER_PARAM_TOKEN * CHINCHILLA_TOKENS_PER_PARAM))
    return n, CHINCHILLA_TOKENS_PER_PARAM * n


def tokens_for_loss(law: ScalingLaw, N: float, target_loss: float) -> float:
    """Tokens D at which a model of N parameters reaches ``target_loss`` (nats/token).

    Inverts ``L(N, D) = target``: ``D = (B/(target − E − A/N^α))^(1/β)``. No amount of data
    gets below the floor ``E + A/N^α``; a target at or under it raises :class:`NapkinError`.
    """
    check_param_count(N, "N")
    require(law.beta > 0, f"beta: must be > 0 to invert the data term, got {law.beta}")
    floor = law.E + law.A / N**law.alpha
    require(target_loss > floor,
            f"target-loss: {target_loss} nats/token is not above the floor E + A/N^α = "
            f"{floor:.4f} for N = {N:.3g}; more tokens cannot reach it (use a larger model)")
    return (law.B / (target_loss - floor)) ** (1.0 / law.beta)
