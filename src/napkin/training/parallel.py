"""Communication of data-parallel training and the pipeline bubble.

Per device and step, with ring collectives over n devices (each moves (n−1)/n of the buffer
per direction): DDP all-reduces gradients, ``2·(n−1)/n·G``; ZeRO-1 and ZeRO-2 reduce-scatter
gradients and all-gather updated weights, the same volume; ZeRO-3/FSDP all-gathers weights
before forward and again before backward and reduce-scatters gradients:
``(n−1)/n·(2W + G)`` (W weight bytes in the gather format, G gradient bytes). The question bank's
task 1: 7B, 4 devices, BF16 weights, FP32 gradients → 3/4·(28 + 28) = 42 GB, 4.2 s at 10 GB/s.
Pipeline parallel with p stages and m micro-batches idles ``(p−1)/(m+p−1)`` of the time.
"""

from dataclasses import dataclass

from napkin.accounting.collectives import (
    TP_ACTIVATION_BYTES,
    ring_allreduce_bytes,
    ring_gather_bytes,
    tp_allreduce_bytes_per_token,
)
from napkin.errors import NapkinError, require


@dataclass(frozen=True)
class Communication:
    scheme: str
    bytes_per_device: float
    link_bytes_per_s: float
    compute_s: float

    @property
    def time_s(self) -> float:
        return self.bytes_per_device / self.link_bytes_per_s

    @property
    def hidden(self) -> bool:
        """Whether it can overlap entirely with the step's compute."""
        return self.time_s <= self.compute_s


def communication(scheme: str, params: int, devices: int, weight_bytes: float = 2.0,
                  grad_bytes: float = 2.0, link_bytes_per_s: float = 10e9,
                  compute_s: float = 0.0, frozen_bytes: float = 0.0) -> Communication:
    """Bytes each device sends per step under ``scheme`` (ddp, zero1, zero2, zero3, fsdp).

    ``params`` are the trainable parameters. ``frozen_bytes`` is the stored size of frozen
    weights (a LoRA/QLoRA base): ZeRO-3 shards them too, so it gathers them for the forward and
    again for the backward (``2·frozen_bytes``, no gradient); the other schemes replicate them
    and move nothing."""
    require(devices >= 1, f"devices: must be >= 1, got {devices}")
    require(link_bytes_per_s > 0, "link: bandwidth must be > 0")
    w, g = params * weight_bytes, params * grad_bytes
    if scheme in ("ddp", "zero1", "zero2"):
        volume = (ring_allreduce_bytes(g, devices) if scheme == "ddp"
                  else ring_gather_bytes(g + w, devices))
    elif scheme in ("zero3", "fsdp"):
        volume = ring_gather_bytes(2 * w + g + 2 * frozen_bytes, devices)
    else:
        raise NapkinError(f"sharding: unknown scheme {scheme!r}; allowed: ddp, zero1, zero2, "
                          "zero3, fsdp")
    return Communication(scheme, volume, link_bytes_per_s, compute_s)


def pipeline_bubble(stages: int, micro_batches: int) -> float:
    """Idle share of a GPipe/1F1B pipeline: ``(p − 1)/(m + p − 1)``."""
    require(stages >= 1 and micro_batches >= 1, "pipeline: stages and micro-batches >= 1")
    return (stages - 1) / (micro_batches + stages - 1)


@dataclass(frozen=True)
class ModelParallelTraffic:
    """Per-update traffic of one rank for tensor and pipeline parallelism (Megatron-LM).

    TP (Shoeybi et al. 2019; Korthikanti et al. 2022): each transformer layer all-reduces its
    activations twice in the forward (after attention, after the MLP) and twice in the
    backward, ``B_μ·s·h`` elements each; a ring all-reduce sends ``2(t−1)/t`` of them
    (sequence parallelism's reduce-scatter + all-gather moves the same). PP: each stage
    boundary passes the activations forward and their gradients back, ``B_μ·s·h`` each way per
    micro-batch. Both sit on the critical path (napkin does not overlap them).
    """

    tp_bytes: float
    tp_link_bytes_per_s: float
    pp_bytes: float
    pp_link_bytes_per_s: float

    @property
    def tp_s(self) -> float:
        return self.tp_bytes / self.tp_link_bytes_per_s if self.tp_bytes else 0.0

    @property
    def pp_s(self) -> float:
        return self.pp_bytes / self.pp_link_bytes_per_s if self.pp_bytes else 0.0

    @property
    def time_s(self) -> float:
        return self.tp_s + self.pp_s


def model_parallel_traffic(layers: int, hidden: int, seq: int, micro_batch: int,
                           micro_batches: int, tp: int, pp: int, tp_link_bytes_per_s: float,
                           pp_link_bytes_per_s: float) -> ModelParallelTraffic:
    """Bytes a rank sends per update for TP ``tp`` and PP ``pp`` (class docstring): the
    forward's TP all-reduces (:func:`~napkin.accounting.collectives.tp_allreduce_bytes_per_token`)
    once more for the backward, over its ``L/p`` layers and ``B_μ·s`` tokens per micro-batch;
    PP ``2·B_μ·s·h`` 16-bit activations per micro-batch at a stage boundary."""
    require(tp >= 1 and pp >= 1, "tensor-parallel, pipeline: must be >= 1")
    tokens = micro_batches * micro_batch * seq
    tp_bytes = 2 * tp_allreduce_bytes_per_token(hidden, layers, tp) / pp * tokens
    pp_bytes = 2 * tokens * hidden * TP_ACTIVATION_BYTES if pp > 1 else 0.0
    return ModelParallelTraffic(tp_bytes, tp_link_bytes_per_s, pp_bytes, pp_link_bytes_per_s)
