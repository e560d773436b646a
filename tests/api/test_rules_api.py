"""The public API of ``napkin flops | speculative | attention-matrix | loss-mask | gpu-hours``:
the CLI's JSON, published values (§3.6.2, q26, q39) and hand derivations, errors naming the
field."""

import json

import pytest

from napkin.api.rules import attention_matrix, flops, gpu_hours, loss_mask, speculative
from napkin.catalog import load_model
from napkin.errors import NapkinError


def test_flops_llama_1_and_a_model(cli):
    r = flops(params=6.7e9, tokens=1e12)  # Llama 1 6.7B on 1T tokens (§3.6.2)
    _, out, _ = cli("flops", "--params", "6.7e9", "--tokens", "1e12", "--format", "json")
    assert r.data == json.loads(out)
    assert r.value["train_flops"] == pytest.approx(4.02e22)  # 6 × 6.7e9 × 1e12
    assert round(r.value["tokens_per_param"]) == 149
    n = load_model("llama-2-7b").params
    m = flops("llama-2-7b", tokens=2e12)
    _, out, _ = cli("flops", "llama-2-7b", "--tokens", "2e12", "--format", "json")
    assert m.data == json.loads(out)
    assert m.value["train_flops"] == pytest.approx(6 * n * 2e12)
    assert "expert_train_flops" not in m.value  # dense: no expert matmuls


def test_flops_moe_expert_matmuls(cli):
    """Qwen3-30B-A3B: 48 layers, hidden 2,048, expert FFN 768, top-8 routed, no shared expert:
    18·n_L·h·f·k FLOPs per token."""
    r = flops("qwen3-30b-a3b", tokens=1e12)
    _, out, _ = cli("flops", "qwen3-30b-a3b", "--tokens", "1e12", "--format", "json")
    assert r.data == json.loads(out)
    assert r.value["expert_train_flops_per_token"] == pytest.approx(18 * 48 * 2048 * 768 * 8)
    assert r.value["expert_train_flops"] == pytest.approx(18 * 48 * 2048 * 768 * 8 * 1e12)


def test_flops_without_tokens_takes_chinchillas_20_per_parameter(cli):
    """N = 7e9, no D: D = 20·N = 1.4e11 tokens and C = 6·N·20N = 120·N² = 5.88e21 FLOPs."""
    r = flops(params=7e9)
    assert r.value["tokens"] == pytest.approx(1.4e11)
    assert r.value["train_flops"] == pytest.approx(5.88e21)
    assert r.value["tokens_per_param"] == pytest.approx(20)
    _, out, _ = cli("flops", "--params", "7e9", "--format", "json")
    assert json.loads(out)["train_flops"] == pytest.approx(5.88e21)


def test_flops_of_a_moe_counts_its_active_parameters():
    """DeepSeek-V3 on its 14.8T tokens: 6 · N_active · D with N_active = 37.55B (the card's
    "37B activated") gives 3.33e24 FLOPs; total N (671B) would give 5.96e25, 18× too much —
    the question bank's warning (issue 38)."""
    r = flops("deepseek-v3", tokens=14.8e12)
    spec = load_model("deepseek-v3")
    assert r.value["params"] == spec.active_params
    assert 37e9 < spec.active_params < 38e9 and 670e9 < spec.params < 672e9
    assert r.value["train_flops"] == pytest.approx(6 * spec.active_params * 14.8e12)
    assert r.value["train_flops"] == pytest.approx(3.33e24, rel=0.003)
    assert r.value["tokens_per_param"] == pytest.approx(14.8e12 / spec.active_params)
    assert r.value["total_params"] == spec.params


def test_speculative_q39(cli):
    r = speculative(alpha=0.8, k=4, draft_cost=0.1)
    _, out, _ = cli("speculative", "--alpha", "0.8", "--k", "4", "--draft-cost", "0.1",
                    "--format", "json")
    assert r.data == json.loads(out)
    per = (1 - 0.8**5) / (1 - 0.8)
    assert r.value["tokens_per_verification"] == pytest.approx(per)
    assert per == pytest.approx(3.36, abs=0.005)
    assert r.value["speedup"] == pytest.approx(per / (4 * 0.1 + 1))
    assert speculative(alpha=1.0, k=4).value["tokens_per_verification"] == 5


def test_attention_matrix_by_hand(cli):
    r = attention_matrix("qwen3-8b", seq=8192)
    _, out, _ = cli("attention-matrix", "qwen3-8b", "--seq", "8192", "--format", "json")
    assert r.data == json.loads(out)
    assert r.value["scores_bytes_per_layer"] == 32 * 8192**2 * 2  # H·T²·2 bytes = 4 GiB
    assert r.value["kv_bytes_per_layer"] == 2 * 8 * 128 * 8192 * 2  # K, V: 8 heads of 128
    fp8 = attention_matrix("qwen3-8b", seq=1024, batch=4, dtype="fp8").value
    assert fp8["scores_and_probs_bytes_per_layer"] == 2 * 4 * 32 * 1024**2 * 1


def test_loss_mask_q26(cli):
    r = loss_mask(prompt=3000, answer=100)
    _, out, _ = cli("loss-mask", "--prompt", "3000", "--answer", "100", "--format", "json")
    assert r.data == json.loads(out)
    assert r.value["prompt_share_unmasked"] == pytest.approx(3000 / 3100)
    assert round(r.value["prompt_share_unmasked"], 2) == 0.97  # "97 % of the terms"
    assert (r.value["terms_unmasked"], r.value["terms_masked"]) == (3100, 100)


def test_gpu_hours_llama_3_1_405b(cli):
    """Llama 3.1 model card: 30.84M H100 GPU-hours; on 16,384 H100s 78.43 days (§3.6.2); as
    A100 hours × 989.4 / 312 (dense BF16 peaks)."""
    r = gpu_hours(30.84e6, devices=16384, as_gpu=["a100-80gb-sxm"])
    _, out, _ = cli("gpu-hours", "30.84e6", "--devices", "16384", "--as", "a100-80gb-sxm",
                    "--format", "json")
    assert r.data == json.loads(out)
    assert round(r.value["days"], 2) == 78.43
    assert r.value["equivalent_hours"]["a100-80gb-sxm"] == pytest.approx(30.84e6 * 989.4 / 312)


def test_renderings():
    r = loss_mask()
    assert r.to_table().startswith(r.title)
    assert r.to_markdown().startswith(f"# {r.title}")
    assert "<table>" in r._repr_html_()
    assert json.loads(r.to_json()) == r.data
    with pytest.raises(NapkinError, match=r"^plot:"):
        r.plot("x.png")


@pytest.mark.parametrize(("call", "field"), [
    (lambda: flops(), "params"),
    (lambda: flops("llama-2-7b", params=1e9), "params"),
    (lambda: flops(params=-1.0), "params"),
    (lambda: flops(params=1e9, tokens=float("inf")), "tokens"),
    (lambda: speculative(alpha=1.5), "alpha"),
    (lambda: speculative(k=0), "k"),
    (lambda: speculative(draft_cost=float("inf")), "draft_cost"),
    (lambda: attention_matrix("qwen3-8b", seq=0), "seq"),
    (lambda: attention_matrix("qwen3-8b", batch=0), "batch"),
    (lambda: loss_mask(answer=0), "answer"),
    (lambda: loss_mask(prompt=-1), "prompt"),
    (lambda: gpu_hours(-5.0), "gpu-hours"),
    (lambda: gpu_hours(10.0, devices=0), "devices"),
])
def test_errors_name_the_field(call, field):
    with pytest.raises(NapkinError, match=f"^{field}:"):
        call()
