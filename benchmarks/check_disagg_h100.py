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
import re
import statistics
from pathlib import Path

from arguments import whole_number
from napkin.api.serving import simulate
from napkin.calibration.measurements.aiconfigurator import SILICON_CONCURRENCY
from napkin.calibration.measurements.catalog_ids import catalog_gpu_id, catalog_model_id
from napkin.calibration.measurements.fields import (
    as_number,
    csv_table,
    fail,
    is_missing,
    positive_float,
    positive_int,
)
from napkin.errors import NapkinError
from napkin.units import MS

WEIGHTS = {"fp8": "fp8", "fp8_block": "fp8"}
COLUMNS = ("id", "backend", "model_path", "system", "precision", "mode", "isl", "osl",
           "gemm_quant_mode", "silicon_ttft_ms", "silicon_tpot_ms", "silicon_data_source",
           *(f"{pool}_{k}" for pool in ("prefill", "decode")
             for k in ("num_workers", "tp_size", "attention_dp_size", "moe_ep_size")))
"""The sample's columns this script reads."""


def _size(row: dict[str, str], where: str, column: str) -> int:
    """A parallel size or a worker count: empty or 0 mean 1."""
    value = row[column]
    return 1 if is_missing(value) or as_number(value) == 0 else positive_int(value, where, column)


def run_of(line: int, row: dict[str, str]) -> tuple[int, float, float]:
    """(clients, measured mean TTFT s, measured mean TPOT s) of a row; a bad cell is one
    error line naming the line and the column."""
    where = f"line {line}"
    found = SILICON_CONCURRENCY.search(row["silicon_data_source"])
    if found is None:
        fail(where, "silicon_data_source", "states no silicon_concurrency")
    return (int(found.group(1)),
            positive_float(row["silicon_ttft_ms"], where, "silicon_ttft_ms") * MS,
            positive_float(row["silicon_tpot_ms"], where, "silicon_tpot_ms") * MS)


def scenario_of(line: int, row: dict[str, str], cycles: int) -> dict:
    """The row as a napkin scenario (module docstring)."""
    where = f"line {line}"
    clients = run_of(line, row)[0]
    ptp, pdp, pep = (_size(row, where, f"prefill_{k}") for k in ("tp_size", "attention_dp_size",
                                                                 "moe_ep_size"))
    dtp, ddp, dep = (_size(row, where, f"decode_{k}") for k in ("tp_size", "attention_dp_size",
                                                                "moe_ep_size"))
    weights = WEIGHTS.get(row["gemm_quant_mode"] or row["precision"], row["precision"])
    lengths = {"input_tokens": positive_int(row["isl"], where, "isl"),
               "output_tokens": positive_int(row["osl"], where, "osl")}
    return {
        "name": row["id"][-60:], "model": catalog_model_id(row["model_path"]),
        "gpu": catalog_gpu_id(row["system"]), "weights": weights, "kv_dtype": "fp8",
        "calibration": row["backend"],
        "workload": {"seed": 0, "classes": {"c": lengths},
                     "arrivals": {"kind": "closed_loop", "clients": clients,
                                  "num_requests": clients * cycles}},
        "engine": {
            "backend": row["backend"], "tensor_parallel": dtp, "data_parallel": ddp,
            "expert_parallel": dep > 1, "max_num_seqs": clients,
            "disaggregated": {
                "prefill_replicas": _size(row, where, "prefill_num_workers"),
                "decode_replicas": _size(row, where, "decode_num_workers"),
                "prefill_tensor_parallel": ptp, "prefill_data_parallel": pdp,
                "prefill_expert_parallel": pep > 1}}}


def distinct(rows: list[tuple[int, dict[str, str]]]) -> list[tuple[int, dict[str, str]]]:
    """Each run once: the sample lists some runs under two exports (the same backend, model,
    lengths, layouts, clients and times to 0.01 ms); runs of the same configuration that
    measured other times are kept, each a run. A row whose times or clients do not read is
    kept, to be refused on its own line."""
    seen, out = set(), []
    for line, r in rows:
        try:
            measured = tuple(round(v, 5) for v in run_of(line, r))
        except NapkinError:
            out.append((line, r))
            continue
        key = (r["backend"], r["model_path"], r["isl"], r["osl"], measured,
               *(r[c] for c in COLUMNS if c.startswith(("prefill_", "decode_"))))
        if key not in seen:
            seen.add(key)
            out.append((line, r))
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
    try:
        table = csv_table(args.sample, COLUMNS)
    except NapkinError as e:
        ap.error(str(e))
    rows = distinct([(line, r) for line, r in table if r["mode"] == "disagg"
                     and re.search("h100", r["system"], re.I)])
    errors: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for line, row in rows[:args.limit]:
        try:
            clients, ttft_s, tpot_s = run_of(line, row)
            (report,) = simulate(scenario_of(line, row, args.cycles)).value["reports"]
        except NapkinError as e:
            print(f"{row['id'] or f'line {line}'}: skipped ({e})")
            continue
        s = report.summary
        ttft, tpot = s.ttft.mean_s / ttft_s - 1, s.tpot.mean_s / tpot_s - 1
        errors.setdefault((row["backend"], row["model_path"]), []).append((ttft, tpot))
        print(f"{row['backend']:7} {row['model_path']:26} {row['isl']:>5}/{row['osl']:<5} "
              f"c{clients:>4}  TTFT {s.ttft.mean_s * 1e3:8.1f} vs {ttft_s * 1e3:8.1f} ms "
              f"({ttft:+.0%})  TPOT {s.tpot.mean_s * 1e3:6.2f} vs {tpot_s * 1e3:6.2f} ms "
              f"({tpot:+.0%})")
    for (backend, model), e in sorted(errors.items()):
        print(f"{backend} {model}: {len(e)} runs, median napkin/measured − 1: TTFT "
              f"{statistics.median(t for t, _ in e):+.1%}, TPOT "
              f"{statistics.median(p for _, p in e):+.1%}; median |error| TTFT "
              f"{statistics.median(abs(t) for t, _ in e):.1%}, TPOT "
              f"{statistics.median(abs(p) for _, p in e):.1%}")


if __name__ == "__main__":
    main()
