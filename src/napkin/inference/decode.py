"""Decode at a batch size: memory held, step time, tokens per second (question bank, task 2).

One decode step of B sequences at context C reads the weights once (shared by the batch) and
each sequence's KV; memory held is all weights plus B·C tokens of KV (plus B fixed states of a
model with linear-attention layers, each read and written once a step). The step time is the
roofline of that step; tokens/s in total is B / step, per user 1 / step.
"""

from dataclasses import dataclass

from napkin.accounting.batch import Batch
from napkin.accounting.forward import weight_bytes
from napkin.errors import require
from napkin.timing.roofline import Deployment, RooflineTime
from napkin.units import GB

MAX_SEARCH_BATCH = 1 << 20


@dataclass(frozen=True)
class DecodeRow:
    """One batch size of a :class:`DecodeTable`."""

    batch: int
    weights_bytes: float
    kv_bytes: float
    capacity_bytes: float
    flops: float
    weight_bytes_read: float
    bytes_moved: float
    step: RooflineTime
    state_bytes: float = 0.0
    """Linear-attention state of every sequence (``ModelSpec.state_bytes_per_sequence``; 0
    without such layers)."""

    @property
    def memory_bytes(self) -> float:
        """Held in device memory: weights + KV and linear-attention state of every sequence."""
        return self.weights_bytes + self.kv_bytes + self.state_bytes

    @property
    def fits(self) -> bool:
        return self.memory_bytes <= self.capacity_bytes

    @property
    def step_s(self) -> float:
        return self.step.time_s

    @property
    def tokens_per_s(self) -> float:
        """Output tokens per second of the whole batch."""
        return self.batch / self.step_s

    @property
    def tokens_per_s_per_user(self) -> float:
        return 1 / self.step_s

    @property
    def flops_per_byte(self) -> float:
        """Arithmetic intensity of the step: FLOPs / bytes moved (weights + KV read, KV
        written), FLOPs per byte."""
        return self.flops / self.bytes_moved


@dataclass(frozen=True)
class DecodeTable:
    context: int
    rows: tuple[DecodeRow, ...]
    compute_bound_batch: int | None
    """The smallest batch whose step is compute-bound at this context (the compute/memory
    crossover; None past 2^20), whether or not it is among the rows."""


def weights_bytes(dep: Deployment) -> float:
    """Bytes all weights occupy in memory at the deployment's weight format."""
    return weight_bytes(dep.model, dep.precision)


def ridge_flops_per_byte(dep: Deployment) -> float:
    """The GPU's ridge point: peak FLOP/s at the deployment's compute format ÷ memory
    bandwidth (B/s), FLOPs per byte. A step whose intensity is below it is memory-bound at
    peak rates (question bank task 2: 97.5 TFLOP/s ÷ 717 GB/s ≈ 136)."""
    return dep.acc.peak_flops_per_s(dep.compute) / dep.acc.mem_bytes_per_s


def check_reserve(dep: Deployment, reserve_bytes: float) -> None:
    """Refuse a per-device reserve (``--reserve-gb``) that is negative or leaves no memory."""
    limit = dep.acc.memory_bytes
    require(0 <= reserve_bytes < limit,
            f"reserve-gb: must be in [0, {limit / GB:,.1f}) GB, the memory of {dep.acc.id}, "
            f"got {reserve_bytes / GB:g}")


def decode_row(dep: Deployment, batch: int, context: int, reserve_bytes: float = 0.0) -> DecodeRow:
    """One decode step of ``batch`` sequences with ``context`` cached tokens each."""
    require(batch >= 1, f"batch: must be >= 1, got {batch}")
    require(context >= 0, f"context: must be >= 0 tokens, got {context}")
    check_reserve(dep, reserve_bytes)
    dep.model.check_context(context + 1)
    cost = dep.cost(Batch.decode(context, batch))
    return DecodeRow(
        batch=batch,
        weights_bytes=weights_bytes(dep),
        kv_bytes=batch * dep.model.kv_bytes(context, dep.precision.kv.bytes_per_element),
        state_bytes=batch * dep.model.state_bytes_per_sequence(
            dep.precision.kv.bytes_per_element),
        capacity_bytes=dep.acc.memory_bytes - reserve_bytes,
        flops=cost.flops,
        weight_bytes_read=cost.weight_bytes,
        bytes_moved=cost.bytes,
        step=dep.time(cost),
    )


def decode_table(dep: Deployment, batches: list[int], context: int,
                 reserve_bytes: float = 0.0) -> DecodeTable:
    """Decode rows over ``batches`` at ``context`` tokens."""
    require(len(batches) > 0, "batch: give at least one batch size")
    return DecodeTable(context, tuple(decode_row(dep, b, context, reserve_bytes) for b in batches),
                       compute_bound_batch(dep, context))


def compute_bound_batch(dep: Deployment, context: int) -> int | None:
    """Smallest batch whose decode step is compute-bound (None if none up to 2^20).

    Compute grows linearly with B, memory concavely (experts saturate) plus linearly (KV), so
    the sign of compute − memory changes at most once: doubling, then bisection.
    """
    def compute_bound(b: int) -> bool:
        return dep.time(dep.cost(Batch.decode(context, b))).bound == "compute"

    hi = 1
    while not compute_bound(hi):
        hi *= 2
        if hi > MAX_SEARCH_BATCH:
            return None
    lo = hi // 2  # memory-bound (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if compute_bound(mid):
            hi = mid
        else:
            lo = mid
    return hi

