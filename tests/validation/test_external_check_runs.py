"""``benchmarks/external_check.py`` counts each measured run once: the sample lists some
InferenceMAX runs again in gap-analysis files, rounded to 0.01 ms and without the run's date
(so without InferenceMAX's harness); the dated reading is the one kept."""

import csv
import importlib.util
from dataclasses import replace
from pathlib import Path

from napkin.calibration.measurements.records import Harness, Measurement

ROOT = Path(__file__).resolve().parents[2]


def _external_check():
    spec = importlib.util.spec_from_file_location("external_check",
                                                  ROOT / "benchmarks" / "external_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(source: str, ttft_s: float, tpot_s: float, stated: bool) -> Measurement:
    return Measurement(source=source, backend="sglang", backend_version="0.5.9",
                       model="qwen3.5-397b-a17b", gpu="b200", weights="bf16", kv_dtype="bf16",
                       tensor_parallel=8, input_tokens=8192, output_tokens=1024,
                       harness=Harness("closed_loop", concurrency=64, stated=stated),
                       mean_ttft_s=ttft_s, mean_tpot_s=tpot_s)


def test_a_rounded_undated_copy_of_a_run_counts_once_and_the_dated_reading_stays():
    # qwen3_5_b200_sglang_bf16_agg_8192x1024_c64_cfg587 (1245.2075713023078 ms, 26.75355911400975
    # ms) and its gap-analysis copy (1245.21, 26.75) are one run
    dated = _run("cfg587", 1.2452075713023078, 0.02675355911400975, stated=True)
    copy = _run("gap_analysis_15", 1.24521, 0.02675, stated=False)
    other = replace(copy, source="gap_analysis_16", mean_ttft_s=1.30)
    runs, dropped = _external_check().distinct_runs([copy, other, dated])
    assert dropped == 1
    assert [m.source for m in runs] == ["cfg587", "gap_analysis_16"]


def test_the_rows_file_carries_each_runs_layout(tmp_path):
    # a DEP run (attention TP 1 in each of 8 data-parallel groups, experts over 8) must read as
    # such in the rows file, beside its TP-8 twin
    module = _external_check()
    dep = replace(_run("cfg1", 1.0, 0.02, stated=True), tensor_parallel=1,
                  attention_data_parallel=8, expert_parallel_size=8)
    tp = _run("cfg2", 1.1, 0.03, stated=True)
    path = tmp_path / "rows.csv"
    module.write_rows(path, [module.Prediction(dep, 0.5, 0.01, 100.0),
                             module.Prediction(tp, 0.55, 0.015, 90.0)])
    rows = list(csv.DictReader(path.open()))
    assert [(r["tp"], r["attention_dp"], r["ep"]) for r in rows] == [("1", "8", "8"),
                                                                      ("8", "1", "1")]
    assert float(rows[0]["ttft_predicted_s"]) == 0.5 and float(rows[1]["tpot_measured_s"]) == 0.03


def test_the_moe_rows_split_inside_and_outside_the_fitted_architectures():
    # the shipped vLLM profile was fitted on GQA models (gpt-oss-120b's MoE included), SGLang's
    # on dense GQA models only: vLLM's gpt-oss row is MoE inside, SGLang's DeepSeek-V3 (MLA,
    # 256 routed experts) MoE outside, vLLM's Llama-3.1-70B dense and inside
    from napkin.calibration.profile import load_profile
    module = _external_check()
    base = _run("x", 1.0, 0.02, stated=True)
    rows = [replace(base, source="gptoss", backend="vllm", model="gpt-oss-120b",
                    weights="mxfp4"),
            replace(base, source="ds", backend="sglang", model="deepseek-v3", weights="fp8"),
            replace(base, source="llama", backend="vllm", model="llama-3.1-70b",
                    weights="fp8")]
    preds = [module.Prediction(m, 0.5, 0.01, 1.0) for m in rows]
    keys = dict(module.group_keys(preds, {b: load_profile(b).domain
                                          for b in ("vllm", "sglang")}))
    held = {name: [p.row.source for p in preds if pick(p)] for name, pick in keys.items()}
    assert held["all"] == ["gptoss", "ds", "llama"]
    assert held["MoE"] == ["gptoss", "ds"]
    assert held["MoE, inside the profile's architectures"] == ["gptoss"]
    assert held["MoE, outside the profile's architectures"] == ["ds"]
    assert held["inside the profile's architectures"] == ["gptoss", "llama"]
    assert held["MoE, layout tp"] == ["gptoss", "ds"]
    assert held["MoE, attention GQA"] == ["gptoss"]
    assert held["MoE, attention MLA"] == ["ds"]
    assert held["sglang b200 deepseek-v3 fp8"] == ["ds"]
