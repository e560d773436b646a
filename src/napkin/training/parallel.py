"""Communication of data-parallel training and the pipeline bubble.

Per device and step, with ring collectives over n devices (each moves (n−1)/n of the buffer
per direction): DDP all-reduces gradients, ``2·(n−1)/n·G``; ZeRO-1 and ZeRO-2 reduce-scatter
gradients and all-gather updated weights, the same volume; ZeRO-3/FSDP all-gathers weights
before forward and again before backward and reduce-scatters gradients:
``(n−1)/n·(2W + G)`` (W weight bytes in the gather format, G gradient bytes). The question bank's
task 1: 7B, 4 devices, BF16 weights, FP32 gradients → 3/4·(28 + 28) = 42 GB, 4.2 s at 10 GB/s.
Pipeline parallel with p stages, m micro-batches and v model chunks per stage (the interleaved
1F1B schedule; v = 1 is plain 1F1B) idles ``(p−1)/(v·m + p−1)`` of the time.
"""

from dataclasses import dataclass

from napkin.accounting.collectives import (
    stage_boundary_bytes_per_token,
    tp_allreduce_bytes_per_token,
    two_level_gather_bytes,
)
from napkin.errors import NapkinError, require

GRAD_WIRE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}
"""Bytes per gradient element on the wire, by the reduction's dtype (``--grad-dtype``)."""


def _seconds(nbytes: float, bytes_per_s: float) -> float:
    """``nbytes / bytes_per_s``, 0 for no bytes (a link left at its placeholder)."""
    return nbytes / bytes_per_s if nbytes else 0.0


@dataclass(frozen=True)
class Communication:
    """A rank's data-parallel traffic per update: ``bytes_per_device`` over the intra-node
    link and ``inter_node_bytes`` over its own network port (module docstring: the two levels
    of a collective whose ranks span nodes)."""

    scheme: str
    bytes_per_device: float
    link_bytes_per_s: float
    compute_s: float
    inter_node_bytes: float = 0.0
    inter_node_bytes_per_s: float = 1.0

    @property
    def time_s(self) -> float:
        return (self.bytes_per_device / self.link_bytes_per_s
                + _seconds(self.inter_node_bytes, self.inter_node_bytes_per_s))

    @property
    def hidden(self) -> bool:
        """Whether it can overlap entirely with the step's compute."""
        return self.time_s <= self.compute_s


def communication(scheme: str, params: int, devices: int, weight_bytes: float = 2.0,
                  grad_bytes: float = 2.0, link_bytes_per_s: float = 10e9,
                  compute_s: float = 0.0, frozen_bytes: float = 0.0,
                  per_node: int | None = None, inter_node_bytes_per_s: float = 1.0
                  ) -> Communication:
    """Bytes each device sends per step under ``scheme`` (ddp, zero1, zero2, zero3, fsdp).

    ``params`` are the trainable parameters. ``frozen_bytes`` is the stored size of frozen
    weights (a LoRA/QLoRA base): ZeRO-3 shards them too, so it gathers them for the forward and
    again for the backward (``2·frozen_bytes``, no gradient); the other schemes replicate them
    and move nothing.

    ``per_node``: how many of the ``devices`` ranks share a node (None: all of them, one
    link). Across ``N = ⌈devices / per_node⌉`` nodes a collective runs in two levels, as
    NCCL's rings and trees use every NIC of a node (each ring or tree crosses the network
    through a different GPU's port): over the ``g = per_node`` ranks of a node on the
    intra-node link, ``(g − 1)/g`` of the buffer, and across the nodes on each rank's own port,
    ``(N − 1)/N`` of its ``1/g`` share of the buffer (an all-reduce twice each)."""
    require(devices >= 1, f"devices: must be >= 1, got {devices}")
    require(link_bytes_per_s > 0, "link: bandwidth must be > 0")
    w, g = params * weight_bytes, params * grad_bytes
    if scheme == "ddp":
        buffer, passes = g, 2
    elif scheme in ("zero1", "zero2"):
        buffer, passes = g + w, 1
    elif scheme in ("zero3", "fsdp"):
        buffer, passes = 2 * w + g + 2 * frozen_bytes, 1
    else:
        raise NapkinError(f"sharding: unknown scheme {scheme!r}; allowed: ddp, zero1, zero2, "
                          "zero3, fsdp")
    inside, across = two_level_gather_bytes(buffer, devices,
                                            devices if per_node is None else max(1, per_node))
    return Communication(scheme, passes * inside, link_bytes_per_s, compute_s, passes * across,
                         inter_node_bytes_per_s)


def pipeline_bubble(stages: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """Idle share of a pipeline's update: ``(p − 1)/(v·m + p − 1)``.

    Narayanan et al. 2021 (§2.2.1–2.2.2): with p stages and m micro-batches the bubble takes
    ``(p − 1)/m`` of the ideal compute time for GPipe and 1F1B, and ``(p − 1)/(v·m)`` for the
    interleaved 1F1B schedule in which each rank runs v model chunks of ``L/(p·v)`` layers
    (Megatron-LM's ``--num-layers-per-virtual-pipeline-stage``; the Llama 3 paper's V, §3.3.2,
    "bubble ratio (PP − 1)/(V·M)"). As a share of the update (compute + bubble):
    ``t_pb/(t_id + t_pb) = (p − 1)/(v·m + p − 1)``."""
    require(stages >= 1 and micro_batches >= 1 and virtual_stages >= 1,
            "pipeline: stages, micro-batches and virtual stages >= 1")
    return (stages - 1) / (virtual_stages * micro_batches + stages - 1)


@dataclass(frozen=True)
class ModelParallelTraffic:
    """Per-update traffic of one rank for tensor and pipeline parallelism (Megatron-LM).

    TP (Shoeybi et al. 2019; Korthikanti et al. 2022): each transformer layer all-reduces its
    activations twice in the forward (after attention, after the MLP) and twice in the
    backward, ``B_μ·s·h`` elements each; a ring all-reduce sends ``2(t−1)/t`` of them
    (sequence parallelism's reduce-scatter + all-gather moves the same). PP: each stage
    boundary passes the activations forward and their gradients back, ``B_μ·s·h`` each way per
    micro-batch, split over the t tensor-parallel ranks (Narayanan et al. 2021 §4.1, the
    scatter/gather optimization: each rank sends ``B_μ·s·h/t`` over its own network port and
    the receivers all-gather over NVLink; with sequence parallelism the boundary tensor is
    already split ``s/t``); the interleaved schedule crosses v times as many boundaries
    (§2.2.2: "the amount of communication also increases by v"). Both sit on the critical
    path (napkin does not overlap them).
    """

    tp_bytes: float
    tp_link_bytes_per_s: float
    pp_bytes: float
    pp_link_bytes_per_s: float
    cp_bytes: float = 0.0
    """Context parallelism: the K and V (and their gradients) a rank receives per update."""
    cp_link_bytes_per_s: float = 1.0
    ep_bytes: float = 0.0
    """Expert parallelism: the dispatch and combine all-to-alls a rank sends per update."""
    ep_link_bytes_per_s: float = 1.0

    @property
    def tp_s(self) -> float:
        return _seconds(self.tp_bytes, self.tp_link_bytes_per_s)

    @property
    def pp_s(self) -> float:
        return _seconds(self.pp_bytes, self.pp_link_bytes_per_s)

    @property
    def cp_s(self) -> float:
        return _seconds(self.cp_bytes, self.cp_link_bytes_per_s)

    @property
    def ep_s(self) -> float:
        return _seconds(self.ep_bytes, self.ep_link_bytes_per_s)

    @property
    def time_s(self) -> float:
        return self.tp_s + self.pp_s + self.cp_s + self.ep_s


def model_parallel_traffic(layers: int, hidden: int, seq: int, micro_batch: int,
                           micro_batches: int, tp: int, pp: int, tp_link_bytes_per_s: float,
                           pp_link_bytes_per_s: float, virtual_stages: int = 1,
                           cp_bytes_per_token: float = 0.0, cp_passes: int = 3,
                           cp_link_bytes_per_s: float = 1.0, ep_bytes_per_token: float = 0.0,
                           ep_passes: int = 2, ep_link_bytes_per_s: float = 1.0
                           ) -> ModelParallelTraffic:
    """Bytes a rank sends per update for TP ``tp`` and PP ``pp`` (class docstring): the
    forward's TP all-reduces (:func:`~napkin.accounting.collectives.tp_allreduce_bytes_per_token`)
    once more for the backward, over its ``L/p`` layers and ``B_μ·s`` tokens per micro-batch;
    PP ``v·2·B_μ·s·h/t`` 16-bit activations per micro-batch (forward and back across each of
    the rank's v chunk boundaries, its 1/t share of the tensor); CP ``cp_bytes_per_token``
    (:func:`~napkin.accounting.collectives.context_parallel_kv_bytes_per_token`, its 1/(t·p)
    share of the heads and layers) per token of the sequence, ``cp_passes`` times (forward 1,
    backward 2, full recompute 1 more); EP ``ep_bytes_per_token`` (:func:`~napkin.accounting.
    collectives.expert_alltoall_bytes_per_token` over the stage's 1/p of the layers) per token
    of the rank, ``ep_passes`` times (forward 1, backward 1 for the gradients, full recompute 1
    more)."""
    require(tp >= 1 and pp >= 1 and virtual_stages >= 1,
            "tensor-parallel, pipeline, virtual stages: must be >= 1")
    tokens = micro_batches * micro_batch * seq
    tp_bytes = 2 * tp_allreduce_bytes_per_token(hidden, layers, tp) / pp * tokens
    pp_bytes = (virtual_stages * 2 * tokens * stage_boundary_bytes_per_token(hidden, tp)
                if pp > 1 else 0.0)
    cp_bytes = cp_passes * tokens * cp_bytes_per_token / (tp * pp)
    ep_bytes = ep_passes * tokens * ep_bytes_per_token / pp
    return ModelParallelTraffic(tp_bytes, tp_link_bytes_per_s, pp_bytes, pp_link_bytes_per_s,
                                cp_bytes, cp_link_bytes_per_s, ep_bytes, ep_link_bytes_per_s)
