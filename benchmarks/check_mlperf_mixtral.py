"""MLPerf Inference v4.1 Mixtral-8x7B on H100, held out: napkin's Offline throughput and Server
rate against every closed-division result in ``shared/validation/mlperf_v4.1_mixtral_h100.csv``
(TensorRT-LLM, FP8, one GPU per engine: ``tensor_parallelism`` 1, batch 896, ``max_num_tokens``
8,192 Offline and 16,384 Server), and how much the figures hang on the assumed input lengths.

No figure is fitted: step times come from the shipped TensorRT-LLM profile (fitted on the
aiconfigurator silicon sample's H100 rows of other models); the workload and engine are the
shipped scenario ``examples/mlperf-mixtral-h100.yaml`` (its comments give the dataset's
published output lengths and the input lengths assumed). One GPU's engine is simulated and
multiplied by the system's GPUs (the engines are independent replicas):

- **Offline**: 15,000 samples queued at once; output tokens/s.
- **Server**: ``serve sweep``'s largest Poisson rate (within 3 %) at which ≥ 99 % of requests
  meet TTFT ≤ 2 s and TPOT ≤ 200 ms (MLPerf bounds each p99 separately).

Usage: python benchmarks/check_mlperf_mixtral.py [--input-scale 0.5 0.75 1 1.25 1.5]
"""

import argparse
import csv
from pathlib import Path

from napkin.examples.serving import mlperf_offline_tokens_per_gpu_s, mlperf_server_rate_per_gpu

SHARED = Path(__file__).resolve().parents[2] / "shared/validation"
COMPARED = "NVIDIA H100-SXM-80GB"
"""The accelerator of the closed-division rows (the open-division H100 NVL rows run an unstated
configuration on a GPU napkin's catalog lacks: listed, not compared)."""


def check(path: Path, scale: float) -> dict[str, list[float]]:
    """napkin / published − 1 for every comparable row at input lengths × ``scale``."""
    per_gpu = {"Offline": mlperf_offline_tokens_per_gpu_s(scale),
               "Server": mlperf_server_rate_per_gpu(scale)}
    errors: dict[str, list[float]] = {"Offline": [], "Server": []}
    print(f"\ninput lengths × {scale:g}: napkin per GPU {per_gpu['Offline']:,.0f} output tok/s "
          f"Offline, {per_gpu['Server']:.2f} samples/s Server")
    for row in csv.DictReader(path.open()):
        kind, n = row["scenario"], int(row["gpus_total"])
        want = float(row["tokens_per_s"] if kind == "Offline" else row["target_qps"])
        head = f"  {row['submitter'][:24]:24} {row['system_id'][:32]:32} {n:>2} {kind:8}"
        if row["accelerator"] != COMPARED or row["division"] != "closed":
            print(f"{head} {want:>10,.1f}  not compared ({row['division']}, "
                  f"{row['accelerator']})")
            continue
        got = per_gpu[kind] * n
        errors[kind].append(got / want - 1)
        print(f"{head} {want:>10,.1f}  napkin {got:>10,.1f} ({got / want - 1:+.1%})")
    for kind, e in errors.items():
        print(f"  {kind}: mean error {sum(e) / len(e):+.1%}, largest |error| "
              f"{max(map(abs, e)):.1%} over {len(e)} results")
    return errors


def scale(text: str) -> float:
    """An input-length multiplier for argparse: a number in [0.25, 4] (a bad one is one usage
    line naming the option, not a traceback)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.25 <= value <= 4:
        raise argparse.ArgumentTypeError(f"must be a number in [0.25, 4], got {text!r}")
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input-scale", type=scale, nargs="+", default=[1.0, 0.5, 0.75, 1.25, 1.5],
                    help="multipliers of every assumed input length (default: 1, then "
                         "0.5–1.5 to show the sensitivity)")
    args = ap.parse_args()
    print("MLPerf v4.1 Mixtral-8x7B on H100 SXM (published; napkin / published − 1)")
    for s in args.input_scale:
        check(SHARED / "mlperf_v4.1_mixtral_h100.csv", s)


if __name__ == "__main__":
    main()
