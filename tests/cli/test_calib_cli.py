"""napkin calibrate / validate and the calibration shown by serve simulate."""

import json

import yaml


def test_validate_scores_a_file_under_a_profile(cli, plain, tmp_path):
    code, out, err = cli("validate", plain, "--calibration", "vllm", "--format", "json")
    assert code == 0, err
    res = json.loads(out)["results"][0]
    assert res["overall"]["ttft"]["rows"] == 4 and res["overall"]["tpot"]["rows"] == 4
    row = res["rows"][0]
    # the error the report prints is predicted/measured − 1 of the rows it lists
    errors = sorted(abs(r["predicted_tpot_s"] / r["measured_tpot_s"] - 1) for r in res["rows"])
    assert res["overall"]["tpot"]["median_abs_error"] == (errors[1] + errors[2]) / 2
    assert row["measured_ttft_s"] == 0.06


def test_calibrate_writes_the_profile_it_prints(cli, plain, tmp_path):
    out_path = tmp_path / "mine.yaml"
    code, out, err = cli("calibrate", plain, "--backend", "vllm", "--out", str(out_path),
                         "--rounds", "1", "--format", "json")
    assert code == 0, err
    written = yaml.safe_load(out_path.read_text())
    assert written["coefficients"] == json.loads(out)["profile"]["coefficients"]
    assert written["domain"]["tensor_parallel"] == [1, 2]
    # the profile is usable as a scenario's calibration
    code, out, err = cli("serve", "simulate", "examples/chapter-3-1-uniform.yaml", "--set",
                         f"calibration={out_path}", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["scenarios"][0]["inputs"]["calibration"] == "mine"


def test_calibrate_terms_hold_the_others_at_zero_and_are_recorded(cli, plain, tmp_path):
    """``--terms dense,weights,kv``: every other coefficient is 0 in the profile, which
    records the terms for its cross-validation refits, and the table says "not fitted"."""
    out_path = tmp_path / "few.yaml"
    code, out, err = cli("calibrate", plain, "--backend", "vllm", "--out", str(out_path),
                         "--rounds", "1", "--terms", "weights,dense,kv")
    assert code == 0, err
    written = yaml.safe_load(out_path.read_text())
    assert written["fitted_terms"] == ["dense", "weights", "kv"]
    assert all(v == 0 for k, v in written["coefficients"].items()
               if k not in ("dense", "dense_low", "dense_w4a16", "weights", "kv", "alltoall",
                            "alltoall_bytes", "expert", "expert_low", "expert_w4a16",
                            "expert_weights", "expert_weights_w4a16"))
    # dense_low left out: FP8 matmuls share the dense coefficient
    assert written["coefficients"]["dense_low"] == written["coefficients"]["dense"] \
        == written["coefficients"]["dense_w4a16"]
    # all-reduces left out: the all-to-alls keep the link's own latency and bandwidth
    assert (written["coefficients"]["alltoall"], written["coefficients"]["alltoall_bytes"]) \
        == (10e-6, 1.0)
    assert written["coefficients"]["dense"] >= 1 and "0 (not fitted)" in out


def test_calibrate_refuses_bad_output_and_unknown_backend(cli, plain, tmp_path):
    code, _, err = cli("calibrate", plain, "--backend", "vllm", "--out",
                       str(tmp_path / "p.txt"))
    assert code == 2 and "out:" in err and "Traceback" not in err
    code, _, err = cli("calibrate", plain, "--backend", "sglang", "--out",
                       str(tmp_path / "p.yaml"))
    assert code == 2 and "no measurements of 'sglang'" in err
    assert not (tmp_path / "p.yaml").exists()


def test_simulate_states_profile_bands_and_extrapolation(cli):
    code, out, err = cli("serve", "simulate", "examples/chapter-3-1-uniform.yaml")
    assert code == 0, err
    assert "calibration profile 'vllm'" in out and "TTFT band" in out
    assert "outside profile 'vllm': GPU rtx-pro-6000" in out
    code, out, _ = cli("serve", "simulate", "examples/chapter-3-1-uniform.yaml", "--format",
                       "json")
    sc = json.loads(out)["scenarios"][0]
    lo, mean, hi = (sc["bands"]["tpot_mean_low_s"], sc["summary"]["tpot"]["mean_s"],
                    sc["bands"]["tpot_mean_high_s"])
    band = sc["calibration"]["bands"]["tpot"]
    assert lo == mean * band["ratio_low"] and hi == mean * band["ratio_high"]


def test_simulate_says_which_harness_latency_ttft_leaves_out(cli):
    """The TensorRT-LLM profile's campaigns carried fitted harness latencies; the run says its
    TTFT counts only request_s (read from the shipped file here) and names their span. The
    vLLM profile's campaigns carry none, so it says nothing of the kind."""
    from importlib import resources

    import yaml
    data = yaml.safe_load(
        resources.files("napkin.catalog").joinpath("profiles", "trtllm.yaml").read_text())
    lat = sorted(c["latency_s"] for c in data["harness"]["campaigns"] if c["latency_s"] > 0)
    code, out, err = cli("serve", "simulate", "examples/chapter-3-1-uniform.yaml", "--set",
                         "calibration=trtllm", "--set", "engine.backend=trtllm")
    assert code == 0, err
    text = " ".join(out.split())
    assert (f"TTFT counts {data['request_s'] * 1e3:.1f} ms outside the engine (request_s), "
            f"not the {lat[0] * 1e3:.0f}–{lat[-1] * 1e3:.0f} ms of harness latency") in text
    code, out, _ = cli("serve", "simulate", "examples/chapter-3-1-uniform.yaml")
    assert "harness latency" not in out


def test_decode_and_call_take_a_calibration(cli):
    code, out, err = cli("decode", "qwen3-32b", "--gpu", "h100-sxm", "--batch", "8",
                         "--context", "1536", "--calibration", "vllm", "--tp", "2",
                         "--format", "json")
    assert code == 0, err
    step = json.loads(out)["calibrated"]["steps"][0]
    assert step["step_low_s"] < step["step_s"] < step["step_high_s"]
    code, _, err = cli("call", "qwen3-8b", "--new", "100", "--calibration", "vllm")
    assert code == 2 and "calibration: needs --gpu" in err
    code, _, err = cli("decode", "qwen3-32b", "--gpu", "h100-sxm", "--calibration", "vllm",
                       "--tp", "3")
    assert code == 2 and err.count("\n") == 1 and err.startswith("napkin: error: tp: ")


def test_a_folder_or_binary_file_as_profile_is_one_line(cli, tmp_path):
    (tmp_path / "p.yaml").write_bytes(b"\xff\xfe\x00binary")
    for bad in (str(tmp_path), str(tmp_path / "p.yaml")):
        code, _, err = cli("validate", "h100", "--calibration", bad)
        assert code == 2 and err.startswith("napkin: error: calibration:"), err
        assert "Traceback" not in err
