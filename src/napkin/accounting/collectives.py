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


def two_level_gather_bytes(buffer_bytes: float, devices: int, domain: int
                           ) -> tuple[float, float]:
    """A reduce-scatter or all-gather over ``devices`` ranks in NVLink domains (nodes) of
    ``domain`` GPUs, in two levels as NCCL's rings and trees run it across nodes (each crosses
    the network through a different GPU's port): (bytes a rank sends over the in-domain link,
    ``(g − 1)/g·B`` over its g = min(n, domain) peers; bytes over its own NIC, ``(N − 1)/N`` of
    its ``B/g`` share over the N = ⌈n/g⌉ domains). One domain: the ring alone, no NIC bytes."""
    require(devices >= 1 and domain >= 1, f"devices, domain: must be >= 1, got {devices}, "
            f"{domain}")
    local = min(domain, devices)
    return (ring_gather_bytes(buffer_bytes, local),
            ring_gather_bytes(buffer_bytes / local, -(-devices // local)))


def allreduce_link_bytes_per_s(devices: int, domain: int, link_bytes_per_s: float,
                               nic_bytes_per_s: float) -> float:
    """The bandwidth an all-reduce over ``devices`` ranks sees as one ring link (what
    :func:`ring_allreduce_bytes` is divided by), bytes/s: ``link_bytes_per_s`` within one NVLink
    domain of ``domain`` GPUs; beyond it the two levels of :func:`two_level_gather_bytes`,
    twice each (reduce-scatter and all-gather), in sequence:
    ``B_eff = 2(n − 1)/n / (2(g − 1)/g / link + 2(N − 1)/(N·g) / nic)``
    (16 H100 over 2 nodes of 8, 450 GB/s NVLink, a 50 GB/s NIC a GPU: 293.5 GB/s)."""
    require(link_bytes_per_s > 0 and nic_bytes_per_s > 0, "link and NIC bandwidths: must be > 0")
    if devices <= domain:
        return link_bytes_per_s
    inside, across = two_level_gather_bytes(1.0, devices, domain)
    return ring_allreduce_bytes(1.0, devices) / (2 * inside / link_bytes_per_s
                                                 + 2 * across / nic_bytes_per_s)


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


def stage_boundary_bytes_per_token(hidden_size: int, tensor_parallel: int) -> float:
    """Bytes each rank sends per token across one pipeline-stage boundary: the ``hidden_size``
    16-bit activations, split over the t tensor-parallel ranks (each sends its ``1/t`` over
    its own link and the receivers all-gather: Narayanan et al. 2021 §4.1),
    ``hidden × 2 / t`` B."""
    require(tensor_parallel >= 1, f"tensor_parallel: must be >= 1, got {tensor_parallel}")
    return hidden_size * TP_ACTIVATION_BYTES / tensor_parallel


def context_parallel_kv_bytes_per_token(model: ModelSpec, devices: int) -> float:
    """Bytes each of ``devices`` context-parallel ranks receives per token of the sequence
    for one pass of its attention layers: every rank gathers the K and V of the other ranks'
    shards (ring attention passes them around; PyTorch's all-gather rotation gathers them),
    ``(n − 1)/n × Σ_layers 2·kv_heads·head_dim × 2`` B (16-bit K and V; MLA's latent and
    RoPE key instead). A backward moves the K and V again and their gradients back, twice
    a forward's."""
    require(devices >= 1, f"devices: must be >= 1, got {devices}")
    return ring_gather_bytes(model.kv_bytes_per_token_in_window(TP_ACTIVATION_BYTES), devices)


def expert_alltoall_bytes_per_token(model: ModelSpec, ranks: int, dispatch_bytes: float,
                                    combine_bytes: float = 2.0) -> float:
    """Bytes one of ``ranks`` expert-parallel ranks sends per token of its own in one pass of
    every MoE layer's dispatch and combine: ``Σ_MoE layers D·(R − 1)/R·h·(b_dispatch +
    b_combine)``, each token sent once to each of the ``D``
    (:func:`~napkin.accounting.routing.expected_destination_ranks`) ranks holding its experts
    (as DeepEP sends), the outputs returned the same way. 0 on one rank."""
    require(ranks >= 1, f"ranks: must be >= 1, got {ranks}")
    if ranks == 1:
        return 0.0
    from napkin.accounting.routing import expected_destination_ranks  # (numpy: a MoE's ranks)

    total = 0.0
    for g in model.layer_groups:
        e = g.block.experts
        if e is not None:
            sends = expected_destination_ranks(e.num_experts, e.num_active, ranks)
            total += g.num_layers * sends * (ranks - 1) / ranks * model.hidden_size * (
                dispatch_bytes + combine_bytes)
    return total


def parallel_collectives(model: ModelSpec, devices: int) -> tuple[int, float]:
    """(collectives per forward, bytes each device sends per token) over ``devices``
    tensor-parallel ranks: :func:`tp_allreduces` and :func:`tp_allreduce_bytes_per_token`.

    Experts sharded over the same ranks (expert parallelism with tensor-parallel attention:
    vLLM's ``--enable-expert-parallel`` at data parallel 1, TensorRT-LLM's ``moe_ep_size`` = TP
    without attention DP) need the same collectives: every rank holds every token after the
    attention all-reduce, runs its own experts on them and the MoE outputs meet in one
    all-reduce, as a tensor-parallel MLP's do. Dispatch and combine all-to-alls run only with
    data-parallel attention (vLLM ``FusedMoEParallelConfig.use_all2all_kernels``: ``dp_size > 1
    and use_ep``): :mod:`napkin.accounting.ranks`.
    """
    return (tp_allreduces(model.num_layers, devices),
            tp_allreduce_bytes_per_token(model.hidden_size, model.num_layers, devices))
