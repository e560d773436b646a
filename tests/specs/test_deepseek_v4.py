"""DeepSeek V4-Flash and V4-Pro from their config.json: parameters, expert FLOPs, KV cache.

Expected values are published figures (DeepSeek-V4 report, chapter 3 §3.6.2) or hand
derivations written out below from the config geometry and the reference model's module shapes
(see :mod:`napkin.specs.deepseek_v4`); nothing is copied from napkin's output.
"""

import json
from importlib import resources

import pytest

from napkin.accounting import Batch, Precision, forward
from napkin.accounting.linear import LinearCost
from napkin.accounting.series import decode_runs
from napkin.catalog import load_model
from napkin.errors import NapkinError
from napkin.specs.hf_config import from_hf_config
from napkin.training.flops import TrainShape, expert_train_flops_per_token, train_flops

# config.json geometry: (h, heads, q_lora, o_groups, experts, f, layers, index_topk)
GEOMETRY = {
    "deepseek-v4-flash": (4096, 64, 1024, 8, 256, 2048, 43, 512),
    "deepseek-v4-pro": (7168, 128, 1536, 16, 384, 3072, 61, 1024),
}
D, O_LORA, IDX_HEADS, IDX_DIM, HC, VOCAB, TOP_K, SHARED = 512, 1024, 64, 128, 4, 129_280, 6, 1


def _ratios(model_id: str) -> list[int]:
    text = resources.files("napkin.catalog").joinpath("models", f"{model_id}.json").read_text()
    return json.loads(text)["compress_ratios"]


def _hand_params(model_id: str) -> tuple[int, int]:
    """(total, active) of the main model, MTP apart, from the reference module shapes."""
    h, heads, q_lora, groups, experts, f, layers, _ = GEOMETRY[model_id]
    attention = (h * q_lora + q_lora  # wq_a, q_norm
                 + q_lora * heads * D  # wq_b
                 + h * D + D  # wkv, kv_norm
                 + heads * D * O_LORA  # wo_a: groups × (heads·D/groups) × o_lora
                 + groups * O_LORA * h  # wo_b
                 + heads)  # attn_sink

    def compressor(ratio: int, dim: int) -> int:
        width = (2 if ratio == 4 else 1) * dim  # ratio 4 overlaps two windows
        return 2 * h * width + ratio * width + dim  # wkv, wgate, ape, norm

    mix = (2 + HC) * HC
    hyper = 2 * (mix * HC * h + mix + 3)  # hc_attn/ffn: fn, base, scale
    expert = 3 * h * f
    total = active = 0
    for i, ratio in enumerate(_ratios(model_id)[:layers]):
        layer = attention + hyper + 2 * h  # attn_norm, ffn_norm
        if ratio:
            layer += compressor(ratio, D)
        if ratio == 4:  # indexer: wq_b, weights_proj, its own compressor
            layer += q_lora * IDX_HEADS * IDX_DIM + h * IDX_HEADS + compressor(4, IDX_DIM)
        layer += experts * h + (0 if i < 3 else experts)  # gate; hash layers have no bias
        layer += SHARED * expert
        total += layer + experts * expert
        active += layer + TOP_K * expert
    outside = 2 * VOCAB * h + h + HC * HC * h + HC + 1  # embed, head, norm, hc_head
    return total + outside, active + outside


@pytest.mark.parametrize("model_id", GEOMETRY)
def test_params_equal_hand_derivation(model_id):
    model = load_model(model_id)
    assert (model.params, model.active_params) == _hand_params(model_id)


def test_totals_near_published():
    # DeepSeek-V4 report: V4-Flash 284B, V4-Pro 1.6T, MTP apart as for V3's 671B. "284B" has
    # three digits (±0.5B, 0.2%); "1.6T" two (1.55-1.65T, ±3%); MTP would add 6.6B / 25.8B.
    flash, pro = load_model("deepseek-v4-flash"), load_model("deepseek-v4-pro")
    assert flash.params == pytest.approx(284e9, rel=0.002)
    assert pro.params == pytest.approx(1.6e12, rel=0.03)
    assert round(pro.params / 1e11) == 16
    assert flash.mtp is not None and pro.mtp is not None
    assert abs(flash.params + flash.mtp.params - 284e9) > 5e9  # 284B leaves MTP out


def test_active_params_near_published():
    # "13B" / "49B activated" have two digits (±0.5B: ±3.8% / ±1%) and, like V3's "37B", leave
    # out the input embedding (a row lookup, no matmul): 13.27B and 48.85B round to them.
    # napkin's active_params counts the embedding too: 13.80B (+6%) and 49.78B (+1.6%).
    for model_id, published in (("deepseek-v4-flash", 13e9), ("deepseek-v4-pro", 49e9)):
        model = load_model(model_id)
        without_embedding = model.active_params - model.embedding_params
        assert abs(without_embedding - published) < 0.5e9
        assert model.active_params == pytest.approx(published, rel=0.07)


def test_layer_kinds_from_compress_ratios():
    flash, pro = load_model("deepseek-v4-flash"), load_model("deepseek-v4-pro")

    def count(model, ratio):
        return sum(1 for b in model.blocks
                   if (b.compressed.ratio if b.compressed else 0) == ratio)

    # Flash: 0,0 then 4,128 alternating, last main layer 4; Pro: 128,128 then 4,128 …, 4
    assert [count(flash, r) for r in (0, 4, 128)] == [2, 21, 20]
    assert [count(pro, r) for r in (0, 4, 128)] == [0, 30, 31]
    for model in (flash, pro):
        assert all(b.window == 128 for b in model.blocks)  # every layer keeps the window
        assert [b.experts.routing for b in model.blocks[:4]] == ["hash"] * 3 + ["top-k"]
        assert model.mtp.block.compressed is None  # compress_ratios[num_layers] = 0
        assert len({g.block for g in model.layer_groups}) == len(model.layer_groups)


def test_one_csa_layer_of_flash_by_hand():
    flash = load_model("deepseek-v4-flash")
    block = flash.blocks[4]  # ratio 4, learned routing
    parts = block.params_by_part()
    attention = (4096 * 1024 + 1024 + 1024 * 64 * 512 + 4096 * 512 + 512 + 64 * 512 * 1024
                 + 8 * 1024 * 4096 + 64
                 + 2 * 4096 * 1024 + 4 * 1024 + 512  # compressor at 2·512
                 + 1024 * 64 * 128 + 4096 * 64  # indexer wq_b, weights_proj
                 + 2 * 4096 * 256 + 4 * 256 + 128)  # indexer compressor at 2·128
    assert parts["attention"] == attention == 126_098_624
    assert parts["hyper_connections"] == 2 * (24 * 4 * 4096 + 24 + 3)
    assert parts["routed_experts"] == 256 * 3 * 4096 * 2048
    assert parts["router"] == 256 * 4096 + 256


def test_expert_flops_per_token_match_chapter():
    # §3.6.2: 18·n_L·h·f·(k_routed + k_shared) = 18·n_L·h·f·(6 + 1)
    flash = expert_train_flops_per_token(load_model("deepseek-v4-flash"))
    pro = expert_train_flops_per_token(load_model("deepseek-v4-pro"))
    assert flash == 18 * 43 * 4096 * 2048 * 7 == 45_449_478_144  # 45.4495 GFLOPs
    assert pro == 18 * 61 * 7168 * 3072 * 7 == 169_246_457_856  # 169.2465 GFLOPs
    assert round(flash / 1e9, 4) == 45.4495 and round(pro / 1e9, 4) == 169.2465
    assert flash * 32e12 == pytest.approx(1.45438e24, rel=5e-6)
    assert pro * 33e12 == pytest.approx(5.58513e24, rel=5e-6)
    assert expert_train_flops_per_token(load_model("qwen3-8b")) == 0


def test_kv_per_token_by_hand():
    # past the 128-token window: CSA layers cache a 512 entry and a 128 indexer key per 4
    # tokens, HCA layers a 512 entry per 128 tokens; BF16
    flash, pro = load_model("deepseek-v4-flash"), load_model("deepseek-v4-pro")
    assert flash.kv_bytes_per_token(2) == (21 * (512 + 128) / 4 + 20 * 512 / 128) * 2 == 6880
    assert pro.kv_bytes_per_token(2) == (30 * (512 + 128) / 4 + 31 * 512 / 128) * 2 == 9848
    # within the window every layer also holds each token's 512-wide shared K=V
    assert flash.kv_bytes_per_token_in_window(2) == 43 * 512 * 2 + 6880
    assert flash.kv_bytes(100, 2) == 43 * 100 * 512 * 2 + 21 * 25 * 640 * 2  # no HCA entry yet


def test_kv_at_one_million_tokens_matches_published():
    # DeepSeek-V4 release (as summarized): V4-Pro holds 9.62 GiB per 1M-token sequence in BF16
    c = 1_048_576
    by_hand = (61 * 128 * 512 + 30 * (c // 4) * (512 + 128) + 31 * (c // 128) * 512) * 2
    pro = load_model("deepseek-v4-pro")
    assert pro.kv_bytes(c, 2) == by_hand == 10_334_371_840
    assert round(by_hand / 2**30, 2) == 9.62


def test_decode_step_attention_by_hand():
    flash = load_model("deepseek-v4-flash")
    ops = {op.name: op for op in forward(flash, Batch.decode(8191, 1), Precision.of()).ops}
    # 8,192 keys: window 128, CSA top-512 of 2,048 entries (span 2,048 tokens), HCA 8192/128
    csa, hca = ops["moe-swa128-csa4/attn/compressed_scores"], ops["moe-swa128-hca128/attn/"
                                                                  "compressed_scores"]
    assert ops["moe-swa128-csa4/attn/scores"].flops == 20 * 2 * 64 * 512 * 128
    assert csa.flops == 20 * 2 * 64 * 512 * 512
    assert hca.flops == 20 * 2 * 64 * 512 * 64
    assert ops["moe-swa128-csa4/attn/indexer_scores"].flops == 20 * 2 * 64 * 128 * 2048
    # a decode step reads the entries it attends and every indexer key (BF16)
    assert csa.kv_read_bytes == pytest.approx(20 * 2047 / 4 * 512 * 2)
    assert ops["moe-swa128-csa4/attn/indexer_scores"].kv_read_bytes == 20 * 8191 / 4 * 128 * 2
    assert hca.kv_read_bytes == pytest.approx(20 * 8191 / 128 * 512 * 2)


def test_decode_runs_cut_where_csa_saturates():
    flash = load_model("deepseek-v4-flash")
    assert flash.cost_windows == (128, 2048)
    runs = decode_runs(flash, Precision.of(), 1, 1000, 3000)
    assert [r.first_context for r in runs] == [1000, 2047]
    for run in runs:
        last = run.first_context + run.steps - 1
        step = forward(flash, Batch.decode(last, 1), Precision.of())
        assert run.flops0 + run.dflops * (run.steps - 1) == pytest.approx(step.flops)


@pytest.mark.parametrize("batch", [Batch.decode(5000, 3), Batch.uniform(300, 900, 2),
                                   Batch.uniform(0, 3000, 1, 0)])
def test_linear_cost_equals_forward(batch):
    model, p = load_model("deepseek-v4-pro"), Precision.of()
    cost = forward(model, batch, p)
    assert LinearCost.of(model, p).totals(batch) == pytest.approx((cost.flops, cost.bytes))


def test_training_flops_and_gap_add_up():
    model = load_model("deepseek-v4-flash")
    step = train_flops(model, TrainShape((4096,)))
    assert step.backward.flops == pytest.approx(2 * step.forward.flops)
    assert step.micro_batch_flops - step.six_nd_flops == pytest.approx(step.gap.total_flops)


def _config(**changes) -> dict:
    text = resources.files("napkin.catalog").joinpath("models", "deepseek-v4-flash.json")
    return {**json.loads(text.read_text()), **changes}


@pytest.mark.parametrize(("changes", "field"), [
    ({"compress_ratios": [16] * 44}, "compress_ratios"),
    ({"compress_ratios": [0] * 10}, "compress_ratios"),
    ({"num_key_value_heads": 2}, "num_key_value_heads"),
    ({"o_groups": 7}, "o_groups"),
    ({"hc_mult": None}, "hc_mult"),
    ({"first_k_dense_replace": 1}, "first_k_dense_replace"),
])
def test_unsupported_fields_refused(changes, field):
    with pytest.raises(NapkinError, match=field):
        from_hf_config(_config(**changes), "bad")
