"""The work of the busiest GPU of a parallel layout in one step, and its all-to-all bytes.

The ranks of a replica wait for each other at every MoE layer, so a step takes the slowest
rank's time. From a step's totals on the whole replica (:meth:`LinearCost.parts`: dense FLOPs,
attention FLOPs, weight bytes, KV bytes, 16-bit FLOPs; T new tokens), with a
:class:`~napkin.specs.layout.ParallelLayout` of N = tp_a·dp_a = tp_e·ep ranks:

- **attention side** (everything but the routed experts): FLOPs / N (the tokens over the dp_a
  groups, the heads and projections over tp_a), weight bytes / tp_a (a copy per group), KV
  bytes / (dp_a · d) with d = :meth:`ModelSpec.kv_devices` (tp_a) (each group caches its own
  requests; MLA's latent is whole on each rank of a group);
- **routed experts** on the busiest rank: FLOPs ``(f/k)·L_max / tp_e`` with f the routed FLOPs
  of one token (k experts, all MoE layers) and L_max the expected busiest rank's (token, expert)
  assignments (:func:`~napkin.accounting.routing.expected_max_rank_tokens`), and weight bytes
  ``M_max · b / tp_e`` with M_max the expected most experts one rank touches
  (:func:`~napkin.accounting.routing.expected_max_rank_experts_touched`) and b one expert's
  bytes over the MoE layers. With ep = 1 these are the replica's routed FLOPs and bytes / N,
  so a tensor-parallel layout gets exactly what :class:`napkin.timing.steps.RooflineTimer` counts.
  With redundant experts (EPLB) the routing figures are taken over the E + r slots. With a
  measured balancedness b (:attr:`ParallelLayout.balancedness`, routing that is not uniform)
  the busiest rank carries ``L_max = max(L_uniform, (T·k/ep)/b)``: popular experts set a floor
  the uniform fluctuation adds nothing below.

All-to-all (data-parallel attention, experts on more than one rank): per MoE layer a rank
dispatches each of its T/N tokens to the ranks holding its experts — ``D·tp_e`` ranks, D =
:func:`~napkin.accounting.routing.expected_destination_ranks` (one send per destination rank,
as DeepEP sends), a share (N − 1)/N of them remote — and receives the outputs back (combine):
``(T/N)·D·tp_e·(N − 1)/N·h·(b_dispatch + b_combine)`` bytes per rank and MoE layer. Without
expert parallelism (ep = 1, D = 1) this is an all-gather and a reduce-scatter of every token's
hidden state, ``(N − 1)/N·T·h·(b_dispatch + b_combine)``.
"""

import math
from dataclasses import dataclass, field
from functools import lru_cache

from napkin.accounting.forward import (
    Precision,
    experts_touched,
    op_rates,
    routed_weight_bytes,
    weight_bytes,
)
from napkin.accounting.overlap import (
    ATTENTION_CORE,
    ATTENTION_PREPARE,
    SHARED_EXPERTS,
    OverlapStages,
    StageRates,
)
from napkin.specs.dtypes import SIXTEEN_BIT
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec

Parts = tuple[float, float, float, float, float]
"""(dense FLOPs, attention FLOPs, weight bytes, KV bytes, 16-bit dense FLOPs) of a step
(:meth:`napkin.accounting.linear.LinearCost.parts`): on the whole group, or one rank's."""

COMBINE_BYTES = 2
"""Bytes per hidden element of the combine (outputs return in BF16)."""

ROUTED_EXPERTS = "routed"
"""The routed experts' stage of a micro-batch (:meth:`RankCost.micro_batch`)."""


def dispatch_bytes_per_element(compute: str) -> float:
    """Bytes per hidden element a dispatch sends: 1 with per-128-element FP32 scales (1 +
    4/128) for a model that computes below 16 bits (DeepEP and vLLM's all-to-all kernels
    quantize the dispatch to FP8 for FP8/FP4 experts), else 2 (BF16)."""
    return 2.0 if compute in SIXTEEN_BIT else 1.0 + 4.0 / 128


def weight_bytes_per_gpu(model: ModelSpec, precision: Precision, layout: ParallelLayout) -> float:
    """Weights one GPU of ``layout`` holds: everything but the routed experts over the attention
    TP (a copy in each data-parallel group), plus its share of the routed experts
    (:meth:`ParallelLayout.expert_share`: 1/GPUs, more with redundant copies)."""
    routed = routed_weight_bytes(model, precision)
    return ((weight_bytes(model, precision) - routed) / layout.attention_tp
            + routed * layout.expert_share(model))


EXACT_TOKENS = 512
"""Up to this many tokens :func:`busiest_rank` computes at the token count itself; above, at
the nearest point of a grid of 64 per doubling (1.1 % apart)."""


def busiest_rank(num_experts: int, top_k: int, ranks: int, tokens: int) -> tuple[float, float]:
    """(expected largest (token, expert) load of a rank, expected most experts one rank
    touches) for ``tokens`` tokens routed top-k over ``ranks`` ranks
    (:mod:`napkin.accounting.routing`). Past :data:`EXACT_TOKENS` tokens both are taken at
    the grid point T' nearest T, the load's excess over its mean scaled by √(T/T'), as the
    excess of a sum of T independent tokens grows: the mean is exact, the excess within a
    fraction of a percent of its own value (a simulator meets thousands of token counts, each
    exact computation a convolution)."""
    if ranks == 1:
        return float(tokens * top_k), experts_touched(num_experts, top_k, tokens)
    if tokens <= EXACT_TOKENS:
        return _exact(num_experts, top_k, ranks, tokens)
    grid = round(2 ** (round(64 * math.log2(tokens)) / 64))
    load, touched = _exact(num_experts, top_k, ranks, grid)
    mean, grid_mean = tokens * top_k / ranks, grid * top_k / ranks
    return mean + (load - grid_mean) * math.sqrt(tokens / grid), touched


@lru_cache(maxsize=65536)
def _exact(num_experts: int, top_k: int, ranks: int, tokens: int) -> tuple[float, float]:
    """:func:`busiest_rank` at ``tokens`` itself."""
    from napkin.accounting.routing import (  # (numpy: loaded only for experts over ranks)
        expected_max_rank_experts_touched,
        expected_max_rank_tokens,
    )

    return (expected_max_rank_tokens(num_experts, top_k, ranks, tokens),
            expected_max_rank_experts_touched(num_experts, top_k, ranks, tokens))


@dataclass(frozen=True)
class ExpertGroup:
    """Routed experts of one shape: E experts, top-k, the FLOPs one token spends in its k
    experts over these layers, and one expert's weight bytes over these layers."""

    num_experts: int
    top_k: int
    flops_per_token: float
    bytes_per_expert: float
    layers: int = 1
    """MoE layers of this shape."""


@dataclass(frozen=True)
class RankCost:
    """Busiest-rank work of one model in one layout (see the module docstring)."""

    layout: ParallelLayout
    groups: tuple[ExpertGroup, ...]
    kv_devices: float
    """:meth:`ModelSpec.kv_devices` of the attention TP."""
    moe_layers: int
    hidden_size: int
    dispatch_bytes: float
    """Bytes per hidden element of a dispatch (:func:`dispatch_bytes_per_element`)."""
    stages: OverlapStages | None = None
    """The work that hides all-to-alls under two-batch overlap (MoE models)."""
    _routed: dict[float, tuple[float, float, float, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False)
    """:meth:`routed` by token count (a simulator asks for the same few counts many times)."""
    _pairs: dict[int, float] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False)
    """:meth:`rank_pairs` by token count."""

    @classmethod
    def of(cls, model: ModelSpec, precision: Precision, layout: ParallelLayout) -> "RankCost":
        """Expert groups read off ``op_rates`` (the single source of forward costs)."""
        per_group: dict[tuple[int, int], list[float]] = {}
        layers: dict[tuple[int, int], dict[str, int]] = {}
        for r in op_rates(model, precision):
            if r.experts is not None:
                g = per_group.setdefault(r.experts, [0.0, 0.0])
                g[0] += r.flops_per_token
                g[1] += r.weight_bytes
                # (an op's name starts with its layer group's label; gate, up and down of a
                # group share its layers)
                layers.setdefault(r.experts, {})[r.name.rpartition(r.module)[0]] = r.layers
        return cls(layout, tuple(ExpertGroup(e, k, f, b, sum(layers[e, k].values()))
                                 for (e, k), (f, b) in per_group.items()),
                   model.kv_devices(layout.attention_tp),
                   sum(1 for b in model.blocks if b.experts is not None), model.hidden_size,
                   dispatch_bytes_per_element(precision.weights.compute),
                   OverlapStages.of(model, precision) if per_group else None)

    def busiest(self, g: ExpertGroup, tokens: int) -> tuple[float, float]:
        """(the busiest rank's (token, expert) load, the most experts one rank touches) of
        ``tokens`` tokens routed over ``g``'s slots: :func:`busiest_rank`, the load at least
        ``T·k/ep / balancedness`` with a measured balance (module docstring)."""
        lay = self.layout
        load, touched = busiest_rank(lay.slots(g.num_experts), g.top_k, lay.expert_parallel,
                                     tokens)
        if lay.balancedness is not None:
            load = max(load, tokens * g.top_k / lay.expert_parallel / lay.balancedness)
        return load, touched

    def routed(self, tokens: float) -> tuple[float, float, float, float]:
        """(routed FLOPs and expert bytes of the whole replica, the busiest rank's routed FLOPs
        and expert bytes) for ``tokens`` tokens routed."""
        hit = self._routed.get(tokens)
        if hit is not None:
            return hit
        lay = self.layout
        tp_e, t = lay.moe_tp, round(tokens)
        total_f = total_b = rank_f = rank_b = 0.0
        for g in self.groups:
            total_f += g.flops_per_token * tokens
            total_b += experts_touched(g.num_experts, g.top_k, t) * g.bytes_per_expert
            load, touched = self.busiest(g, t)
            rank_f += g.flops_per_token / g.top_k * load / tp_e
            rank_b += touched * g.bytes_per_expert / tp_e
        out = self._routed[tokens] = (total_f, total_b, rank_f, rank_b)
        return out

    def rank_parts(self, parts: Parts, tokens: float,
                   group: tuple[Parts, float] | None = None) -> Parts:
        """The busiest rank's parts of a step whose replica-wide parts are ``parts`` for
        ``tokens`` new tokens (module docstring). ``group``: the replica-wide-style parts and
        new tokens of the busiest data-parallel group's own requests — the groups step in
        lock-step, so its attention side (everything but the routed experts: FLOPs, attention
        FLOPs, KV bytes) sets the step where it exceeds the even share ``1/dp`` of the step's
        (a whole prompt on one group while the others decode)."""
        dense, attention, weights, kv, sixteen = parts
        if not tokens:
            return parts
        lay = self.layout
        n, tp_a = float(lay.ranks), float(lay.attention_tp)
        total_f, total_b, rank_f, rank_b = self.routed(tokens) if self.groups else (0.0,) * 4
        side, att, cache, low = ((dense - total_f) / n, attention / n,
                                 kv / (lay.attention_dp * self.kv_devices), sixteen / n)
        if group is not None:
            g_dense, g_attention, _, g_kv, g_sixteen = group[0]
            g_routed = self.routed(group[1])[0] if self.groups and group[1] else 0.0
            side = max(side, (g_dense - g_routed) / tp_a)
            att = max(att, g_attention / tp_a)
            cache = max(cache, g_kv / self.kv_devices)
            low = max(low, g_sixteen / tp_a)
        return (side + rank_f, att, (weights - total_b) / tp_a + rank_b, cache, low)

    def run_parts(self, parts: Parts, tokens: float,
                  group: tuple[Parts, float] | None = None) -> Parts:
        """:meth:`rank_parts` as the busiest rank runs them: with two-batch overlap (and
        all-to-alls to overlap) the step is two micro-batches of half the tokens, each a forward
        pass that reads the rank's weights — weight bytes × 2; FLOPs and KV bytes are split, not
        repeated."""
        rank = self.rank_parts(parts, tokens, group)
        lay = self.layout
        if tokens and lay.two_batch_overlap and lay.all_to_all:
            dense, attention, weights, kv, sixteen = rank
            return dense, attention, 2 * weights, kv, sixteen
        return rank

    def micro_batch(self, parts: Parts, tokens: float,
                    group: tuple[Parts, float] | None = None) -> tuple[Parts, dict[str, Parts]]:
        """Under two-batch overlap: one micro-batch's parts on the busiest rank — half the
        FLOPs and KV bytes of :meth:`rank_parts`, all of its weights — and the parts of its
        stages over all layers (:mod:`napkin.accounting.overlap`): the attention prepare and
        core and the shared experts (their per-token FLOPs for T/(2N) tokens a rank, their
        weights over the attention TP; the core also the step's attention FLOPs and KV bytes),
        and the routed experts (the busiest rank's)."""
        dense, attention, weights, kv, sixteen = self.rank_parts(parts, tokens, group)
        stages = self.stages
        assert stages is not None and self.groups, "two-batch overlap needs a MoE model"
        share, tp_a = tokens / (2 * self.layout.ranks), float(self.layout.attention_tp)
        _, _, rank_f, rank_b = self.routed(tokens)

        def work(r: StageRates, att: float = 0.0, cache: float = 0.0) -> Parts:
            return (r.flops_per_token * share, att, r.weight_bytes / tp_a, cache,
                    r.sixteen_per_token * share)

        return ((dense / 2, attention / 2, weights, kv / 2, sixteen / 2),
                {ATTENTION_PREPARE: work(stages.prepare),
                 ATTENTION_CORE: work(stages.core, attention / 2, kv / 2),
                 SHARED_EXPERTS: work(stages.shared),
                 ROUTED_EXPERTS: (rank_f / 2, 0.0, rank_b, 0.0, 0.0)})

    def rank_pairs(self, tokens: float) -> float:
        """Routed (token, expert) pairs the busiest rank permutes in a step of ``tokens``
        tokens, over all MoE layers: its expected largest load (:meth:`busiest`) times the
        layers of each expert shape; each rank of an expert's tensor-parallel group permutes
        all of that group's pairs (the hidden vector is not split). 0 without routed
        experts."""
        t = round(tokens)
        hit = self._pairs.get(t)
        if hit is None:
            hit = self._pairs[t] = (sum(self.busiest(g, t)[0] * g.layers for g in self.groups)
                                    if t else 0.0)
        return hit

    def dispatch_share(self) -> float:
        """The dispatch's share of an all-to-all layer's bytes: b_dispatch / (b_dispatch +
        b_combine)."""
        return self.dispatch_bytes / (self.dispatch_bytes + COMBINE_BYTES)

    def rank_tokens(self, tokens: float) -> float:
        """Tokens one attention group runs: ``T / dp_a``."""
        return tokens / self.layout.attention_dp

    def alltoall_bytes(self, tokens: float) -> float:
        """Bytes one rank sends in one MoE layer's dispatch and combine (module docstring);
        0 without data-parallel attention."""
        lay = self.layout
        if not (lay.all_to_all and self.groups):
            return 0.0
        from napkin.accounting.routing import expected_destination_ranks  # (numpy: see _exact)

        g = self.groups[0]
        n = lay.ranks
        sends = expected_destination_ranks(lay.slots(g.num_experts), g.top_k,
                                           lay.expert_parallel) \
            * lay.moe_tp * (n - 1) / n
        return tokens / n * sends * self.hidden_size * (self.dispatch_bytes + COMBINE_BYTES)
