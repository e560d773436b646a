"""Cross-GPU check of the TensorRT-LLM profiles against TensorRT-LLM v0.17's published offline
throughput (``catalog/measurements/trtllm_v0.17_throughput.csv``; NVIDIA/TensorRT-LLM
``docs/source/performance/perf-overview.md`` @258c754, Apache-2.0): Llama 3.1 8B/70B/405B at FP8
(FP16 on A100) on H100, H200, L40S and A100, output tokens/s of the whole TP group, run on
0.17's compiled engines.

Each row is replayed as a burst of ``N`` requests of its fixed lengths through the trtllm policy
with the batch cap and token budget ``trtllm-bench`` derives
(:func:`napkin.validation.trtllm_bench.v017_throughput_rows`), under the shipped ``trtllm``
profile (fitted on the 1.x PyTorch backend's H100 TTFT/TPOT; no eager floor for these compiled
engines) and ``trtllm-compiled`` (fitted on these rows: its figure is a training error; the
profile's band is its hold-out by GPU, model and TP). GH200 is skipped: the table's GH200-480GB
is the 96 GB HBM3 part, and the catalog's ``gh200`` the 144 GB HBM3e one. Prints the median
|error| and bias per GPU.

Usage: python benchmarks/check_trtllm_throughput.py [N]
"""

import sys
import time
from collections import defaultdict

import numpy as np

from napkin.calibration.profile import load_profile
from napkin.validation.fit import fitted_timer
from napkin.validation.replay import replay
from napkin.validation.trtllm_bench import v017_throughput_rows


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    t0 = time.perf_counter()
    rows = v017_throughput_rows(requests=n)
    for name in ("trtllm", "trtllm-compiled"):
        timer = fitted_timer(load_profile(name).model)
        errors: dict[str, list[float]] = defaultdict(list)
        for m in rows:
            got = replay(m, timer).output_tokens_per_s
            assert m.output_tokens_per_s is not None
            errors[m.gpu].append(got / m.output_tokens_per_s - 1)
        every = np.concatenate([np.array(e) for e in errors.values()])
        print(f"{name}: {len(every)} rows, median |error| {np.median(np.abs(every)):.1%}, bias "
              f"{np.median(every):+.1%}")
        for gpu, e in sorted(errors.items()):
            a = np.array(e)
            print(f"  {gpu}: {len(a)} rows, median |error| {np.median(np.abs(a)):.1%}, "
                  f"bias {np.median(a):+.1%}")
    print(f"({time.perf_counter() - t0:.0f} s, {n}-request bursts)")


if __name__ == "__main__":
    main()
