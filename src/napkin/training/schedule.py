"""Training time and budget: step time at MFU, calendar days, GPU-hour equivalence, budgets.

Step time = FLOPs / (devices · peak · MFU). Calendar time = GPU-hours / devices (running
continuously). GPU-hours on accelerator a equal ``peak_a/peak_b`` hours of b at the same
utilization (dense BF16 rates: one H100 hour ≈ 989.4/312 ≈ 3.17 A100 hours). A pretraining
budget is ``devices · peak · MFU · seconds`` (how to split it: :mod:`napkin.scaling.optimum`).
"""

from napkin.errors import require
from napkin.specs.hardware import Accelerator
from napkin.timing.efficiency import check_efficiency

SECONDS_PER_DAY = 86_400.0
MAX_BUDGET_DAYS = 3_650.0
"""Longest training run a budget is computed for (ten years of wall time)."""
MAX_BUDGET_DEVICES = 10_000_000
"""Most accelerators a budget is computed for (well past any cluster built)."""


def step_time_s(flops: float, acc: Accelerator, devices: int = 1, mfu: float = 0.4,
                compute: str = "bf16") -> float:
    """Seconds for ``flops`` on ``devices`` accelerators at ``mfu`` of the dense peak."""
    require(devices >= 1, f"devices: must be >= 1, got {devices}")
    check_efficiency(mfu, "mfu")
    return flops / (devices * acc.peak_flops_per_s(compute) * mfu)


def calendar_days(gpu_hours: float, devices: int) -> float:
    """Days of wall-clock time when ``gpu_hours`` run on ``devices`` at once."""
    require(devices >= 1, f"devices: must be >= 1, got {devices}")
    return gpu_hours / devices / 24.0


def equivalent_hours(gpu_hours: float, source: Accelerator, target: Accelerator,
                     compute: str = "bf16") -> float:
    """``gpu_hours`` of ``source`` as hours of ``target`` by dense peak (same utilization)."""
    return gpu_hours * source.peak_flops_per_s(compute) / target.peak_flops_per_s(compute)


def budget_flops(acc: Accelerator, devices: int, days: float, mfu: float = 0.4,
                 compute: str = "bf16") -> float:
    """FLOPs ``devices`` accelerators deliver in ``days`` at ``mfu`` (task 4: 4.0e20)."""
    require(0 < days <= MAX_BUDGET_DAYS,
            f"days: must be in (0, {MAX_BUDGET_DAYS:,.0f}] days, got {days:g}")
    require(1 <= devices <= MAX_BUDGET_DEVICES,
            f"count: must be in [1, {MAX_BUDGET_DEVICES:,}] accelerators, got {devices}")
    check_efficiency(mfu, "mfu")
    return devices * acc.peak_flops_per_s(compute) * mfu * days * SECONDS_PER_DAY
