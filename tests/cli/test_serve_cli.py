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


# --- serve metrics: latency from a log; serve little: state held by tool waits ---------------

LOG_CSV = """request_id,arrival_s,first_token_s,last_token_s,output_tokens
a,0.0,0.5,2.5,5
b,1.0,1.2,1.2,1
c,2.0,3.0,7.0,9
d,3.0,3.1,4.1,11
"""


def test_metrics_from_a_csv_log(cli, tmp_path):
    """Hand derivation. TTFT = t₁ − tₐ: 0.5, 0.2, 1.0, 0.1 s → sorted 0.1, 0.2, 0.5, 1.0;
    mean 1.8/4 = 0.45; p50 is the ⌈0.5·4⌉ = 2nd (0.2), p90 the ⌈3.6⌉ = 4th (1.0).
    TPOT = (t_G − t₁)/(G − 1), only G > 1: a 2.0/4 = 0.5, c 4.0/8 = 0.5, d 1.0/10 = 0.1;
    mean 1.1/3. e2e = t_G − tₐ: 2.5, 0.2, 5.0, 1.1; p50 the 2nd smallest (1.1), mean 2.2.
    The chapter (§3.1.2): 'Для четырёх запросов p95 равен максимальному значению' — p95 of
    four requests is the largest (TTFT 1.0, e2e 5.0)."""
    log = tmp_path / "log.csv"
    log.write_text(LOG_CSV)
    code, out, _ = cli("serve", "metrics", str(log), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["requests"] == 4 and doc["output_tokens"] == 26
    ttft, tpot, e2e = doc["ttft"], doc["tpot"], doc["e2e"]
    assert ttft["mean_s"] == pytest.approx(0.45)
    assert ttft["p50_s"] == pytest.approx(0.2) and ttft["p90_s"] == pytest.approx(1.0)
    assert ttft["p95_s"] == pytest.approx(1.0)
    assert tpot["requests"] == 3 and tpot["mean_s"] == pytest.approx(1.1 / 3)
    assert tpot["p50_s"] == pytest.approx(0.5)
    assert e2e["p50_s"] == pytest.approx(1.1) and e2e["mean_s"] == pytest.approx(2.2)
    assert e2e["p95_s"] == pytest.approx(5.0)
    code, out, _ = cli("serve", "metrics", str(log))
    assert code == 0 and "TTFT" in out and "p95" in out


def test_metrics_p95_of_480_requests_is_the_456th(cli, tmp_path):
    """Chapter §3.1.2: 'для 480 запросов — 456-му значению'. Request i (1…480, shuffled order)
    arrives at 0 and finishes at i s: the p95 end-to-end is 456 s; --percentiles 99.9 picks
    the ⌈479.52⌉ = 480th. JSON lines in."""
    order = list(range(1, 481))
    order.reverse()
    lines = [json.dumps({"arrival_s": 0, "first_token_s": 0, "last_token_s": i,
                         "output_tokens": 2}) for i in order]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    code, out, _ = cli("serve", "metrics", str(log), "--percentiles", "95,99.9",
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["e2e"]["p95_s"] == 456 and doc["e2e"]["p99.9_s"] == 480
    assert doc["tpot"]["p95_s"] == 456  # (t_G − t₁)/(2 − 1)


def test_metrics_from_a_vllm_bench_detailed_result(cli, tmp_path):
    """vllm bench serve --save-detailed: per-request ttfts and itls (s). Request 0: TTFT 0.1,
    gaps 0.02 + 0.03 → e2e 0.15, TPOT 0.05/2 = 0.025; request 1 failed (skipped); request 2:
    TTFT 0.3, one gap 0.01 → TPOT 0.01, e2e 0.31."""
    log = tmp_path / "bench.json"
    log.write_text(json.dumps({"ttfts": [0.1, 0.0, 0.3], "itls": [[0.02, 0.03], [], [0.01]],
                               "output_lens": [3, 0, 2], "errors": ["", "timeout", ""]}))
    code, out, _ = cli("serve", "metrics", str(log), "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["requests"] == 2 and doc["skipped_requests"] == 1
    assert doc["ttft"]["mean_s"] == pytest.approx(0.2)
    assert doc["tpot"]["p50_s"] == pytest.approx(0.01)
    assert doc["tpot"]["p99_s"] == pytest.approx(0.025)
    assert doc["e2e"]["p99_s"] == pytest.approx(0.31)


def test_little_reproduces_exercise_3_2(cli):
    """Exercise 3-2: 'каждую секунду два задания переходят в стадию ожидания инструмента,
    каждое ожидает 10 секунд и в это время занимает 1 GiB' — λτ = 2·10 = 20 tasks and
    λM₀τ = 20 GiB held; at 30 s, 60 tasks and 60 GiB. §3.1.2: 1 GiB for 10 s = 10 GiB·s."""
    for wait, tasks in ((10, 20), (30, 60)):
        code, out, _ = cli("serve", "little", "--rate-per-s", "2", "--wait-s", str(wait),
                           "--state-gib", "1", "--format", "json")
        doc = json.loads(out)
        assert code == 0
        assert doc["waiting_tasks"] == tasks and doc["held_bytes"] == tasks * 2**30
        assert doc["task_byte_seconds"] == wait * 2**30
    code, out, _ = cli("serve", "little", "--rate-per-s", "2", "--wait-s", "10",
                       "--state-gib", "1")
    assert code == 0 and "20 GiB" in out and "10 GiB·s" in out


def test_little_state_from_a_models_kv(cli):
    """M₀ from the model: Qwen3-8B keeps 2·36·8·128·2 = 147,456 bytes (144 KiB, Example 3-1:
    'каждый токен контекста занимает 144 KiB') a token; 8,192 tokens are 1.125 GiB, so 2
    tasks/s waiting 10 s hold 22.5 GiB."""
    code, out, _ = cli("serve", "little", "--rate-per-s", "2", "--wait-s", "10",
                       "--model", "qwen3-8b", "--context", "8192", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["inputs"]["kv_bytes_per_token"] == 147_456
    assert doc["held_bytes"] == pytest.approx(22.5 * 2**30)


@pytest.mark.parametrize("args, field", [
    (["serve", "metrics", "nope.csv"], "nope.csv"),
    (["serve", "metrics", "LOG", "--percentiles", "0"], "percentiles"),
    (["serve", "metrics", "LOG", "--percentiles", "101"], "percentiles"),
    (["serve", "metrics", "LOG", "--percentiles", "50,x"], "percentiles"),
    (["serve", "metrics", "BAD"], "first_token_s"),
    (["serve", "metrics", "NOCOL"], "last_token_s"),
    (["serve", "little", "--rate-per-s", "0", "--wait-s", "10", "--state-gib", "1"],
     "rate-per-s"),
    (["serve", "little", "--rate-per-s", "2", "--wait-s", "-1", "--state-gib", "1"], "wait-s"),
    (["serve", "little", "--rate-per-s", "2", "--wait-s", "10"], "state-gib"),
    (["serve", "little", "--rate-per-s", "2", "--wait-s", "10", "--state-gib", "0"],
     "state-gib"),
    (["serve", "little", "--rate-per-s", "2", "--wait-s", "10", "--model", "qwen3-8b",
      "--context", "0"], "context"),
    (["serve", "little", "--rate-per-s", "nan", "--wait-s", "10", "--state-gib", "1"],
     "rate-per-s"),
    (["serve", "little", "--rate-per-s", "1e300", "--wait-s", "1e300", "--state-gib", "1"],
     "rate-per-s"),
])
def test_metrics_and_little_errors_are_one_line(cli, tmp_path, args, field):
    files = {"LOG": LOG_CSV,
             "BAD": "arrival_s,first_token_s,last_token_s,output_tokens\n5,4,6,2\n",
             "NOCOL": "arrival_s,first_token_s,output_tokens\n0,1,2\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = [str(tmp_path / a) if a in files else a for a in args]
    code, out, err = cli(*args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err


def test_demand_plot_draws_figures_3_4_and_3_5(cli, tmp_path):
    """The chapter's Figures 3-4 and 3-5 for the shifted workload: the figure is written, many
    windows too (drawn as curves), and the table still shows 29,900.8 / 6,963.2 input tokens/s
    ('Изменяющаяся во времени смесь, первая минута 29,900.8 1,736.8')."""
    png = tmp_path / "demand.png"
    code, out, _ = cli("serve", "demand", SHIFTED_WL, "--plot", str(png), "--format", "json")
    assert code == 0 and png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000
    windows = json.loads(out)["windows"]
    assert [round(w["input_tokens_per_s"], 1) for w in windows] == [29_900.8, 6_963.2]
    many = tmp_path / "many.png"
    code, _, _ = cli("serve", "demand", SHIFTED_WL, "--window-s", "1", "--plot", str(many),
                     "--format", "json")
    assert code == 0 and many.stat().st_size > 10_000
    code, out, err = cli("serve", "demand", SHIFTED_WL, "--plot", str(tmp_path / "d.txt"))
    assert code == 2 and out == "" and err.count("\n") == 1 and "plot" in err


def test_simulate_static_batching_uses_fewer_slots(cli):
    """``--set engine.batching=static`` on the chapter's uniform scenario: a batch waits for
    its longest request (2,048 outputs) while finished long-input requests (256) leave their
    slots idle, so the slot use is below continuous batching's and the run takes longer; the
    table says which batching ran."""
    uses, spans = {}, {}
    for batching in ("continuous", "static"):
        code, out, _ = cli("serve", "simulate", UNIFORM, "--set", f"engine.batching={batching}",
                           "--format", "json")
        assert code == 0
        s = json.loads(out)["scenarios"][0]
        assert s["inputs"]["batching"] == batching
        uses[batching], spans[batching] = (s["summary"]["slot_use_frac"],
                                           s["summary"]["makespan_s"])
    assert 0 < uses["static"] < uses["continuous"] <= 1
    assert spans["static"] > spans["continuous"]
    code, out, _ = cli("serve", "simulate", UNIFORM, "--set", "engine.batching=static")
    assert code == 0 and "static batching" in out
    code, out, err = cli("serve", "simulate", UNIFORM, "--set", "engine.batching=dynamic")
    assert code == 2 and err.count("\n") == 1 and "engine.batching" in err


@pytest.mark.parametrize("command", ["metrics", "little", "demand"])
def test_new_serve_options_have_help(cli, command):
    code, out, _ = cli("serve", command, "--help")
    assert code == 0 and "Usage" in out
    assert {"metrics": "--percentiles", "little": "--state-gib", "demand": "--plot"}[command] in out
