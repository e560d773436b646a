"""The public API of ``napkin decision`` and ``napkin ced``: the CLI's JSON, typed values, the
chapter's §3.2.4 numbers."""

import json

import pytest

from napkin.api.decision import ced, decision
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.inference.ced import LayerPasses
from napkin.inference.decision import DecisionComparison


def test_decision_matches_cli_and_chapter(cli):
    r = decision("qwen3-8b", gen_range=[64, 512])
    code, out, _ = cli("decision", "qwen3-8b", "--gen-range", "64,512", "--format", "json")
    assert code == 0 and r.data == json.loads(out)
    c = r.value["comparison"]
    assert isinstance(c, DecisionComparison)
    # §3.2.4: ≈ 28 TFLOPs and ≈ 70 ms at 40 % MFU for the 1,929-token forward; ≈ 0.65 s with
    # 64 generated tokens; batched decode adds only 28 % GPU time; 64–512 tokens: 1.3–3.4×
    assert round(c.decision.flops / 1e12) == 28
    assert c.decision_time.time_s == pytest.approx(0.070, abs=0.001)
    assert c.generation.e2e_s == pytest.approx(0.65, abs=0.005)
    assert c.gpu_time_ratio == pytest.approx(1.28, abs=0.005)
    by_gen = r.value["gpu_time_ratio_by_gen"]
    assert (round(by_gen[64], 1), round(by_gen[512], 1)) == (1.3, 3.4)
    # $ per 1M input tokens at $2/GPU-hour: seconds · 2/3600 · 1e6/1929
    assert c.decision_usd_per_million_input_tokens == pytest.approx(
        c.decision_time.time_s * 2 / 3600 * 1e6 / 1929)
    assert r.value["generation_usd_per_million_input_tokens"] == pytest.approx(
        c.generation.e2e_s * 2 / 3600 * 1e6 / 1929)


def test_decision_from_a_bill_and_from_specs(cli):
    # §3.2.4: $0.000081 at $0.042 per 1M input tokens → 0.000081/0.042·1e6 = 1,928.6 → 1,929
    r = decision("qwen3-8b", request_usd=0.000081, usd_per_million_input=0.042, gen=16)
    assert r.data["inputs"]["prompt"] == 1929 == r.value["comparison"].prompt_tokens
    _, out, _ = cli("decision", "qwen3-8b", "--request-usd", "0.000081",
                    "--usd-per-million-input", "0.042", "--gen", "16", "--format", "json")
    assert r.data == json.loads(out)
    # a ModelSpec and an Accelerator give the same answer as their catalog ids
    s = decision(load_model("qwen3-8b"), gpu=load_accelerator("h100-sxm"), gen=16)
    assert s.data == decision("qwen3-8b", gpu="h100-sxm", gen=16).data


def test_ced_matches_cli_and_hand_count(cli):
    r = ced(prompt=8192)
    _, out, _ = cli("ced", "--prompt", "8192", "--format", "json")
    assert r.data == json.loads(out)
    assert isinstance(r.value, LayerPasses)
    # (E + D)·P = 40·8192 vs E·P + D·min(P, 128) = 20·8192 + 20·128
    assert (r.value.full, r.value.ced) == (40 * 8192, 20 * 8192 + 20 * 128)
    assert r.value.ced_frac == pytest.approx((20 * 8192 + 20 * 128) / (40 * 8192))
    assert r.to_table().startswith("CED expert-layer passes")
    # a prompt shorter than the replay is replayed whole: no saving
    assert ced(prompt=100).value.ced == ced(prompt=100).value.full == 40 * 100


def test_errors_name_the_field():
    with pytest.raises(NapkinError, match=r"^request-usd:"):
        decision("qwen3-8b", request_usd=0.1)
    with pytest.raises(NapkinError, match=r"^gen-range:"):
        decision("qwen3-8b", gen_range=[0])
    with pytest.raises(NapkinError, match=r"^decode-batch:"):
        decision("qwen3-8b", decode_batch=0)
    with pytest.raises(NapkinError, match=r"^gpu:"):
        decision("qwen3-8b", gpu=None)
    with pytest.raises(NapkinError, match=r"^prompt:"):
        ced(prompt=0)
    with pytest.raises(NapkinError, match=r"^plot:"):
        ced().plot("x.txt")
    with pytest.raises(NapkinError, match=r"^replay:"):
        decision("qwen3-8b", replay=64)  # without ced
    with pytest.raises(NapkinError, match=r"^usd-per-million-input:"):
        decision("qwen3-8b", usd_per_million_input=1e300)


def test_gen_range_prints_each_length_once(cli):
    code, out, _ = cli("decision", "qwen3-8b", "--gen-range", "64,512,512")
    assert code == 0
    assert out.count("prefill + 64 tokens, decode batched at 64") == 1
    assert out.count("prefill + 512 tokens, decode batched at 64") == 1
    assert list(decision("qwen3-8b", gen_range=[64, 512, 512]).value["gpu_time_ratio_by_gen"]) \
        == [64, 512]


def test_a_model_larger_than_the_gpu_is_warned(cli):
    code, out, _ = cli("decision", "deepseek-v4-flash")
    assert code == 0
    warning = next(line for line in out.splitlines() if "warning:" in line)
    # 284B params · 2 B (BF16) ≈ 568.7 GB of weights against one 80 GB H100: ⌈568.7/80⌉ = 8
    assert "568.7 GB" in warning and "80 GB" in warning and "at least 8" in warning
    _, out, _ = cli("decision", "qwen3-8b")
    assert "warning:" not in out


@pytest.mark.parametrize("args", [["decision", "qwen3-8b", "--gen", "16"],
                                  ["decision", "qwen3-8b", "--gen", "4", "--ced"],
                                  ["ced", "--prompt", "8192"]])
def test_plots_are_written(cli, tmp_path, args):
    path = tmp_path / "figure.png"
    code, _, _ = cli(*args, "--plot", str(path))
    assert code == 0
    assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 10_000


@pytest.mark.parametrize("command", [["decision"], ["ced"]])
def test_help(cli, command):
    code, out, _ = cli(*command, "--help")
    assert code == 0 and "--plot" in out
