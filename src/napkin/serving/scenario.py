"""Scenario files: a workload on an engine, model and accelerator (YAML, every field overridable).

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

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from napkin.accounting.collectives import stage_boundary_bytes_per_token
from napkin.accounting.forward import Precision
from napkin.accounting.ranks import weight_bytes_per_gpu
from napkin.calibration.basis import FittedTimer, StepBasis, layout_timer
from napkin.calibration.profile import Profile, auto_profile, load_profile
from napkin.catalog import load_accelerator, load_model
from napkin.catalog.checkpoints import resolve_unquantized
from napkin.errors import NapkinError
from napkin.serving.arrivals import ClosedLoop, OpenLoop, Sessions, generate
from napkin.serving.engine import Engine, EngineSpec, StepTimer, roofline_timer
from napkin.serving.metrics import SLO
from napkin.serving.pipeline import PipelineTimer
from napkin.serving.request import Request
from napkin.serving.simulate import Disaggregation, SimRun, simulate
from napkin.serving.speculative import Speculation
from napkin.serving.workload import Workload, load_workload
from napkin.specs.files import InputModel, read_yaml, validation_message
from napkin.specs.hardware import Accelerator, override
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec, check_tensor_parallel
from napkin.specs.releases import eager_prefill, release, reserves_full_prompt
from napkin.specs.yaml_text import load_yaml
from napkin.timing import Efficiency, RooflineTimer
from napkin.units import GB, MS, GiB


def _expert_parallel(v: object) -> object:
    """``true``, ``false`` or a whole number of expert-parallel groups (>= 1), as given."""
    if isinstance(v, bool) or (isinstance(v, int) and v >= 1):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    if isinstance(v, str) and v.strip().isdigit() and int(v) >= 1:
        return int(v)
    raise ValueError("must be true, false or an expert-parallel size (a whole number >= 1)")



MAX_REPLICAS = 10_000
"""Most replicas (engines) of one pool: each is an object the simulator steps; 10,000 build
and run a small workload in under a second, a million took minutes."""

class DisaggConfig(InputModel):
    """Disaggregated prefill/decode: pools of their own size (and prefill TP); each request's
    KV moves from its prefill replica to a decode replica over a link of ``kv_link_gbs`` GB/s
    (default: the GPU's interconnect per direction from the catalog × the prefill TP, one link
    per rank) after ``kv_link_latency_us``."""

    prefill_replicas: int = Field(default=1, ge=1, le=MAX_REPLICAS)
    """Prefill engines: each runs a request's prompt and first token, taking arrivals from
    ``engine.router``."""
    decode_replicas: int = Field(default=1, ge=1, le=MAX_REPLICAS)
    """Decode engines: each transferred request goes to the one with the fewest outstanding
    requests."""
    prefill_tensor_parallel: int | None = Field(default=None, ge=1)
    """Attention tensor parallelism of a prefill replica. None: a decode replica's GPUs
    (``engine.tensor_parallel × engine.data_parallel``; decode replicas run the engine's
    layout) over ``prefill_data_parallel``."""
    prefill_data_parallel: int = Field(default=1, ge=1, le=1024)
    """MoE models: data-parallel attention groups of a prefill replica (SGLang's large-scale
    EP prefills over DP attention), as ``engine.data_parallel`` is for decode replicas."""
    prefill_expert_parallel: bool | int = False
    """MoE models: expert parallelism of a prefill replica, as ``engine.expert_parallel``."""
    prefill_two_batch_overlap: bool = False
    """With ``prefill_data_parallel`` > 1: two-batch overlap on the prefill replicas."""

    _prefill_ep = field_validator("prefill_expert_parallel", mode="before")(
        classmethod(lambda cls, v: _expert_parallel(v)))
    kv_link_gbs: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Bandwidth of the link each prefill replica sends KV over, GB/s (10^9 bytes/s); transfers from
    one replica queue in finishing order. None: the GPU's per-direction interconnect (half the
    catalog's bidirectional figure, or 32 GB/s where none is listed) × the prefill TP."""
    kv_link_latency_us: float = Field(default=20.0, ge=0, allow_inf_nan=False)
    """Latency added to each KV transfer after it is sent, µs."""


class KVOffloadConfig(InputModel):
    """A host KV tier (vLLM's KV offloading to CPU memory, LMCache, SGLang's HiCache): the
    blocks the GPU evicts from its prefix cache are kept in host memory (least recently stored
    first out), and a request whose prefix continues past the GPU's hits into them loads them
    back over the GPU's host link instead of recomputing them; the load lengthens the step that
    admits it (not overlapped). Needs ``engine.enable_prefix_caching``."""

    host_gib: float = Field(gt=0, le=1e6, allow_inf_nan=False)
    """Host memory per replica for offloaded KV, GiB (one copy of each block)."""
    load_gbs: float | None = Field(default=None, gt=0, le=1e5, allow_inf_nan=False)
    """Bandwidth each GPU loads its share of a block at, GB/s (10^9 bytes/s). None: half the
    GPU's bidirectional host link in the catalog (PCIe Gen5 ×16: 64; GH200's NVLink-C2C:
    450), or 32 GB/s where none is listed."""


class SpeculativeConfig(InputModel):
    """Speculative decoding: MTP (DeepSeek's ``--speculative-algorithm NEXTN`` / EAGLE with its
    MTP head), EAGLE or a draft model (:mod:`napkin.serving.speculative`)."""

    draft_tokens: int = Field(default=1, ge=1, le=16)
    """Tokens drafted per sequence a step (vLLM ``num_speculative_tokens``, SGLang
    ``--speculative-num-steps``)."""
    acceptance: float | list[float] = 0.8
    """The chance each draft token is kept given the earlier ones were: one rate for every
    position, or one per draft token (falling with the position, as measured). DeepSeek-V3's
    report: 85–90 % for its one MTP token."""
    draft_cost: float | None = Field(default=None, ge=0, le=10, allow_inf_nan=False)
    """A draft token's cost in plain decode steps of the batch. None: for a model with MTP
    modules in its config.json, the module's share of the parameters a token uses (DeepSeek-V3:
    4.4 %); else required."""

    @field_validator("acceptance")
    @classmethod
    def _rates(cls, v: float | list[float]) -> float | list[float]:
        rates = v if isinstance(v, list) else [v]
        if not rates or not all(0 <= a <= 1 for a in rates):
            raise ValueError("every acceptance rate must be in [0, 1]")
        return v

    @model_validator(mode="after")
    def _one_rate_per_draft(self) -> "SpeculativeConfig":
        if isinstance(self.acceptance, list) and len(self.acceptance) != self.draft_tokens:
            raise ValueError(f"acceptance: give one rate or {self.draft_tokens} (one per draft "
                             f"token), got {len(self.acceptance)}")
        return self

    @property
    def rates(self) -> tuple[float, ...]:
        """The acceptance of each draft position."""
        a = self.acceptance
        return tuple(a) if isinstance(a, list) else (a,) * self.draft_tokens


class EngineConfig(InputModel):
    """Scheduler, KV pool and parallelism (vLLM's names and defaults where they exist)."""

    max_num_seqs: int = Field(default=256, ge=1)
    """Most requests running at once on a replica (vLLM's ``--max-num-seqs``); also sizes the logits
    in the activation peak."""
    max_num_batched_tokens: int = Field(default=8192, ge=1)
    """Token budget of one engine step: prefill chunks plus one token per decode, at least
    ``max_num_seqs`` (vLLM's ``--max-num-batched-tokens``). Also sizes the activation peak kept out
    of the KV pool."""
    block_size: int = Field(default=16, ge=1, le=4096)
    """Tokens per KV block (vLLM: 1 to 256; at most 4,096)."""
    kv_pool_gib: float | None = Field(default=None, gt=0, le=1e6)
    """KV pool per device, GiB (at most 10^6: a million GiB)."""
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    """Share of the device memory (as CUDA reports it) the engine may use; the KV pool gets what
    weights/TP, the activation peak and ``reserve_gib`` leave of it. Ignored when ``kv_pool_gib`` is
    given."""
    reserve_gib: float = Field(default=1.0, ge=0, le=1e6)
    """Memory per device kept out of the KV pool besides weights and activations (non-torch memory,
    CUDA graphs), GiB. Ignored when ``kv_pool_gib`` is given."""
    enable_prefix_caching: bool = False
    """Reuse the KV blocks of identical prompt prefixes (block hashes, LRU eviction of unused
    blocks); backend ``vllm`` only."""
    long_prefill_token_threshold: int = Field(default=0, ge=0)
    """Most prompt tokens one request may prefill in a step (vLLM's
    ``--long-prefill-token-threshold``); 0: no cap but the step's token budget."""
    tensor_parallel: int = Field(default=1, ge=1)
    """GPUs per replica, splitting every layer; as vLLM requires, it must divide the attention
    heads, and divide or be a multiple of the KV heads. Adds two all-reduces per layer to a step."""
    backend: Literal["vllm", "trtllm", "sglang"] = "vllm"
    """The engine whose calibration profile ``calibration: auto`` picks."""
    version: str | None = None
    """The engine release (``0.12.0``, ``1.0.0rc3``; None: current). A profile warns when it
    lies outside the releases it was fitted on, or in another execution generation
    (:mod:`napkin.specs.releases`); TensorRT-LLM before 1.0 (compiled engines) runs no
    eager prefill steps, so a profile's ``eager_layer`` floor does not apply."""

    @field_validator("version", mode="before")
    @classmethod
    def _release(cls, v: object) -> object:
        if isinstance(v, int | float) and not isinstance(v, bool):
            v = str(v)  # YAML and --set read 0.17 as a number (quote 1.10: it reads 1.1)
        if isinstance(v, str) and (len(v) > 64 or release(v) is None
                              or not v.lstrip("v")[:1].isdigit() or " " in v):
            raise ValueError("a release such as 0.12.0 or 1.0.0rc3")
        return v
    capacity_scheduler: Literal["default", "max_utilization", "guaranteed_no_evict"] = "default"
    """TensorRT-LLM only: ``max_utilization`` allocates on demand and evicts, as vLLM."""
    chunked_prefill: bool = True
    """On: prompts are split across steps to fit the token budget. Off: a new prompt runs whole in
    one step and waits until the step's remaining budget holds it (TensorRT-LLM's
    ``enable_chunked_context: false``); a prompt longer than ``max_num_batched_tokens`` is
    refused."""
    scheduler_recv_interval: int = Field(default=1, ge=1, le=1000)
    """SGLang only (its ``--scheduler-recv-interval``): while busy, the scheduler takes in new
    requests every this many decode steps (and right after a prefill), so an arrival may wait up
    to ``interval − 1`` decode steps; 1 (SGLang's default): every step."""
    batch_wait_timeout_iters: int = Field(default=0, ge=0, le=10000)
    """TensorRT-LLM only (its ``batch_wait_timeout_iters``): while requests decode, hold new
    prompts back up to this many steps to gather a larger context batch …"""
    batch_wait_max_tokens_ratio: float = Field(default=0.0, ge=0, le=1, allow_inf_nan=False)
    """… unless they and the decodes reach this share of ``max_num_batched_tokens``
    (``batch_wait_max_tokens_ratio``). Prompts are held only when both are above 0."""
    allreduce_gbs: float | None = Field(default=None, gt=0)
    """Per-direction link bandwidth of the tensor-parallel all-reduces, GB/s (10^9 bytes/s). None:
    half the GPU's bidirectional interconnect figure in the catalog, or 32 GB/s (PCIe 4 ×16) where
    none is listed."""
    allreduce_latency_us: float = Field(default=10.0, ge=0)
    """Fixed latency of each all-reduce, µs (roofline step times; a calibration profile fits its
    own)."""
    pipeline_parallel: int = Field(default=1, ge=1, le=64)
    """Pipeline stages per replica (vLLM ``--pipeline-parallel-size``, TensorRT-LLM
    ``pp_size``): the layers split over this many groups of ``tensor_parallel`` GPUs, each
    holding its share of the weights and of every request's KV, with as many batches in flight
    as stages (:mod:`napkin.serving.pipeline`). Tensor-parallel replicas only (``data_parallel``
    1, not disaggregated)."""
    replicas: int = Field(default=1, ge=1, le=MAX_REPLICAS)
    """Engine replicas behind the router, each of ``tensor_parallel`` GPUs; must stay 1 with
    ``disaggregated``."""
    router: Literal["round_robin", "least_outstanding", "least_kv"] = "round_robin"
    """How an arrival picks its replica: ``round_robin`` (in turn), ``least_outstanding`` (fewest
    running + waiting) or ``least_kv`` (smallest share of KV blocks in use)."""
    mode: Literal["fast", "exact"] = "fast"
    """``fast``: runs of identical decode steps advance in closed form; ``exact``: one step at a
    time through ``forward()`` (slower; tests check they agree). ``--mode`` overrides it."""
    batching: Literal["continuous", "static"] = "continuous"
    """``continuous`` (every engine here; Orca 2022): a finished request's slot is refilled at
    the next step. ``static``: once the replica is empty a batch forms from the waiting queue
    (until it is empty, ``max_num_seqs`` is reached or the KV pool is short) and later arrivals
    wait until every request of it has finished, so slots of short answers idle until the
    longest ends (compare the slot use ``napkin serve simulate`` prints)."""
    data_parallel: int = Field(default=1, ge=1, le=1024)
    """MoE models: data-parallel attention groups per replica (vLLM ``--data-parallel-size``,
    SGLang ``--dp`` with ``--enable-dp-attention``, TensorRT-LLM ``enable_attention_dp``). A
    replica then has ``tensor_parallel × data_parallel`` GPUs; each group of ``tensor_parallel``
    holds its own requests and KV cache, and ``max_num_seqs``, ``max_num_batched_tokens`` and the
    KV pool are per group (the replica runs ``data_parallel`` times as many, spread evenly). The
    routed experts span all the replica's GPUs and tokens reach them by all-to-all
    (:mod:`napkin.accounting.ranks`)."""
    expert_parallel: bool | int = False
    """MoE models: whole experts spread over the replica's ``tensor_parallel × data_parallel``
    GPUs instead of every expert split over them (vLLM's ``--enable-expert-parallel``, SGLang's
    ``--ep-size``, TensorRT-LLM's ``--ep_size``); a whole number is the expert-parallel size
    when it is smaller (MoE TP × EP: each of its groups holds ``experts / size`` experts, each
    split over the group's ``GPUs / size`` GPUs — TensorRT-LLM and SGLang). A step then waits
    for the busiest rank: its routed load and the experts it touches
    (:mod:`napkin.accounting.routing`)."""
    redundant_experts: int = Field(default=0, ge=0, le=4096)
    """With ``expert_parallel``: extra expert slots a MoE layer holding copies of experts (EPLB:
    vLLM ``--num-redundant-experts``, SGLang ``--ep-num-redundant-experts``), so that experts +
    copies divide over the GPUs (DeepSeek-V3's 256 + 32 over 72); each GPU holds that many more
    expert weights and routing spreads over the slots."""
    expert_balancedness: float | None = Field(default=None, ge=0.01, le=1,
                                              allow_inf_nan=False)
    """With ``expert_parallel``: a measured balance of the routed load between the GPUs, the
    mean over the maximum (SGLang's expert-distribution recorder and DeepSeek's EPLB report it
    as "balancedness"; 0.5: the busiest GPU carries twice the mean). The busiest GPU's routed
    work is then at least mean / b; None (the default) assumes uniform routing, whose busiest
    GPU carries only its statistical excess (:mod:`napkin.accounting.routing`)."""
    two_batch_overlap: bool = False
    """With ``data_parallel`` > 1: each step runs as two micro-batches so that one's all-to-all
    hides under the other's compute (SGLang ``--enable-two-batch-overlap``, vLLM
    ``--enable-dbo``)."""
    gpus_per_node: int = Field(default=8, ge=1, le=1024)
    """GPUs sharing one NVLink domain: all-to-all traffic between nodes goes over the NICs."""
    internode_gbs: float = Field(default=50.0, gt=0, le=1e5, allow_inf_nan=False)
    """Per-GPU network bandwidth per direction between nodes, GB/s (10^9 bytes/s; 50 = one
    400 Gb/s NIC per GPU, as on DGX H100/H200/B200)."""
    disaggregated: DisaggConfig | None = None

    _ep = field_validator("expert_parallel", mode="before")(
        classmethod(lambda cls, v: _expert_parallel(v)))
    """Separate prefill and decode pools (``replicas`` must then stay 1)."""
    speculative: SpeculativeConfig | None = None
    """Speculative decoding (None: off): each decode step drafts and verifies tokens."""
    kv_offload: KVOffloadConfig | None = None
    """A host KV tier behind the prefix cache (None: none)."""

    @model_validator(mode="after")
    def _offload_needs_caching(self) -> "EngineConfig":
        if self.kv_offload is not None and not self.enable_prefix_caching:
            raise ValueError("kv_offload: needs enable_prefix_caching: true (the host tier "
                             "holds the prefix cache's evicted blocks)")
        return self


class SLOConfig(InputModel):
    ttft_s: float = Field(default=2.0, gt=0, allow_inf_nan=False)
    """Time-to-first-token bound, seconds (first token − arrival). A request meets the SLO when its
    TTFT and TPOT (and end-to-end time, if bounded) are within their bounds."""
    tpot_s: float = Field(default=0.05, gt=0, allow_inf_nan=False)
    """Time-per-output-token bound, seconds: (finish − first token) / (output tokens − 1)."""
    e2e_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Optional end-to-end bound, counted with the other two."""
    share: float = Field(default=0.9, gt=0, le=1)
    """Share of requests that must meet both bounds for a load to count as sustainable
    (``napkin serve sweep``; DistServe's SLO attainment, 90 % by default)."""
    confidence: float = Field(default=0.9, ge=0, lt=1)
    """Probability of meeting the SLO that a plan asks of a configuration, under its
    calibration profile's error bands (:mod:`napkin.serving.confidence`); 0: meeting it at the
    predicted times is enough."""


class Scenario(InputModel):
    """A scenario file: ``workload`` is a path (relative to the file) or an inline workload."""

    name: str = "scenario"
    """Label of the scenario in reports; also names its ``--export`` files (``<name>.requests.csv``,
    ``<name>.timeseries.csv``)."""
    workload: str | Workload
    """The workload: a path to a workload file, relative to the scenario file, or the workload
    itself, inline."""
    model: str
    """The model: a catalog id (``napkin models``) or a path to a Hugging Face ``config.json`` or
    its folder (a relative path is read from the working directory, not the scenario's folder)."""
    gpu: str | None = None
    """Accelerator catalog id (``napkin gpus``). None: a custom device, which needs all of
    ``gpu_mem_gb``, ``gpu_bw_gbs`` and ``gpu_tflops``."""
    gpu_mem_gb: float | None = Field(default=None, gt=0)
    """Device memory, GB (10^9 bytes), replacing the catalog's (the KV pool is sized from it). None:
    the catalog's."""
    gpu_bw_gbs: float | None = Field(default=None, gt=0)
    """Memory bandwidth, GB/s (10^9 bytes/s), replacing the catalog's. None: the catalog's."""
    gpu_tflops: float | None = Field(default=None, gt=0)
    """Dense peak, TFLOP/s, set for every compute format. None: the catalog's rates."""
    weights: str = "bf16"
    """Weight format (``bf16``, ``fp8``, ``int4-g128``, ``nvfp4``, ``q4_k_m``…): bytes per weight
    (memory, bytes read per step) and the compute rate."""
    kv_dtype: str = "bf16"
    """KV-cache format (``bf16``, ``fp16``, ``fp8``, ``int8``, ``fp32``): bytes per cached element,
    hence KV bytes per token and blocks in the pool."""
    unquantized: str | None = None
    """Parts the checkpoint keeps in BF16 while ``weights`` quantizes the rest, comma-separated:
    ``attention``, ``router``, ``shared-experts``, ``dense-mlp``, ``lm-head``, ``embedding``
    (gpt-oss's MXFP4 checkpoint: ``attention,router,embedding,lm-head``; NVIDIA's NVFP4 MoE
    checkpoints: ``attention,router,lm-head``), or ``checkpoint``: what the catalog model's
    public checkpoint keeps at ``weights``. None: ``weights`` for every parameter."""
    calibration: str = "auto"
    """Step times: ``auto`` (the shipped profile of ``engine.backend``), ``roofline`` (MFU, MBU
    and step overhead below), a shipped profile name, or a profile file."""
    mfu: float = Field(default=1.0, gt=0, le=1)
    """``calibration: roofline`` only: the achieved fraction of the dense peak FLOP/s; 1 gives the
    roofline ceiling. Setting it with another calibration is refused."""
    mbu: float = Field(default=1.0, gt=0, le=1)
    """``calibration: roofline`` only: the achieved fraction of the memory bandwidth; 1 gives the
    roofline ceiling. Setting it with another calibration is refused."""
    step_overhead_ms: float = Field(default=0.0, ge=0)
    """``calibration: roofline`` only: fixed time added to every engine step, ms (kernel launches,
    scheduling). Setting it with another calibration is refused."""
    frontend_ms: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Roofline: time a request spends outside the engine before its first step (HTTP,
    tokenization); a profile fits its own (``request_s``)."""
    engine: EngineConfig = EngineConfig()
    """Scheduler, KV pool and parallelism of the engines."""
    slo: SLOConfig = SLOConfig()
    """The latency bounds requests are counted against (SLO met, goodput, sustainable load)."""


@dataclass(frozen=True)
class Built:
    """A scenario resolved into specs, engines and a workload source."""

    scenario: Scenario
    model: ModelSpec
    acc: Accelerator
    precision: Precision
    eff: Efficiency
    spec: EngineSpec
    kv_pool_bytes: float
    pool_derivation: dict[str, float]
    source: OpenLoop | ClosedLoop | Sessions
    slo: SLO
    profile: Profile | None = None
    """The calibration profile timing the steps; None: the roofline at MFU/MBU."""
    warnings: tuple[str, ...] = ()
    """Where the scenario lies outside the profile's fitted domain."""
    warmup: int = 0
    """Warm-up requests the workload sends first, left out of the metrics."""
    prefill_spec: EngineSpec | None = None
    """Disaggregated: the prefill pool's engines (``spec`` is then the decode pool's)."""
    disagg: Disaggregation | None = None
    layout: ParallelLayout = field(default_factory=ParallelLayout)
    """The replica's parallel layout (``spec.tensor_parallel`` is its attention TP); the
    decode pool's when disaggregated."""
    prefill_layout: ParallelLayout = field(default_factory=ParallelLayout)
    """Disaggregated: the prefill pool's (tensor parallelism over its GPUs)."""

    @property
    def calibration(self) -> str:
        return self.profile.name if self.profile else "roofline"

    @property
    def gpus(self) -> int:
        """GPUs of an aggregated deployment: replicas × a replica's ranks (attention TP × DP)
        × pipeline stages (disaggregated pools: :attr:`disagg` counts its own)."""
        e = self.scenario.engine
        return e.replicas * self.layout.ranks * e.pipeline_parallel

    def _timer(self, spec: EngineSpec, layout: ParallelLayout) -> StepTimer | None:
        """The step timer of engines of ``spec`` in ``layout``: the profile's or the roofline
        (None: the engine's own roofline), over the whole group for a tensor-parallel layout,
        else one rank's timer inside a :class:`LayoutTimer`."""
        plain = layout.is_tensor_parallel
        tp = spec.tensor_parallel if plain else 1
        compute = self.precision.weights.compute
        timer: StepTimer | None = None
        if self.profile is not None:
            basis = StepBasis.of(self.model, self.acc, compute, tp, spec.allreduce_bytes_per_s,
                                 self.precision.weights.weight_only, self.precision)
            model = self.profile.model
            timer = FittedTimer(basis, model if spec.eager_prefill else model.without_floor())
        elif self.scenario.frontend_ms or not plain:
            timer = replace(RooflineTimer.of(
                self.model, self.acc, compute, self.eff, tp, spec.allreduce_bytes_per_s,
                spec.allreduce_latency_s), request_s=self.scenario.frontend_ms * MS)
        if plain or timer is None:
            return timer
        e = self.scenario.engine
        return layout_timer(self.model, self.precision, layout, timer,
                            spec.allreduce_bytes_per_s, spec.allreduce_latency_s,
                            e.internode_gbs * GB, e.gpus_per_node, spec.backend)

    def engines(self) -> list[Engine]:
        """Fresh engine replicas (a simulation mutates them): the prefill pool first when
        disaggregated."""
        e = self.scenario.engine
        pools: list[tuple[str, EngineSpec, int, ParallelLayout]] = [
            ("engine", self.spec, e.replicas, self.layout)]
        if e.disaggregated is not None and self.prefill_spec is not None:
            d = e.disaggregated
            pools = [("prefill", self.prefill_spec, d.prefill_replicas, self.prefill_layout),
                     ("decode", self.spec, d.decode_replicas, self.layout)]
        out = []
        p = e.pipeline_parallel
        for name, spec, count, layout in pools:
            timer = self._timer(spec, layout)
            if p > 1:  # each replica: p virtual engines, a batch in flight each
                timer = self._pipeline_timer(timer, spec)
                virtual = replace(spec, num_blocks=spec.num_blocks // p,
                                  max_num_seqs=-(-spec.max_num_seqs // p),
                                  host_kv_blocks=spec.host_kv_blocks // p)
                out += [Engine(self.model, self.acc, self.precision, self.eff, virtual,
                               f"{name}-{i}:{k}", timer) for i in range(count)
                        for k in range(p)]
                continue
            out += [Engine(self.model, self.acc, self.precision, self.eff, spec,
                           f"{name}-{i}", timer) for i in range(count)]
        return out

    def _pipeline_timer(self, timer: StepTimer | None, spec: EngineSpec) -> PipelineTimer:
        """:class:`PipelineTimer` around a replica's timer (the roofline's where None): stage
        boundaries over NVLink while the replica's GPUs fit in one node, else the NICs."""
        e = self.scenario.engine
        inner = timer or roofline_timer(self.model, self.acc, self.precision, self.eff, spec)
        gpus = spec.tensor_parallel * e.pipeline_parallel
        link = (self.acc.allreduce_bytes_per_s if gpus <= e.gpus_per_node
                else e.internode_gbs * GB)
        return PipelineTimer(inner, e.pipeline_parallel, stage_boundary_bytes_per_token(
            self.model.hidden_size, spec.tensor_parallel), link, spec.allreduce_latency_s)

    def simulate(self, progress: Callable[[float, int], None] | None = None,
                 stop: Callable[[Request], bool] | None = None) -> SimRun:
        """Run the workload through fresh engines with the scenario's router."""
        return simulate(self.engines(), self.source, self.scenario.engine.router, progress,
                        stop, self.disagg)


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """``["engine.max_num_seqs=128", "mfu=0.5"]`` applied to a parsed scenario mapping."""
    out = yaml.safe_load(yaml.safe_dump(data))  # deep copy
    for item in overrides:
        if "=" not in item:
            raise NapkinError(f"set: {item!r} must look like field.path=value")
        path, raw = item.split("=", 1)
        keys = path.strip().split(".")
        node = out
        for key in keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise NapkinError(f"set: {path!r}: {key!r} is not a mapping")
        try:
            node[keys[-1]] = load_yaml(raw, f"set: {path}")
        except yaml.YAMLError:
            raise NapkinError(f"set: {item!r}: the value is not valid YAML") from None
    return out


def load_scenario(path: str | Path, overrides: list[str] = ()) -> tuple[Scenario, Path]:
    """Parse a scenario file (with ``field.path=value`` overrides) and validate it."""
    data = read_yaml(path, "scenario")
    if not isinstance(data, dict):
        raise NapkinError(f"{path}: a scenario must be a YAML mapping")
    data = apply_overrides(data, list(overrides))
    try:
        return Scenario.model_validate(data), Path(path).resolve().parent
    except ValidationError as e:
        raise NapkinError(f"{path}: {validation_message(e, data)}") from None


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


def build(scenario: Scenario, base_dir: Path, seed: int | None = None) -> Built:
    """Resolve specs, size the KV pool and draw (or set up) the workload (``seed`` overrides
    the workload's)."""
    model = load_model(scenario.model)
    acc = override(load_accelerator(scenario.gpu) if scenario.gpu else None,
                   scenario.gpu_mem_gb, scenario.gpu_bw_gbs, scenario.gpu_tflops)
    precision = Precision.of(scenario.weights, scenario.kv_dtype, unquantized=resolve_unquantized(
        scenario.unquantized, model.name, scenario.weights))
    eff = Efficiency(scenario.mfu, scenario.mbu, scenario.step_overhead_ms * MS)
    e = scenario.engine
    layout = engine_layout(model, e)
    kv_token = model.kv_bytes_per_token(precision.kv.bytes_per_element)
    link = e.allreduce_gbs * GB if e.allreduce_gbs else acc.allreduce_bytes_per_s
    spec, pool, derivation = _engine_spec(model, acc, precision, e, layout, link)
    if e.pipeline_parallel > 1:
        _check_pipeline(model, e, layout, spec)
    prefill_spec = disagg = None
    prefill_layout = ParallelLayout()
    if e.disaggregated is not None:
        d = e.disaggregated
        if e.replicas != 1:
            raise NapkinError("engine.replicas: with engine.disaggregated give "
                              "prefill_replicas and decode_replicas instead")
        prefill_layout = prefill_pool_layout(model, e)
        ptp = prefill_layout.ranks
        prefill_spec, _, _ = _engine_spec(model, acc, precision, e, prefill_layout, link)
        kv_link = d.kv_link_gbs * GB if d.kv_link_gbs else acc.allreduce_bytes_per_s * ptp
        disagg = Disaggregation(d.prefill_replicas, kv_link, d.kv_link_latency_us * 1e-6,
                                kv_token)
    if isinstance(scenario.workload, str):
        workload, wl_dir = load_workload(base_dir / scenario.workload)
    else:
        workload, wl_dir = scenario.workload, base_dir
    if seed is not None:
        workload = workload.model_copy(update={"seed": seed})
    source = generate(workload, wl_dir)
    longest = None
    if isinstance(source, OpenLoop) and len(source.requests):
        longest = (int(source.requests.input_tokens.max()),
                   int(source.requests.output_tokens.max()))
    profile, warnings = _calibration(scenario, model, acc.id, precision.weights.name, longest,
                                     layout)
    if profile is not None and e.speculative is not None:
        warnings += (f"outside profile {profile.name!r}: speculative decoding (fitted without "
                     "it: a verification is timed as a step of k + 1 tokens a sequence)",)
    if (not e.chunked_prefill and longest
            and longest[0] + e.max_num_seqs > e.max_num_batched_tokens):
        warnings += (f"chunked_prefill off: a {longest[0]}-token prompt runs whole only in a "
                     f"step with at most {e.max_num_batched_tokens - longest[0]} decodes "
                     "(max_num_batched_tokens); it waits for decodes to drain — raise the "
                     "budget above the longest prompt + max_num_seqs",)
    slo = SLO(scenario.slo.ttft_s, scenario.slo.tpot_s, scenario.slo.share, scenario.slo.e2e_s)
    return Built(scenario, model, acc, precision, eff, spec, pool, derivation, source, slo,
                 profile, warnings, getattr(workload.arrivals, "warmup_requests", 0),
                 prefill_spec, disagg, layout, prefill_layout)


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


def _check_pipeline(model: ModelSpec, e: EngineConfig, layout: ParallelLayout,
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


def _engine_spec(model: ModelSpec, acc: Accelerator, precision: Precision, e: EngineConfig,
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
        eager_prefill=eager_prefill(e.backend, e.version or ""),
        reserve_full_prompt=reserves_full_prompt(e.backend, e.version or ""),
        host_kv_blocks=host_blocks,
        host_kv_bytes_per_s=(e.kv_offload.load_gbs * GB
                             if e.kv_offload is not None and e.kv_offload.load_gbs else 0.0),
    )
    return spec, num_blocks * e.block_size * kv_token, derivation


ROOFLINE_KNOBS = ("mfu", "mbu", "step_overhead_ms", "frontend_ms")


def _calibration(scenario: Scenario, model: ModelSpec, gpu: str, weights: str,
                 longest: tuple[int, int] | None, layout: ParallelLayout
                 ) -> tuple[Profile | None, tuple[str, ...]]:
    """The profile ``scenario.calibration`` names (None for the roofline) and the ways the
    scenario lies outside its domain (``longest``: the longest input and output drawn)."""
    name = scenario.calibration
    if name == "roofline":
        return None, ()
    given = [k for k in ROOFLINE_KNOBS if k in scenario.model_fields_set]
    if given:
        raise NapkinError(f"{given[0]}: applies with calibration: roofline only (calibration is "
                          f"{name!r}; a profile's fitted coefficients set the step times)")
    profile = load_profile(auto_profile(scenario.engine.backend, scenario.engine.version)
                           if name == "auto" else name)
    e = scenario.engine
    inp, out = longest or (None, None)
    outside = profile.domain.outside(gpu, scenario.model, e.tensor_parallel, weights, inp, out,
                                     spec=model, layout=layout,
                                     version=(e.backend, e.version)
                                     if e.version and e.backend == profile.backend else None)
    return profile, tuple(f"outside profile {profile.name!r}: {w}" for w in outside)

