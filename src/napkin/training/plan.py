"""A training setup end to end: FLOPs of an update, memory per device, communication, time.

Ties :mod:`napkin.training.flops`, :mod:`~napkin.training.memory`,
:mod:`~napkin.training.parallel` and :mod:`~napkin.training.schedule` together for one model,
update shape and cluster. Activations use Korthikanti et al.'s per-layer formula with Megatron's
SwiGLU generalization ``18 + 4·ffn/h`` (for MoE layers ffn counts the k routed experts and the
shared ones), FlashAttention on by default.

Time of one update on a rank (seconds)::

    compute = itemized FLOPs (recompute included) / (TP·PP · peak · mfu)
    update  = max(compute + dequant + TP/PP traffic, DP traffic) / (1 − bubble) + optimizer step

so ``mfu`` is the share of peak the matmuls run at *while computing*; the bubble, the exposed
TP/PP traffic and the optimizer step come on top. The end-to-end utilization a paper reports
(model FLOPs over wall time; Korthikanti et al. 2022 Table 5, the Llama 3 paper's Table 4) is
:attr:`TrainPlan.achieved_mfu`, which is below ``mfu`` whenever there is a bubble or exposed
traffic: a published MFU passed as ``mfu`` counts those twice
(``tests/training/test_published_runs.py`` measures by how much).
"""

from dataclasses import dataclass, replace

from napkin.accounting.backward import is_frozen
from napkin.accounting.collectives import (
    allreduce_link_bytes_per_s,
    context_parallel_kv_bytes_per_token,
    expert_alltoall_bytes_per_token,
)
from napkin.accounting.ops import OpKind
from napkin.accounting.ranks import dispatch_bytes_per_element
from napkin.errors import require
from napkin.specs.hardware import Accelerator
from napkin.specs.lora import LORA_ONLY, lora_params, with_lora
from napkin.specs.model import ModelSpec
from napkin.specs.modules import Stage
from napkin.training.efficiency import RankWork, TrainingProfile, compute_s
from napkin.training.flops import (
    ATTENTION,
    BLOCK_LINEARS,
    TrainFlops,
    TrainShape,
    palm_flops_per_token,
    train_flops,
)
from napkin.training.memory import (
    FROZEN_WEIGHT_BYTES,
    LOGIT_BYTES,
    Fit,
    Recipe,
    StateMemory,
    activation_bytes_per_layer,
    largest_micro_batch,
    mlp_coefficient,
    pipeline_activation_factor,
    state_memory,
)
from napkin.training.parallel import (
    Communication,
    ModelParallelTraffic,
    communication,
    model_parallel_traffic,
    pipeline_bubble,
)
from napkin.training.run import TrainingRun

INTER_NODE_BYTES_PER_S = 50e9
"""One 400 Gb/s InfiniBand NDR port per GPU (the DGX H100 layout: eight ConnectX-7 400 Gb/s
ports for eight GPUs; NVIDIA DGX H100 user guide), 50 GB/s per direction."""
HOST_LINK_BYTES_PER_S = 32e9
"""PCIe 4.0 ×16 per direction (16 GT/s × 16 lanes, 128b/130b ≈ 31.5 GB/s; PCI-SIG), the floor
of current training hosts (PCIe 5.0 doubles it): the default GPU ↔ CPU link."""
CPU_MEM_BYTES_PER_S = 100e9
"""Host DRAM bandwidth a CPU Adam step achieves: about half of one socket's 8-channel
DDR4-3200 peak (3,200 MT/s × 8 B × 8 channels = 204.8 GB/s; JEDEC). An input, printed."""
CPU_ADAM_BYTES_PER_PARAM = 4 + 4 * 3 * 2 + 2
"""Host bytes an offloaded Adam step moves per parameter: read the FP32 gradient (4), read and
write the FP32 master copy and both moments (3 × 4 × 2), write the BF16 weights (2)."""
DEQUANT_BYTES_PER_PARAM = 0.5 + 2 + 2
"""HBM bytes per NF4 weight per matmul pass under QLoRA: read the 4-bit code (0.5), write the
BF16 weight (2) and read it back into the matmul (2) (bitsandbytes dequantizes to a BF16
buffer; Dettmers et al. 2023)."""


@dataclass(frozen=True)
class Cluster:
    """Where training runs: ``devices`` data-parallel ranks (each ``tensor_parallel`` ×
    ``pipeline_stages`` GPUs, each running the shape's ``accumulation × micro_batch`` sequences
    per update), ZeRO stage, CPU offload, link bandwidth for gradient/weight traffic."""

    acc: Accelerator
    devices: int = 1
    zero: int = 0
    offload: bool = False
    link_bytes_per_s: float = 10e9
    mfu: float = 0.4
    """Share of the dense peak the matmuls run at while computing (module docstring); not the
    end-to-end MFU, which napkin reports as :attr:`TrainPlan.achieved_mfu`."""
    tensor_parallel: int = 1
    sequence_parallel: bool = False
    flash: bool = True
    reserve_bytes: float = 0.0
    pipeline_stages: int = 1
    grad_wire_bytes: float | None = None
    """Bytes per gradient element in the reduction (FSDP's ``reduce_dtype``; 4 for FP32);
    None: the recipe's gradient precision."""
    gpus_per_node: int = 8
    """GPUs that share the intra-node link (``link_bytes_per_s``); beyond, traffic crosses the
    inter-node network."""
    inter_node_bytes_per_s: float = INTER_NODE_BYTES_PER_S
    """Inter-node network per GPU and direction."""
    host_link_bytes_per_s: float = HOST_LINK_BYTES_PER_S
    """GPU ↔ CPU link per direction, for optimizer and activation offload."""
    cpu_mem_bytes_per_s: float = CPU_MEM_BYTES_PER_S
    """Host memory bandwidth the CPU optimizer step achieves, for optimizer offload."""
    virtual_stages: int = 1
    """Model chunks per pipeline rank: 1 is 1F1B, v > 1 the interleaved 1F1B schedule
    (Narayanan et al. 2021 §2.2.2): a bubble v times smaller, v times the PP traffic, and the
    first stage holds ``1 + (p − 1)/(p·v)`` times the activations."""
    precision: str = "bf16"
    """Matmul recipe (:data:`napkin.training.efficiency.PRECISIONS`): ``fp8`` and
    ``fp8-rowwise`` run the block linears at the FP8 rate."""
    compiled: bool = False
    """``torch.compile``: the elementwise kernels fused (a fitted profile's own coefficient)."""
    async_tp: bool = False
    """Asynchronous TP: the TP collectives overlap the matmuls (only what exceeds the compute
    is exposed)."""
    profile: TrainingProfile | None = None
    """A fitted compute-time profile; None: every matmul at ``mfu`` of its peak."""
    allocator_overhead: float = 0.0
    """Share of the allocated memory PyTorch's caching allocator reserves on top."""
    optimizer_in_backward: bool = False
    """The optimizer steps each parameter as soon as backward produces its gradient and frees
    it (torchtune's ``optimizer_in_bwd``): one layer's gradients held at a time; needs one
    micro-batch per update."""
    offload_params: bool = False
    """FSDP's CPU offload (ZeRO-3 only): weights, gradients and optimizer states in host
    memory, the optimizer step on the CPU; each micro-batch's forward and backward copy the
    rank's weight shard in over the host link (hidden under the compute where shorter)."""
    overlap_ep: bool = False
    """The EP all-to-alls run under other micro-batches' compute (DeepSeek-V3's DualPipe,
    Megatron's all-to-all overlap): only what outlasts the compute is exposed."""
    offload_activations: bool = False
    """The saved activations go to host memory during the forward and come back for the
    backward (over the host link, hidden behind the compute where it is longer); the GPU keeps
    two layers' worth in flight."""
    expert_parallel: int = 1
    """Ranks the routed experts are spread over (out of the DP × CP ranks, without TP): each
    holds ``1/ep`` of them, computes the tokens routed to its experts from all ``ep`` ranks
    (the busiest rank's expected share, :func:`napkin.accounting.routing.imbalance`), and
    sends and receives every token's hidden state in each MoE layer's dispatch and combine
    all-to-all (:func:`~napkin.accounting.collectives.expert_alltoall_bytes_per_token`),
    exposed."""
    activations: str = "ffn"
    """The activation-memory convention
    (:data:`~napkin.training.memory.ACTIVATION_CONVENTIONS`): ``ffn`` (the model's MLP width)
    or ``korthikanti`` (the paper's and the question bank's 34·h); memory only, the compute
    profile keeps its own."""
    context_parallel: int = 1
    """Ranks a sequence is split over (ring or all-gather attention): each runs ``1/c`` of the
    tokens and of the causal attention (load-balanced chunks), holds ``1/c`` of the
    activations, gathers the other shards' K and V every attention layer, and shares the
    FSDP sharding with the DP ranks (torchtitan's ``dp_shard × cp`` mesh)."""


@dataclass(frozen=True)
class Offload:
    """An offloaded optimizer step per update and device: gradients down and weights up over
    the host link, the CPU Adam step in host memory."""

    link_bytes: float
    link_bytes_per_s: float
    cpu_bytes: float
    cpu_bytes_per_s: float

    @property
    def link_s(self) -> float:
        return self.link_bytes / self.link_bytes_per_s

    @property
    def cpu_s(self) -> float:
        return self.cpu_bytes / self.cpu_bytes_per_s

    @property
    def time_s(self) -> float:
        return self.link_s + self.cpu_s


@dataclass(frozen=True)
class TrainPlan:
    model: ModelSpec
    flops: TrainFlops
    trainable_params: int
    frozen_params: int
    fit: Fit
    activation_bytes_per_sequence: float
    max_micro_batch: int
    comm: Communication
    optimizer_bytes: float
    optimizer_s: float
    bubble_frac: float
    update_s: float

    data_parallel: int = 1
    """Data-parallel ranks, each running its own ``accumulation × micro_batch`` sequences."""
    dequant_s: float = 0.0
    """QLoRA: time per update dequantizing the NF4 base for every matmul pass."""
    offload: "Offload | None" = None
    """Optimizer offload: the host link and CPU step that replace the GPU step."""
    model_parallel: ModelParallelTraffic | None = None
    """Tensor- and pipeline-parallel traffic of one rank per update."""
    tensor_parallel: int = 1
    pipeline_stages: int = 1
    virtual_stages: int = 1
    peak_flops_per_s: float = 0.0
    """Dense BF16 peak of one GPU, the denominator of :attr:`achieved_mfu`."""
    work: RankWork | None = None
    """One rank's work of the update, by where it runs."""
    compute_s: float = 0.0
    """Seconds one rank computes ``work`` (the efficiency model's)."""

    context_parallel: int = 1
    tp_exposed_s: float = 0.0
    """The TP traffic's time on the critical path (all of it, or under async TP only what
    outlasts the compute)."""
    ep_exposed_s: float = 0.0
    """The EP all-to-alls' time on the critical path."""
    host_transfer_s: float = 0.0
    """Offloaded activations' and weights' time over the host link per update (exposed where
    it outlasts the compute)."""

    @property
    def gpus(self) -> int:
        """Every GPU of the run: DP × TP × PP × CP."""
        return (self.data_parallel * self.tensor_parallel * self.pipeline_stages
                * self.context_parallel)

    @property
    def tokens_per_update(self) -> int:
        """Tokens of one update over every data-parallel rank: ``DP·a·B_μ·P``."""
        return self.data_parallel * self.flops.shape.tokens_per_update

    @property
    def update_flops(self) -> float:
        """FLOPs of one update over every rank (``flops`` is one rank's)."""
        return self.data_parallel * self.flops.update_flops

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_update / self.update_s

    @property
    def model_flops(self) -> float:
        """Model FLOPs of one update over every rank: :attr:`update_flops` without the
        recompute (Korthikanti et al. 2022 §6.3: "the floating point operations required to
        perform a single forward and backward pass ... regardless of the implementations")."""
        shape = self.flops.shape
        return self.update_flops - self.data_parallel * shape.accumulation * (
            self.flops.recompute_flops)

    @property
    def achieved_mfu(self) -> float:
        """End-to-end model FLOPs utilization: ``model_flops / (update_s · GPUs · peak)``
        (PaLM's and Korthikanti et al.'s definition, with napkin's itemized FLOPs: causal
        attention pairs, no embedding matmul)."""
        return self.model_flops / (self.update_s * self.gpus * self.peak_flops_per_s)

    @property
    def published_mfu(self) -> float:
        """End-to-end MFU in the published convention: ``(6N + 12·L·H·Q·T)`` per token
        (:func:`~napkin.training.flops.palm_flops_per_token`, full attention) × tokens per
        update over ``update_s · GPUs · BF16 peak``; with an FP8 recipe the BF16 peak is still
        the denominator (torchtitan reports no MFU for FP8 runs, whose matmuls have two
        peaks)."""
        return palm_flops_per_token(self.model, self.flops.shape.sequence_tokens) * (
            self.tokens_per_update) / (self.update_s * self.gpus * self.peak_flops_per_s)

    @property
    def effective_flops_per_s(self) -> float:
        """FLOP/s one GPU delivers while computing, what the update's compute time uses:
        ``update_flops / (compute_s · GPUs)`` — ``peak × mfu`` under a plain MFU (BF16), the
        fitted profile's implied rate otherwise."""
        return self.update_flops / (self.compute_s * self.gpus)

    @property
    def achieved_hfu(self) -> float:
        """End-to-end hardware FLOPs utilization: as :attr:`achieved_mfu` with the recompute
        counted (``update_flops``)."""
        return self.update_flops / (self.update_s * self.gpus * self.peak_flops_per_s)


@dataclass(frozen=True)
class TrainingResult:
    """What :func:`napkin.train` gives as ``value``: the update's plan and, with tokens or
    epochs, the whole run (None without)."""

    plan: TrainPlan
    run: TrainingRun | None = None


def _mlp_coefficient(model: ModelSpec, convention: str = "ffn") -> float:
    """The per-layer activation coefficient (:func:`~napkin.training.memory.mlp_coefficient`:
    Megatron's ``18 + 4·ffn/h`` or Korthikanti's 34), averaged over layers."""
    total = 0.0
    for g in model.layer_groups:
        ffn = sum(lin.out_features for lin in g.block.linears if lin.name.endswith("/up"))
        if g.block.experts:
            ffn += g.block.experts.num_active * sum(
                lin.out_features for lin in g.block.experts.linears if lin.name.endswith("/up"))
        total += g.num_layers * mlp_coefficient(ffn, model.hidden_size, convention)
    return total / model.num_layers


def plan_training(model: ModelSpec, shape: TrainShape, cluster: Cluster, rec: Recipe,
                  frozen: tuple[str, ...] = (), lora_rank: int = 0,
                  lora_targets: tuple[str, ...] | None = None, qlora: bool = False) -> TrainPlan:
    """FLOPs, memory, communication and time of one update of ``model``."""
    require(not qlora or lora_rank > 0, "qlora: needs --lora-rank")
    if lora_rank:
        model = with_lora(model, lora_rank, *(() if lora_targets is None else (lora_targets,)))
        frozen = (*LORA_ONLY, *frozen)
        trainable = lora_params(model)
    else:
        trainable = model.params if not frozen else _trainable(model, frozen)
    tp, pp, v = cluster.tensor_parallel, cluster.pipeline_stages, cluster.virtual_stages
    require(v == 1 or pp > 1, "virtual-stages: needs a pipeline (--pipeline > 1)")
    # a chunk holds at least one layer, or only the embedding or only the head (Llama 3
    # §3.3.2: 126 layers in 16 × 8 chunks)
    require(pp * v <= model.num_layers + 2,
            f"virtual-stages: pipeline × virtual stages ({pp} × {v}) exceeds "
            f"{model.name}'s {model.num_layers} layers + embedding + head (one per chunk)")
    cp = cluster.context_parallel
    require(cp == 1 or shape.sequence_tokens % (2 * cp) == 0,
            f"cp: the sequence ({shape.sequence_tokens} tokens) must split into 2 × {cp} "
            "equal chunks (load-balanced context parallelism)")
    flops = train_flops(model, shape, frozen)
    heads = model.blocks[0].attention.num_heads
    # the first pipeline stage holds the most: L layers of one micro-batch under 1F1B
    coefficient = _mlp_coefficient(model, cluster.activations)
    per_seq = model.num_layers * activation_bytes_per_layer(
        shape.sequence_tokens, 1, model.hidden_size, heads, shape.recompute, cluster.flash,
        cluster.tensor_parallel, cluster.sequence_parallel, coefficient, _kv_fraction(model)
    ) * pipeline_activation_factor(pp, shape.accumulation, v) / cp
    mp = tp * pp  # a rank holds 1/(TP·PP) of the weights (Megatron's layout)
    shards = cluster.devices * cp  # FSDP shards over the DP and CP ranks together
    ep = cluster.expert_parallel
    routed = _routed_params(model)
    require(ep == 1 or routed, f"ep: {model.name} has no routed experts")
    require(ep == 1 or (tp == 1 and shards % ep == 0 and not lora_rank and not frozen),
            f"ep: expert parallelism over {ep} ranks needs --tp 1, the DP × CP ranks "
            f"({shards}) a multiple of it, and every module trained")
    require(ep == 1 or all(g.block.experts.num_experts % ep == 0 for g in model.layer_groups
                           if g.block.experts),
            f"ep: {ep} does not divide {model.name}'s experts")
    frozen_params = model.params - trainable
    # QLoRA quantizes the blocks' linears to NF4; the embedding, the head and the norms stay
    # 16-bit (bitsandbytes replaces the nn.Linear layers and skips lm_head)
    frozen_nf4 = max(0, frozen_params - _unquantized_params(model)) if qlora else 0
    frozen_16 = frozen_params - frozen_nf4
    experts = routed if ep > 1 else 0  # held 1/ep a rank, sharded over the other shards/ep
    state = _add(_add(state_memory(-(-(trainable - experts) // mp), -(-frozen_16 // mp), rec,
                                   shards, cluster.zero, cluster.offload),
                      state_memory(0, -(-frozen_nf4 // mp), rec, shards, cluster.zero,
                                   cluster.offload, "nf4-dq")),
                 state_memory(-(-experts // (mp * ep)), 0, rec, shards // ep, cluster.zero,
                              cluster.offload))
    if cluster.optimizer_in_backward:
        require(shape.accumulation == 1, "optimizer-in-backward: each gradient is stepped "
                "and freed as backward produces it, so it needs --accumulation 1")
        layer = max(sum(lin.params for lin in g.block.linears) + (
            g.block.experts.params if g.block.experts else 0) for g in model.layer_groups)
        held = layer / mp * rec.grads / (shards if cluster.zero >= 2 else 1)
        state = replace(state, grads_bytes=min(state.grads_bytes, held))
    require(not cluster.offload_params or cluster.zero == 3,
            "offload-params: FSDP's CPU offload needs --zero 3")
    shard_weights = state.weights_bytes
    if cluster.offload_params:  # everything to the host (the optimizer step too)
        state = StateMemory(0.0, 0.0, 0.0, state.bytes + state.offloaded_bytes)
    # the loss's logits, one re-run layer's whole activations under (layer-wise) full
    # recompute, and FSDP's gathered layer, prefetched layer and unsharded layer gradient
    logits = shape.micro_batch * shape.sequence_tokens * model.vocab_size * LOGIT_BYTES / (
        tp * cp)
    working = (activation_bytes_per_layer(
        shape.sequence_tokens, 1, model.hidden_size, heads, "none", cluster.flash, tp,
        cluster.sequence_parallel, coefficient) / cp * shape.micro_batch
        if shape.recompute in ("full", "selective-layer") else 0.0)
    # with pipeline stages the stage stays gathered for the whole update (torchtitan does not
    # reshard after forward under PP, not to all-gather once per micro-batch)
    grad_bytes = cluster.grad_wire_bytes or rec.grads
    if cluster.zero != 3 or shards == 1:
        buffers = 0.0
    elif pp > 1:
        buffers = (trainable - experts * (1 - 1 / ep)) / mp * (rec.weights + grad_bytes)
    else:
        buffers = (trainable - experts * (1 - 1 / ep)) / mp / model.num_layers * (
            2 * rec.weights + grad_bytes)
    saved = per_seq * shape.micro_batch
    on_gpu = (2 * saved / max(1, -(-model.num_layers // pp)) if cluster.offload_activations
              else saved)
    fit = Fit(state, on_gpu, cluster.reserve_bytes,
              cluster.acc.device_memory_bytes, logits, working, buffers,
              cluster.allocator_overhead, saved - on_gpu)
    # each data-parallel rank runs its own micro-batches: its work over its TP × PP group
    work = rank_work(model, flops, cluster)
    compute = compute_s(work, cluster.acc, mfu=None if cluster.profile else cluster.mfu,
                        profile=cluster.profile, precision=cluster.precision,
                        compiled=cluster.compiled)
    node = cluster.gpus_per_node
    intra, inter = cluster.link_bytes_per_s, cluster.inter_node_bytes_per_s
    world = cluster.devices * mp * cp
    mp_traffic = model_parallel_traffic(
        model.num_layers, model.hidden_size, shape.sequence_tokens, shape.micro_batch,
        shape.accumulation, tp, pp, allreduce_link_bytes_per_s(tp, node, intra, inter),
        intra if mp <= node else min(intra, inter), v,
        context_parallel_kv_bytes_per_token(model, cp) if cp > 1 else 0.0,
        4 if shape.recompute == "full" else 3,
        intra if tp * cp <= node else min(intra, inter),
        expert_alltoall_bytes_per_token(model, ep, dispatch_bytes_per_element(
            "fp8" if cluster.precision != "bf16" else "bf16")) / cp,
        3 if shape.recompute == "full" else 2,
        intra if ep * cp <= node else min(intra, inter))
    # a rank's data-parallel peers: those in its node (the node's GPUs over the rank's TP and
    # CP group; pipeline stages sit on other nodes), the rest across the network
    per_node = max(1, node // (tp * cp)) if world > node else None
    scheme = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}[cluster.zero]
    grads = rec.grads if cluster.grad_wire_bytes is None else cluster.grad_wire_bytes
    frozen_bytes = (frozen_16 * FROZEN_WEIGHT_BYTES["bf16"]
                    + frozen_nf4 * FROZEN_WEIGHT_BYTES["nf4-dq"]) / mp
    comm = communication(scheme, -(-(trainable - experts) // mp), shards, rec.weights, grads,
                         intra, compute, frozen_bytes, per_node, inter)
    if experts:
        part = communication(scheme, -(-experts // (mp * ep)), shards // ep, rec.weights,
                             grads, intra, compute, 0.0,
                             None if per_node is None else max(1, per_node // ep), inter)
        comm = replace(comm, bytes_per_device=comm.bytes_per_device + part.bytes_per_device,
                       inter_node_bytes=comm.inter_node_bytes + part.inter_node_bytes)
    # QLoRA dequantizes the NF4 base before each matmul: forward and backward (dX) of every
    # micro-batch, once more under full recompute; memory-bound on HBM
    passes = shape.accumulation * (3 if shape.recompute == "full" else 2)
    dequant_s = passes * frozen_nf4 * DEQUANT_BYTES_PER_PARAM / mp / cluster.acc.mem_bytes_per_s
    # the optimizer step touches every trainable parameter's state once per update (sharded by
    # ZeRO-1 and up); on the GPU it is memory-bound on HBM; offloaded, the gradients go to the
    # host, the CPU steps in host memory and the BF16 weights come back (not overlapped)
    shard = trainable / mp / (shards if cluster.zero else 1)
    opt_bytes = shard * rec.update_traffic_bytes
    if cluster.offload or cluster.offload_params:
        offload = Offload(shard * (grads + rec.weights), cluster.host_link_bytes_per_s,
                          shard * CPU_ADAM_BYTES_PER_PARAM, cluster.cpu_mem_bytes_per_s)
        opt_s = offload.time_s
    else:
        offload = None
        opt_s = opt_bytes / cluster.acc.mem_bytes_per_s
    bubble = pipeline_bubble(pp, shape.accumulation, v)
    tp_exposed = max(0.0, mp_traffic.tp_s - compute) if cluster.async_tp else mp_traffic.tp_s
    # offloaded activations: out in every forward and back in every backward; offloaded
    # weights: the shard in for every forward and backward
    host_s = 2 * shape.accumulation * (
        (saved - on_gpu if cluster.offload_activations else 0.0)
        + (shard_weights if cluster.offload_params else 0.0)) / cluster.host_link_bytes_per_s
    ep_exposed = max(0.0, mp_traffic.ep_s - compute) if cluster.overlap_ep else mp_traffic.ep_s
    busy = max(max(compute, host_s) + dequant_s + tp_exposed + mp_traffic.pp_s
               + mp_traffic.cp_s + ep_exposed, comm.time_s) / (1 - bubble) + opt_s
    return TrainPlan(model, flops, trainable, frozen_params, fit, per_seq,
                     largest_micro_batch(
                         state, (per_seq + (logits + working) / shape.micro_batch) * (
                             1 + cluster.allocator_overhead),
                         cluster.acc.device_memory_bytes - buffers - (state.bytes + buffers) * (
                             cluster.allocator_overhead), cluster.reserve_bytes),
                     comm, opt_bytes, opt_s, bubble, busy, cluster.devices, dequant_s, offload,
                     mp_traffic, tp, pp, v, cluster.acc.peak_flops_per_s("bf16"), work,
                     compute, cp, tp_exposed, ep_exposed, host_s)


def _unquantized_params(model: ModelSpec) -> int:
    """What QLoRA keeps 16-bit: the embedding, the LM head and the norms."""
    return (model.embedding_params + model.lm_head_params + model.final_norm_params
            + sum(g.block.norm_params * g.num_layers for g in model.layer_groups))


def _routed_params(model: ModelSpec) -> int:
    """Parameters of the routed experts (all MoE layers)."""
    return sum(g.num_layers * g.block.experts.params for g in model.layer_groups
               if g.block.experts)


def _add(a: StateMemory, b: StateMemory) -> StateMemory:
    return StateMemory(a.weights_bytes + b.weights_bytes, a.grads_bytes + b.grads_bytes,
                       a.optimizer_bytes + b.optimizer_bytes,
                       a.offloaded_bytes + b.offloaded_bytes)


def _kv_fraction(model: ModelSpec) -> float:
    """V width over the hidden size, ``kv_heads·head_dim / h``, of the first layer (the V it
    caches: MLA's latent)."""
    return model.blocks[0].attention.v_elements / model.hidden_size


def rank_work(model: ModelSpec, flops: TrainFlops, cluster: Cluster) -> RankWork:
    """One rank's work of an update (:class:`~napkin.training.efficiency.RankWork`): the
    update's FLOPs split by where they run, over the rank's 1/(TP·PP) of the model and
    1/CP of the sequence, and the
    activation bytes its layers write per pass × passes (forward 1, backward 2, full recompute
    1 more)."""
    shape = flops.shape
    mp = cluster.tensor_parallel * cluster.pipeline_stages * cluster.context_parallel
    attention = flops.flops_of(ATTENTION)
    linears = flops.flops_of(BLOCK_LINEARS)
    extra = 0.0  # the busiest expert-parallel rank's expert work above the mean
    ep = cluster.expert_parallel
    if ep > 1:
        from napkin.accounting.routing import imbalance  # (numpy: only experts over ranks)

        e = next(g.block.experts for g in model.layer_groups if g.block.experts)
        tokens = round(ep * shape.micro_batch * shape.sequence_tokens
                       / cluster.context_parallel)
        extra = flops.flops_of((OpKind.EXPERT,)) * (
            imbalance(e.num_experts, e.num_active, ep, tokens) - 1)
    rest = flops.micro_batch_flops - attention
    matmul, low = (rest + extra, 0.0) if cluster.precision == "bf16" else (
        rest - linears, linears + extra)
    per_pass = model.num_layers / cluster.pipeline_stages * activation_bytes_per_layer(
        shape.sequence_tokens, shape.micro_batch, model.hidden_size,
        model.blocks[0].attention.num_heads, "none", True, cluster.tensor_parallel,
        cluster.sequence_parallel, _mlp_coefficient(model)) / cluster.context_parallel
    passes = 4 if shape.recompute == "full" else 3
    a = shape.accumulation
    return RankWork(a * matmul / mp, a * low / mp, a * attention / mp, a * passes * per_pass,
                    _gemms(model, shape, cluster, a * passes))


ROW_PARALLEL = (Stage.ATTN_OUT, Stage.MLP_OUT)
"""Block linears Megatron splits by their input (row-parallel); the others by their output."""


def _gemms(model: ModelSpec, shape: TrainShape, cluster: Cluster, runs: int
           ) -> tuple[tuple[float, float, float, float], ...]:
    """The rank's block-linear GEMMs ``(M, N, K, count)`` (:class:`RankWork`): M the
    micro-batch's tokens on its CP shard (sequence parallelism gathers them for each TP GEMM),
    the weight split over TP by output (column-parallel) or input (row-parallel), each run
    ``runs`` times per layer of the stage (forward, dX, dW, recompute; all micro-batches)."""
    t, pp = cluster.tensor_parallel, cluster.pipeline_stages
    tokens = shape.micro_batch * shape.sequence_tokens / cluster.context_parallel
    return tuple((tokens, lin.out_features / (1 if lin.stage in ROW_PARALLEL else t),
                  lin.in_features / (t if lin.stage in ROW_PARALLEL else 1),
                  runs * g.num_layers / pp)
                 for g in model.layer_groups for lin in g.block.linears)


def _trainable(model: ModelSpec, frozen: tuple[str, ...]) -> int:
    """Parameters of modules not frozen by ``frozen`` (norms count as ``norms``)."""
    total = 0 if is_frozen("embed", frozen) else model.embedding_params
    if not is_frozen("lm_head", frozen):
        total += model.lm_head_params
    if not is_frozen("final_norm", frozen):
        total += model.final_norm_params
    for g in model.layer_groups:
        b = g.block
        layer = sum(lin.params for lin in b.linears if not is_frozen(lin.name, frozen))
        if b.experts:
            layer += sum(b.experts.num_experts * lin.params for lin in b.experts.linears
                         if not is_frozen(lin.name, frozen))
        if not is_frozen("norms", frozen):
            layer += b.norm_params
        total += layer * g.num_layers
    return total
