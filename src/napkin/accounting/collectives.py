"""Bytes each device sends in ring collectives over n devices.

A ring reduce-scatter or all-gather of a B-byte buffer moves ``(n − 1)/n·B`` per device; an
all-reduce is the two in sequence, ``2·(n − 1)/n·B``.
"""

from napkin.errors import require
from napkin.specs.model import ModelSpec


def ring_gather_bytes(buffer_bytes: float, devices: int) -> float:
    """Reduce-scatter or all-gather: ``(n − 1)/n·B`` bytes per device."""
    require(devices >= 1, f"devices: must be >= 1, got {devices}")
    return (devices - 1) / devices * buffer_bytes


def ring_allreduce_bytes(buffer_bytes: float, devices: int) -> float:
    """All-reduce (reduce-scatter + all-gather): ``2·(n − 1)/n·B`` bytes per device."""
    return 2 * ring_gather_bytes(buffer_bytes, devices)


TP_ACTIVATION_BYTES = 2
"""16-bit activations on the tensor-parallel all-reduces."""


def tp_allreduces(num_layers: int, devices: int) -> int:
    """All-reduces of one forward under tensor parallelism: two per layer (after attention and
    after the MLP), none on one device."""
    return 2 * num_layers if devices > 1 else 0


def tp_allreduce_bytes_per_token(hidden_size: int, num_layers: int, devices: int) -> float:
    """Bytes each device sends per token of a forward: its all-reduces of ``hidden_size``
    16-bit activations, ``tp_allreduces × 2(n − 1)/n × hidden × 2`` B."""
    return tp_allreduces(num_layers, devices) * ring_allreduce_bytes(
        hidden_size * TP_ACTIVATION_BYTES, devices)


def ep_collectives(model: ModelSpec, devices: int) -> tuple[int, float]:
    """Collectives of one forward and bytes each device sends per token when the MoE layers'
    experts are sharded over the ``devices`` ranks (expert parallelism: vLLM's
    ``--enable-expert-parallel`` over the tensor-parallel group) and attention stays tensor
    parallel. Per layer: the attention all-reduce; a dense MLP's all-reduce; or a MoE layer's
    dispatch and combine all-to-alls, each sending the token's ``top-k`` copies of ``hidden``
    16-bit activations, ``(n − 1)/n`` of them to other ranks (balanced routing):

        collectives = L_attention + L_dense + 2·L_moe
        bytes/token = (L_attention + L_dense) × 2(n − 1)/n × 2h  +  2·L_moe × k × 2h × (n − 1)/n
    """
    if devices == 1:
        return 0, 0.0
    h = model.hidden_size * TP_ACTIVATION_BYTES
    layers = moe = 0
    k = 0
    for g in model.layer_groups:
        layers += g.num_layers
        if g.block.experts is not None:
            moe += g.num_layers
            k = g.block.experts.num_active
    dense = layers - moe
    count = layers + dense + 2 * moe
    per_token = ((layers + dense) * ring_allreduce_bytes(h, devices)
                 + 2 * moe * ring_gather_bytes(k * h, devices))
    return count, per_token


def parallel_collectives(model: ModelSpec, devices: int, expert_parallel: bool = False
                         ) -> tuple[int, float]:
    """(collectives per forward, bytes each device sends per token): tensor parallelism's
    all-reduces (:func:`tp_allreduces`, :func:`tp_allreduce_bytes_per_token`) or, with
    ``expert_parallel``, :func:`ep_collectives`."""
    if expert_parallel:
        return ep_collectives(model, devices)
    return (tp_allreduces(model.num_layers, devices),
            tp_allreduce_bytes_per_token(model.hidden_size, model.num_layers, devices))
