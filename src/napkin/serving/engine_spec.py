"""An engine replica's settings (:class:`EngineSpec`, vLLM's names where they exist) and what
the engine asks of a step-time model (:class:`StepTimer`: the roofline's, a fitted profile's or
a layout's)."""

from dataclasses import dataclass
from typing import Literal, Protocol

from napkin.accounting.forward import Precision
from napkin.calibration.basis import Parts
from napkin.errors import require
from napkin.serving.policy import policy
from napkin.serving.speculative import Speculation
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec
from napkin.timing.efficiency import Efficiency
from napkin.timing.frontend import Frontend
from napkin.timing.series import StepSeries
from napkin.timing.steps import RooflineTimer

Mode = Literal["fast", "exact"]


class StepTimer(Protocol):
    """What the engine asks of a step-time model (roofline or fitted): step times, and the
    latency outside the engine before a request's first step, ``request_s + request_token_s ×
    prompt tokens``."""

    request_s: float
    request_token_s: float
    frontend: Frontend | None
    """The frontend queue a fitted profile carries (:mod:`napkin.timing.frontend`); None:
    none."""

    def series(self, parts0: Parts, parts1: Parts | None, tokens: int,
               prefill: bool = False) -> StepSeries: ...

    def step_s(self, parts: Parts, tokens: int, prefill: bool = False) -> float:
        """One step's time: ``series(parts, None, tokens, prefill).time(1)``."""
        ...

    def effective(self, terms: tuple[float, ...]) -> tuple[float, ...]:
        """A step's basis vector as its time counts it (what recording sums)."""
        ...


@dataclass(frozen=True)
class EngineSpec:
    """Scheduler and parallelism settings of one engine replica (vLLM names where they exist)."""

    num_blocks: int
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    enable_prefix_caching: bool = False
    long_prefill_token_threshold: int = 0
    tensor_parallel: int = 1
    allreduce_bytes_per_s: float = 64e9
    allreduce_latency_s: float = 10e-6
    mode: Mode = "fast"
    backend: str = "vllm"
    """Scheduler policy (:data:`napkin.serving.policy.POLICIES`): vllm, trtllm or sglang."""
    capacity_scheduler: Literal["default", "max_utilization", "guaranteed_no_evict"] = "default"
    """TensorRT-LLM's capacity scheduler: ``guaranteed_no_evict`` (its default: max-length
    reservation) or ``max_utilization`` (blocks on demand, evicting when short, like vLLM)."""
    chunked_prefill: bool = True
    """Off: a new prompt runs whole in one step, so it waits until the step's remaining token
    budget holds it (TensorRT-LLM's ``enable_chunked_context: false``); recomputation after a
    preemption is still chunked."""
    scheduler_recv_interval: int = 1
    """SGLang's ``--scheduler-recv-interval``: a busy scheduler takes in new requests only every
    this many decode steps (a step with a prefill lets it look at the next one; an idle one looks
    at once), so an arrival waits up to ``interval − 1`` decode steps before it can be
    scheduled. 1: every step."""
    batch_wait_timeout_iters: int = 0
    """TensorRT-LLM's ``batch_wait_timeout_iters``: while requests decode, new prompts are held
    back for up to this many steps to gather a larger context batch …"""
    batch_wait_max_tokens_ratio: float = 0.0
    """… unless the held prompts' tokens plus the decodes reach this share of
    ``max_num_batched_tokens`` (TensorRT-LLM's ``batch_wait_max_tokens_ratio``). As there,
    prompts are held only when both are above 0."""
    attention_dp_timeout_iters: int = 0
    """TensorRT-LLM's attention-DP balancing (``attention_dp_config: enable_balance``), in an
    engine over attention-data-parallel ranks: while every rank decodes, new prompts wait until
    every rank has one to start or until the ``timeout_iters``-th step since prompts last
    started (its counter counts every step without a prompt on every rank); 0: balancing off …"""
    attention_dp_batching_wait_iters: int = 0
    """… and once every rank has one, they wait up to this many more steps to gather more
    (``batching_wait_iters``)."""
    speculative: Speculation | None = None
    """Speculative decoding (MTP, EAGLE, a draft model) as virtual steps
    (:mod:`napkin.serving.speculative`); None: plain decoding."""
    host_kv_blocks: int = 0
    """A host KV tier of this many blocks (vLLM's KV offloading to CPU memory, LMCache, SGLang's
    HiCache; prefix caching only): blocks the GPU evicts from its prefix cache are kept there,
    and a later request whose prefix continues into them loads them back instead of recomputing
    (:class:`~napkin.serving.kvpool.KVPool`). 0: none."""
    host_kv_bytes_per_s: float = 0.0
    """Bandwidth a device loads host KV at, bytes/s per direction; 0: the GPU's host link
    (:attr:`~napkin.specs.hardware.Accelerator.host_load_bytes_per_s`)."""
    reserve_full_prompt: bool = True
    """vLLM ≥ 0.19 (``scheduler_reserve_full_isl``, on by default; vllm-project/vllm#37307):
    a waiting request is admitted only when blocks for its whole current sequence (prompt and
    outputs so far, less its prefix hits) are free, not just for its first chunk; False: vLLM
    before 0.19 (:func:`napkin.specs.releases.reserves_full_prompt`). Other policies ignore it."""
    eager_prefill: bool = True
    """A step that carries a prefill chunk launches its layers' kernels from the host, so a
    fitted profile's ``eager_layer`` floor bounds it (TensorRT-LLM's PyTorch backend); False:
    the whole step is one compiled engine (TensorRT-LLM before 1.0,
    :func:`napkin.specs.releases.eager_prefill`) and the floor does not apply."""
    batching: Literal["continuous", "static"] = "continuous"
    """``continuous``: requests join whenever a slot, budget and blocks allow (iteration-level
    scheduling, Orca 2022); ``static``: a batch is admitted only once the previous one has
    wholly finished (see the module docstring)."""
    async_scheduling: bool = False
    """The scheduler plans step N + 1 while step N runs and handles N's output after (vLLM's
    ``--async-scheduling``, default from 0.14, vllm-project/vllm#27614; SGLang's and
    TensorRT-LLM's overlap schedulers): a request that finishes in step N keeps its KV blocks
    and its sequence slot through the planning of N + 1, so what it frees serves N + 2. False:
    the plan after a step sees what it freed (the shipped profiles were fitted so)."""
    frontend: Frontend | None = None
    """The replica's frontend as a queue (:mod:`napkin.timing.frontend`): it tokenizes each
    prompt before the engine sees it and detokenizes each token before the client does, one
    job at a time. None (or all zero): no frontend queue."""

    def __post_init__(self) -> None:
        require(self.max_num_seqs >= 1, "max_num_seqs: must be >= 1")
        require(self.max_num_batched_tokens >= self.max_num_seqs,
                "max_num_batched_tokens: must be >= max_num_seqs (as vLLM requires)")
        require(self.block_size >= 1, "block_size: must be >= 1")
        require(self.tensor_parallel >= 1, "tensor_parallel: must be >= 1")
        require(self.long_prefill_token_threshold >= 0, "long_prefill_token_threshold: >= 0")
        require(self.mode in ("fast", "exact"), f"mode: must be fast or exact, got {self.mode}")
        require(self.batching in ("continuous", "static"),
                f"batching: must be continuous or static, got {self.batching}")
        policy(self.backend)  # an unknown backend fails here
        require(self.scheduler_recv_interval >= 1, "scheduler_recv_interval: must be >= 1")
        require(self.scheduler_recv_interval == 1 or self.backend == "sglang",
                f"scheduler_recv_interval: applies to backend sglang, not {self.backend}")
        require(self.batch_wait_timeout_iters >= 0, "batch_wait_timeout_iters: must be >= 0")
        require(0 <= self.batch_wait_max_tokens_ratio <= 1,
                "batch_wait_max_tokens_ratio: must be in [0, 1]")
        require((self.batch_wait_timeout_iters == 0 and self.batch_wait_max_tokens_ratio == 0)
                or self.backend == "trtllm",
                f"batch_wait_timeout_iters: applies to backend trtllm, not {self.backend}")
        for key in ("attention_dp_timeout_iters", "attention_dp_batching_wait_iters"):
            require(getattr(self, key) >= 0, f"{key}: must be >= 0")
            require(getattr(self, key) == 0 or self.backend == "trtllm",
                    f"{key}: applies to backend trtllm, not {self.backend}")
        require(self.capacity_scheduler == "default" or self.backend == "trtllm",
                f"capacity_scheduler: applies to backend trtllm, not {self.backend}")
        require(not (self.enable_prefix_caching
                     and policy(self.backend).reservation != "on_demand"),
                f"enable_prefix_caching: supported with backend vllm only, not {self.backend}")
        require(self.host_kv_blocks >= 0 and self.host_kv_bytes_per_s >= 0,
                "host_kv_blocks, host_kv_bytes_per_s: must be >= 0")
        require(self.host_kv_blocks == 0 or self.enable_prefix_caching,
                "kv_offload: needs enable_prefix_caching")


def roofline_timer(model: ModelSpec, acc: Accelerator, precision: Precision, eff: Efficiency,
                   spec: EngineSpec) -> RooflineTimer:
    """The timer of an engine given none: the roofline at ``eff`` over the spec's TP group."""
    return RooflineTimer.of(model, acc, precision.weights.compute, eff, spec.tensor_parallel,
                            spec.allreduce_bytes_per_s, spec.allreduce_latency_s)
