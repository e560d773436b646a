"""Training memory: parameter state by recipe, sharding, activations, fit per device.

Bytes per parameter (trainable) by recipe — the chapter's Example 3-3 is ``adamw-fp32-grads``
(BF16 weights 2 + FP32 grads 4 + FP32 master 4 + Adam m 4 + v 4 = 18), the question bank's q21 is
``adamw`` (BF16 grads: 16). Frozen parameters hold only their weights (BF16, or NF4 with double
quantization for QLoRA: 4 + 8/64 + 32/(64·256) ≈ 4.127 bits, Dettmers et al. 2023).

Sharding over n data-parallel devices (Rajbhandari et al. 2020): ZeRO-1 splits optimizer states
(master, moments), ZeRO-2 also gradients, ZeRO-3/FSDP also weights; CPU offload moves optimizer
states to host memory.

Activations per layer (Korthikanti et al. 2022, Table 2; bytes, 16-bit activations):
``s·b·h·(34 + 5·a·s/h)`` without recomputation or FlashAttention; FlashAttention (or selective
recompute) drops the ``5·a·s/h`` attention-matrix term; with tensor parallel ``t`` the per-device
figure is ``s·b·h·(10 + 24/t [+ 5as/(ht)])`` and with sequence parallel ``34/t``; full
recomputation keeps only each layer's input, ``2·s·b·h``. For SwiGLU MLPs Megatron's
generalization replaces 34 by ``18 + 4·ffn/h`` (``mlp_coefficient``): napkin's default ``ffn``
convention (:data:`ACTIVATION_CONVENTIONS`); ``korthikanti`` keeps the paper's 34 (a 4h GeLU
MLP), the question bank's "34·h bytes per token per layer" (task 1: 34·4096·4096·32 ≈ 18 GB
per 4096-token sequence of a 32-layer, h = 4096 model). torchtitan's
per-op policy (``selective-op``) keeps the layer's input and the outputs of the matmuls and
attention it does not re-run — q (h), v (kv), the attention output (h) and the gate (ffn) —
``2·s·b·(h + (2h + kv + ffn)/t)`` (all over t with sequence parallelism); its every-second-layer
policy (``selective-layer``) keeps half the layers whole and half as inputs only.

With pipeline parallelism the first stage holds the most (Korthikanti et al. 2022 §4.2.3): 1F1B
keeps p micro-batches in flight on its L/p layers, L layers' worth of one micro-batch
(:func:`pipeline_activation_factor` scales that).
"""

import math
from dataclasses import dataclass

from napkin.errors import NapkinError, require
from napkin.training.flops import RECOMPUTE


@dataclass(frozen=True)
class Recipe:
    """Bytes per trainable parameter: weights, gradients, master copy, optimizer moments."""

    name: str
    weights: float
    grads: float
    master: float
    optimizer: float
    description: str

    @property
    def bytes_per_param(self) -> float:
        return self.weights + self.grads + self.master + self.optimizer

    @property
    def update_traffic_bytes(self) -> float:
        """Bytes per parameter an optimizer step moves: it reads weights, gradients, master and
        moments and writes weights, master and moments back (non-matmul, per update)."""
        return (self.weights + self.grads + self.master + self.optimizer) + (
            self.weights + self.master + self.optimizer)

    @property
    def optimizer_state_bytes(self) -> float:
        """What ZeRO-1 shards and CPU offload moves: master copy and moments."""
        return self.master + self.optimizer


RECIPES: dict[str, Recipe] = {r.name: r for r in (
    Recipe("adamw", 2, 2, 4, 8, "BF16 weights and grads, FP32 master, Adam m and v (q21: 16)"),
    Recipe("adamw-fp32-grads", 2, 4, 4, 8, "as adamw with FP32 gradients (Example 3-3: 18)"),
    Recipe("adamw-8bit", 2, 2, 4, 2, "Adam moments in 8 bits (bitsandbytes)"),
    Recipe("adamw-bf16", 2, 2, 0, 4, "BF16 weights, gradients and Adam moments, no FP32 "
           "master (pure BF16 training, e.g. with stochastic rounding): 8"),
    Recipe("sgd", 2, 2, 4, 0, "plain SGD, mixed precision"),
    Recipe("sgd-momentum", 2, 2, 4, 4, "SGD with one FP32 momentum"),
)}

FROZEN_WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "nf4-dq": (4 + 8 / 64 + 32 / (64 * 256)) / 8}
"""Bytes per frozen parameter: 16-bit, or QLoRA's NF4 with double-quantized block scales."""


def recipe(name: str) -> Recipe:
    try:
        return RECIPES[name]
    except KeyError:
        raise NapkinError(f"optimizer: unknown recipe {name!r}; allowed: "
                          f"{', '.join(RECIPES)}") from None


@dataclass(frozen=True)
class StateMemory:
    """Parameter-related bytes on one device, by kind (activations apart)."""

    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    offloaded_bytes: float

    @property
    def bytes(self) -> float:
        return self.weights_bytes + self.grads_bytes + self.optimizer_bytes


def state_memory(trainable: int, frozen: int, rec: Recipe, devices: int = 1, zero: int = 0,
                 offload: bool = False, frozen_format: str = "bf16") -> StateMemory:
    """Per-device state of ``trainable`` + ``frozen`` parameters under ZeRO stage ``zero``."""
    require(devices >= 1, f"devices: must be >= 1, got {devices}")
    require(zero in (0, 1, 2, 3), f"zero: stage must be 0, 1, 2 or 3, got {zero}")
    if frozen_format not in FROZEN_WEIGHT_BYTES:
        raise NapkinError(f"frozen weights: unknown format {frozen_format!r}; allowed: "
                          f"{', '.join(FROZEN_WEIGHT_BYTES)}")
    weights = trainable * rec.weights + frozen * FROZEN_WEIGHT_BYTES[frozen_format]
    grads = trainable * rec.grads
    opt = trainable * rec.optimizer_state_bytes
    if zero >= 1:
        opt /= devices
    if zero >= 2:
        grads /= devices
    if zero >= 3:
        weights /= devices
    offloaded = opt if offload else 0.0
    return StateMemory(weights, grads, 0.0 if offload else opt, offloaded)


ACTIVATION_CONVENTIONS = {
    "ffn": "Megatron's 18 + 4·ffn/h per token per layer (× h bytes): the model's own MLP width",
    "korthikanti": "Korthikanti et al. 2022's 34 (a 4h GeLU MLP), the question bank's 34·h",
}
"""The MLP's share of the activations: the ``mlp_coefficient`` of
:func:`activation_bytes_per_layer`."""
KORTHIKANTI_MLP_COEFFICIENT = 34.0
"""11 (attention, without the score tensors) + 19 (4h MLP) + 4 (two LayerNorms): bytes per
token per layer over h (Korthikanti et al. 2022 §4.1)."""


def mlp_coefficient(ffn: float, hidden: int, convention: str = "ffn") -> float:
    """The per-layer activation coefficient: ``18 + 4·ffn/h`` (``ffn``) or 34
    (``korthikanti``)."""
    require(convention in ACTIVATION_CONVENTIONS,
            f"activations: must be one of {', '.join(ACTIVATION_CONVENTIONS)}, "
            f"got {convention!r}")
    if convention == "korthikanti":
        return KORTHIKANTI_MLP_COEFFICIENT
    return 18.0 + 4.0 * ffn / hidden


def activation_bytes_per_layer(seq: int, batch: int, hidden: int, heads: int,
                               recompute: str = "none", flash: bool = False,
                               tensor_parallel: int = 1, sequence_parallel: bool = False,
                               mlp_coefficient: float = 34.0, kv_fraction: float = 1.0
                               ) -> float:
    """Korthikanti et al. 2022 activation bytes of one layer on one device (see module doc);
    ``kv_fraction``: the K (or V) width over the hidden size, ``kv_heads·head_dim/h``."""
    require(recompute in RECOMPUTE,
            f"recompute: must be one of {', '.join(RECOMPUTE)}, got {recompute!r}")
    sbh, t = seq * batch * hidden, tensor_parallel
    if recompute == "full":
        return 2.0 * sbh / (t if sequence_parallel else 1)
    if recompute == "selective-layer":
        return 0.5 * sum(activation_bytes_per_layer(
            seq, batch, hidden, heads, r, flash, t, sequence_parallel, mlp_coefficient)
            for r in ("none", "full"))
    if recompute == "selective-op":
        split = 2.0 + kv_fraction + (mlp_coefficient - 18.0) / 4.0
        return 2.0 * sbh * ((1.0 + split) / t if sequence_parallel else 1.0 + split / t)
    score = 0.0 if (flash or recompute == "selective") else 5.0 * heads * seq / hidden
    if sequence_parallel:
        return sbh * (mlp_coefficient + score) / t
    return sbh * (10.0 + (mlp_coefficient - 10.0) / t + score / t)


def pipeline_activation_factor(stages: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """Activations of the first pipeline stage as a multiple of L layers of one micro-batch.

    Korthikanti et al. 2022 §4.2.3: under 1F1B the first stage holds p micro-batches of its
    ``L/p`` layers (factor 1), or all m of them when ``m < p`` (``m/p``); the interleaved
    schedule with v chunks per rank holds ``1 + (p − 1)/(p·v)`` times more (§5, eq. 6's
    remark). Megatron-LM applies the same factors (``theoretical_memory_usage.py``:
    ``interleaved_schedule_memory_penalty``, and ``min(1, m/p)`` without interleaving).
    """
    require(stages >= 1 and micro_batches >= 1 and virtual_stages >= 1,
            "pipeline: stages, micro-batches and virtual stages >= 1")
    if stages == 1:
        return 1.0
    if virtual_stages > 1:
        return 1.0 + (stages - 1) / (stages * virtual_stages)
    return min(1.0, micro_batches / stages)


LOGIT_BYTES = 2 + 4 + 4
"""Bytes per logit while the loss runs: the BF16 logits, their FP32 copy for the cross-entropy
(torchtitan's ``cross_entropy(pred.flatten(0, 1).float(), labels)``) and its FP32 gradient."""


@dataclass(frozen=True)
class Fit:
    """Per-device memory of a training setup and whether it fits."""

    state: StateMemory
    activations_bytes: float
    reserve_bytes: float
    capacity_bytes: float
    logits_bytes: float = 0.0
    """The loss over one micro-batch: ``tokens × vocab × LOGIT_BYTES / t`` (the vocabulary
    split over TP ranks: loss parallelism)."""
    working_bytes: float = 0.0
    """What a backward materializes beyond the saved activations: under full (or
    every-second-layer) recompute, one re-run layer's whole activations."""
    buffer_bytes: float = 0.0
    """FSDP (ZeRO-3): the gathered 16-bit weights of the layer running and of the one
    prefetched, and that layer's unsharded gradient before its reduce-scatter (with pipeline
    stages the whole stage's, kept gathered for the update)."""
    allocator_overhead: float = 0.0
    """What the caching allocator reserves beyond the allocated bytes, as a share of them."""
    offloaded_activation_bytes: float = 0.0
    """Saved activations held in host memory (activation offload), not on the device."""

    @property
    def allocated_bytes(self) -> float:
        return (self.state.bytes + self.activations_bytes + self.logits_bytes
                + self.working_bytes + self.buffer_bytes)

    @property
    def allocator_bytes(self) -> float:
        """Reserved by the allocator beyond the allocated bytes (fragmentation, caching)."""
        return self.allocated_bytes * self.allocator_overhead

    @property
    def total_bytes(self) -> float:
        """Peak reserved per device: allocated + allocator overhead + the fixed reserve."""
        return self.allocated_bytes + self.allocator_bytes + self.reserve_bytes

    @property
    def fits(self) -> bool:
        """State, activations and everything else (``total_bytes``) within the device."""
        return self.total_bytes <= self.capacity_bytes

    @property
    def state_fits(self) -> bool:
        """The parameter state alone (weights, gradients, optimizer states) within the
        device, before any activation."""
        return self.state.bytes <= self.capacity_bytes


def largest_micro_batch(state: StateMemory, activation_per_sequence: float,
                        capacity_bytes: float, reserve_bytes: float = 0.0) -> int:
    """Most sequences per micro-batch whose activations (and whatever else grows with the
    micro-batch) fit beside the state and the fixed reserve (0: none)."""
    left = capacity_bytes - reserve_bytes - state.bytes
    if left <= 0 or activation_per_sequence <= 0:
        return 0
    return math.floor(left / activation_per_sequence)
