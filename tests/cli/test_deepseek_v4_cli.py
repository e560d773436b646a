"""``napkin model`` and ``napkin flops`` on DeepSeek V4-Flash and V4-Pro: the chapter's §3.6.2
figures and hand-derived KV bytes reach the JSON output; the table prints."""

import json

import pytest
from jsonchecks import assert_finite


def _json(cli, *args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert_finite(doc)
    return doc


@pytest.mark.parametrize(("model_id", "tokens", "per_token", "total"), [
    # §3.6.2: 18·n_L·h·f·(6 + 1); ×32T and ×33T
    ("deepseek-v4-flash", "32e12", 18 * 43 * 4096 * 2048 * 7, 1.45438e24),
    ("deepseek-v4-pro", "33e12", 18 * 61 * 7168 * 3072 * 7, 5.58513e24),
])
def test_flops_expert_matmuls(cli, model_id, tokens, per_token, total):
    doc = _json(cli, "flops", model_id, "--tokens", tokens)
    assert doc["expert_train_flops_per_token"] == per_token
    assert doc["expert_train_flops"] == pytest.approx(total, rel=5e-6)
    assert doc["train_flops"] == pytest.approx(6 * doc["params"] * float(tokens))


def test_flops_of_a_dense_model_has_no_expert_rows(cli):
    assert "expert_train_flops" not in _json(cli, "flops", "qwen3-8b")


def test_model_json(cli):
    doc = _json(cli, "model", "deepseek-v4-flash")
    assert doc["model_type"] == "deepseek_v4" and doc["hc_mult"] == 4
    assert round(doc["params"] / 1e9) == 284
    assert round(doc["active_params_without_embedding"] / 1e9) == 13
    # past the window: 21 CSA layers × (512 + 128)/4 + 20 HCA layers × 512/128, BF16
    assert doc["kv_bytes_per_token"] == (21 * 160 + 20 * 4) * 2 == 6880
    assert doc["kv_bytes_per_token_in_window"] == 43 * 512 * 2 + 6880
    ratios = sorted({(g.get("kv_compress_ratio"), g.get("routing")) for g in doc["layer_groups"]},
                    key=str)
    assert ratios == sorted({(None, "hash"), (4, "hash"), (128, "top-k"), (4, "top-k")}, key=str)


@pytest.mark.parametrize("model_id", ["deepseek-v4-flash", "deepseek-v4-pro"])
def test_model_table_prints(cli, model_id):
    code, out, err = cli("model", model_id)
    assert code == 0, err
    assert "CSA r4" in out and "HCA r128" in out and "hyper connections" in out
    assert "compressed entries only" in out
