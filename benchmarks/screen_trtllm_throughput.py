"""Screen (writes nothing): the TensorRT-LLM profile refitted with TensorRT-LLM's perf-overview
H100 throughputs of Qwen3-235B-A22B DEP8 and Llama-3.3-70B TP2 added to the shipped H100 rows,
as ``burst`` rows with an output throughput (the fit's ``throughput`` target), cross-validated
leave-one-group-out; prints the hold-out of every metric and of each perf-overview row.

The rows are the shipped set ``trtllm-perf-overview`` (:mod:`napkin.validation.perf_overview`:
trtllm-bench's batch cap and token budget, chunked prefill off, 95 % of free memory, the FP8
checkpoints' KV cache in ``--kv``); gpt-oss is left out (its rows hold out the weight-only
coefficient ``dense_w4a16``, which the silicon sample's gpt-oss rows set). Several minutes on
two cores.

Usage: python benchmarks/screen_trtllm_throughput.py [--kv fp8|bf16] [--gptoss] [--add TERMS]
"""

import argparse
import time

from fit_profiles import CAMPAIGNS, EXTRA, NOTES, PROTOCOLS, ROUNDS, _rows, _terms, screened_terms
from napkin.validation.calibrate import calibrate
from napkin.validation.perf_overview import PERF_OVERVIEW_TABLE, perf_overview_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv", choices=("fp8", "bf16"), default="fp8",
                    help="KV-cache format of the FP8 checkpoints' runs (default fp8)")
    ap.add_argument("--gptoss", action="store_true",
                    help="add gpt-oss's rows too (W4A16, BF16 KV)")
    ap.add_argument("--add", type=_terms, default=(),
                    help="comma-separated terms to fit beside the shipped set")
    args = ap.parse_args()
    extra = [m for m in perf_overview_rows(kv=args.kv)
             if args.gptoss or not m.model.startswith("gpt-oss")]
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
        if p.row.source.startswith(PERF_OVERVIEW_TABLE):
            print(f"  {p.row.source}: {p.output_tokens_per_s / p.row.output_tokens_per_s - 1:+.1%}")
    print(f"{time.time() - t:.0f} s; coefficients {cal.profile.model.as_dict()}")


if __name__ == "__main__":
    main()
