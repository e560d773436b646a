"""``napkin flops``, ``speculative``, ``attention-matrix``, ``loss-mask``: published values
(§3.6.2, q26, q39) and hand derivations; bad input refused in one line."""

import json

import pytest


def _json(cli, *args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_flops_chapter_3_6_2(cli):
    doc = _json(cli, "flops", "--params", "6.7e9", "--tokens", "1e12")  # Llama 1 6.7B/1T
    assert doc["train_flops"] == pytest.approx(4.02e22)
    assert round(doc["tokens_per_param"]) == 149
    doc = _json(cli, "flops", "--params", "8e9", "--tokens", "15e12")  # Llama 3.1 8B/15T
    assert doc["tokens_per_param"] == pytest.approx(1875)


def test_flops_from_model(cli):
    from napkin.catalog import load_model

    n = load_model("llama-2-7b").params
    doc = _json(cli, "flops", "llama-2-7b", "--tokens", "2e12")
    assert doc["train_flops"] == pytest.approx(6 * n * 2e12)


def test_speculative_q39(cli):
    assert _json(cli, "speculative")["tokens_per_verification"] == pytest.approx(3.36, abs=0.005)
    # a draft step at 0.1 target steps: 3.3616 / (4·0.1 + 1)
    doc = _json(cli, "speculative", "--draft-cost", "0.1")
    assert doc["speedup"] == pytest.approx((1 - 0.8**5) / 0.2 / 1.4)


def test_attention_matrix_hand(cli):
    doc = _json(cli, "attention-matrix", "qwen3-8b", "--seq", "8192")
    assert doc["scores_bytes_per_layer"] == 32 * 8192**2 * 2  # H·T²·2 bytes = 4 GiB
    assert doc["kv_bytes_per_layer"] == 2 * 8 * 128 * 8192 * 2  # K and V, 8 KV heads of 128


def test_loss_mask_q26(cli):
    doc = _json(cli, "loss-mask", "--prompt", "3000", "--answer", "100")
    assert round(doc["prompt_share_unmasked"], 2) == 0.97  # "97 % of the terms"


@pytest.mark.parametrize(("args", "field"), [
    (["flops", "--params", "nan"], "params"),
    (["flops", "--params", "-1"], "params"),
    (["flops", "--params", "1e9", "--tokens", "inf"], "tokens"),
    (["flops", "llama-2-7b", "--params", "1e9"], "params"),
    (["flops"], "params"),
    (["speculative", "--alpha", "1.5"], "alpha"),
    (["speculative", "--alpha", "nan"], "alpha"),
    (["speculative", "--k", "0"], "k"),
    (["speculative", "--draft-cost", "inf"], "draft-cost"),
    (["attention-matrix", "qwen3-8b", "--seq", "0"], "seq"),
    (["attention-matrix", "qwen3-8b", "--dtype", "fp3"], "fp3"),
    (["loss-mask", "--answer", "0"], "answer"),
    (["loss-mask", "--prompt", "-1"], "prompt"),
])
def test_refused(cli, args, field):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and field in err, err


def test_gpu_hours_llama_405b(cli):
    # Llama 3.1 model card: 30.84M H100 GPU-hours; on 16,384 H100 → 78.43 days (§3.6.2)
    doc = _json(cli, "gpu-hours", "30.84e6", "--devices", "16384", "--as", "a100-80gb-sxm")
    assert round(doc["days"], 2) == 78.43
    assert doc["equivalent_hours"]["a100-80gb-sxm"] == pytest.approx(30.84e6 * 989.4 / 312)


@pytest.mark.parametrize(("args", "field"), [
    (["gpu-hours", "nan"], "GPU_HOURS"), (["gpu-hours", "--", "-5"], "gpu-hours"),
    (["gpu-hours", "10", "--devices", "0"], "devices"), (["gpu-hours", "10", "--as", "tpu9"],
                                                          "tpu9")])
def test_gpu_hours_refused(cli, args, field):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and field in err and err.count("\n") == 1, err


def test_capacity_reserve_max_vs_paged_q38(cli):
    """q38: reserving each request's maximum vs paging KV by what it holds: the same budget
    fits budget/(kv·max) users or budget/(kv·average) — 3.66× more at 2,240 of 8,192 tokens."""
    doc = _json(cli, "capacity", "qwen3-8b", "--gpu", "h100-sxm", "--context", "8192",
                "--avg-context", "2240")
    cap = doc["capacity"]
    kv_token = 36 * 2 * 8 * 128 * 2  # Qwen3-8B, BF16: 144 KiB
    budget = 80e9 - cap["weights_bytes"]
    assert cap["users"] == int(budget // (kv_token * 8192))
    assert cap["users_avg"] == int(budget // (kv_token * 2240))
    _, out, _ = cli("capacity", "qwen3-8b", "--gpu", "h100-sxm", "--avg-context", "2240")
    assert "each reserves its maximum" in out and "PagedAttention" in out
