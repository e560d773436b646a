"""Simulated requests per wall-second of the serving simulator (fast mode, one core).

Workload: Poisson arrivals at 10 requests/s of a lognormal length mix (input median 1,000
tokens, σ 1, at most 16,000; output median 250, σ 1, at most 4,000) on Qwen3-8B BF16, one
H100 SXM, vLLM-like engine (256 sequences, 8,192-token budget, KV pool derived from memory),
timed by the roofline at MFU 0.7, MBU 0.95, 4 ms per step (``calibration: roofline``, as
before calibration profiles existed) and by the shipped vLLM profile. Prints, for 10k, 100k and
1M requests (or the sizes given), for each:
wall time, simulated requests per wall-second, peak resident memory of the process so far (sizes
run in ascending order and each run's memory is freed before the next, so it is the largest
single run's), engine steps per simulated unit, and the simulated makespan.

Usage: python benchmarks/serve_speed.py [N ...] (10,000,000 takes about 3 minutes a
calibration and 2.4 GiB on a 2-core machine; figures in docs/serving.md, "How fast the
simulator runs"; a cold CLI run: benchmarks/serve_cold.py)
"""

import argparse
import resource
import time
from pathlib import Path

from arguments import whole_number
from napkin.serving.metrics import summarize
from napkin.serving.scenario import Scenario, build
from napkin.serving.simulate import simulate
from serve_kinds import ROOFLINE, qwen


def scenario(n: int, mode: str = "fast", calibration: str = "roofline") -> Scenario:
    """The workload above on ``calibration`` (``roofline`` or a shipped profile's name)."""
    timing = ROOFLINE if calibration == "roofline" else {"calibration": calibration}
    return Scenario.model_validate({**qwen(n, timing, {"mode": mode}),
                                    "name": f"lognormal {n:,}"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=whole_number, metavar="requests",
                        help="request counts (default: 10,000 100,000 1,000,000)")
    sizes = sorted(parser.parse_args().sizes) or [10_000, 100_000, 1_000_000]
    for n, calibration in [(n, c) for n in sizes for c in ("roofline", "vllm")]:
        print(measure(n, calibration))


def measure(n: int, calibration: str) -> str:
    """One run's line. Its engines and records are freed on return, so the next run reuses
    their memory and the peak RSS printed is the largest single run's, not a sum."""
    built = build(scenario(n, calibration=calibration), Path("."))
    engines = built.engines()
    start = time.perf_counter()
    run = simulate(engines, built.source)
    wall = time.perf_counter() - start
    s = summarize(run, built.slo)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return (f"{calibration:>8} {n:>9,} requests: {wall:7.2f} s wall, "
            f"{n / wall:9,.0f} requests/s, peak RSS {rss_mb:,.0f} MiB, "
            f"{s.steps:,} engine steps in {s.sim_units:,} units "
            f"({s.steps / s.sim_units:.2f} steps/unit), simulated makespan "
            f"{s.makespan_s:,.0f} s, p95 TTFT {s.ttft.p95_s:.2f} s, "
            f"{s.preemptions:,} preemptions")

if __name__ == "__main__":
    main()
