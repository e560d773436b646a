"""Cost per successful task, price changes, escalation and lifecycle break-even.

Cost per success (chapter 3.2.2): all attempts' cost (generation, verification, tools,
failures) over the successes, ``c/p`` in expectation; with no success a batch reports its cost,
never a division by zero. A new method beats an old one iff ``p₂/p₁ > c₂/c₁``. Escalating a
share e of decision-model requests to an LLM costs ``c_dec + e·c_LLM`` per request (the
arithmetic lives in :mod:`napkin.inference.decision`). Lifecycle (chapter 3.6.3):
``C_life(m) = C₀(m) + Q·Σ_j w_j·c_j(m)``; a model that costs ``ΔC₀`` more up front and saves
``Δc`` per task breaks even after ``Q* = ΔC₀/Δc`` tasks.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from napkin.errors import require
from napkin.inference.decision import escalation_cost

RATIO_RANGE = (1e-12, 1e12)
"""New/old ratios of prices and token counts accepted: positive (a price does not go
negative) and within twelve orders of magnitude either way."""
MIN_SUCCESS_RATE = 1e-12
"""Smallest success rate a ratio divides by (one success in a trillion attempts)."""


@dataclass(frozen=True)
class SuccessCost:
    """Total cost of a batch of attempts and what each success cost (None: no success)."""

    total_cost: float
    attempts: int
    successes: int

    @property
    def per_success(self) -> float | None:
        return self.total_cost / self.successes if self.successes else None

    @property
    def success_rate(self) -> float:
        return self.successes / self.attempts if self.attempts else 0.0


def batch_cost(costs: Sequence[float], succeeded: Sequence[bool]) -> SuccessCost:
    """Every attempt's cost in the numerator, successes in the denominator."""
    require(len(costs) == len(succeeded), "attempts: costs and outcomes must pair up")
    require(all(c >= 0 for c in costs), "cost: attempt costs must be >= 0")
    return SuccessCost(float(sum(costs)), len(costs), sum(bool(s) for s in succeeded))


def cost_per_success(cost_per_attempt: float, success_rate: float) -> float:
    """Expected cost of one success when each attempt costs c and succeeds with p: ``c/p``."""
    require(cost_per_attempt >= 0, "cost: must be >= 0")
    require(0 < success_rate <= 1, f"success rate: must be in (0, 1], got {success_rate}")
    return cost_per_attempt / success_rate


def min_success_rate(cost: float, reference_cost_per_success: float) -> float:
    """Success rate a method costing ``cost`` per attempt needs to match a reference cost per
    success: ``p ≥ c / C_ref`` (Exercise 3-3: c = 1.5 vs 2 units per success → 0.75)."""
    require(reference_cost_per_success > 0, "reference cost per success: must be > 0")
    return cost / reference_cost_per_success


def price_change_ratio(price_ratio: float, tokens_ratio: float, success_old: float,
                       success_new: float) -> float:
    """New over old cost per success when token price scales by ``price_ratio``, tokens per
    attempt by ``tokens_ratio`` and success moves from ``success_old`` to ``success_new``
    (§3.2.2: price ÷10, tokens ×20, 50% → 80% gives 2 × 0.5/0.8 = 1.25)."""
    lo, hi = RATIO_RANGE
    for name, value in (("price-ratio", price_ratio), ("tokens-ratio", tokens_ratio)):
        require(lo <= value <= hi, f"{name}: must be in [{lo:g}, {hi:g}], got {value}")
    for name, value in (("success-old", success_old), ("success-new", success_new)):
        require(MIN_SUCCESS_RATE <= value <= 1,
                f"{name}: must be in [{MIN_SUCCESS_RATE:g}, 1], got {value}")
    return price_ratio * tokens_ratio * success_old / success_new


def escalated_cost(decision_cost: float, llm_cost: float, share: float) -> float:
    """Mean cost per request when ``share`` of them go on to the LLM: ``c_dec + e·c_LLM``."""
    return escalation_cost(decision_cost, llm_cost, share)


def min_success_gain(decision_cost: float, llm_cost: float, share: float) -> float:
    """Smallest ``p₂/p₁`` for escalation to lower the cost per success:
    ``(c_dec + e·c_LLM)/c_dec``."""
    require(decision_cost > 0, "decision cost: must be > 0")
    return escalated_cost(decision_cost, llm_cost, share) / decision_cost


def lifecycle_cost(upfront: float, tasks: float, mix: Sequence[tuple[float, float]]) -> float:
    """``C₀ + Q·Σ w_j·c_j`` for a mix of (share w_j, cost per task c_j)."""
    require(tasks >= 0, "tasks: must be >= 0")
    require(abs(sum(w for w, _ in mix) - 1) < 1e-9, "mix: shares must add up to 1")
    return upfront + tasks * sum(w * c for w, c in mix)


def break_even_tasks(extra_upfront: float, saving_per_task: float) -> float:
    """``Q* = ΔC₀/Δc``: tasks after which the cheaper-to-run model has paid back its extra
    up-front cost (100k H100-hours at 0.72 GPU-s per task: 5e8)."""
    require(saving_per_task > 0, f"saving per task: must be > 0, got {saving_per_task}")
    return extra_upfront / saving_per_task
