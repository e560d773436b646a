"""Qwen3.5-397B-A17B from its config.json's ``text_config`` (``qwen3_5_moe_text``), read as
Qwen3-Next's layers: parameters by hand against the model card, KV and state sizes.

The card (Qwen/Qwen3.5-397B-A17B): "397B in total and 17B activated", a vision-language model;
60 layers laid out as 15 × (3 × (Gated DeltaNet → MoE) → 1 × (Gated Attention → MoE)), 32 Q and
2 KV heads of 256, 64 V and 16 QK linear-attention heads of 128, 512 experts of 1,024, 10
routed and 1 shared. napkin reads the language part: the vision tower (the rest of 397 B) and
the declared MTP layer (``mtp_num_hidden_layers: 1``) are not counted. Qwen3.5's Gated DeltaNet
splits ``in_proj_qkvz``/``in_proj_ba`` into ``in_proj_qkv``, ``in_proj_z``, ``in_proj_b`` and
``in_proj_a`` of the same widths (transformers ``modeling_qwen3_5_moe.py``).
"""

from napkin.catalog import load_model
from napkin.specs.hf_config import from_hf_config

H, VOCAB, LAYERS = 4096, 248_320, 60
HEADS, KV_HEADS, HEAD_DIM = 32, 2, 256
HK, HV, DK, DV, KERNEL = 16, 64, 128, 128, 4
EXPERTS, TOP_K, INTER, SHARED = 512, 10, 1024, 1024

KEY_DIM, VALUE_DIM = HK * DK, HV * DV  # 2,048 and 8,192
CONV_DIM = 2 * KEY_DIM + VALUE_DIM  # 12,288
GDN = (H * (2 * KEY_DIM + VALUE_DIM)  # in_proj_qkv: 4,096 × 12,288
       + H * VALUE_DIM  # in_proj_z: 4,096 × 8,192
       + H * HV + H * HV  # in_proj_b, in_proj_a: 4,096 × 64 each
       + CONV_DIM * KERNEL  # conv1d (12,288, 1, 4), no bias
       + HV + HV  # dt_bias, A_log
       + DV  # norm over head_v_dim
       + VALUE_DIM * H)  # out_proj: 8,192 × 4,096
ATTENTION = (H * HEADS * HEAD_DIM * 2  # q_proj with the output gate: 4,096 × 16,384
             + 2 * H * KV_HEADS * HEAD_DIM  # k_proj, v_proj: 4,096 × 512 each
             + HEADS * HEAD_DIM * H  # o_proj: 8,192 × 4,096
             + 2 * HEAD_DIM)  # q_norm, k_norm
EXPERT = 3 * H * INTER  # gate, up, down: 12,582,912
MOE_FIXED = H * EXPERTS + 3 * H * SHARED + H  # router, shared expert, shared_expert_gate
NORMS = 2 * H
EMBEDDINGS = 2 * VOCAB * H  # untied


def test_total_and_active_by_hand_against_the_model_card():
    assert GDN == 50_331_648 + 33_554_432 + 524_288 + 49_152 + 128 + 128 + 33_554_432 \
        == 118_014_208
    assert ATTENTION == 67_108_864 + 4_194_304 + 33_554_432 + 512 == 104_858_112
    spec = load_model("qwen3.5-397b-a17b")
    gdn, full = (g.block for g in spec.layer_groups)
    assert gdn.params_by_part()["attention"] == GDN
    assert full.params_by_part()["attention"] == ATTENTION
    moe = EXPERTS * EXPERT + MOE_FIXED
    total = 45 * (GDN + moe + NORMS) + 15 * (ATTENTION + moe + NORMS) + H + EMBEDDINGS
    assert spec.params == total == 396_346_350_336
    # card: 397 B with the vision tower, which napkin does not count (≈ 0.4–0.7 B)
    assert 396e9 < spec.params < 397e9
    active = total - LAYERS * (EXPERTS - TOP_K) * EXPERT
    assert spec.active_params == active == 17_349_040_896
    assert round(active / 1e9) == 17  # card: "17B activated"


def test_kv_covers_the_15_attention_layers_and_the_state_the_45_others():
    """KV per token: 15 layers × 2 KV heads × 256 × (K, V) × 2 B = 30,720 B. Each sequence keeps
    Hv·dk·dv = 1,048,576 recurrent numbers and conv_dim·(K − 1) = 36,864 convolution numbers in
    each of the 45 Gated DeltaNet layers."""
    spec = load_model("qwen3.5-397b-a17b")
    assert spec.kv_bytes_per_token(2) == 15 * KV_HEADS * HEAD_DIM * 2 * 2 == 30_720
    gdn = spec.layer_groups[0].block.linear_attention
    assert gdn is not None and (gdn.num_k_heads, gdn.num_v_heads) == (HK, HV)
    assert HV * DK * DV == 1_048_576 and CONV_DIM * (KERNEL - 1) == 36_864


def test_the_text_config_of_a_dense_qwen3_5_reads_as_its_layers():
    """A dense Qwen3.5 (``qwen3_5_text``) takes the same reader: no experts, SwiGLU MLPs."""
    raw = {"model_type": "qwen3_5", "text_config": {
        "model_type": "qwen3_5_text", "hidden_size": 512, "intermediate_size": 1024,
        "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 128, "vocab_size": 1000, "linear_num_key_heads": 4,
        "linear_num_value_heads": 8, "linear_key_head_dim": 64, "linear_value_head_dim": 64}}
    spec = from_hf_config(raw, "tiny")
    assert [b.linear_attention is not None for b in spec.blocks] == [True, True, True, False]
    assert all(b.experts is None for b in spec.blocks)
