"""How many users fit in the KV cache (question bank, task 3).

Weights are sharded over ``devices`` accelerators (tensor parallel), each keeping ``reserve``
bytes for activations and buffers. What is left holds KV: users = ⌊budget / (KV per user ×
replicas)⌋, at the full context and at an average context (PagedAttention allocates by use,
not by maximum). ``replicas`` is 1 while the devices are no more than the KV heads; past that
each KV head sits on ``devices / kv_heads`` of them, and MLA's latent cache (one head) on every
one (``ModelSpec.kv_devices``): DeepSeek-V3 on 8 GPUs holds its users' KV 8 times. A model
with linear-attention layers (Qwen3-Next) also holds a fixed state per user, whatever its
context, split over the devices without copies (``ModelSpec.state_bytes_per_sequence``).
"""

import math
from dataclasses import dataclass

from napkin.errors import NapkinError, require
from napkin.inference.decode import check_reserve, weights_bytes
from napkin.timing.roofline import Deployment
from napkin.units import GB


@dataclass(frozen=True)
class Capacity:
    devices: int
    memory_bytes: float
    reserve_bytes: float
    weights_bytes: float
    context: int
    kv_bytes_per_user: float
    avg_context: int | None
    kv_bytes_per_user_avg: float | None
    kv_replicas: float = 1.0
    """Copies of each user's KV over the devices (``devices / kv_devices``, >= 1)."""
    state_bytes_per_user: float = 0.0
    """Linear-attention state of one user, any context (one copy: its heads are split over
    the devices); 0 without such layers."""

    def _per_user(self, kv_bytes: float) -> float:
        """Memory one user takes: its KV times the copies, plus its state."""
        return kv_bytes * self.kv_replicas + self.state_bytes_per_user

    @property
    def kv_budget_bytes(self) -> float:
        """Memory left for KV: all devices, minus reserves, minus weights."""
        return self.memory_bytes - self.reserve_bytes - self.weights_bytes

    @property
    def users(self) -> int:
        """Users that fit at the full ``context``."""
        return max(0, math.floor(self.kv_budget_bytes / self._per_user(self.kv_bytes_per_user)))

    @property
    def users_avg(self) -> int | None:
        """Users that fit at ``avg_context`` (None when not given)."""
        if self.kv_bytes_per_user_avg is None:
            return None
        return max(0, math.floor(self.kv_budget_bytes
                                 / self._per_user(self.kv_bytes_per_user_avg)))


def _tp_hint(dep: Deployment, devices: int) -> str:
    """The smallest tensor-parallel size >= ``devices`` that divides every layer's heads."""
    heads = math.gcd(*(g.block.attention.num_heads for g in dep.model.layer_groups))
    tp = next((t for t in range(devices, heads + 1) if heads % t == 0), None)
    return "" if tp is None or tp == devices else f" (as tensor parallelism: {tp})"


def capacity(dep: Deployment, devices: int, context: int, avg_context: int | None = None,
             reserve_bytes_per_device: float = 0.0) -> Capacity:
    """Users whose KV fits on ``devices`` copies of the accelerator at ``context`` tokens."""
    require(devices >= 1, f"count: must be >= 1 device, got {devices}")
    require(context >= 1, f"context: must be >= 1 token, got {context}")
    check_reserve(dep, reserve_bytes_per_device)
    dep.model.check_context(context)
    kvb = dep.precision.kv.bytes_per_element
    avg_kv = None
    if avg_context is not None:
        require(1 <= avg_context <= context,
                f"avg-context: must be between 1 and the context {context}, got {avg_context}")
        avg_kv = dep.model.kv_bytes(avg_context, kvb)
    cap = Capacity(
        devices=devices,
        memory_bytes=devices * dep.acc.memory_bytes,
        reserve_bytes=devices * reserve_bytes_per_device,
        weights_bytes=weights_bytes(dep),
        context=context,
        kv_bytes_per_user=dep.model.kv_bytes(context, kvb),
        avg_context=avg_context,
        kv_bytes_per_user_avg=avg_kv,
        kv_replicas=devices / dep.model.kv_devices(devices),
        state_bytes_per_user=dep.model.state_bytes_per_sequence(kvb),
    )
    if cap.kv_budget_bytes <= 0:  # a negative KV budget is no answer: say what would fit
        usable = dep.acc.memory_bytes - reserve_bytes_per_device
        one_user = math.ceil((cap.weights_bytes + cap.kv_bytes_per_user
                              + cap.state_bytes_per_user) / usable)
        raise NapkinError(
            f"count: {cap.weights_bytes / GB:,.1f} GB of {dep.precision.weights.name} weights "
            f"do not fit in {devices} × {usable / GB:,.1f} GB of {dep.acc.id}"
            f"{' after the reserve' if reserve_bytes_per_device else ''}; one user at "
            f"{context:,} tokens needs --count >= {one_user}{_tp_hint(dep, one_user)}, or a "
            "smaller --weights format")
    return cap
