"""Cross-GPU check of the shipped TensorRT-LLM profile against TensorRT-LLM v0.17's published
offline throughput (``shared/validation/trtllm_v0.17_throughput.csv``; NVIDIA/TensorRT-LLM
``docs/source/performance/perf-overview.md``, Apache-2.0): Llama 3.1 8B/70B/405B at FP8 (FP16
on A100) on H100, H200, L40S and A100, output tokens/s of the whole TP group.

Each row is replayed as a burst (every request at t = 0) of ``N`` requests of the fixed lengths
through the trtllm policy and profile (fitted on H100 TTFT/TPOT only: the other GPUs are
carried through their datasheet figures). GH200 is skipped: the table's GH200-480GB is the
96 GB HBM3 part, and the catalog's ``gh200`` the 144 GB HBM3e one. The rows run TensorRT-LLM
0.17's compiled engines, so the profile (fitted on the 1.x PyTorch backend) warns and drops
its eager-prefill floor for them (:mod:`napkin.specs.releases`). Prints the
error per row and the median |error| per GPU. Takes minutes.

Usage: python benchmarks/check_trtllm_throughput.py [path/to/trtllm_v0.17_throughput.csv] [N]
"""

import csv
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from napkin.calibration.measurements import Harness, Measurement
from napkin.calibration.profile import load_profile
from napkin.validation.fit import fitted_timer
from napkin.validation.replay import replay

DEFAULT = Path(__file__).resolve().parents[2] / "shared/validation/trtllm_v0.17_throughput.csv"
GPUS = {"H100-80GB": "h100-sxm", "H200-141GB": "h200", "L40S": "l40s",
        "A100-SXM4-80GB": "a100-80gb-sxm"}
MODELS = {"LLaMA v3.1 8B": "llama-3.1-8b", "LLaMA v3.1 70B": "llama-3.1-70b",
          "LLaMA v3.1 405B": "llama-3.1-405b"}


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    profile = load_profile("trtllm")
    errors: dict[str, list[float]] = defaultdict(list)
    for row in csv.DictReader(path.open()):
        gpu = GPUS.get(row["gpu"])
        if gpu is None:
            continue
        weights = "fp8" if row["precision"] == "FP8" else "bf16"
        m = Measurement(f"v0.17:{row['model']}:{row['gpu']}", "trtllm", "0.17",
                        MODELS[row["model"]], gpu, weights, int(row["tp"]), int(row["isl"]),
                        int(row["osl"]), Harness("burst", num_requests=n))
        try:
            got = replay(m, fitted_timer(profile.model)).output_tokens_per_s
        except ValueError as e:  # weights do not fit, request longer than the pool …
            print(f"{m.source} tp {m.tensor_parallel} {m.input_tokens}/{m.output_tokens}: "
                  f"skipped ({e})")
            continue
        want = float(row["value"])
        errors[gpu].append(got / want - 1)
        print(f"{m.source} tp {m.tensor_parallel} {m.input_tokens}/{m.output_tokens}: "
              f"{got:,.0f} vs {want:,.0f} tokens/s ({got / want - 1:+.1%})")
    for gpu, e in errors.items():
        a = np.array(e)
        print(f"{gpu}: {len(a)} rows, median |error| {np.median(np.abs(a)):.1%}, "
              f"bias {np.median(a):+.1%}")


if __name__ == "__main__":
    main()
