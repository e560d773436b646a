"""The ``engine`` section of a scenario file: scheduler, KV pool, parallelism and router
(:class:`EngineConfig`, vLLM's names and defaults where they exist), with its optional
disaggregated pools, speculative decoding and host KV tier (pydantic input models)."""

from typing import Literal

from pydantic import Field, field_validator, model_validator

from napkin.specs.files import InputModel
from napkin.specs.releases import release
from napkin.timing.frontend import Frontend


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
    (default: a rank's NVLink, or its NIC once the pools span more than one NVLink domain, ×
    the prefill TP, one link per rank) after ``kv_link_latency_us``."""

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
    one replica queue in finishing order. None: a rank's link × the prefill TP — the GPU's
    per-direction interconnect (half the catalog's bidirectional figure, or 32 GB/s where none
    is listed) while both pools fit one NVLink domain (``engine.gpus_per_node``), else its NIC
    (``engine.internode_gbs``)."""
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


class FrontendConfig(InputModel):
    """The replica's frontend as a queue (:mod:`napkin.timing.frontend`): one process that
    parses and tokenizes each request before the engine sees it, detokenizes each output token
    before the client does and finishes each response, one job at a time. Where its work per
    request nears the time between requests it caps the replica at ``1 / (request + prompt ×
    per prompt token + outputs × per output token + response)`` requests/s. Unlike
    ``frontend_ms`` (a delay every request pays), its jobs wait for each other."""

    request_ms: float = Field(default=0.0, ge=0, le=1e6, allow_inf_nan=False)
    """Frontend work per request (HTTP, parsing, request setup), ms."""
    prompt_token_us: float = Field(default=0.0, ge=0, le=1e6, allow_inf_nan=False)
    """Frontend work per prompt token (tokenization), µs."""
    output_token_us: float = Field(default=0.0, ge=0, le=1e6, allow_inf_nan=False)
    """Frontend work per output token (detokenization, streaming), µs."""
    response_ms: float = Field(default=0.0, ge=0, le=1e6, allow_inf_nan=False)
    """Frontend work per response after its last token (the final response, usage, closing
    the stream), ms: it delays only the jobs behind it."""

    def frontend(self) -> Frontend:
        """The same in seconds."""
        return Frontend(self.request_ms * 1e-3, self.prompt_token_us * 1e-6,
                        self.output_token_us * 1e-6, self.response_ms * 1e-3)


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
    attention_dp_timeout_iters: int = Field(default=0, ge=0, le=10000)
    """TensorRT-LLM only, with ``data_parallel`` > 1 (its ``attention_dp_config: {enable_balance:
    true, timeout_iters}``): while every attention-DP rank decodes, new prompts wait until every
    rank has one or until this many steps have passed since prompts last started; 0: off …"""
    attention_dp_batching_wait_iters: int = Field(default=0, ge=0, le=10000)
    """… then up to this many more steps to gather more (``batching_wait_iters``)."""
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
    """GPUs sharing one NVLink domain: all-to-all traffic between nodes goes over the NICs,
    and a tensor-parallel group past it all-reduces hierarchically over them. Where the
    scenario gives none, the GPU's own domain (GB200 NVL72: 72), else this default, 8."""
    internode_gbs: float = Field(default=50.0, gt=0, le=1e5, allow_inf_nan=False)
    """Per-GPU network bandwidth per direction between nodes, GB/s (10^9 bytes/s; 50 = one
    400 Gb/s NIC per GPU, as on DGX H100/H200/B200)."""
    disaggregated: DisaggConfig | None = None
    """Separate prefill and decode pools (``replicas`` must then stay 1)."""
    speculative: SpeculativeConfig | None = None
    """Speculative decoding (None: off): each decode step drafts and verifies tokens."""
    kv_offload: KVOffloadConfig | None = None
    """A host KV tier behind the prefix cache (None: none)."""
    async_scheduling: bool = False
    """Plan step N + 1 while step N runs (vLLM's ``--async-scheduling``, its default from 0.14;
    SGLang's and TensorRT-LLM's overlap schedulers): a request finishing in step N holds its
    blocks and slot through the next plan. Off by default: the shipped profiles were fitted
    without it."""
    frontend: FrontendConfig | None = None
    """A frontend that queues (None: none; a profile's ``request_s`` and ``frontend_ms`` are
    delays outside the engine that never queue)."""

    _ep = field_validator("expert_parallel", mode="before")(
        classmethod(lambda cls, v: _expert_parallel(v)))

    @model_validator(mode="after")
    def _offload_needs_caching(self) -> "EngineConfig":
        if self.kv_offload is not None and not self.enable_prefix_caching:
            raise ValueError("kv_offload: needs enable_prefix_caching: true (the host tier "
                             "holds the prefix cache's evicted blocks)")
        if self.frontend is not None and self.disaggregated is not None:
            raise ValueError("frontend: not with disaggregated pools (napkin does not model "
                             "which pool's frontend tokenizes and which detokenizes)")
        return self
