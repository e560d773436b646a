"""GLM-5 from its config.json (``glm_moe_dsa``), read as DeepSeek-V3.2's layers: parameters by
hand against the model card.

The card (zai-org/GLM-5): 744B parameters, 40B active, DeepSeek Sparse Attention. The config
(NVIDIA's NVFP4 release, the base model's geometry): hidden 6,144, 78 layers of which the first
3 dense (SwiGLU 12,288), 75 MoE with 256 routed experts of 2,048 (8 a token) and 1 shared; MLA
with q_lora 2,048, kv_lora 512, 64 heads of 192 + 64 (nope + rope) query/key and 256 value
dimensions; a DSA indexer of 32 heads of 128; vocabulary 154,880, untied; one MTP layer, built
and not counted in the total (as DeepSeek's).
"""

from napkin.catalog import load_model

H, VOCAB, LAYERS, DENSE = 6144, 154_880, 78, 3
HEADS, Q_LORA, KV_LORA, NOPE, ROPE, V = 64, 2048, 512, 192, 64, 256
INDEX_HEADS, INDEX_DIM = 32, 128
EXPERTS, TOP_K, INTER, SHARED, DENSE_INTER = 256, 8, 2048, 2048, 12288

ATTENTION = (H * Q_LORA + Q_LORA  # q_a_proj, q_a_layernorm
             + Q_LORA * HEADS * (NOPE + ROPE)  # q_b_proj
             + H * (KV_LORA + ROPE) + KV_LORA  # kv_a_proj_with_mqa, kv_a_layernorm
             + KV_LORA * HEADS * (NOPE + V)  # kv_b_proj
             + HEADS * V * H  # o_proj
             + Q_LORA * INDEX_HEADS * INDEX_DIM  # indexer wq_b
             + H * INDEX_DIM + 2 * INDEX_DIM  # indexer wk, k_norm (weight and bias)
             + H * INDEX_HEADS)  # indexer weights_proj
EXPERT = 3 * H * INTER
MOE = EXPERTS * EXPERT + 3 * H * SHARED + EXPERTS * H + EXPERTS  # + router, its bias
NORMS = 2 * H


def test_total_and_active_by_hand_against_the_model_card():
    assert ATTENTION == 174_394_112
    spec = load_model("glm-5")
    assert spec.blocks[0].params_by_part()["attention"] == ATTENTION
    total = (DENSE * (ATTENTION + 3 * H * DENSE_INTER + NORMS)
             + (LAYERS - DENSE) * (ATTENTION + MOE + NORMS) + H + 2 * VOCAB * H)
    assert spec.params == total == 743_911_218_432
    assert round(spec.params / 1e9) == 744  # card: 744B
    active = total - (LAYERS - DENSE) * (EXPERTS - TOP_K) * EXPERT
    assert spec.active_params == active == 41_784_728_832
    # card: 40B active — the weights a token multiplies, without the input embedding
    assert round((active - VOCAB * H) / 1e9) == 41 and int((active - VOCAB * H) / 1e9) == 40


def test_every_layer_attends_sparsely_and_the_sample_names_map_to_it():
    from napkin.calibration.measurements.catalog_ids import catalog_model_id

    spec = load_model("glm-5")
    assert {b.attention.kind for b in spec.blocks} == {"dsa"}
    assert catalog_model_id("zhipuai/GLM-5") == catalog_model_id("zai-org/GLM-5") == "glm-5"
