"""Screen (writes nothing): the TensorRT-LLM profile refitted with TensorRT-LLM's perf-overview
H100 throughputs of Qwen3-235B-A22B DEP8 and Llama-3.3-70B TP2 added to the shipped H100 rows,
as ``burst`` rows with an output throughput (the fit's ``throughput`` target), cross-validated
leave-one-group-out; prints the hold-out of every metric and of each perf-overview row.

The rows replay as ``benchmarks/check_moe_h100.py`` replays them (trtllm-bench's batch cap and
token budget, chunked prefill off, 95 % of free memory, the FP8 checkpoints' KV cache in
``--kv``); gpt-oss is left out (its rows hold out the weight-only coefficient ``dense_w4a16``,
which the silicon sample's gpt-oss rows set). Several minutes on two cores.

Usage: python benchmarks/screen_trtllm_throughput.py [--kv fp8|bf16] [--gptoss] [--add TERMS]
"""

import argparse
import csv
import time

from check_moe_h100 import MODELS, SHARED, WEIGHTS, layout_of
from fit_profiles import CAMPAIGNS, EXTRA, NOTES, PROTOCOLS, ROUNDS, _rows, _terms, screened_terms
from napkin.accounting.forward import Precision
from napkin.calibration.measurements.records import Harness, Launch, Measurement
from napkin.catalog import load_accelerator, load_model
from napkin.validation.calibrate import calibrate
from napkin.validation.trtllm_bench import bench_settings

FRACTION = 0.95
"""``kv_cache_free_gpu_mem_fraction`` (the table's notes: 0.95 "in many cases")."""


def perf_overview_rows(kv: str, gptoss: bool = False) -> list[Measurement]:
    """The table's H100 rows of the FP8 checkpoints as burst throughput rows, and with
    ``gptoss`` gpt-oss's too (W4A16 with a BF16 KV cache, as ``check_moe_h100.py`` reads
    them)."""
    acc, out = load_accelerator("h100-sxm"), []
    for row in csv.DictReader((SHARED / "trtllm_perf_overview_h100.csv").open()):
        model = MODELS[row["model"]]
        if model.startswith("gpt-oss") and not gptoss:
            continue
        weights = WEIGHTS.get(model, "fp8")
        row_kv = kv if weights == "fp8" else "bf16"
        tp, dp, ep = layout_of(row["parallelism"])
        isl, osl = int(row["isl"]), int(row["osl"])
        b = bench_settings(load_model(model), Precision.of(weights, row_kv), acc, tp * dp, isl,
                           osl, FRACTION, attention_dp=dp > 1)
        out.append(Measurement(
            f"perf-overview:{model}:{row['parallelism']}:{isl}/{osl}", "trtllm", "1.2", model,
            "h100-sxm", weights, tp, isl, osl,
            Harness("burst", num_requests=int(row["num_requests"] or 1000)), kv_dtype=row_kv,
            output_tokens_per_s=float(row["value"]) * tp * dp, expert_parallel_size=ep,
            attention_data_parallel=dp,
            launch=Launch(b.max_batch_size, b.max_num_tokens, FRACTION, chunked_prefill=False,
                          source="trtllm-bench heuristic")))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv", choices=("fp8", "bf16"), default="fp8",
                    help="KV-cache format of the FP8 checkpoints' runs (default fp8)")
    ap.add_argument("--gptoss", action="store_true",
                    help="add gpt-oss's rows too (W4A16, BF16 KV)")
    ap.add_argument("--add", type=_terms, default=(),
                    help="comma-separated terms to fit beside the shipped set")
    args = ap.parse_args()
    extra = perf_overview_rows(args.kv, args.gptoss)
    rows = [m for name in ("aiconfigurator_h100.csv", *EXTRA.get("trtllm", ()))
            for m in _rows(name)] + extra
    t = time.time()
    cal = calibrate(rows, "trtllm", source_notes=NOTES, protocol=PROTOCOLS["trtllm"],
                    rounds=ROUNDS.get("trtllm", 4), progress=lambda s: print("  ", s),
                    jobs=0, terms=screened_terms("trtllm", (), args.add),
                    campaigns=CAMPAIGNS.get("trtllm", ()))
    for name, s in cal.holdout.overall.items():
        print(f"hold-out {name}: {s.rows} rows, median |error| {s.median_abs_error:.1%} "
              f"(bias {s.bias:+.1%})")
    for p in cal.holdout.predictions:
        if p.row.source.startswith("perf-overview:"):
            print(f"  {p.row.source}: {p.output_tokens_per_s / p.row.output_tokens_per_s - 1:+.1%}")
    print(f"{time.time() - t:.0f} s; coefficients {cal.profile.model.as_dict()}")


if __name__ == "__main__":
    main()
