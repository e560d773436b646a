"""napkin's external check: the shipped profiles, as fitted, on measurements they never saw.

The profiles are fitted on the H100 rows of aiconfigurator's silicon sample only. This script
scores them on the sample's other GPUs (H200, B200, B300, GB200 …), which napkin must not fit
on, so it reads the sample from a path you give (napkin does not ship those rows)::

    git clone https://github.com/ai-dynamo/aiconfigurator
    python benchmarks/external_check.py \
        aiconfigurator/aic-core/src/aiconfigurator_core/systems/silicon_sample.csv

It keeps the aggregated (``agg``, ``pp_size`` 1) rows on GPUs other than H100 whose model is in
napkin's catalog (a quantized checkpoint such as ``nvidia/Llama-3.1-8B-Instruct-FP8`` counts as
its base model at the row's precision), each run once (:func:`distinct_runs`), replays each
under its backend's shipped profile and prints the median |error| of mean TTFT and TPOT per
backend, GPU and precision, and the worst rows. Rows whose replay napkin refuses (weights that
do not fit, a GPU not in the catalog) are counted and named, not scored. Rows replay in one
process per core (``--jobs N`` to change); ``--backend B`` keeps one engine's rows, ``--rows
FILE.csv`` writes every scored row (its layout, measured and predicted TTFT and TPOT, seconds)
for a closer look, ``--engine-defaults`` replays every row with its engine's launch defaults
instead of the flags InferenceMAX's scripts launched it with
(``napkin.calibration.inferencemax``; the KV format stays the row's), ``--profile BACKEND=FILE``
scores a candidate profile (a screen that ``benchmarks/fit_profiles.py --out DIR`` wrote) in
place of that backend's shipped one. Beside each median, the table gives the 90th percentile of
|error|: the median hides a tail of rows that are off by several times. Rows are grouped inside
and outside the architectures each backend's profile was fitted on (attention kinds, routed
experts a layer: the profile's domain); the MoE rows (issue 33's headline figure) as a whole,
inside and outside those architectures, by their parallel layout (``tp``, ``tp ep``,
``dp``, ``dp ep``: :attr:`napkin.specs.layout.ParallelLayout.kind`), each replayed in it, and
by their attention kinds (GQA, MLA, DSA …).
"""

import argparse
import csv
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from napkin.calibration.measurements.aiconfigurator import (
    AICONFIGURATOR_COLUMNS,
    AICONFIGURATOR_PARALLEL_COLUMNS,
    read_aiconfigurator_csv,
)
from napkin.calibration.measurements.catalog_ids import catalog_gpu_id, catalog_model_id
from napkin.calibration.measurements.records import Measurement
from napkin.calibration.profile import Domain, attention_kinds, load_profile
from napkin.calibration.protocol import Protocol, assume, campaigns_of
from napkin.catalog import load_model
from napkin.errors import NapkinError, require
from napkin.validation.fit import Prediction, fitted_timer
from napkin.validation.replay import BACKENDS, check_layout, replay

COLUMNS = AICONFIGURATOR_COLUMNS + AICONFIGURATOR_PARALLEL_COLUMNS


def external_rows(path: Path) -> tuple[list[dict[str, str]], Counter[str]]:
    """The sample's rows napkin can replay and that no profile was fitted on (a file without
    the sample's columns is refused with one line naming them)."""
    keep, skipped = [], Counter()
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in AICONFIGURATOR_COLUMNS if c not in (reader.fieldnames or ())]
        require(not missing, f"sample: {path} lacks the silicon sample's columns "
                f"{', '.join(missing)}")
        for row in reader:
            if row["mode"] != "agg" or row["pp_size"] != "1":
                continue
            if catalog_gpu_id(row["system"]) == "h100-sxm":
                continue  # fitted on
            try:
                catalog_model_id(row["model_path"])
            except NapkinError:
                skipped[f"model {row['model_path']} not in the catalog"] += 1
                continue
            keep.append({k: row.get(k, "") for k in COLUMNS})
    return keep, skipped


def distinct_runs(rows: list[Measurement]) -> tuple[list[Measurement], int]:
    """``rows`` without the repeats of one run, and how many were dropped: a run counts once in
    the medians. The sample lists some InferenceMAX runs under two exports, a dated id and a
    database id, with the same measured TTFT and TPOT to the last digit, and some a third time
    in a gap-analysis file (``qwen3.5-397b-gap-analysis.csv``, ``kimi-k2.5-gap-analysis.csv``)
    rounded to 0.01 ms and without the run's date, which reads as no known harness; so times
    are compared at 0.01 ms and a run read under InferenceMAX's client (a stated harness) is
    kept before its undated copy. The model is not part of a run's identity: the database lists
    its DeepSeek-R1 runs (ids ``dsr1_…``) under ``deepseek-ai/DeepSeek-V3``, the same
    architecture, beside the dated exports' DeepSeek-R1."""
    seen: set[tuple] = set()
    out = []
    for m in sorted(rows, key=lambda m: not m.harness.stated):
        key = (m.backend, m.gpu, m.weights, m.tensor_parallel, m.input_tokens,
               m.output_tokens, m.harness.concurrency, round(m.mean_ttft_s, 5),
               round(m.mean_tpot_s, 5))
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out, len(rows) - len(out)


def _median(errors: list[float]) -> str:
    """Median |error|, in brackets the bias (median signed error), then the 90th percentile of
    |error|."""
    if not errors:
        return "     —                   "
    a = np.abs(errors)
    return f"{np.median(a):6.1%} ({np.median(errors):+6.1%}) {np.quantile(a, 0.9):7.0%}"


def write_rows(path: Path, preds: list[Prediction]) -> None:
    """One CSV line per scored row: what it is (its layout: ``tp`` attention TP within each of
    ``attention_dp`` groups, ``ep`` expert-parallel groups), and measured and predicted TTFT and
    TPOT (s)."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "backend", "backend_version", "gpu", "model", "weights", "tp",
                    "attention_dp", "ep", "input_tokens", "output_tokens", "concurrency",
                    "ttft_measured_s", "ttft_predicted_s", "tpot_measured_s", "tpot_predicted_s"])
        for p in preds:
            m = p.row
            w.writerow([m.source.split(":", 1)[-1], m.backend, m.backend_version, m.gpu,
                        m.model, m.weights, m.tensor_parallel, m.attention_data_parallel,
                        m.expert_parallel_size, m.input_tokens, m.output_tokens,
                        m.harness.concurrency, m.mean_ttft_s, p.ttft_s, m.mean_tpot_s,
                        p.tpot_s])


Pick = Callable[[Prediction], bool]


def group_keys(preds: list[Prediction], domains: dict[str, Domain]) -> list[tuple[str, Pick]]:
    """The table's groups, each a name and which rows it holds: all rows; inside and outside
    the architectures each backend's profile was fitted on (``domains``: its
    :attr:`~napkin.calibration.profile.Profile.domain`); per backend; the MoE rows (the issue's
    headline), inside and outside the fitted architectures, per parallel layout and per
    attention kind; then per backend, GPU, model and weights."""
    unseen = {(p.row.backend, p.row.model) for p in preds
              if domains[p.row.backend].architecture_outside(load_model(p.row.model))}
    moe = {m: load_model(m).is_moe for m in {p.row.model for p in preds}}

    def outside(p: Prediction) -> bool:
        return (p.row.backend, p.row.model) in unseen

    def kind(p: Prediction) -> str:
        """The row's layout kind (MoE models): tp, tp ep, dp, dp ep."""
        return check_layout(p.row, load_model(p.row.model)).kind

    keys: list[tuple[str, Pick]] = [("all", lambda p: True)]
    keys += [(f"{side} the profile's architectures", lambda p, out=out: outside(p) == out)
             for side, out in (("inside", False), ("outside", True))]
    keys += [(b, lambda p, b=b: p.row.backend == b)
             for b in sorted({p.row.backend for p in preds})]
    keys += [("MoE", lambda p: moe[p.row.model])]
    keys += [(f"MoE, {side} the profile's architectures",
              lambda p, out=out: moe[p.row.model] and outside(p) == out)
             for side, out in (("inside", False), ("outside", True))]
    keys += [(f"MoE, layout {k}", lambda p, k=k: moe[p.row.model] and kind(p) == k)
             for k in sorted({kind(p) for p in preds if moe[p.row.model]})]
    attention = {m: "+".join(k.upper() for k in attention_kinds(load_model(m))) for m in moe}
    keys += [(f"MoE, attention {a}", lambda p, a=a: moe[p.row.model]
              and attention[p.row.model] == a)
             for a in sorted({attention[p.row.model] for p in preds if moe[p.row.model]})]
    groups = sorted({(p.row.backend, p.row.gpu, p.row.model, p.row.weights) for p in preds})
    keys += [(" ".join(g), lambda p, g=g: (p.row.backend, p.row.gpu, p.row.model,
                                           p.row.weights) == g) for g in groups]
    return keys


def _replay(task: tuple[Measurement, str]) -> Prediction | str:
    """One row under a profile (a shipped name or a file), or why napkin refused it."""
    m, ref = task
    profile = load_profile(ref)
    try:
        r = replay(m, fitted_timer(profile.model))
    except NapkinError as e:
        return f"{m.backend} {m.model} on {m.gpu}: {str(e)[:60]}"
    return Prediction(m, r.mean_ttft_s, r.mean_tpot_s, r.output_tokens_per_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sample", type=Path, help="aiconfigurator's silicon_sample.csv")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="processes (default: one per core)")
    parser.add_argument("--backend", help="only this engine's rows (vllm, trtllm, sglang)")
    parser.add_argument("--rows", type=Path, help="write every scored row to this CSV")
    parser.add_argument("--engine-defaults", action="store_true",
                        help="replay with engine launch defaults, not InferenceMAX's flags")
    parser.add_argument("--profile", action="append", default=[], metavar="BACKEND=FILE",
                        help="score this profile file instead of the backend's shipped one "
                             "(a screen from fit_profiles.py --out); repeatable")
    args = parser.parse_args()
    profiles: dict[str, str] = {}
    for item in args.profile:
        backend, _, path = item.partition("=")
        try:
            require(backend in BACKENDS, f"backend {backend!r} not one of {', '.join(BACKENDS)}")
            require(load_profile(path).backend == backend, f"{path} is not a {backend} profile")
        except NapkinError as e:
            parser.error(f"--profile {item}: {e} (want BACKEND=FILE, FILE a profile that "
                         "fit_profiles.py --out wrote)")
        profiles[backend] = path
    try:
        require(args.sample.is_file(), f"sample: {args.sample} is not a file")
        rows, skipped = external_rows(args.sample)
    except NapkinError as e:
        parser.error(str(e))
    except (UnicodeDecodeError, csv.Error) as e:
        parser.error(f"sample: {args.sample} is not a UTF-8 CSV ({e})")
    if args.backend:
        rows = [r for r in rows if r["backend"] == args.backend]
    with tempfile.NamedTemporaryFile("w", suffix=".csv", newline="", delete=False) as tmp:
        w = csv.DictWriter(tmp, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    measurements, repeats = distinct_runs(read_aiconfigurator_csv(tmp.name))
    Path(tmp.name).unlink()
    print(f"{repeats} repeats of a run already read dropped (the sample lists some runs under "
          "two exports)")
    launched = sum(m.launch is not None for m in measurements)
    if args.engine_defaults:
        measurements = [replace(m, launch=None) for m in measurements]
    print(f"{launched} of {len(measurements)} rows carry InferenceMAX launch flags"
          f"{' (ignored: --engine-defaults)' if args.engine_defaults else ''}")
    t = time.time()
    assumed = []
    for backend in sorted({m.backend for m in measurements}):
        profile = load_profile(profiles.get(backend, backend))
        assumed += assume([m for m in measurements if m.backend == backend],
                          Protocol.of(profile.harness), campaigns_of(profile.harness))
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(_replay, [(m, profiles.get(m.backend, m.backend))
                                          for m in assumed], chunksize=8))
    preds: list[Prediction] = []
    for out in results:
        if isinstance(out, str):
            skipped[out] += 1
        else:
            preds.append(out)
    print(f"{len(preds)} rows replayed in {time.time() - t:.0f} s; skipped:")
    for why, n in skipped.most_common():
        print(f"  {n:4d}  {why}")

    def errors(sub: list[Prediction]) -> tuple[list[float], list[float]]:
        ttft = [p.ttft_s / p.row.mean_ttft_s - 1 for p in sub if p.row.mean_ttft_s]
        tpot = [p.tpot_s / p.row.mean_tpot_s - 1 for p in sub if p.row.mean_tpot_s]
        return ttft, tpot

    if args.rows:
        write_rows(args.rows, preds)
    print(f"\n{'group':52s} {'rows':>5s} {'TTFT':>24s} {'TPOT':>24s}   median |error| "
          "(bias) p90 |error|")
    domains = {b: load_profile(profiles.get(b, b)).domain for b in {p.row.backend
                                                                     for p in preds}}
    keys = group_keys(preds, domains)
    for name, pick in keys:
        sub = [p for p in preds if pick(p)]
        ttft, tpot = errors(sub)
        print(f"{name:52s} {len(sub):5d} {_median(ttft)} {_median(tpot)}")
    worst = sorted(preds, key=lambda p: -abs(p.ttft_s / p.row.mean_ttft_s - 1))[:8]
    print("\nworst TTFT rows:")
    for p in worst:
        m = p.row
        print(f"  {m.source.split(':', 1)[1][:70]:70s} {p.ttft_s / m.mean_ttft_s - 1:+7.0%}"
              f"  (measured {m.mean_ttft_s * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
