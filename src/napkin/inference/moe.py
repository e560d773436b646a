"""MoE decode at batch B: experts touched, bytes per step, FLOPs per token (question bank, task 5).

With uniform, independent routing a token misses a given expert with probability 1 − k/E, so a
batch of B tokens touches a share ``1 − (1 − k/E)^B`` of each layer's experts; a decode step
reads those experts' weights. FLOPs per token stay at the active-parameter count, so the step
turns compute-bound at some batch size — the one this module finds.

Over ``ranks`` GPUs with expert parallelism and data-parallel attention (DEP, each GPU a
B/ranks share of the sequences and E/ranks whole experts), the step waits for the busiest rank
(:mod:`napkin.accounting.ranks`): its load over the mean load B·k/ranks (the imbalance), the
experts it touches, its bytes, and the dispatch/combine all-to-all (:class:`RankRow`).
"""

from dataclasses import dataclass

from napkin.accounting.batch import Batch
from napkin.accounting.forward import experts_touched
from napkin.accounting.linear import LinearCost
from napkin.errors import NapkinError, require
from napkin.inference.decode import compute_bound_batch
from napkin.specs.layout import ParallelLayout
from napkin.timing.layout import LayoutTimer
from napkin.timing.roofline import Deployment, RooflineTime
from napkin.timing.steps import RooflineTimer


@dataclass(frozen=True)
class RankRow:
    """The busiest GPU of a DEP step of the whole batch over ``ranks`` GPUs."""

    ranks: int
    imbalance: float
    """Its (token, expert) assignments over the mean ``B·k/ranks`` (1 at one rank)."""
    experts_touched: float
    """Experts a layer touches on it (of the ``E/ranks`` it holds)."""
    weight_bytes: float
    """Weights it reads: the attention side whole, its touched experts."""
    bytes_moved: float
    """Its weights plus its sequences' KV."""
    alltoall_bytes_per_layer: float
    """Bytes it sends in one MoE layer's dispatch and combine."""
    step_s: float
    """The step: its roofline time plus the all-to-alls (NVLink, 10 µs each)."""

    def tokens_per_s(self, batch: int) -> float:
        return batch / self.step_s


@dataclass(frozen=True)
class MoERow:
    batch: int
    experts_touched_frac: float
    weight_bytes: float
    bytes_moved: float
    flops_per_token: float
    step: RooflineTime
    rank: RankRow | None = None
    """Over several GPUs (DEP): the busiest one's figures; None on one GPU."""

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
    ranks: int = 1
    """GPUs the experts are spread over (DEP); 1: one GPU."""


def _rank_row(dep: Deployment, timer: LayoutTimer, batch: int, context: int) -> RankRow:
    """The busiest GPU of a DEP decode step of ``batch`` sequences at ``context``."""
    parts = LinearCost.of(dep.model, dep.precision).parts(Batch.decode(context, batch))
    cost, lay = timer.cost, timer.cost.layout
    _, _, weights, kv, _ = cost.rank_parts(parts, batch)
    g = cost.groups[0]
    load, touched = cost.busiest(g, batch)
    return RankRow(lay.ranks, load / (batch * g.top_k / lay.ranks), touched, weights,
                   weights + kv, cost.alltoall_bytes(batch), timer.step_s(parts, batch))


def _row(dep: Deployment, batch: int, context: int, timer: LayoutTimer | None) -> MoERow:
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
        rank=None if timer is None else _rank_row(dep, timer, batch, context),
    )


def moe_table(dep: Deployment, batches: list[int], context: int = 1, ranks: int = 1,
              link_bytes_per_s: float | None = None,
              balancedness: float | None = None) -> MoETable:
    """MoE decode rows over ``batches`` at ``context`` cached tokens per sequence; with
    ``ranks`` > 1 each row also gives the busiest GPU of a DEP step over that many GPUs (the
    all-to-alls over ``link_bytes_per_s``, default the GPU's per-direction interconnect; a
    measured ``balancedness``: :attr:`ParallelLayout.balancedness`)."""
    if not dep.model.is_moe:
        raise NapkinError(f"model: {dep.model.name} has no MoE layers; pick a MoE model")
    require(len(batches) > 0 and min(batches) >= 1, "batch: give batch sizes >= 1")
    require(ranks >= 1, f"ep: must be >= 1 GPU, got {ranks}")
    dep.model.check_context(context + 1)
    ex = next(b.experts for b in dep.model.blocks if b.experts)
    timer = None
    if ranks > 1:
        require(ex.num_experts % ranks == 0,
                f"ep: {ex.num_experts} experts do not divide over {ranks} GPUs")
        require(min(batches) >= ranks,
                f"batch: DEP over {ranks} GPUs needs at least one sequence a GPU "
                f"(batch >= {ranks})")
        layout = ParallelLayout(1, ranks, ranks, balancedness=balancedness)
        device = RooflineTimer.of(dep.model, dep.acc, dep.compute, dep.eff)
        timer = LayoutTimer.of(dep.model, dep.precision, layout, device,
                               link_bytes_per_s or dep.acc.allreduce_bytes_per_s)
    return MoETable(
        context=context,
        num_experts=ex.num_experts,
        experts_per_token=ex.num_active,
        rows=tuple(_row(dep, b, context, timer) for b in batches),
        compute_bound_batch=compute_bound_batch(dep, context),
        ranks=ranks,
    )
