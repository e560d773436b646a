"""Roofline timing: the time of a call is the slower of its compute and its memory traffic.

``time = max(FLOPs / (peak·MFU), bytes / (bandwidth·MBU)) + overhead``. Peak is the dense
tensor-core rate of the weight format's compute precision. MFU and MBU default to 1: the result
is then the roofline *ceiling* (the chapter's "physical limit"); real engines reach roughly
0.4–0.6 MFU in prefill and 0.5–0.85 MBU in decode (question bank, task 2).
"""

import math
from dataclasses import dataclass

from napkin.accounting.batch import BatchShape
from napkin.accounting.forward import Precision, forward
from napkin.accounting.ops import CallCost
from napkin.accounting.series import AffineRun
from napkin.errors import require
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec

DEFAULT_MFU = 1.0
DEFAULT_MBU = 1.0


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of peak compute (``mfu``) and bandwidth (``mbu``), and a fixed
    per-call overhead in seconds (kernel launches, scheduling)."""

    mfu: float = DEFAULT_MFU
    mbu: float = DEFAULT_MBU
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        require(0 < self.mfu <= 1, f"mfu: must be in (0, 1], got {self.mfu}")
        require(0 < self.mbu <= 1, f"mbu: must be in (0, 1], got {self.mbu}")
        require(self.overhead_s >= 0, f"overhead: must be >= 0 s, got {self.overhead_s}")


@dataclass(frozen=True)
class RooflineTime:
    """Compute time, memory time, and their max plus overhead."""

    compute_s: float
    memory_s: float
    overhead_s: float

    @property
    def time_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.overhead_s

    @property
    def bound(self) -> str:
        """``compute`` or ``memory``: which side sets the time."""
        return "compute" if self.compute_s >= self.memory_s else "memory"


def roofline(
    flops: float, bytes_moved: float, acc: Accelerator, compute: str, eff: Efficiency
) -> RooflineTime:
    """Time of ``flops`` and ``bytes_moved`` on ``acc`` at ``compute`` precision."""
    return RooflineTime(
        compute_s=flops / (acc.peak_flops_per_s(compute) * eff.mfu),
        memory_s=bytes_moved / (acc.mem_bytes_per_s * eff.mbu),
        overhead_s=eff.overhead_s,
    )


def call_time(cost: CallCost, acc: Accelerator, compute: str, eff: Efficiency) -> RooflineTime:
    """Roofline time of one call (its op list taken as a whole, as the chapter does)."""
    if not cost.ops:
        return RooflineTime(0.0, 0.0, 0.0)
    return roofline(cost.flops, cost.bytes, acc, compute, eff)


def run_time(run: AffineRun, acc: Accelerator, compute: str, eff: Efficiency) -> float:
    """Exact total time of an affine run of steps, Σ_j max(c0 + j·dc, m0 + j·dm) + overhead.

    Two lines cross at most once, so the sum splits into at most two arithmetic series.
    """
    n = run.steps
    peak, bw = acc.peak_flops_per_s(compute) * eff.mfu, acc.mem_bytes_per_s * eff.mbu
    c0, dc = run.flops0 / peak, run.dflops / peak
    m0, dm = run.bytes0 / bw, run.dbytes / bw
    d0, dd = c0 - m0, dc - dm  # compute minus memory at step j: d0 + j·dd
    if dd == 0:
        compute_steps = range(n) if d0 >= 0 else range(0)
    else:
        cross = min(max(-d0 / dd, -1.0), n + 1.0)  # clamped: tiny slopes overflow
        if dd > 0:  # compute-bound from ceil(cross) on
            lo = min(max(math.ceil(cross), 0), n)
            compute_steps = range(lo, n)
        else:  # compute-bound up to floor(cross)
            hi = min(max(math.floor(cross) + 1, 0), n)
            compute_steps = range(0, hi)
    a, b = compute_steps.start, compute_steps.stop
    compute_part = _line_sum(c0, dc, a, b)
    memory_part = _line_sum(m0, dm, 0, a) + _line_sum(m0, dm, b, n)
    return compute_part + memory_part + n * eff.overhead_s


def _line_sum(x0: float, dx: float, a: int, b: int) -> float:
    """Σ_{j=a}^{b−1} (x0 + j·dx)."""
    if b <= a:
        return 0.0
    return (b - a) * x0 + dx * (a + b - 1) * (b - a) / 2


@dataclass(frozen=True)
class Deployment:
    """A model on one accelerator, at a storage precision and an efficiency."""

    model: ModelSpec
    acc: Accelerator
    precision: Precision
    eff: Efficiency = Efficiency()

    @property
    def compute(self) -> str:
        """The tensor-core format matmuls run in (from the weight format)."""
        return self.precision.weights.compute

    def cost(self, batch: BatchShape) -> CallCost:
        """The forward op list of ``batch`` (see :func:`napkin.accounting.forward`)."""
        return forward(self.model, batch, self.precision)

    def time(self, cost: CallCost) -> RooflineTime:
        return call_time(cost, self.acc, self.compute, self.eff)

    def run_time(self, run: AffineRun) -> float:
        return run_time(run, self.acc, self.compute, self.eff)
