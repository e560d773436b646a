"""The measurement types: what a benchmark of a real serving engine measured, and how.

A :class:`Measurement` is one benchmark result: an engine (``backend``) serving a model on a
GPU at a tensor-parallel size and weight format, driven by a harness (:class:`Harness`: closed
loop at a concurrency, Poisson at a rate, or all requests at once), with the server flags it
was launched with where they differ from the defaults (:class:`Launch`) and the latencies the
harness reported; :data:`GROUPINGS` are the ways validation groups them.
"""

from dataclasses import dataclass, field
from typing import Literal

HarnessKind = Literal["closed_loop", "poisson", "burst"]
RangeStyle = Literal["symmetric", "below"]
"""How a benchmark's ``range_ratio`` spreads lengths (see :class:`Harness`)."""


@dataclass(frozen=True)
class Harness:
    """How the benchmark drove the engine.

    ``closed_loop``: ``concurrency`` clients, each sending its next request when the last one
    returned; ``poisson``: arrivals at ``rate_per_s``; ``burst``: every request at t = 0.
    ``num_requests`` counted requests (None: the replay's default, 8 rounds of the clients);
    ``warmup_requests`` sent first and excluded from the metrics; ``range_ratio`` r draws each
    length uniformly in [(1−r)·L, (1+r)·L] with ``range_style`` ``symmetric`` (``vllm bench
    serve --random-range-ratio``, vLLM ≥ 0.10) or in [r·L, L] with ``below`` (the older
    ``benchmark_serving.py``, SGLang's ``bench_serving``, InferenceMAX);
    ``ramp_s`` spreads the clients' first requests over [0, ramp_s]; None (the default)
    spreads them over ``ramp_cycles`` times one request's life (1: desynchronized clients,
    as in steady state; 0: all at once).
    """

    kind: HarnessKind = "closed_loop"
    concurrency: int | None = None
    rate_per_s: float | None = None
    num_requests: int | None = None
    warmup_requests: int = 0
    range_ratio: float = 0.0
    range_style: RangeStyle = "symmetric"
    ramp_s: float | None = None
    ramp_cycles: float = 1.0
    dispatch_intervals: float = 0.0
    """Mean completion intervals (request life / clients) the harness counts into each TTFT
    before the request is sent (:class:`~napkin.calibration.protocol.Protocol`)."""
    latency_s: float = 0.0
    """Fixed time the harness counts into each TTFT beyond the engine's (its client's own
    latency), seconds."""
    stated: bool = True
    """False: the source gives only the load (a silicon sample's concurrency); a profile's
    :class:`~napkin.calibration.protocol.Protocol` then says how the clients ran."""
    campaign: str = ""
    """The label of the profile's campaign whose protocol this harness was assumed from
    (:func:`~napkin.calibration.protocol.assume`); empty: its own or the default protocol."""


@dataclass(frozen=True)
class Launch:
    """Server flags a measured run was launched with where they differ from the engine's
    defaults (None: the default, :data:`napkin.validation.replay.BACKENDS`)."""

    max_num_seqs: int | None = None
    """vLLM ``--max-num-seqs``, SGLang ``--max-running-requests``, TensorRT-LLM
    ``max_batch_size``."""
    max_num_batched_tokens: int | None = None
    """vLLM ``--max-num-batched-tokens``, SGLang ``--chunked-prefill-size``, TensorRT-LLM
    ``max_num_tokens``."""
    memory_fraction: float | None = None
    """vLLM ``--gpu-memory-utilization``, SGLang ``--mem-fraction-static``, TensorRT-LLM
    ``kv_cache_free_gpu_memory_fraction``."""
    scheduler_recv_interval: int = 1
    """SGLang ``--scheduler-recv-interval``."""
    chunked_prefill: bool | None = None
    """Prompts split across steps (TensorRT-LLM ``enable_chunked_prefill``)."""
    batch_wait_timeout_iters: int = 0
    batch_wait_max_tokens_ratio: float = 0.0
    """TensorRT-LLM's batch waiting (:class:`napkin.serving.engine_spec.EngineSpec`)."""
    attention_dp_timeout_iters: int = 0
    attention_dp_batching_wait_iters: int = 0
    """TensorRT-LLM's attention-DP balancing (``attention_dp_config``; 0: off)."""
    source: str = ""
    """Where the flags are from (a launch script and its commit)."""


@dataclass(frozen=True)
class Measurement:
    """One measured row. Latencies in seconds; None where the source does not report one."""

    source: str
    """File and row (or benchmark id) it came from."""
    backend: str
    """``vllm``, ``trtllm``, ``sglang`` (or what the file says)."""
    backend_version: str
    model: str
    """A napkin catalog id (``qwen3-32b``) or a path to a config.json."""
    gpu: str
    """A napkin catalog id (``h100-sxm``)."""
    weights: str
    """A napkin weight format (``bf16``, ``fp8``, ``nvfp4`` …)."""
    tensor_parallel: int
    input_tokens: int
    output_tokens: int
    harness: Harness
    kv_dtype: str = "bf16"
    mean_ttft_s: float | None = None
    mean_tpot_s: float | None = None
    median_ttft_s: float | None = None
    median_tpot_s: float | None = None
    output_tokens_per_s: float | None = None
    extra: dict[str, str] = field(default_factory=dict)
    expert_parallel_size: int = 1
    """Expert-parallel groups of the replica's ``tensor_parallel × attention_data_parallel``
    ranks (1: every MoE layer tensor-parallel like the rest; all of them: whole experts spread
    over the ranks, napkin's ``engine.expert_parallel: true``; between: MoE TP × EP, each
    expert split over ``ranks / expert_parallel_size`` ranks)."""
    attention_data_parallel: int = 1
    """Attention replicated over this many data-parallel ranks (napkin models 1 only)."""
    launch: Launch | None = None
    """The server flags of the run where the source says (None: the engine's defaults)."""

    @property
    def group(self) -> tuple[str, str, int]:
        """The cross-validation group: (GPU, model, tensor-parallel size)."""
        return (self.gpu, self.model, self.tensor_parallel)

    def group_by(self, by: str) -> tuple[str | int, ...]:
        """The row's group under a :data:`GROUPINGS` key: ``group`` (GPU, model, TP), ``gpu``,
        ``engine`` (backend), ``version`` (backend and release), ``tp`` or ``model``."""
        return {"group": self.group, "gpu": (self.gpu,), "engine": (self.backend,),
                "version": (self.backend, self.backend_version or "unknown"),
                "tp": (self.tensor_parallel,), "model": (self.model,)}[by]


GROUPINGS = ("group", "gpu", "engine", "version", "tp", "model")
"""How validation groups rows (and, refitting, which rows a fold holds out together)."""


def group_label(by: str, g: tuple[str | int, ...]) -> str:
    """A group of :meth:`Measurement.group_by` in words."""
    if by == "group":
        return f"{g[1]} on {g[0]}, tp {g[2]}"
    if by == "tp":
        return f"tp {g[0]}"
    return " ".join(str(x) for x in g)
