"""Replaying a measurement through the simulator, as its harness ran it.

The engine gets the backend's defaults (:data:`BACKENDS`: token budget, sequence cap and how
the KV pool is sized from device memory), the harness becomes a workload (closed loop with
warm-up requests excluded from the metrics, a Poisson rate, or every request at t = 0; lengths
drawn in [(1−r)·L, (1+r)·L] when the harness had a range ratio), and the replay reports the
harness's own metrics: mean TTFT and mean TPOT over counted requests. With ``record`` it also
returns those means as linear functions of the step-time coefficients (the features fitting
uses).
"""

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from napkin.accounting.collectives import allreduce_link_bytes_per_s
from napkin.accounting.forward import Precision
from napkin.accounting.ranks import weight_bytes_per_gpu
from napkin.calibration.basis import LayoutBasis, layout_timer
from napkin.calibration.measurements.records import Harness, Launch, Measurement
from napkin.catalog import load_accelerator, load_model
from napkin.catalog.checkpoints import checkpoint_unquantized
from napkin.errors import NapkinError
from napkin.serving.arrivals import ClosedLoop, OpenLoop, Sessions, generate
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec, StepTimer
from napkin.serving.replica import activation_peak_bytes
from napkin.serving.simulate import simulate
from napkin.serving.step import StepShape
from napkin.serving.workload import parse_workload
from napkin.specs.hardware import Accelerator
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec, check_tensor_parallel
from napkin.specs.releases import eager_prefill, generation, reserves_full_prompt, version_at_least
from napkin.timing.comm import INTERNODE_BYTES_PER_S, nvlink_domain_of
from napkin.timing.efficiency import Efficiency
from napkin.timing.steps import RooflineTimer
from napkin.units import GB, GiB, MiB

COUNTED_ROUNDS = 8
"""Closed loops without a request count: 8 requests per client are counted."""
WARMUP_ROUNDS = 2
"""… after 2 per client of warm-up (genai-perf's and aiperf's usual 10× and 2× concurrency)."""
POISSON_REQUESTS = 400
"""Poisson and burst harnesses without a request count."""


@dataclass(frozen=True)
class BackendDefaults:
    """What a serving engine does with its launch defaults on a data-centre GPU.

    KV pool per device: ``vllm``: ``memory_fraction × device memory − weights − activation peak
    − reserve``; ``trtllm``: ``memory_fraction × (device memory − weights − activation peak −
    reserve)`` (``kv_cache_free_gpu_memory_fraction`` of what is free); ``sglang``:
    ``memory_fraction × device memory − weights`` (``mem_fraction_static`` covers weights and KV).
    """

    max_num_seqs: int
    max_num_batched_tokens: int
    memory_fraction: float
    pool_rule: str
    reserve_gib: float = 1.0
    chunked_prefill: bool = True
    source: str = ""
    eager_prefill: bool = True
    """A step with a prefill chunk launches its layers from the host
    (:func:`napkin.specs.releases.eager_prefill`: all but TensorRT-LLM's compiled engines)."""


BACKENDS: dict[str, BackendDefaults] = {
    "vllm": BackendDefaults(
        1024, 8192, 0.9, "vllm",
        source="vLLM v1 defaults for the OpenAI server on ≥70 GiB GPUs (max_num_seqs 1024, "
               "max_num_batched_tokens 8192; gpu_memory_utilization 0.9; engine/arg_utils.py)"),
    "trtllm": BackendDefaults(
        2048, 8192, 0.9, "trtllm",
        source="trtllm-serve defaults (max_batch_size 2048, max_num_tokens 8192, "
               "kv_cache_free_gpu_memory_fraction 0.9), chunked prefill on as the measured "
               "deployments ran it (trtllm-serve's own default is off)"),
    "sglang": BackendDefaults(
        1024, 8192, 0.88, "sglang",
        source="SGLang server defaults on 80 GB GPUs (chunked_prefill_size 8192, "
               "mem_fraction_static ≈ 0.88)"),
}


def backend_defaults(backend: str, version: str = "", device_memory_bytes: float = 0.0,
                     tp: int = 1) -> BackendDefaults:
    """A backend's launch defaults; for SGLang 0.5.3 and later those its server derives from
    the GPU's memory (:func:`sglang_gpu_memory_defaults`); for TensorRT-LLM's compiled engines
    (before 1.0) no eager prefill steps."""
    try:
        d = BACKENDS[backend]
    except KeyError:
        raise NapkinError(f"backend: unknown {backend!r}; allowed: {', '.join(BACKENDS)}") \
            from None
    if backend == "sglang" and device_memory_bytes > 0 and version_at_least(version, (0, 5, 3)):
        chunk, fraction = sglang_gpu_memory_defaults(device_memory_bytes, tp)
        return replace(d, max_num_batched_tokens=chunk, memory_fraction=fraction,
                       source=f"SGLang ≥ 0.5.3 server defaults for this GPU ({d.source})")
    if not eager_prefill(backend, version):
        return replace(d, eager_prefill=False,
                       source=f"{d.source}; {generation(backend, version)}: no eager steps")
    return d


def launched(d: BackendDefaults, launch: Launch | None) -> BackendDefaults:
    """``d`` with the flags a measured run was launched with (:class:`Launch`) in place of the
    defaults it names; the running cap at most the token budget."""
    if launch is None:
        return d
    flags = {k: v for k, v in (("max_num_seqs", launch.max_num_seqs),
                               ("max_num_batched_tokens", launch.max_num_batched_tokens),
                               ("memory_fraction", launch.memory_fraction),
                               ("chunked_prefill", launch.chunked_prefill)) if v is not None}
    out = replace(d, **flags, source=f"{launch.source} over {d.source}" if launch.source
                  else d.source)
    # a step holds at most one decode per token of its budget (TensorRT-LLM's scripts set
    # max_num_tokens near one prompt beside a max_batch_size of 2,048)
    return replace(out, max_num_seqs=min(out.max_num_seqs, out.max_num_batched_tokens))


def engine_flags(launch: Launch | None) -> dict:
    """The engine settings of a run's launch flags that :class:`BackendDefaults` does not hold
    (SGLang's recv interval, TensorRT-LLM's batch waiting and attention-DP balancing), as
    :class:`EngineSpec` keywords."""
    if launch is None:
        return {}
    return {"scheduler_recv_interval": launch.scheduler_recv_interval,
            "batch_wait_timeout_iters": launch.batch_wait_timeout_iters,
            "batch_wait_max_tokens_ratio": launch.batch_wait_max_tokens_ratio,
            "attention_dp_timeout_iters": launch.attention_dp_timeout_iters,
            "attention_dp_batching_wait_iters": launch.attention_dp_batching_wait_iters}


def sglang_gpu_memory_defaults(device_memory_bytes: float, tp: int) -> tuple[int, float]:
    """(chunked_prefill_size, mem_fraction_static) as SGLang's server sets them from the GPU's
    memory since sgl-project/sglang#10975 (released in 0.5.3; ``server_args.py``
    ``_handle_gpu_memory_settings``), without speculative decoding or DP attention.

    Chunk 8,192 tokens below 160 GiB (H100, H200), 16,384 above (B200, B300); CUDA graphs up to
    batch 256 (TP < 4) or 512 below 160 GiB, 512 above. Reserved MiB = 512 + 1.5·max(chunk,
    2,048) + 2·graph batch + 1,024·tp/8, at least 10 GiB past 60 GiB; the fraction is
    ``round((memory − reserved) / memory, 3)`` of the memory in MiB: 0.835 on an H100 (81,559
    MiB) at TP 1, 0.897 on an H200 at TP 8, 0.852 on a B200 at TP 8."""
    memory_mib = device_memory_bytes / MiB
    chunk_tokens = 16384 if memory_mib >= 160 * 1024 else 8192
    graph_batch = 512 if memory_mib >= 160 * 1024 or tp >= 4 else 256
    reserved_mib = 512 + 1.5 * max(chunk_tokens, 2048) + 2 * graph_batch + tp / 8 * 1024
    if memory_mib > 60 * 1024:
        reserved_mib = max(reserved_mib, 10 * 1024)
    return chunk_tokens, round((memory_mib - reserved_mib) / memory_mib, 3)


def kv_pool_blocks(model: ModelSpec, acc: Accelerator, precision: Precision,
                   layout: ParallelLayout | int, d: BackendDefaults, block_size: int = 16) -> int:
    """KV blocks of the whole replica under the backend's sizing rule (each token's KV once
    per device it is split over, ``ModelSpec.kv_devices``, in each data-parallel group; the
    attention side's weights over the attention TP, the routed experts' over every rank;
    ``layout`` a tensor-parallel size for a plain TP group)."""
    if isinstance(layout, int):
        layout = ParallelLayout(layout)
    tp, mem = layout.attention_tp, acc.device_memory_bytes
    weights = weight_bytes_per_gpu(model, precision, layout)
    act = activation_peak_bytes(model, d.max_num_batched_tokens, min(d.max_num_seqs, 256)) / tp
    reserve = d.reserve_gib * GiB
    if d.pool_rule == "vllm":
        per_device = d.memory_fraction * mem - weights - act - reserve
    elif d.pool_rule == "trtllm":
        per_device = d.memory_fraction * (mem - weights - act - reserve)
    else:
        per_device = d.memory_fraction * mem - weights
    if per_device <= 0:
        raise NapkinError(f"kv pool: {model.name} at tp {tp} leaves no KV memory on {acc.id} "
                          f"({per_device / GB:.1f} GB per device)")
    kv_token = model.kv_bytes_per_token(precision.kv.bytes_per_element)
    shards = model.kv_devices(tp) * layout.attention_dp
    return max(int(per_device * shards // (block_size * kv_token)), 1)


TimerFactory = Callable[[ModelSpec, Accelerator, Precision, EngineSpec], StepTimer]


def roofline_timer(eff: Efficiency | None = None) -> TimerFactory:
    """The roofline at ``eff`` (default MFU = MBU = 1: the pure roofline) as a timer factory."""
    eff = eff or Efficiency()
    def make(model: ModelSpec, acc: Accelerator, precision: Precision,
             spec: EngineSpec) -> StepTimer:
        return RooflineTimer.of(model, acc, precision.weights.compute, eff,
                                spec.tensor_parallel, spec.allreduce_bytes_per_s,
                                spec.allreduce_latency_s)
    return make


@dataclass(frozen=True)
class Replayed:
    """What the replay measured, as the harness would report it."""

    mean_ttft_s: float
    mean_tpot_s: float
    output_tokens_per_s: float
    requests: int
    ttft_features: np.ndarray | None = None
    """Mean TTFT = ttft_request_weight · request_s + ttft_features · coefficients +
    ttft_offset_s (for the schedule simulated)."""
    tpot_features: np.ndarray | None = None
    ttft_request_weight: float = 1.0
    """How many times ``request_s`` enters the mean TTFT (more than once when the harness
    counts a wait for earlier requests' lives into it)."""
    ttft_prompt_weight: float = 0.0
    """How many times ``request_token_s`` enters the mean TTFT: the counted requests' mean
    prompt tokens × :attr:`ttft_request_weight`."""
    ttft_offset_s: float = 0.0
    """The harness's own latency in the mean TTFT (no coefficient scales it)."""
    output_tokens: int = 0
    """Output tokens of the counted requests (``output_tokens_per_s`` × the span)."""
    span_features: np.ndarray | None = None
    """With ``record`` on a ``burst`` harness: the engine's basis summed over every step, so
    that the span (first arrival to last finish, the engine never idle between) =
    ``request_s`` + ``request_token_s`` × the shortest prompt + ``span_features ·
    coefficients`` — what a throughput is fitted on."""
    span_prompt_tokens: float = 0.0
    """The prompt tokens that weigh ``request_token_s`` in the span: the shortest prompt's,
    which reaches the engine first."""


def steady_cycle_s(engine: Engine, clients: int, isl: int, osl: int) -> float:
    """Time of one request's life with ``clients`` desynchronized closed-loop clients, by the
    engine's own timer: every client's prefill once plus ``osl − 1`` decode steps of the whole
    batch at the mean context, ``clients·t(prefill isl) + (osl − 1)·t(decode × clients)``."""
    timer, cost = engine.timer, engine.cost
    prefill = timer.series(cost.parts(StepShape(0, 0, [(0, isl, 1)])), None, isl,
                           True).time(1)
    n = min(clients, engine.spec.max_num_seqs)
    ctx = n * (isl + osl // 2)
    decode = timer.series(cost.parts(StepShape(n, ctx, [])), None, n).time(1)
    return clients * prefill + (osl - 1) * decode


def _workload(h: Harness, isl: int, osl: int, seed: int,
              ramp_s: float) -> tuple[dict, int]:
    """The harness as a workload mapping, and how many leading requests are warm-up."""
    def length(n: int) -> int | dict:
        r = h.range_ratio
        if h.range_style == "below":
            return n if r >= 1 else {"dist": "uniform", "low": max(1.0, r * n), "high": n}
        if r <= 0:
            return n
        return {"dist": "uniform", "low": max(1.0, (1 - r) * n), "high": (1 + r) * n}
    classes = {"bench": {"input_tokens": length(isl), "output_tokens": length(osl)}}
    if h.kind == "closed_loop":
        c = h.concurrency or 1
        warm = h.warmup_requests if h.num_requests else WARMUP_ROUNDS * c
        counted = h.num_requests or COUNTED_ROUNDS * c
        arrivals: dict = {"kind": "closed_loop", "clients": c, "ramp_s": ramp_s,
                          "num_requests": warm + counted}
    else:
        warm = h.warmup_requests
        n = (h.num_requests or POISSON_REQUESTS) + warm
        rate = h.rate_per_s if h.kind == "poisson" and h.rate_per_s else 1e9
        arrivals = {"kind": "poisson", "rate_per_s": rate, "num_requests": n}
    return {"seed": seed, "classes": classes, "arrivals": arrivals}, warm


Arrivals = OpenLoop | ClosedLoop | Sessions


def _at_once(loop: Arrivals, h: Harness) -> Arrivals:
    """A ``burst`` harness's requests all at t = 0 (:class:`Harness`): one instant, so an idle
    engine's first step takes every one its budget holds (drawn at a rate of 1e9/s, the first
    arrival started a step alone); other harnesses as drawn."""
    if h.kind != "burst" or not isinstance(loop, OpenLoop):
        return loop
    reqs = loop.requests
    return OpenLoop(replace(reqs, arrival_s=np.zeros_like(reqs.arrival_s)), loop.shared_prefix)


def check_layout(m: Measurement, model: ModelSpec) -> ParallelLayout:
    """The row's :class:`ParallelLayout` (``tp_size`` attention TP × ``attention_dp_size``
    groups; ``moe_ep_size`` expert-parallel groups, each expert split over the rest: MoE TP ×
    EP), refusing what napkin does not model: an EP size that does not divide the ranks, a
    layout the row's engine cannot launch (:meth:`ParallelLayout.flags`: vLLM's EP spans every
    rank), attention data parallelism of a dense model, and a tensor-parallel size that cannot split
    the attention heads (such a row ran another layout than its ``tp_size`` says, e.g.
    DeepSeek-R1 over 72 GPUs)."""
    tp, dp, ep = m.tensor_parallel, m.attention_data_parallel, m.expert_parallel_size
    try:
        check_tensor_parallel(model, tp)
    except NapkinError as e:
        raise NapkinError(f"{e} (row {m.source})") from None
    if dp > 1 and not model.is_moe:
        raise NapkinError(f"attention_dp_size: attention data parallelism ({dp}) of the "
                          f"dense {model.name} is not modeled (row {m.source})")
    if model.is_moe and (tp * dp) % ep:
        raise NapkinError(f"moe_ep_size: {ep} expert-parallel groups do not divide the "
                          f"{tp * dp} ranks (tp_size × attention_dp_size; row {m.source})")
    layout = ParallelLayout(tp, dp, ep if model.is_moe else 1)
    layout.check(model)
    if m.backend in ("vllm", "sglang", "trtllm"):
        try:
            layout.flags(m.backend)
        except NapkinError as e:
            raise NapkinError(f"tp_size × attention_dp_size, moe_ep_size: {e} "
                              f"(row {m.source})") from None
    return layout


def engine_for(m: Measurement, timer: TimerFactory, record: bool = False) -> Engine:
    """An engine replica with the measurement's model, GPU, precision, TP and backend (a
    layout napkin does not model is refused: :func:`check_layout`); the parts its checkpoint
    keeps in BF16 stay BF16 (:func:`napkin.catalog.checkpoints.checkpoint_unquantized`)."""
    model, acc = load_model(m.model), load_accelerator(m.gpu)
    layout = check_layout(m, model)
    precision = Precision.of(m.weights, m.kv_dtype,
                             unquantized=checkpoint_unquantized(m.model, m.weights))
    d = launched(backend_defaults(m.backend, m.backend_version, acc.device_memory_bytes,
                                  m.tensor_parallel), m.launch)
    domain = nvlink_domain_of(acc)
    link = allreduce_link_bytes_per_s(layout.attention_tp, domain, acc.allreduce_bytes_per_s,
                                      INTERNODE_BYTES_PER_S)
    dp = layout.attention_dp
    spec = EngineSpec(num_blocks=kv_pool_blocks(model, acc, precision, layout, d),
                      max_num_seqs=d.max_num_seqs * dp,
                      max_num_batched_tokens=d.max_num_batched_tokens * dp,
                      tensor_parallel=m.tensor_parallel, allreduce_bytes_per_s=link,
                      backend=m.backend, chunked_prefill=d.chunked_prefill,
                      eager_prefill=d.eager_prefill,
                      reserve_full_prompt=reserves_full_prompt(m.backend, m.backend_version),
                      **engine_flags(m.launch))
    if layout.is_tensor_parallel:
        return Engine(model, acc, precision, Efficiency(), spec,
                      timer=timer(model, acc, precision, spec), record=record)
    device = timer(model, acc, precision, replace(spec, tensor_parallel=1))
    return Engine(model, acc, precision, Efficiency(), spec, record=record,
                  timer=layout_timer(model, precision, layout, device, link,
                                     spec.allreduce_latency_s, gpus_per_node=domain,
                                     engine=m.backend),
                  basis=LayoutBasis.of(model, acc, precision, layout, link,
                                       gpus_per_node=domain) if record else None)


def replay(m: Measurement, timer: TimerFactory, record: bool = False,
           seed: int = 0) -> Replayed:
    """Run ``m``'s harness against an engine timed by ``timer``; harness metrics out."""
    engine = engine_for(m, timer, record)
    h = m.harness
    ramp = h.ramp_s
    if h.kind == "closed_loop" and ramp is None:
        ramp = h.ramp_cycles * steady_cycle_s(engine, h.concurrency or 1, m.input_tokens,
                                              m.output_tokens)
    workload, warm = _workload(h, m.input_tokens, m.output_tokens, seed, ramp or 0.0)
    run = simulate([engine], _at_once(generate(parse_workload(workload, m.source)), h))
    r = run.records
    keep = r.rid >= warm
    ttft = (r.first_token_s - r.arrival_s)[keep]
    multi = keep & (r.output_tokens > 1)
    tpot = (r.finish_s[multi] - r.first_token_s[multi]) / (r.output_tokens[multi] - 1)
    span = float(r.finish_s[keep].max() - r.arrival_s[keep].min())
    # a harness that times a request from before its send (Harness.dispatch_intervals)
    wait = h.dispatch_intervals / (h.concurrency or 1) if h.kind == "closed_loop" else 0.0
    life = (r.finish_s - r.arrival_s)[keep]
    tokens = int(r.output_tokens[keep].sum())
    out = Replayed(float(ttft.mean() + wait * life.mean() + h.latency_s),
                   float(tpot.mean()) if len(tpot) else 0.0,
                   tokens / max(span, 1e-12), int(keep.sum()), output_tokens=tokens)
    if record and r.ttft_basis is not None and r.tpot_basis is not None:
        steps = (r.output_tokens - 1).clip(min=0)[:, None] * r.tpot_basis
        life_basis = (r.ttft_basis + steps)[keep].mean(axis=0)
        whole = engine.basis_sum.copy() if h.kind == "burst" and not warm \
            and engine.basis_sum is not None else None
        prompt = float(r.input_tokens[keep].mean())
        return Replayed(out.mean_ttft_s, out.mean_tpot_s, out.output_tokens_per_s,
                        out.requests, r.ttft_basis[keep].mean(axis=0) + wait * life_basis,
                        r.tpot_basis[multi].mean(axis=0), 1.0 + wait, (1.0 + wait) * prompt,
                        h.latency_s, tokens, whole, float(r.input_tokens[keep].min()))
    return out
