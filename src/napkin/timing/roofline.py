"""One call's time by the roofline: the slower of its compute and its memory traffic, plus the
overhead (the formula: :mod:`napkin.timing`); :class:`Deployment`, a model on one accelerator at
a storage precision, times its calls and its decode runs."""

from dataclasses import dataclass, field

from napkin.accounting.batch import BatchShape
from napkin.accounting.forward import Precision, forward
from napkin.accounting.ops import CallCost
from napkin.accounting.series import AffineRun
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec
from napkin.timing.efficiency import Efficiency
from napkin.timing.series import StepSeries


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


def at_compute_rate(flops: float, sixteen_bit_flops: float, acc: Accelerator,
                    compute: str) -> float:
    """FLOPs timed at ``compute``'s peak: ``flops`` (those at that rate) plus the 16-bit ones
    scaled by ``peak(compute) / peak(bf16)`` (an unquantized part of an FP8 or FP4 model runs
    at the BF16 rate: a quarter of B200's FP4 rate)."""
    if not sixteen_bit_flops:
        return flops
    return flops + sixteen_bit_flops * acc.peak_flops_per_s(compute) / acc.peak_flops_per_s("bf16")


def call_time(cost: CallCost, acc: Accelerator, compute: str, eff: Efficiency) -> RooflineTime:
    """Roofline time of one call (its op list taken as a whole, as the chapter does); matmuls of
    unquantized parts (``Op.sixteen_bit``) at the BF16 rate (:func:`at_compute_rate`)."""
    if not cost.ops:
        return RooflineTime(0.0, 0.0, 0.0)
    sixteen = cost.sixteen_bit_flops
    return roofline(at_compute_rate(cost.flops - sixteen, sixteen, acc, compute), cost.bytes,
                    acc, compute, eff)


def run_time(run: AffineRun, acc: Accelerator, compute: str, eff: Efficiency) -> float:
    """Exact total time of an affine run of decode steps (see :class:`StepSeries`)."""
    return StepSeries.of(run.flops0, run.dflops, run.bytes0, run.dbytes, acc, compute,
                         eff).time(run.steps)


@dataclass(frozen=True)
class Deployment:
    """A model on one accelerator, at a storage precision and an efficiency."""

    model: ModelSpec
    acc: Accelerator
    precision: Precision
    eff: Efficiency = field(default_factory=Efficiency)

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
