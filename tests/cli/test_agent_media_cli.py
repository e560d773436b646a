"""``napkin agent``, ``napkin context`` and ``napkin media`` end to end (JSON in base units)."""

import json

import pytest

from napkin.catalog import scenario_file

DAG = str(scenario_file("agent-dag.yaml"))
CODE_FIX = str(scenario_file("agent-code-fix-reasoning.yaml"))
BRANCHES = str(scenario_file("agent-branches.yaml"))


def _json(cli, *args):
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_agent_chapter_dag(cli):
    d = _json(cli, "agent", DAG)
    assert (d["serial_s"], d["critical_path_s"]) == (21, 15)
    assert d["state"]["serial"]["gib_seconds"] == 16
    assert d["state"]["dag"]["gib_seconds"] == 10
    code, out, _ = cli("agent", DAG)
    assert code == 0 and "21.000" in out and "15.000" in out and "10 / 16 GiB·s" in out


def test_agent_speedup_halved_first_round(cli, tmp_path):
    d = _json(cli, "agent", CODE_FIX, "--speedup", "round1=2")
    assert d["speedup"]["after_s"] == pytest.approx(58.3225)
    assert round(d["speedup"]["speedup"], 2) == 1.31
    code, out, _ = cli("agent", CODE_FIX, "--speedup", "round1=2")
    assert "58.3225" in out
    plot = tmp_path / "t.png"
    code, _, err = cli("agent", BRANCHES, "--gpu", "h100-sxm", "--plot", str(plot))
    assert code == 0, err
    assert plot.stat().st_size > 0


def test_agent_logged_set(cli, tmp_path):
    failed = tmp_path / "failed.yaml"
    failed.write_text("check: {passed: false, reason: tests fail}\n"
                      "prices: {usd_per_gpu_hour: 2}\n"
                      "steps: [{id: m, kind: model, duration_s: 36}]\n")
    d = _json(cli, "agent", str(failed))
    assert d["check"]["passed"] is False
    d = _json(cli, "agent", str(failed), str(failed))
    assert d["cost_per_success"] is None and d["failures"] == {"tests fail": 2}
    assert d["total_cost"] == pytest.approx(2 * 36 * 2 / 3600)
    d = _json(cli, "agent", str(failed), CODE_FIX)
    assert d["cost_per_success"] == pytest.approx((36 + 76.294) * 2 / 3600)


@pytest.mark.parametrize(("args", "match"), [
    (["agent", "nope.yaml"], "no such file"),
    (["agent", DAG, "--speedup", "round1"], "STEP=FACTOR"),
    (["agent", DAG, "--speedup", "zzz=2"], "matches no step"),
    (["agent", BRANCHES], "no duration_s"),
    (["agent", DAG, "--plot", "x.txt"], "plot"),
    (["context", "rounds", "qwen3-8b", "--rounds", "10:20"], "cached"),
    (["context", "rounds", "qwen3-8b", "--rounds", "a:b"], "INPUT:CACHED"),
    (["context", "edit", "--context", "100", "--edit", "move:1"], "edit"),
    (["context", "growth", "--system", "0", "--step", "1", "--steps", "2"], "system"),
    (["media", "vision", "--image", "640"], "HEIGHTxWIDTH"),
    (["media", "vision", "--model", "qwen3-8b"], "vision model"),
    (["media", "diffusion", "--size", "1000x1000"], "multiples"),
    (["media", "jitter", "--buffer-ms", "x"], "milliseconds"),
    (["media", "jitter", "--network", "9:50"], "network: block must be in [1, 8]"),
    (["media", "interrupt", "--poll-ms", "0"], "poll-ms"),
    (["media", "drain", "--arrival-rate", "-1"], "arrival-rate"),
])
def test_bad_input_is_one_line(cli, args, match):
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert match in err and err.count("\n") == 1


def test_context_commands(cli):
    d = _json(cli, "context", "rounds", "qwen3-8b", "--rounds", "700:0,1443:1392")
    assert d["new_tokens"] == 700 + 51 and d["flops_cached"] < d["flops_uncached"]
    d = _json(cli, "context", "edit", "--context", "2000", "--edit", "append:100",
              "--edit", "replace:501:1:1")
    assert [e["prefill_tokens"] for e in d["edits"]] == [100, 1500]
    assert d["edits"][1]["reusable_tokens"] == 500
    d = _json(cli, "context", "growth", "--system", "1000", "--step", "300", "--steps", "10",
              "--usd-per-m-input", "1", "--usd-per-m-cached", "0.1")
    assert d["input_tokens"] == 23_500 and d["prefill_tokens_with_cache"] == 3_700
    assert d["usd_with_cache"] == pytest.approx((3700 + 19_800 * 0.1) / 1e6)


def test_media_jitter_and_interrupt(cli, tmp_path):
    d = _json(cli, "media", "jitter")
    t40, t60 = d["timelines"]
    assert (t40["first_play_s"], t40["total_stall_s"], t40["gaps"]) == pytest.approx(
        (0.078, 0.005, 1))
    assert (t60["first_play_s"], t60["total_stall_s"], t60["gaps"]) == pytest.approx(
        (0.098, 0, 0))
    assert t40["block_bytes"] == 960
    code, _, _ = cli("media", "jitter", "--plot", str(tmp_path / "j.png"))
    assert code == 0 and (tmp_path / "j-40ms.png").exists() and (tmp_path / "j-60ms.png").exists()
    d = _json(cli, "media", "interrupt")
    assert d["interruption"]["muted_s"] == pytest.approx(0.130)
    assert d["interruption"]["latency_s"] == pytest.approx(0.007)
    assert _json(cli, "media", "drain")["drain_s"] == pytest.approx(3.0)


def test_media_vision_diffusion_audio(cli):
    d = _json(cli, "media", "vision", "--image", "640x640", "--image", "640x640", "--image",
              "640x640", "--image", "640x640", "--text-tokens", "400")
    assert d["prompt"]["ec_bytes"] == 4 * 8_192_000
    assert d["prompt"]["kv_bytes"] == 2000 * 144 * 1024
    d = _json(cli, "media", "diffusion")
    assert d["forwards"] == 100 and round(d["flops"] / 1e15, 3) == 7.830
    d = _json(cli, "media", "audio")
    assert d["frames_per_s"] == pytest.approx(44_100 / 2_048)
    assert d["forwards_per_audio_s"] == pytest.approx(11 * 44_100 / 2_048)


def test_cost_success_counts_every_component(cli):
    d = _json(cli, "cost", "success", "--cost", "1,2", "--success", "0.5,0.8",
              "--verification", "0,0.2", "--tools", "0,0.1", "--environment", "0,0.2")
    assert d["cost_per_attempt"] == pytest.approx([1, 2.5])
    assert d["cost_per_success"] == pytest.approx([2, 2.5 / 0.8])
    code, _, err = cli("cost", "success", "--cost", "1,2", "--success", "0.5,0.8",
                       "--tools", "1")
    assert code == 2 and "tools: give one value per method" in err


def test_decision_and_ced_commands(cli):
    d = _json(cli, "decision", "qwen3-8b")
    c = d["comparison"]
    # chapter §3.2.4: ≈ 28 TFLOPs, ≈ 70 ms at 40% MFU; ≈ 0.65 s with 64 generated tokens
    assert round(c["decision"]["flops"] / 1e12) == 28
    assert c["decision_time"]["time_s"] == pytest.approx(0.070, abs=0.001)
    assert c["generation"]["e2e_s"] == pytest.approx(0.65, abs=0.005)
    assert 0.02 <= c["decision_usd_per_million_input_tokens"] <= 0.025
    # "batched decode: GPU time only +28 %"; "64–512 output tokens: 1.3–3.4×"
    assert c["gpu_time_ratio"] == pytest.approx(1.28, abs=0.005)
    d = _json(cli, "decision", "qwen3-8b", "--gen-range", "64,512")
    assert round(d["gpu_time_ratio_by_gen"]["64"], 1) == 1.3
    assert round(d["gpu_time_ratio_by_gen"]["512"], 1) == 3.4
    # §3.2.4: $0.000081 at $0.042 per 1M input tokens ≈ 1,929 tokens
    d = _json(cli, "decision", "qwen3-8b", "--request-usd", "0.000081",
              "--usd-per-million-input", "0.042")
    assert d["inputs"]["prompt"] == 1929
    for bad, field in ((["--request-usd", "0.1"], "request-usd"),
                       (["--request-usd", "nan", "--usd-per-million-input", "1"], "request-usd"),
                       (["--request-usd", "1", "--usd-per-million-input", "0"],
                        "usd-per-million-input"),
                       (["--decode-batch", "0"], "decode-batch"),
                       (["--gen-range", "64,x"], "gen-range"),
                       (["--usd-per-gpu-hour", "inf"], "usd-per-gpu-hour")):
        code, out, err = cli("decision", "qwen3-8b", *bad)
        assert code == 2 and out == "" and field in err and err.count("\n") == 1, err
    d = _json(cli, "ced", "--prompt", "8192")
    assert (d["passes"]["full"], d["passes"]["ced"]) == (40 * 8192, 20 * 8192 + 20 * 128)
    code, _, err = cli("ced", "--prompt", "0")
    assert code == 2 and "prompt" in err


def test_agent_realtime_log(cli, tmp_path):
    d = _json(cli, "agent", str(scenario_file("agent-voice-vision.yaml")))
    assert d["first_response_s"] == pytest.approx(0.078)
    assert d["playback"]["gaps"] == 1
    assert d["playback"]["total_stall_s"] == pytest.approx(0.005)
    assert d["finish_s"] == pytest.approx(0.243)  # last of 8 blocks ends 5 ms late
    bad = tmp_path / "rt.yaml"
    bad.write_text("realtime: {arrivals_s: [0.1]}\nsteps: [{id: m, kind: model, duration_s: 1}]\n")
    code, _, err = cli("agent", str(bad))
    assert code == 2 and "block_s" in err
