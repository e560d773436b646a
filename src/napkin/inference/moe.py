"""MoE decode at batch B: experts touched, bytes per step, FLOPs per token (question bank, task 5).

With uniform, independent routing a token misses a given expert with probability 1 − k/E, so a
batch of B tokens touches a share ``1 − (1 − k/E)^B`` of each layer's experts; a decode step
reads those experts' weights. FLOPs per token stay at the active-parameter count, so the step
turns compute-bound at some batch size — the one this module finds.
"""

from dataclasses import dataclass

from napkin.accounting.batch import Batch
from napkin.accounting.forward import experts_touched
from napkin.errors import NapkinError, require
from napkin.inference.decode import compute_bound_batch
from napkin.timing import Deployment, RooflineTime


@dataclass(frozen=True)
class MoERow:
    batch: int
    experts_touched_frac: float
    weight_bytes: float
    bytes_moved: float
    flops_per_token: float
    step: RooflineTime

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.step.time_s


@dataclass(frozen=True)
class MoETable:
    context: int
    num_experts: int
    experts_per_token: int
    rows: tuple[MoERow, ...]
    compute_bound_batch: int | None


def _row(dep: Deployment, batch: int, context: int) -> MoERow:
    blocks = [b.experts for b in dep.model.blocks if b.experts]
    ex = blocks[0]
    cost = dep.cost(Batch.decode(context, batch))
    return MoERow(
        batch=batch,
        experts_touched_frac=experts_touched(ex.num_experts, ex.num_active, batch) / ex.num_experts,
        weight_bytes=cost.weight_bytes,
        bytes_moved=cost.bytes,
        flops_per_token=cost.flops / batch,
        step=dep.time(cost),
    )


def moe_table(dep: Deployment, batches: list[int], context: int = 1) -> MoETable:
    """MoE decode rows over ``batches`` at ``context`` cached tokens per sequence."""
    if not dep.model.is_moe:
        raise NapkinError(f"model: {dep.model.name} has no MoE layers; pick a MoE model")
    require(len(batches) > 0 and min(batches) >= 1, "batch: give batch sizes >= 1")
    dep.model.check_context(context + 1)
    ex = next(b.experts for b in dep.model.blocks if b.experts)
    return MoETable(
        context=context,
        num_experts=ex.num_experts,
        experts_per_token=ex.num_active,
        rows=tuple(_row(dep, b, context) for b in batches),
        compute_bound_batch=compute_bound_batch(dep, context),
    )
