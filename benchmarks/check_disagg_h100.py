"""The silicon sample's disaggregated H100 rows against napkin, timed by hand.

aiconfigurator's silicon sample holds its H100 DeepSeek runs only as disaggregated serving
(``mode`` ``disagg``: SGLang 0.5.8 DeepSeek-R1 with prefill and decode each at TP 16 over two
nodes; TensorRT-LLM under Dynamo 0.8.1 DeepSeek-R1 at TP 16 × EP 16 and DeepSeek-V3 with a
DEP16 prefill), which :func:`napkin.calibration.measurements.aiconfigurator.
read_aiconfigurator_csv` does not read (it keeps ``agg`` rows). The H100 rows may be fitted on
(``shared/validation/README.md``); this script only scores them, so it reads the sample from a
path you give, as ``external_check.py`` does::

    python benchmarks/check_disagg_h100.py \
        aiconfigurator/aic-core/src/aiconfigurator_core/systems/silicon_sample.csv

Each row runs as one scenario of the shipped profile of its backend: a prefill pool and a
decode pool in the row's layouts (``prefill_num_workers`` and ``decode_num_workers`` replicas,
1 where empty), the KV sent over the prefill ranks' NICs (napkin's default once the pools
span more than one node: 50 GB/s a GPU), a closed loop of the row's ``silicon_concurrency``
clients with the row's fixed input and output lengths, ``--cycles`` requests a client (4 by
default). The
harness's own latencies and length spread are not modelled (a by-hand reading, not a replay:
``validation/replay.py`` replays aggregated rows only). Each run once (:func:`distinct`). Prints
napkin / measured − 1 of mean TTFT and TPOT per run and their medians per backend and model.

Usage: python benchmarks/check_disagg_h100.py SAMPLE.csv [--cycles N] [--limit N]
"""

import argparse
import csv
import re
import statistics
from pathlib import Path

from arguments import whole_number
from napkin.api.serving import simulate
from napkin.calibration.measurements.aiconfigurator import SILICON_CONCURRENCY
from napkin.calibration.measurements.catalog_ids import catalog_gpu_id, catalog_model_id
from napkin.errors import NapkinError, require

WEIGHTS = {"fp8": "fp8", "fp8_block": "fp8"}
COLUMNS = ("id", "backend", "model_path", "system", "precision", "mode", "isl", "osl",
           "gemm_quant_mode", "silicon_ttft_ms", "silicon_tpot_ms", "silicon_data_source",
           *(f"{pool}_{k}" for pool in ("prefill", "decode")
             for k in ("num_workers", "tp_size", "attention_dp_size", "moe_ep_size")))
"""The sample's columns this script reads."""


def _size(value: str) -> int:
    """A parallel size or a worker count: empty or 0 mean 1."""
    return max(int(value or 1), 1)


def scenario_of(row: dict[str, str], cycles: int) -> dict:
    """The row as a napkin scenario (module docstring)."""
    found = SILICON_CONCURRENCY.search(row["silicon_data_source"])
    require(found is not None, f"row {row['id']}: no silicon_concurrency in its source")
    clients = int(found.group(1))
    ptp, pdp, pep = (_size(row[f"prefill_{k}"]) for k in ("tp_size", "attention_dp_size",
                                                          "moe_ep_size"))
    dtp, ddp, dep = (_size(row[f"decode_{k}"]) for k in ("tp_size", "attention_dp_size",
                                                         "moe_ep_size"))
    weights = WEIGHTS.get(row["gemm_quant_mode"] or row["precision"], row["precision"])
    lengths = {"input_tokens": int(row["isl"]), "output_tokens": int(row["osl"])}
    return {
        "name": row["id"][-60:], "model": catalog_model_id(row["model_path"]),
        "gpu": catalog_gpu_id(row["system"]), "weights": weights, "kv_dtype": "fp8",
        "calibration": row["backend"],
        "workload": {"seed": 0, "classes": {"c": lengths},
                     "arrivals": {"kind": "closed_loop", "clients": clients,
                                  "num_requests": clients * cycles}},
        "engine": {
            "backend": row["backend"], "tensor_parallel": dtp, "data_parallel": ddp,
            "expert_parallel": dep > 1, "max_num_seqs": max(clients, 1),
            "disaggregated": {
                "prefill_replicas": _size(row["prefill_num_workers"]),
                "decode_replicas": _size(row["decode_num_workers"]),
                "prefill_tensor_parallel": ptp, "prefill_data_parallel": pdp,
                "prefill_expert_parallel": pep > 1}}}


def distinct(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Each run once: the sample lists some runs under two exports (the same backend, model,
    lengths, layouts, clients and times to 0.01 ms); runs of the same configuration that
    measured other times are kept, each a run."""
    seen, out = set(), []
    for r in rows:
        found = SILICON_CONCURRENCY.search(r["silicon_data_source"])
        key = (r["backend"], r["model_path"], r["isl"], r["osl"],
               found.group(1) if found else "",
               *(r[c] for c in r if c.startswith(("prefill_", "decode_"))),
               round(float(r["silicon_ttft_ms"]), 2), round(float(r["silicon_tpot_ms"]), 2))
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sample", type=Path, help="aiconfigurator's silicon_sample.csv")
    ap.add_argument("--cycles", type=whole_number, default=4,
                    help="requests a client (default 4)")
    ap.add_argument("--limit", type=whole_number, default=None,
                    help="score at most this many rows (default: all)")
    args = ap.parse_args()
    if not args.sample.is_file():
        ap.error(f"sample: {args.sample} is not a file")
    with args.sample.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            ap.error(f"sample: {args.sample} lacks the silicon sample's columns "
                     f"{', '.join(missing)}")
        rows = distinct([r for r in reader if r["mode"] == "disagg"
                         and re.search("h100", r["system"], re.I)])
    errors: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for row in rows[:args.limit]:
        try:
            (report,) = simulate(scenario_of(row, args.cycles)).value["reports"]
        except NapkinError as e:
            print(f"{row['id']}: skipped ({e})")
            continue
        s = report.summary
        ttft = s.ttft.mean_s / (float(row["silicon_ttft_ms"]) * 1e-3) - 1
        tpot = s.tpot.mean_s / (float(row["silicon_tpot_ms"]) * 1e-3) - 1
        errors.setdefault((row["backend"], row["model_path"]), []).append((ttft, tpot))
        print(f"{row['backend']:7} {row['model_path']:26} {row['isl']:>5}/{row['osl']:<5} "
              f"c{SILICON_CONCURRENCY.search(row['silicon_data_source']).group(1):>4}  "
              f"TTFT {s.ttft.mean_s * 1e3:8.1f} vs {float(row['silicon_ttft_ms']):8.1f} ms "
              f"({ttft:+.0%})  TPOT {s.tpot.mean_s * 1e3:6.2f} vs "
              f"{float(row['silicon_tpot_ms']):6.2f} ms ({tpot:+.0%})")
    for (backend, model), e in sorted(errors.items()):
        print(f"{backend} {model}: {len(e)} runs, median napkin/measured − 1: TTFT "
              f"{statistics.median(t for t, _ in e):+.1%}, TPOT "
              f"{statistics.median(p for _, p in e):+.1%}; median |error| TTFT "
              f"{statistics.median(abs(t) for t, _ in e):.1%}, TPOT "
              f"{statistics.median(abs(p) for _, p in e):.1%}")


if __name__ == "__main__":
    main()
