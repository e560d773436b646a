"""``napkin serve``: the issue's acceptance commands, exports, plots, one-line errors."""

import csv
import json

import pytest

from napkin.catalog import scenario_file

UNIFORM = str(scenario_file("chapter-3-1-uniform.yaml"))
SHIFTED = str(scenario_file("chapter-3-1-shifted.yaml"))
SHIFTED_WL = str(scenario_file("chapter-3-1-shifted.workload.yaml"))


def test_fluid_reproduces_example_3_1(cli):
    code, out, _ = cli("serve", "fluid", SHIFTED_WL,
                       "--capacity-steps-s", "5591.33", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert round(doc["final_backlog_steps"]) == 112_792  # (7,471.2 − 5,591.33) × 60
    assert round(doc["drain_s"], 2) == 20.17


def test_fluid_capacity_from_a_gpu(cli, tmp_path):
    png = tmp_path / "fluid.png"
    code, out, _ = cli("serve", "fluid", SHIFTED_WL, "--gpu",
                       "rtx-pro-6000", "--count", "2", "--plot", str(png), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and png.stat().st_size > 10_000
    # 2 × 64 / 22.89 ms at 2,742 tokens (Example 3-1)
    assert doc["assumptions"]["capacity_steps_per_s"] == pytest.approx(5591.33, rel=1e-4)


def test_demand_table(cli):
    code, out, _ = cli("serve", "demand", SHIFTED_WL, "--format", "json")
    windows = json.loads(out)["windows"]
    assert code == 0
    assert [round(w["decode_steps_per_s"], 1) for w in windows] == [1736.8, 7471.2]


def test_simulate_both_orders(cli, tmp_path):
    png = tmp_path / "sim.png"
    code, out, _ = cli("serve", "simulate", UNIFORM, SHIFTED,
                       "--plot", str(png), "--export", str(tmp_path), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and png.stat().st_size > 10_000
    names = [s["name"] for s in doc["scenarios"]]
    assert names == ["chapter 3-1 uniform", "chapter 3-1 shifted"]
    for s in doc["scenarios"]:
        summary = s["summary"]
        assert summary["requests"] == 480
        # the decode work alone needs 552,480 steps ≥ 197.6 s of one card at 1,792 GB/s
        assert summary["makespan_s"] > 197.6
        assert summary["ttft"]["p95_s"] <= summary["e2e"]["p95_s"]
        assert s["inputs"]["kv_blocks"] == 10_922
    rows = list(csv.DictReader((tmp_path / "chapter-3-1-uniform.requests.csv").open()))
    assert len(rows) == 480 and {"ttft_s", "tpot_s", "preemptions"} <= set(rows[0])
    assert (tmp_path / "chapter-3-1-shifted.timeseries.csv").exists()


def test_simulate_overrides_and_parquet(cli, tmp_path):
    pyarrow = pytest.importorskip("pyarrow.parquet")
    code, out, _ = cli("serve", "simulate", UNIFORM, "--set",
                       "engine.max_num_seqs=16", "--mode", "exact", "--export", str(tmp_path),
                       "--parquet", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["scenarios"][0]["inputs"]["max_num_seqs"] == 16
    assert doc["scenarios"][0]["inputs"]["mode"] == "exact"
    table = pyarrow.read_table(tmp_path / "chapter-3-1-uniform.requests.parquet")
    assert table.num_rows == 480


def test_simulate_table_output(cli):
    code, out, _ = cli("serve", "simulate", SHIFTED)
    assert code == 0 and "p95" in out and "preemptions" in out


@pytest.mark.parametrize("args, field", [
    (["serve", "simulate", "nope.yaml"], "no such file"),
    (["serve", "simulate", UNIFORM, "--set", "engine.max_num_seqs=0"], "engine.max_num_seqs"),
    (["serve", "simulate", UNIFORM, "--set", "engine.router=random"], "engine.router"),
    (["serve", "fluid", SHIFTED_WL], "capacity"),
    (["serve", "fluid", SHIFTED_WL, "--capacity-steps-s", "-5"], "capacity"),
    (["serve", "demand", UNIFORM], "field"),
    (["serve", "sweep", UNIFORM, "--rates", "1,x"], "rates"),
    (["serve", "sweep", UNIFORM, "--rates", "0,1"], "rates"),
    (["serve", "sweep", UNIFORM, "--rates", "nan"], "rates"),
    (["serve", "sweep", UNIFORM, "--rates", "inf"], "rates"),
    (["serve", "sweep", UNIFORM, "--rates", ""], "rates"),
    (["serve", "sweep", UNIFORM, "--seeds", "0"], "seeds"),
    (["serve", "sweep", UNIFORM, "--plot", "s.txt"], "plot"),
    (["serve", "sweep", UNIFORM, "--set", "slo.share=0"], "slo.share"),
    (["serve", "sweep", UNIFORM, "--set", "slo.share=1.5"], "slo.share"),
    (["serve", "sweep", UNIFORM, "--set", "slo.ttft_s=inf"], "slo.ttft_s"),
])
def test_serve_errors_are_one_line(cli, args, field):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err


def test_sweep_finds_and_draws_the_maximum_sustainable_rate(cli, tmp_path):
    """The chapter's 2-minute uniform mix on one RTX PRO 6000: its own 4 requests/s is
    overloaded (the simulate run says so); the sweep's bracket is a sustainable load whose
    upper end is not (run, or above the capacity and decided without a run), within 3 %, and
    the figure is written."""
    png = tmp_path / "sweep.png"
    code, out, _ = cli("serve", "sweep", UNIFORM, "--rates", "auto", "--plot", str(png),
                       "--format", "json")
    assert code == 0 and png.stat().st_size > 20_000
    doc = json.loads(out)
    lo, hi = doc["bracket"]
    assert doc["max_sustainable"] == lo and hi / lo <= 1.03
    by_load = {p["load"]: p for p in doc["points"]}
    assert by_load[lo]["sustainable"] and lo <= doc["capacity"]
    assert not by_load[hi]["sustainable"] if hi in by_load else hi > doc["capacity"]
    share = doc["share"]
    assert min(s["slo_met_frac"] for s in by_load[lo]["summaries"]) >= share
    assert doc["base_load"] == pytest.approx(4.0)  # 480 requests evenly over 120 s
    assert lo < 4.0


def test_simulate_says_when_the_load_is_more_than_the_deployment_carries(cli):
    code, out, _ = cli("serve", "simulate", UNIFORM)
    assert code == 0
    line = next(x for x in out.splitlines() if "overloaded" in x)
    assert "offered 4 requests/s" in line
