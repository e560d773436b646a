"""Calibrate the simulator's efficiency knobs on public vLLM measurements (H100 SXM).

Data: ``shared/validation/serving_measured_h100.csv`` (ai-dynamo/aiconfigurator silicon samples,
Apache-2.0): mean TTFT and TPOT of vLLM 0.12 serving Qwen3-32B in BF16 at fixed input/output
lengths, closed-loop concurrency and tensor parallelism. Each row is re-run through
``napkin.serving.benchmark.closed_loop_benchmark`` (clients starting over a 1 s ramp, 6 rounds).

Fit: grid search of (MFU, MBU, per-step overhead, all-reduce latency) minimizing the RMS of
log(predicted/measured) over TTFT and TPOT of the rows with TP 2 and 4; the TP 8 rows are held
out, and so are vLLM's Llama-3.1-70B FP8 rows (another model and precision). Calibrate a model,
never a row: nothing here is tuned per row.

Usage: python benchmarks/calibrate_vllm_h100.py [path/to/serving_measured_h100.csv]
Prints the best settings, training and hold-out errors. Takes a few minutes on one core.
"""

import csv
import itertools
import math
import sys
from pathlib import Path

import numpy as np

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.serving.benchmark import closed_loop_benchmark
from napkin.timing import Efficiency

DEFAULT_CSV = Path(__file__).resolve().parents[2] / "shared/validation/serving_measured_h100.csv"


def rows_of(path: Path, model: str, precision: str) -> list[dict]:
    return [r for r in csv.DictReader(path.open()) if r["backend"] == "vllm"
            and r["model_path"] == model and r["precision"] == precision]


def log_errors(rows, model, precision, eff, latency_us):
    acc = load_accelerator("h100-sxm")
    ttft, tpot = [], []
    for r in rows:
        res = closed_loop_benchmark(
            model, acc, precision, eff, int(r["tp_size"]), int(r["isl"]), int(r["osl"]),
            int(r["batch_size"]), rounds=6, max_num_seqs=256, ramp_s=1.0,
            allreduce_latency_s=latency_us * 1e-6)
        ttft.append(math.log(res.mean_ttft_s * 1e3 / float(r["silicon_ttft_ms"])))
        tpot.append(math.log(res.mean_tpot_s * 1e3 / float(r["silicon_tpot_ms"])))
    return np.array(ttft), np.array(tpot)


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x**2)))


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CSV
    qwen = load_model("qwen3-32b")
    rows = rows_of(path, "Qwen/Qwen3-32B", "")
    train = [r for r in rows if r["tp_size"] in ("2", "4")]
    held = [r for r in rows if r["tp_size"] == "8"]
    bf16 = Precision.of()
    results = []
    grid = itertools.product([0.6, 0.7, 0.8], [0.75, 0.85, 0.95], [2.0, 4.0, 6.0],
                             [30.0])
    for mfu, mbu, overhead_ms, latency_us in grid:
        eff = Efficiency(mfu, mbu, overhead_ms * 1e-3)
        ttft, tpot = log_errors(train, qwen, bf16, eff, latency_us)
        results.append((rms(np.concatenate([ttft, tpot])), mfu, mbu, overhead_ms, latency_us))
    results.sort()
    score, mfu, mbu, overhead_ms, latency_us = results[0]
    eff = Efficiency(mfu, mbu, overhead_ms * 1e-3)
    print(f"best: mfu {mfu}, mbu {mbu}, step overhead {overhead_ms} ms, all-reduce latency "
          f"{latency_us} us (training RMS log error {score:.3f}, {len(train)} rows)")
    for name, subset, model, precision in (
            ("train: Qwen3-32B BF16, TP 2/4", train, qwen, bf16),
            ("hold-out: Qwen3-32B BF16, TP 8", held, qwen, bf16),
            ("hold-out: Llama-3.1-70B FP8", rows_of(path, "meta-llama/Llama-3.1-70B", "fp8"),
             load_model("llama-3.1-70b"), Precision.of("fp8"))):
        ttft, tpot = log_errors(subset, model, precision, eff, latency_us)
        bias = 100 * (math.exp(np.median(ttft)) - 1)
        print(f"{name}: {len(subset)} rows; TTFT bias {bias:+.0f}%, median |error| "
              f"{100 * (math.exp(np.median(np.abs(ttft))) - 1):.0f}%, RMS log {rms(ttft):.3f}; "
              f"TPOT bias {100 * (math.exp(np.median(tpot)) - 1):+.0f}%, median |error| "
              f"{100 * (math.exp(np.median(np.abs(tpot))) - 1):.0f}%, "
              f"RMS log {rms(tpot):.3f}")


if __name__ == "__main__":
    main()
