"""``napkin plan`` from the command line: tables, exports, figure, one-line errors."""

import csv
import json

import pytest
import yaml

from napkin.catalog import scenario_file

TOY = {
    "name": "toy", "model": "qwen3-0.6b", "calibration": "roofline", "step_overhead_ms": 100,
    "workload": {"seed": 0, "classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
                 "arrivals": {"kind": "windows", "spacing": "even",
                              "windows": [{"duration_s": 60, "rate_per_s": 1.5}]}},
    "slo": {"ttft_s": 2.0, "tpot_s": 1.0, "share": 0.9},
    "search": {"gpus": ["h100-sxm", "h200"], "tensor_parallel": [1], "replicas": [1, 2, 3],
               "max_num_seqs": [1]},
    "seeds": 2,
}


def _write(tmp_path, data) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_plan_ranks_exports_and_draws(cli, tmp_path):
    png, out_csv = tmp_path / "pareto.png", tmp_path / "all.csv"
    code, out, _ = cli("plan", _write(tmp_path, TOY), "--jobs", "1", "--plot", str(png),
                       "--export", str(out_csv), "--format", "json")
    assert code == 0 and png.stat().st_size > 10_000
    doc = json.loads(out)
    # 2 replicas of the cheaper GPU (catalog: H100 $3.00 < H200 $4.00 per GPU-hour)
    assert doc["cheapest"]["gpu"] == "h100-sxm" and doc["cheapest"]["replicas"] == 2
    assert doc["cheapest"]["usd_per_hour"] == pytest.approx(6.0)
    assert doc["launch"]["vllm"].startswith("vllm serve Qwen/Qwen3-0.6B --tensor-parallel-size 1")
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) == 6 and {r["status"] for r in rows} == {"pruned", "feasible"}


def test_plan_table_and_other_exports(cli, tmp_path):
    path = _write(tmp_path, TOY)
    code, out, _ = cli("plan", path, "--jobs", "1", "--export", str(tmp_path / "all.json"))
    assert code == 0 and "cheapest configuration that carries the load" in out
    assert "vllm serve Qwen/Qwen3-0.6B" in out and "$3.00/GPU-hour" in out
    assert len(json.loads((tmp_path / "all.json").read_text())) == 6
    code, _, _ = cli("plan", path, "--jobs", "1", "--export", str(tmp_path / "all.parquet"))
    assert code == 0 and (tmp_path / "all.parquet").stat().st_size > 1000


@pytest.mark.parametrize(("change", "field"), [
    ({"seeds": 0}, "seeds"),
    ({"search": {"gpus": []}}, "search.gpus"),
    ({"search": {"replicas": [0]}}, "replicas"),
    ({"search": {"gpus": ["tpu-v5e"]}}, "prices"),
    ({"search": {"gpus": ["h100-sxm"], "tensor_parallel": [8], "max_gpus": 4}}, "max_gpus"),
    ({"prices": {"h100-sxm": -1}}, "prices"),
    ({"slo": {"share": 2}}, "slo.share"),
    ({"model": "nope"}, "nope"),
    ({"colour": 1}, "colour"),
    ({"calibration": "vllm"}, "step_overhead_ms"),
    ({"calibration": "nope", "step_overhead_ms": None}, "nope"),
    ({"weights": "fp9"}, "fp9"),
    ({"slo": {"ttft_s": float("nan")}}, "slo.ttft_s"),
    ({"workload": "missing.yaml"}, "missing.yaml"),
])
def test_plan_errors_are_one_line(cli, tmp_path, change, field):
    code, out, err = cli("plan", _write(tmp_path, {**TOY, **change}), "--jobs", "1")
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err, err


@pytest.mark.parametrize(("option", "value", "field"), [
    ("--export", "x.txt", "export"), ("--plot", "x.csv", "plot"), ("--jobs", "-1", "jobs"),
    ("--executor", "dask", "executor"), ("--ray-address", "x:1", "ray-address")])
def test_plan_option_errors(cli, tmp_path, option, value, field):
    path = str(tmp_path / value) if option in ("--export", "--plot") else value
    code, out, err = cli("plan", _write(tmp_path, TOY), option, path)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err, err


@pytest.mark.slow
def test_the_70b_question(cli):
    """The shipped 70B plan searches 336 configurations over H100, H200 and B200 and names
    the cheapest feasible one with its launch commands (benchmarks/plan_speed.py times it)."""
    code, out, _ = cli("plan", str(scenario_file("plan-llama-70b-fp8.yaml")), "--format",
                       "json")
    doc = json.loads(out)
    assert code == 0 and doc["search"]["candidates"] == 336
    assert {e["gpu"] for e in doc["evaluations"]} == {"h100-sxm", "h200", "b200"}
    best = doc["cheapest"]
    assert best["status"] == "feasible" and best["slo_met_frac"] >= 0.95
    assert all(e["usd_per_hour"] >= best["usd_per_hour"] for e in doc["evaluations"]
               if e["status"] == "feasible")
    assert doc["launch"]["vllm"].startswith("vllm serve meta-llama/Llama-3.1-70B")
