"""Throughput of the accounting and timing layers (what a simulator's step time will cost).

Usage: python benchmarks/accounting_speed.py. Prints forward() calls per second for a decode
step of a dense, a MoE and an MLA model, and the wall time of a 100,000-token request chain
(exact, via affine decode runs) against the step-by-step sum it replaces.
"""

import time

from napkin.accounting import Batch, Precision, forward
from napkin.catalog import load_accelerator, load_model
from napkin.inference.chain import request_chain
from napkin.timing.roofline import Deployment


def per_second(fn, min_time: float = 1.0) -> float:
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < min_time:
        fn()
        n += 1
    return n / elapsed


def main() -> None:
    p = Precision.of()
    for model_id in ("qwen3-8b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-120b"):
        model = load_model(model_id)
        rate = per_second(lambda m=model: forward(m, Batch.decode(4096, 64), p))
        print(f"forward(decode step, batch 64) on {model_id}: {rate:,.0f} calls/s")
    dep = Deployment(load_model("qwen3-8b"), load_accelerator("h100-sxm"), p)
    start = time.perf_counter()
    chain = request_chain(dep, new=1024, gen=30_000)
    fast = time.perf_counter() - start
    start = time.perf_counter()
    stepwise = sum(dep.time(dep.cost(Batch.decode(1024 + j, 1))).time_s for j in range(29_999))
    slow = time.perf_counter() - start
    print(f"request chain, 30,000 output tokens: {fast * 1e3:.2f} ms via affine runs, "
          f"{slow:.2f} s step by step (same decode time: {chain.decode_s:.6f} s vs "
          f"{stepwise:.6f} s)")


if __name__ == "__main__":
    main()
