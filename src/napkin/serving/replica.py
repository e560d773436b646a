"""An engine replica from a scenario's ``engine`` section: its parallel layout, its KV pool
and its :class:`~napkin.serving.engine_spec.EngineSpec`.

The KV pool is either given (``engine.kv_pool_gib``) or derived as vLLM derives it: per device,
``memory × gpu_memory_utilization − weights/tp − peak activation of a full token-budget
forward − max_num_seqs × linear-attention state per sequence / tp (hybrids such as
Qwen3-Next hold a fixed recurrent state per running sequence: a static reservation, as
SGLang's state pool; vLLM takes it from the shared pool on demand) − reserve_gib`` (non-torch
memory, CUDA graphs), divided into blocks of
``block_size × KV bytes per token / d``, d the devices each token's KV is split over
(``ModelSpec.kv_devices``: tp, or the KV heads when fewer — each is then replicated, and MLA's
latent cache sits whole on every device). The activation peak is estimated as one layer's
widest intermediates for ``max_num_batched_tokens`` tokens in 16 bits (residual, attention or
gate/up/activation, whichever is wider) plus FP32 logits for ``max_num_seqs`` sequences, which
is what vLLM's profiling forward allocates at most.
"""

from napkin.accounting.collectives import allreduce_link_bytes_per_s
from napkin.accounting.forward import Precision
from napkin.accounting.ranks import weight_bytes_per_gpu
from napkin.errors import NapkinError
from napkin.serving.engine_config import EngineConfig, SpeculativeConfig
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.speculative import Speculation
from napkin.specs.hardware import Accelerator
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec, check_tensor_parallel
from napkin.specs.releases import eager_prefill, reserves_full_prompt
from napkin.timing.comm import nvlink_domain_of
from napkin.units import GB, GiB


def nvlink_domain(e: EngineConfig, acc: Accelerator) -> int:
    """GPUs that share one NVLink domain: ``engine.gpus_per_node`` where the scenario gives it,
    else the GPU's own domain where the catalog names one (GB200 NVL72: 72), else 8 (an HGX
    board)."""
    return e.gpus_per_node if "gpus_per_node" in e.model_fields_set else nvlink_domain_of(acc)


def allreduce_link(e: EngineConfig, acc: Accelerator, group: int) -> tuple[float, str | None]:
    """The link an all-reduce over ``group`` ranks sees, bytes/s — ``engine.allreduce_gbs``
    where given, else the GPU's NVLink figure within one NVLink domain and the hierarchical
    ring's beyond it (:func:`~napkin.accounting.collectives.allreduce_link_bytes_per_s`, the
    NICs at ``engine.internode_gbs``) — and, for a group past one domain, a note saying so."""
    if e.allreduce_gbs:
        return e.allreduce_gbs * GB, None
    domain = nvlink_domain(e, acc)
    link = allreduce_link_bytes_per_s(group, domain, acc.allreduce_bytes_per_s,
                                      e.internode_gbs * GB)
    if group <= domain:
        return link, None
    return link, (f"tensor parallel {group} spans {-(-group // domain)} NVLink domains of "
                  f"{domain} GPUs: its all-reduces run hierarchically, NVLink within a domain "
                  f"and the NICs ({e.internode_gbs:g} GB/s a GPU) across, "
                  f"{link / GB:.1f} GB/s as one ring link; their fixed time is the in-node "
                  "all-reduce's (no cross-node measurement is fitted)")


def rank_link(e: EngineConfig, acc: Accelerator, gpus: int) -> float:
    """The link a rank sends point-to-point traffic over (a pipeline stage's activations, a
    prefill rank's KV to a decode replica), bytes/s, among ``gpus`` GPUs: the GPU's NVLink
    figure while they fit one NVLink domain, else its NIC (``engine.internode_gbs``): they then
    sit on different nodes."""
    return acc.allreduce_bytes_per_s if gpus <= nvlink_domain(e, acc) else e.internode_gbs * GB


def activation_peak_bytes(model: ModelSpec, tokens: int, max_num_seqs: int) -> float:
    """Estimated peak activation memory of a ``tokens``-token forward (16-bit activations):
    residual in and out plus the wider of attention (q, k, v, output) and MLP (gate, up,
    activation) intermediates, plus FP32 logits for ``max_num_seqs`` read-outs."""
    h = model.hidden_size
    widest = 0
    for g in model.layer_groups:
        att = g.block.attention
        attn = att.num_heads * (att.qk_head_dim + att.v_head_dim) + att.kv_elements_per_token
        mlp = sum(lin.out_features for lin in g.block.linears if lin.stage == 5)
        if g.block.experts:
            ex = g.block.experts
            mlp += ex.num_active * sum(lin.out_features for lin in ex.linears if lin.stage == 5)
        widest = max(widest, attn, mlp * 3 // 2)
    return tokens * (2 * h + widest) * 2 + max_num_seqs * model.vocab_size * 4


def speculation(model: ModelSpec, s: SpeculativeConfig | None) -> Speculation | None:
    """The engine's :class:`Speculation` from ``engine.speculative`` (a draft cost from the
    model's MTP module when not given)."""
    if s is None:
        return None
    from napkin.inference.speculative import mtp_draft_cost  # (not on a plain serve path)

    if s.draft_cost is None and model.mtp is None:
        raise NapkinError(f"engine.speculative.draft_cost: {model.name} has no MTP module; "
                          "give a draft token's cost in plain decode steps (e.g. 0.05)")
    cost = s.draft_cost if s.draft_cost is not None else mtp_draft_cost(model)
    return Speculation(s.draft_tokens, s.rates, cost)


def prefill_pool_layout(model: ModelSpec, e: EngineConfig) -> ParallelLayout:
    """A disaggregated deployment's prefill replica layout: ``prefill_tensor_parallel ×
    prefill_data_parallel`` GPUs (default a decode replica's GPUs over the DP groups), its
    expert parallelism and overlap as the ``prefill_*`` fields say (errors name them)."""
    d = e.disaggregated
    assert d is not None
    gpus = e.tensor_parallel * e.data_parallel
    ptp = d.prefill_tensor_parallel
    if ptp is None:
        if gpus % d.prefill_data_parallel:
            raise NapkinError(f"engine.disaggregated.prefill_data_parallel: "
                              f"{d.prefill_data_parallel} groups do not divide a decode "
                              f"replica's {gpus} GPUs; give prefill_tensor_parallel")
        ptp = gpus // d.prefill_data_parallel
    pool = e.model_copy(update={
        "tensor_parallel": ptp, "data_parallel": d.prefill_data_parallel,
        "expert_parallel": d.prefill_expert_parallel,
        "two_batch_overlap": d.prefill_two_batch_overlap, "disaggregated": None})
    try:
        check_tensor_parallel(model, ptp)
        return engine_layout(model, pool)
    except NapkinError as err:
        field, _, rest = str(err).partition(": ")
        name = field.removeprefix("engine.")
        if name in ("tensor_parallel", "data_parallel", "expert_parallel", "two_batch_overlap"):
            field = f"engine.disaggregated.prefill_{name}"
        raise NapkinError(f"{field}: {rest}") from None


def check_pipeline(model: ModelSpec, e: EngineConfig, layout: ParallelLayout,
                    spec: EngineSpec) -> None:
    """Refuse a pipeline napkin does not model (errors name ``engine.pipeline_parallel``)."""
    p = e.pipeline_parallel
    if not layout.is_tensor_parallel or e.disaggregated is not None:
        raise NapkinError("engine.pipeline_parallel: modelled for tensor-parallel replicas "
                          "only (data_parallel 1, no expert parallelism over it, not "
                          "disaggregated)")
    if p > model.num_layers:
        raise NapkinError(f"engine.pipeline_parallel: at most the model's {model.num_layers} "
                          f"layers, got {p}")
    if spec.num_blocks // p < 1:
        raise NapkinError(f"engine.pipeline_parallel: {p} in-flight batches leave a KV pool "
                          f"of {spec.num_blocks} blocks none each")


def engine_layout(model: ModelSpec, e: EngineConfig) -> ParallelLayout:
    """The replica's :class:`ParallelLayout` from the engine settings, checked against
    ``model`` (errors name the scenario's fields)."""
    ranks = e.tensor_parallel * e.data_parallel
    wanted = e.expert_parallel is True or (e.expert_parallel is not False
                                           and e.expert_parallel != 1)
    if wanted and not (model.is_moe and ranks > 1):
        raise NapkinError(f"engine.expert_parallel: needs a MoE model on more than one GPU "
                          f"(tensor_parallel × data_parallel > 1; {model.name}: "
                          f"{'MoE' if model.is_moe else 'dense'}, {ranks} GPU)")
    if e.two_batch_overlap and e.data_parallel == 1:
        raise NapkinError("engine.two_batch_overlap: overlaps the all-to-alls of "
                          "data-parallel attention; set engine.data_parallel > 1")
    ep = ranks if e.expert_parallel is True else 1 if e.expert_parallel is False \
        else e.expert_parallel
    if not 1 <= ep <= ranks or ranks % ep:
        raise NapkinError(f"engine.expert_parallel: true, false or a number of expert-parallel "
                          f"groups dividing the replica's {ranks} GPUs (tensor_parallel × "
                          f"data_parallel), got {e.expert_parallel}")
    if e.redundant_experts and ep == 1:
        raise NapkinError("engine.redundant_experts: copies of whole experts need "
                          "engine.expert_parallel: true")
    if e.expert_balancedness is not None and ep == 1:
        raise NapkinError("engine.expert_balancedness: a balance between GPUs of whole experts "
                          "needs engine.expert_parallel: true")
    layout = ParallelLayout(e.tensor_parallel, e.data_parallel, ep, e.two_batch_overlap,
                            e.redundant_experts, e.expert_balancedness)
    layout.check(model)
    return layout


def engine_spec(model: ModelSpec, acc: Accelerator, precision: Precision, e: EngineConfig,
                 layout: ParallelLayout, link: float
                 ) -> tuple[EngineSpec, float, dict[str, float]]:
    """An engine replica in ``layout``: its spec, KV pool bytes (whole replica) and their
    derivation (see the module docstring). Per device: the attention side's weights over the
    attention TP, the routed experts' over every rank; the KV pool is per data-parallel group,
    and so are ``max_num_seqs`` and the token budget."""
    tp, dp = layout.attention_tp, layout.attention_dp
    kv_token = model.kv_bytes_per_token(precision.kv.bytes_per_element)
    shards = model.kv_devices(tp) * dp  # the pool holds each token once per copy of its KV
    derivation: dict[str, float] = {}
    if e.kv_pool_gib is not None:
        pool = e.kv_pool_gib * GiB * shards  # the setting is per device, as vLLM's
        derivation["kv_pool_bytes_per_device"] = e.kv_pool_gib * GiB
    else:
        weights = weight_bytes_per_gpu(model, precision, layout) / e.pipeline_parallel
        act = activation_peak_bytes(model, e.max_num_batched_tokens, e.max_num_seqs) / tp
        state = e.max_num_seqs * model.state_bytes_per_sequence(
            precision.kv.bytes_per_element) / tp / e.pipeline_parallel
        usable = acc.device_memory_bytes * e.gpu_memory_utilization
        per_device = usable - weights - act - state - e.reserve_gib * GiB
        derivation = {"usable_bytes_per_device": usable, "weights_bytes_per_device": weights,
                      "activation_peak_bytes_per_device": act,
                      **({"state_bytes_per_device": state} if state else {}),
                      "reserve_bytes_per_device": e.reserve_gib * GiB,
                      "kv_pool_bytes_per_device": per_device}
        if per_device <= 0:
            raise NapkinError(
                f"kv pool: nothing left for KV on {acc.id} ({per_device / GB:.2f} GB per device "
                f"after weights, activations, state and reserve in layout {layout.label()}); use "
                "more tensor_parallel, a smaller weight format or set engine.kv_pool_gib"
            )
        pool = per_device * shards
    pool *= e.pipeline_parallel  # each stage's GPUs hold their layers' share of a token's KV
    num_blocks = int(pool // (e.block_size * kv_token))
    if num_blocks < 1:
        field = "engine.kv_pool_gib" if e.kv_pool_gib is not None else "engine.reserve_gib"
        raise NapkinError(f"{field}: a KV pool of {pool / GiB:.3g} GiB holds no block of "
                          f"{e.block_size} tokens ({e.block_size * kv_token / GiB:.3g} GiB)")
    host_blocks = 0
    if e.kv_offload is not None:
        host_blocks = int(e.kv_offload.host_gib * GiB // (e.block_size * kv_token))
        if host_blocks < 1:
            raise NapkinError(f"engine.kv_offload.host_gib: {e.kv_offload.host_gib:g} GiB holds "
                              f"no block of {e.block_size} tokens "
                              f"({e.block_size * kv_token / GiB:.3g} GiB)")
    spec = EngineSpec(
        num_blocks=num_blocks, max_num_seqs=e.max_num_seqs * dp,
        max_num_batched_tokens=e.max_num_batched_tokens * dp, block_size=e.block_size,
        enable_prefix_caching=e.enable_prefix_caching,
        long_prefill_token_threshold=e.long_prefill_token_threshold, tensor_parallel=tp,
        allreduce_bytes_per_s=link, allreduce_latency_s=e.allreduce_latency_us * 1e-6,
        mode=e.mode, backend=e.backend, capacity_scheduler=e.capacity_scheduler,
        chunked_prefill=e.chunked_prefill, scheduler_recv_interval=e.scheduler_recv_interval,
        batching=e.batching,
        speculative=speculation(model, e.speculative),
        batch_wait_timeout_iters=e.batch_wait_timeout_iters,
        batch_wait_max_tokens_ratio=e.batch_wait_max_tokens_ratio,
        attention_dp_timeout_iters=e.attention_dp_timeout_iters,
        attention_dp_batching_wait_iters=e.attention_dp_batching_wait_iters,
        eager_prefill=eager_prefill(e.backend, e.version or ""),
        reserve_full_prompt=reserves_full_prompt(e.backend, e.version or ""),
        host_kv_blocks=host_blocks,
        host_kv_bytes_per_s=(e.kv_offload.load_gbs * GB
                             if e.kv_offload is not None and e.kv_offload.load_gbs else 0.0),
        frontend=e.frontend.frontend() if e.frontend is not None else None,
        async_scheduling=e.async_scheduling,
    )
    return spec, num_blocks * e.block_size * kv_token, derivation
