"""DeepSeek-V3.2 (napkin.specs.deepseek_v32): DeepSeek-V3 plus DSA's lightning indexer,
parameters against the published checkpoint totals and decode traffic by hand.

config.json (src/napkin/catalog/models/deepseek-v3.2.json): DeepSeek-V3's geometry (hidden
7168, 61 layers of which 3 dense, 128 heads, q_lora 1536, kv_lora 512, qk_rope 64, 256 routed
experts of 2048 + 1 shared, one MTP module, vocab 129,280) and index_n_heads 64,
index_head_dim 128, index_topk 2048.
"""

import json
from importlib import resources

import pytest

from napkin.accounting import Batch, Precision, forward
from napkin.accounting.linear import LinearCost
from napkin.accounting.series import decode_runs
from napkin.catalog import load_model
from napkin.errors import NapkinError
from napkin.serving.step import StepShape
from napkin.specs.hf_config import from_hf_config

H, VOCAB, LAYERS = 7168, 129_280, 61
# DeepSeek-V3's layers, derived in tests/specs/test_model_params.py
# (test_deepseek_v3_layer_groups, test_deepseek_v3_mtp_reported_apart)
V3_DENSE, V3_MOE, V3_MTP = 583_483_392, 11_507_286_272, 11_610_068_224
# The indexer of one layer (reference Indexer): wq_b q_lora 1536 → 64 heads × 128, wk h → 128,
# weights_proj h → 64 heads, k_norm a LayerNorm of 128 with weight and bias.
INDEXER = 1536 * 64 * 128 + H * 128 + H * 64 + 2 * 128
LATENT = 512 + 64  # kv_lora_rank + qk_rope_head_dim, cached per token
INDEX_KEY = 128


def test_indexer_by_hand():
    assert INDEXER == 12_582_912 + 917_504 + 458_752 + 256 == 13_959_424


def test_params_by_hand():
    spec = load_model("deepseek-v3.2")
    groups = spec.layer_groups
    assert [g.num_layers for g in groups] == [3, 58]
    assert groups[0].block.params == V3_DENSE + INDEXER
    assert groups[1].block.params == V3_MOE + INDEXER
    total = 3 * (V3_DENSE + INDEXER) + 58 * (V3_MOE + INDEXER) + 2 * VOCAB * H + H
    assert spec.params == total == 671_877_944_064
    assert spec.params - load_model("deepseek-v3").params == LAYERS * INDEXER
    # the MTP module's block has its indexer too
    assert spec.mtp.params == V3_MTP + INDEXER == 11_624_027_648
    # active: V3's 37,552,297,472 (test_deepseek_v3_active_params) plus 61 indexers
    assert spec.active_params == 37_552_297_472 + LAYERS * INDEXER == 38_403_822_336


def test_matches_published_checkpoint_totals():
    spec = load_model("deepseek-v3.2")
    stored = spec.params + spec.mtp.params_as_stored  # main + MTP with its embedding/head copies
    # HF API safetensors total of deepseek-ai/DeepSeek-V3.2: 685,355,329,792 (a model table
    # of HF totals) — the model card's "685B"
    assert stored == 685_355_329_792
    assert round(stored / 1e9) == 685
    # deepseek-ai/DeepSeek-V3.2-Exp (same config): 685,396,921,376, which also counts the FP32
    # weight_scale_inv tensors, one per 128×128 block of every FP8 matmul: V3's 41,540,496
    # (test_deepseek_v3_matches_hf_api_total_with_fp8_scales) plus, in each of the 62 layers
    # (61 + MTP), the indexer's wq_b (8192/128 · 1536/128 = 768) and wk (1 · 7168/128 = 56);
    # weights_proj and k_norm are stored unquantized.
    scales = 41_540_496 + 62 * (64 * 12 + 1 * 56)
    assert stored + scales == 685_396_921_376


def test_dsa_block_structure():
    spec = load_model("deepseek-v3.2")
    block = spec.blocks[10]
    assert block.attention.kind == "dsa"
    assert block.attention.kv_elements_per_token == 0  # the cache is the stream's
    assert block.window == 0  # nothing attended through the block's own stream
    c = block.compressed
    assert (c.ratio, c.entry_elements, c.top_k, c.index_heads, c.index_head_dim) == (
        1, LATENT, 2048, 64, INDEX_KEY)
    assert spec.mtp.block.compressed == c
    assert spec.cost_windows == (2048,)  # decode cost is affine on each side of 2,048 tokens
    assert spec.min_window is None
    assert spec.kv_devices(8) == 1.0  # one latent head, whole on every TP device (as V3)


def test_kv_held_by_hand():
    spec = load_model("deepseek-v3.2")
    # every token keeps its latent (576) and its indexer key (128) in every layer
    assert spec.kv_bytes_per_token(2) == LAYERS * (LATENT + INDEX_KEY) * 2 == 85_888
    context = 163_840  # max_position_embeddings
    assert spec.kv_bytes(context, 1) == LAYERS * context * (LATENT + INDEX_KEY)


def test_decode_kv_read_at_32k_by_hand():
    # One decode step at 32,768 cached tokens, KV in FP8 (1 byte a number). Each layer reads
    # the 2,048 latents the indexer picks — 2,047 cached ones, the new token's own entry being
    # counted as written — and the indexer key of every cached token.
    spec, p = load_model("deepseek-v3.2"), Precision.of(kv="fp8")
    step = forward(spec, Batch.decode(32_768, 1), p)
    latents = 2047 * LATENT
    keys = 32_768 * INDEX_KEY
    assert step.kv_read_bytes == LAYERS * (latents + keys) == 327_775_936
    assert step.kv_write_bytes == LAYERS * (LATENT + INDEX_KEY) == 42_944
    # DeepSeek-V3 (dense MLA) reads all 32,768 latents: 3.5× more
    v3 = forward(load_model("deepseek-v3"), Batch.decode(32_768, 1), p)
    assert v3.kv_read_bytes == LAYERS * 32_768 * LATENT == 1_151_336_448
    # below 2,048 tokens DSA reads every latent, as V3, plus the indexer keys
    short = forward(spec, Batch.decode(1000, 1), p)
    assert short.kv_read_bytes == LAYERS * 1000 * (LATENT + INDEX_KEY)


def test_decode_attention_flops_by_hand():
    spec = load_model("deepseek-v3.2")
    ops = {op.name: op for op in forward(spec, Batch.decode(32_768, 1), Precision.of()).ops}
    # latent-space attention over 2,048 pairs: scores 2·128·576, values 2·128·512 per pair
    assert ops["moe-csa1/attn/compressed_scores"].flops == 58 * 2 * 128 * LATENT * 2048
    assert ops["moe-csa1/attn/compressed_values"].flops == 58 * 2 * 128 * 512 * 2048
    # the indexer scores all 32,769 tokens (cached and new) with 64 heads of 128
    assert ops["moe-csa1/attn/indexer_scores"].flops == 58 * 2 * 64 * 128 * 32_769
    assert ops["moe-csa1/attn/scores"].flops == ops["moe-csa1/attn/values"].flops == 0


def test_prefill_attention_is_capped_at_top_k():
    spec = load_model("deepseek-v3.2")
    ops = {op.name: op for op in forward(spec, Batch.uniform(0, 8192), Precision.of()).ops}
    pairs = 2048 * 2049 // 2 + (8192 - 2048) * 2048  # token i attends min(i + 1, 2048)
    assert ops["moe-csa1/attn/compressed_scores"].flops == 58 * 2 * 128 * LATENT * pairs
    assert ops["moe-csa1/attn/indexer_scores"].flops == 58 * 2 * 64 * 128 * 8192 * 8193 // 2


@pytest.mark.parametrize("batch", [Batch.decode(5000, 3), Batch.decode(100, 2),
                                   Batch.uniform(300, 900, 2), Batch.uniform(0, 3000, 1, 0)])
def test_linear_cost_equals_forward(batch):
    spec, p = load_model("deepseek-v3.2"), Precision.of()
    cost = forward(spec, batch, p)
    assert LinearCost.of(spec, p).totals(batch) == pytest.approx((cost.flops, cost.bytes))


def test_simulator_step_shape_equals_forward():
    # the serving engine costs a DSA model through StepShape, window by window
    spec, p = load_model("deepseek-v3.2"), Precision.of()
    shape = StepShape(2, 1000 + 40_000, [(500, 700, 1)], dec_ctx=[1000, 40_000])
    batch = Batch((*Batch.decode(1000).segments, *Batch.decode(40_000).segments,
                   *Batch.uniform(500, 700).segments))
    cost = forward(spec, batch, p)
    assert LinearCost.of(spec, p).totals(shape) == pytest.approx((cost.flops, cost.bytes))


def test_decode_runs_cut_where_top_k_saturates():
    spec, p = load_model("deepseek-v3.2"), Precision.of()
    runs = decode_runs(spec, p, 1, 1000, 3000)
    assert [r.first_context for r in runs] == [1000, 2047]
    for run in runs:
        last = run.first_context + run.steps - 1
        step = forward(spec, Batch.decode(last, 1), p)
        assert run.flops0 + run.dflops * (run.steps - 1) == pytest.approx(step.flops)


def _config(**changes) -> dict:
    text = resources.files("napkin.catalog").joinpath("models", "deepseek-v3.2.json")
    return {k: v for k, v in {**json.loads(text.read_text()), **changes}.items()
            if v is not None}


@pytest.mark.parametrize(("changes", "field"), [
    ({"index_topk": None}, "index_topk"),
    ({"index_n_heads": 0}, "index_n_heads"),
    ({"q_lora_rank": None}, "q_lora_rank"),
    ({"kv_lora_rank": None}, "kv_lora_rank"),
])
def test_missing_dsa_fields_refused(changes, field):
    with pytest.raises(NapkinError, match=field):
        from_hf_config(_config(**changes), "bad")
