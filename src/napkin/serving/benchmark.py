"""A closed-loop serving benchmark, as load generators run one (the measurements in
``shared/validation`` were taken this way): ``concurrency`` clients each send a request of
``isl`` input and ``osl`` output tokens, and the next one as soon as it returns. Reports mean
TTFT and mean TPOT over all requests — the figures such harnesses print.
"""

from dataclasses import dataclass

from napkin.accounting.forward import Precision
from napkin.serving.arrivals import generate
from napkin.serving.engine import Engine, EngineSpec
from napkin.serving.metrics import summarize
from napkin.serving.simulate import simulate
from napkin.serving.workload import parse_workload
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec
from napkin.timing import Efficiency
from napkin.units import GiB


@dataclass(frozen=True)
class BenchmarkResult:
    mean_ttft_s: float
    mean_tpot_s: float
    output_tokens_per_s: float


def closed_loop_benchmark(model: ModelSpec, acc: Accelerator, precision: Precision,
                          eff: Efficiency, tensor_parallel: int, isl: int, osl: int,
                          concurrency: int, rounds: int = 4, max_num_seqs: int = 1024,
                          max_num_batched_tokens: int = 8192,
                          gpu_memory_utilization: float = 0.9,
                          ramp_s: float = 0.0, seed: int = 0,
                          allreduce_latency_s: float = 10e-6) -> BenchmarkResult:
    """Simulate ``rounds × concurrency`` requests from ``concurrency`` closed-loop clients."""
    weights = model.params * precision.weights.bytes_per_weight / tensor_parallel
    pool = (acc.memory_bytes * gpu_memory_utilization - weights - 2 * GiB) * tensor_parallel
    kv_token = model.kv_bytes_per_token(precision.kv.bytes_per_element)
    spec = EngineSpec(num_blocks=max(int(pool // (16 * kv_token)), 1),
                      max_num_seqs=max_num_seqs,
                      max_num_batched_tokens=max(max_num_batched_tokens, max_num_seqs),
                      tensor_parallel=tensor_parallel,
                      allreduce_bytes_per_s=acc.interconnect_bytes_per_s / 2 or 32e9,
                      allreduce_latency_s=allreduce_latency_s)
    workload = parse_workload({
        "seed": seed,
        "classes": {"bench": {"input_tokens": isl, "output_tokens": osl}},
        "arrivals": {"kind": "closed_loop", "clients": concurrency, "ramp_s": ramp_s,
                     "num_requests": rounds * concurrency},
    })
    run = simulate([Engine(model, acc, precision, eff, spec)], generate(workload))
    s = summarize(run)
    return BenchmarkResult(s.ttft.mean_s, s.tpot.mean_s, s.output_tokens_per_s)
