"""Fit napkin's training profile on torchtitan's published tables and print its hold-out.

The table is ``napkin/catalog/measurements/torchtitan_training.csv`` (43 throughput and 20
peak-memory rows of Llama 2/3/3.1 8B–405B on A100, the Grand Teton H100 and H200; FSDP, TP,
PP, CP, async TP, compile, BF16 and Float8). The compute coefficients
(:mod:`napkin.training.efficiency`) are fitted on the throughput rows
(:mod:`napkin.training.fitting`); the allocator's share is the geometric mean of measured peak
reserved over napkin's allocated memory on the memory rows. Every row is also predicted by a
fit on the other tables (leave one table out): the printed medians and the band (10th and
90th percentile of the held-out throughput errors) go into the profile.

Usage: python benchmarks/fit_training.py [--write]   (--write replaces the shipped profile)
"""

import argparse
import math
import statistics
import time

import numpy as np

from napkin.catalog import CATALOG_DIR, measurement_file
from napkin.training.efficiency import PRECISIONS
from napkin.training.fitting import fit, holdout, row_terms
from napkin.training.measured import plan_run, predicted, read_measured_runs

TABLE = "torchtitan_training.csv"
ARCHITECTURES = ("ampere", "hopper")
SOURCES = (
    "napkin/catalog/measurements/torchtitan_training.csv: pytorch/torchtitan docs/performance.md "
    "@3faaa1a0d (64 A100), benchmarks/llama3_h100_202412_torchtitan.md (8-512 Grand Teton "
    "H100), benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (64-256 H100), "
    "benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md (32-64 H200) @b5bcd76c; BSD-3-Clause",
)


def allocator_share(memory: list[tuple[str, float, float]]) -> float:
    """``exp(mean log(measured / predicted)) − 1`` over (group, measured, allocated) rows."""
    return math.exp(statistics.mean(math.log(m / p) for _, m, p in memory)) - 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the shipped profile")
    args = ap.parse_args()
    runs = read_measured_runs(measurement_file(TABLE))
    start = time.perf_counter()
    rows = [row_terms(r) for r in runs if r.quantity == "tokens_per_s_per_gpu"]
    coefficients = fit(rows, ARCHITECTURES)
    held = holdout(rows, ARCHITECTURES)
    errors = [p / r.run.measured - 1 for r, p in held]
    memory = [(r.group, r.measured, predicted(r, plan_run(r))) for r in runs
              if r.quantity == "peak_mem_gib"]
    share = allocator_share(memory)
    memory_errors = [p * (1 + allocator_share([x for x in memory if x[0] != g])) / m - 1
                     for g, m, p in memory]
    elapsed = time.perf_counter() - start
    print(f"{len(rows)} throughput rows, {len(memory)} memory rows, "
          f"{len({r.run.group for r in rows})} tables; fitted and held out in {elapsed:.1f} s")
    for name, value in coefficients.items():
        print(f"  {name:22} {value:8.3f}")
    print(f"  allocator overhead     {share:8.3f}")
    print("held out by table (predicted / measured − 1):")
    for (r, p), e in zip(held, errors, strict=True):
        print(f"  {r.run.id:52} {r.run.measured:9,.0f} {p:9,.0f}  {e:+6.1%}")
    for (g, m, p), e in zip(memory, memory_errors, strict=True):
        print(f"  memory {g[:45]:45} {m:6.1f} GiB {p * (1 + share):6.1f}  {e:+6.1%}")
    band = tuple(float(np.percentile(errors, q)) for q in (10, 90))
    median = statistics.median(abs(e) for e in errors)
    memory_median = statistics.median(abs(e) for e in memory_errors)
    print(f"throughput: median |error| {median:.1%} held out, band {band[0]:+.1%} … "
          f"{band[1]:+.1%}; memory: median |error| {memory_median:.1%} held out")
    if args.write:
        import yaml

        out = CATALOG_DIR / "training_profile.yaml"
        gpus = sorted({r.gpu for r in runs})
        precisions = [p for p in PRECISIONS if any(r.precision == p for r in runs)]
        data = {"name": "torchtitan",
                "notes": [f"fitted by benchmarks/fit_training.py on {len(rows)} throughput rows "
                          f"of {len({r.run.group for r in rows})} tables; band and medians from "
                          "leave-one-table-out predictions",
                          "the Grand Teton H100 runs at 500 W (h100-sxm-96gb): its Hopper "
                          "coefficients are those of a power-capped part"],
                "architectures": list(ARCHITECTURES),
                "coefficients": {k: float(f"{v:.6g}") for k, v in coefficients.items()},
                "allocator_overhead": float(f"{share:.4g}"),
                "band": [float(f"{b:.4g}") for b in band],
                "holdout_median": float(f"{median:.4g}"),
                "memory_holdout_median": float(f"{memory_median:.4g}"),
                "gpus": gpus, "precisions": precisions, "sources": list(SOURCES)}
        out.write_text(yaml.safe_dump(data, sort_keys=False, width=100))
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
