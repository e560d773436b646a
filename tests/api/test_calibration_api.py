"""The public API of ``napkin calibrate`` and ``napkin validate`` (the fast paths of
tests/cli/test_calib_cli.py: a four-row plain CSV, one round, a profile scored as fitted)."""

import json

import numpy as np
import pytest
import yaml

from napkin.api import calibration
from napkin.errors import NapkinError


def test_validate_matches_cli_and_scores_by_hand(cli, plain, tmp_path):
    r = calibration.validate(plain, calibration="vllm")
    _, out, _ = cli("validate", plain, "--calibration", "vllm", "--format", "json")
    assert r.data == json.loads(out)
    ((name, how, rep),) = r.value
    assert name == f"{plain} · vllm" and how == "profile vllm, as fitted"
    # the file's rows: 60 ms measured TTFT first; two (GPU, model, TP) groups, tp 1 and 2
    assert rep.predictions[0].row.mean_ttft_s == pytest.approx(0.060)
    assert [g[2] for g in rep.groups] == [1, 2]
    errors = [p.tpot_s / p.row.mean_tpot_s - 1 for p in rep.predictions]
    assert rep.overall["tpot"].rows == 4
    assert rep.overall["tpot"].median_abs_error == pytest.approx(np.median(np.abs(errors)))
    assert r.plot(tmp_path / "v.png").stat().st_size > 10_000


def test_calibrate_matches_cli_and_writes_the_profile(cli, plain, tmp_path):
    out_path = tmp_path / "mine.yaml"
    _, out, _ = cli("calibrate", plain, "--backend", "vllm", "--out", str(out_path),
                    "--rounds", "1", "--terms", "weights,dense,kv", "--format", "json")
    r = calibration.calibrate([plain], backend="vllm", out=out_path, rounds=1,
                              terms=["dense", "weights", "kv"])
    assert r.data == json.loads(out)
    profile = r.value.profile
    assert profile.name == "mine"  # named after the file
    written = yaml.safe_load(out_path.read_text())
    assert written["coefficients"] == r.data["profile"]["coefficients"]
    assert written["fitted_terms"] == ["dense", "weights", "kv"]
    # the four rows span TP 1-2; the fit may use only the three terms, the rest stay 0
    assert written["domain"]["tensor_parallel"] == [1, 2]
    assert all(v == 0 for k, v in written["coefficients"].items()
               if k not in ("dense", "dense_low", "dense_w4a16", "weights", "kv", "alltoall",
                            "alltoall_bytes", "expert", "expert_low", "expert_w4a16",
                            "expert_weights", "expert_weights_w4a16"))
    # the routed experts' terms, not fitted, follow their dense parents
    c = written["coefficients"]
    assert c["expert_low"] == c["dense"] and c["expert_weights"] == c["weights"] \
        == c["expert_weights_w4a16"]
    # dense_low left out: FP8 matmuls share the dense coefficient (the CLI's test: the rest)
    assert written["coefficients"]["dense_low"] == written["coefficients"]["dense"]
    assert r.value.holdout.overall["ttft"].rows == 4


def test_a_campaign_is_written_into_the_profile_and_matches_the_cli(cli, plain, tmp_path):
    """``--campaign llama-3.1-8b@/h100-sxm:dispatch_intervals=1`` over ``--harness burst``: the
    profile's harness is burst with that campaign (burst's keys, dispatch 1.0) — the plain
    rows say only closed_loop and a load, so they run under it."""
    out_path = tmp_path / "c.yaml"
    spec = "llama-3.1-8b/h100-sxm:dispatch_intervals=1"
    _, out, _ = cli("calibrate", plain, "--backend", "vllm", "--out", str(out_path),
                    "--rounds", "1", "--harness", "burst", "--campaign", spec,
                    "--format", "json")
    r = calibration.calibrate(plain, backend="vllm", out=out_path, rounds=1, harness="burst",
                              campaign=[spec])
    assert r.data == json.loads(out)
    (c,) = yaml.safe_load(out_path.read_text())["harness"]["campaigns"]
    assert c["model"] == "llama-3.1-8b" and c["gpu"] == "h100-sxm"
    assert "backend_version" not in c
    assert (c["dispatch_intervals"], c["range_ratio"], c["requests_per_client"]) == (1.0, 0.8, 10)


def test_calibration_errors_name_the_field(plain, tmp_path):
    with pytest.raises(NapkinError, match=r"^out:"):
        calibration.calibrate(plain, backend="vllm", out=tmp_path / "p.txt")
    with pytest.raises(NapkinError, match=r"^terms:"):
        calibration.calibrate(plain, backend="vllm", out=tmp_path / "p.yaml", terms=["mfu"])
    with pytest.raises(NapkinError, match=r"^rounds:"):
        calibration.calibrate(plain, backend="vllm", out=tmp_path / "p.yaml", rounds=0)
    with pytest.raises(NapkinError, match=r"^campaign: qwen3-32b matches no vllm row"):
        calibration.calibrate(plain, backend="vllm", out=tmp_path / "p.yaml", rounds=1,
                              campaign=["qwen3-32b:dispatch_intervals=1"])
    with pytest.raises(NapkinError, match=r"^backend: no measurements of 'sglang'"):
        calibration.calibrate(plain, backend="sglang", out=tmp_path / "p.yaml", rounds=1)
    assert not (tmp_path / "p.yaml").exists()
    with pytest.raises(NapkinError, match=r"^no-such-set: no such file"):
        calibration.validate("no-such-set")
    with pytest.raises(NapkinError, match=r"^sets:"):
        calibration.validate([])


@pytest.mark.parametrize(("by", "keys", "label"), [
    ("tp", [(1,), (2,)], "tp 1"), ("engine", [("vllm",)], "vllm"),
    ("gpu", None, None), ("model", None, None), ("version", None, None)])
def test_validate_groups_by_the_key_asked(cli, plain, by, keys, label):
    """``--by``: the same predictions, grouped by TP (two groups: the file's tp 1 and 2
    rows), engine (one), GPU, model or release; each group's rows add up to the whole and its
    median is that of its own rows; the CLI's JSON says how it grouped."""
    r = calibration.validate(plain, calibration="vllm", by=by)
    ((_, _, rep),) = r.value
    assert rep.by == by
    if keys is not None:
        assert list(rep.groups) == keys
    assert sum(s["tpot"].rows for s in rep.groups.values()) == rep.overall["tpot"].rows == 4
    for g, s in rep.groups.items():
        own = [p.tpot_s / p.row.mean_tpot_s - 1 for p in rep.predictions
               if p.row.group_by(by) == g]
        assert s["tpot"].median_abs_error == pytest.approx(np.median(np.abs(own)))
    _, out, _ = cli("validate", plain, "--calibration", "vllm", "--by", by, "--format", "json")
    doc = json.loads(out)
    assert doc == r.data
    if label is not None:
        assert label in out


def test_validate_refuses_an_unknown_grouping(plain):
    with pytest.raises(NapkinError, match=r"^by: must be one of group, gpu, engine"):
        calibration.validate(plain, calibration="vllm", by="rack")
