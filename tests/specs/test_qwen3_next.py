"""Qwen3-Next-80B-A3B from its config.json: parameters, layer placement, KV and state sizes.

Expected values are the model card's figures (Qwen/Qwen3-Next-80B-A3B-Instruct README: "80B in
total and 3B activated", "Number of Paramaters (Non-Embedding): 79B", 48 layers laid out as
12 × (3 × (Gated DeltaNet → MoE) → 1 × (Gated Attention → MoE)), 16 Q and 2 KV heads of 256,
32 V and 16 QK linear-attention heads of 128, 512 experts, 10 activated, 1 shared, expert
intermediate 512) or hand derivations written out below from the config geometry and the
module shapes of transformers' ``modeling_qwen3_next.py``; nothing is copied from napkin's
output.
"""

import copy

import pytest

from napkin.catalog import catalog_config, load_model
from napkin.errors import NapkinError
from napkin.specs.hf_config import from_hf_config
from napkin.specs.model import check_tensor_parallel

# config.json: hidden 2048, 48 layers, vocab 151,936 untied; full attention 16 heads, 2 KV
# heads, head_dim 256; Gated DeltaNet 16 key heads and 32 value heads of 128, conv kernel 4;
# 512 experts of 512, top 10, one shared expert of 512; full_attention_interval 4.
H, VOCAB, LAYERS = 2048, 151_936, 48
HEADS, KV_HEADS, HEAD_DIM = 16, 2, 256
HK, HV, DK, DV, KERNEL = 16, 32, 128, 128, 4
EXPERTS, TOP_K, INTER, SHARED = 512, 10, 512, 512

# Gated DeltaNet (Qwen3NextGatedDeltaNet): key_dim = 16·128 = 2,048, value_dim = 32·128 = 4,096,
# conv_dim = 2·2,048 + 4,096 = 8,192.
KEY_DIM, VALUE_DIM = HK * DK, HV * DV
CONV_DIM = 2 * KEY_DIM + VALUE_DIM
GDN = (H * (2 * KEY_DIM + 2 * VALUE_DIM)  # in_proj_qkvz: 2,048 × 12,288 = 25,165,824
       + H * 2 * HV  # in_proj_ba: 2,048 × 64 = 131,072
       + CONV_DIM * KERNEL  # conv1d weight (8,192, 1, 4), no bias = 32,768
       + HV + HV  # dt_bias, A_log
       + DV  # norm (gated RMSNorm over head_v_dim)
       + VALUE_DIM * H)  # out_proj: 4,096 × 2,048 = 8,388,608
# Gated attention (Qwen3NextAttention): q_proj doubled for the output gate.
ATTENTION = (H * HEADS * HEAD_DIM * 2  # q_proj: 2,048 × 8,192
             + 2 * H * KV_HEADS * HEAD_DIM  # k_proj, v_proj: 2,048 × 512 each
             + HEADS * HEAD_DIM * H  # o_proj: 4,096 × 2,048
             + 2 * HEAD_DIM)  # q_norm, k_norm
EXPERT = 3 * H * INTER  # gate, up, down: 3,145,728
MOE_FIXED = H * EXPERTS + 3 * H * SHARED + H  # router, shared expert, shared_expert_gate
NORMS = 2 * H  # input_layernorm, post_attention_layernorm
EMBEDDINGS = 2 * VOCAB * H  # embed_tokens + lm_head (untied)


def test_hand_derivation_of_one_layer_of_each_kind():
    assert GDN == 25_165_824 + 131_072 + 32_768 + 64 + 128 + 8_388_608 == 33_718_464
    assert ATTENTION == 16_777_216 + 2 * 1_048_576 + 8_388_608 + 512 == 27_263_488
    spec = load_model("qwen3-next-80b-a3b")
    gdn, full = (g.block for g in spec.layer_groups)
    assert gdn.linear_attention is not None and full.linear_attention is None
    assert gdn.params_by_part()["attention"] == GDN
    assert full.params_by_part()["attention"] == ATTENTION
    moe = EXPERTS * EXPERT + MOE_FIXED
    assert gdn.params == GDN + moe + NORMS == 1_648_531_648
    assert full.params == ATTENTION + moe + NORMS == 1_642_076_672


def test_total_and_active_against_the_model_card():
    spec = load_model("qwen3-next-80b-a3b")
    moe = EXPERTS * EXPERT + MOE_FIXED
    total = 36 * (GDN + moe + NORMS) + 12 * (ATTENTION + moe + NORMS) + H + EMBEDDINGS
    assert spec.params == total == 79_674_391_296
    assert round(spec.params / 1e9) == 80  # card: "80B in total"
    assert spec.non_embedding_params == total - EMBEDDINGS == 79_052_061_440
    assert int(spec.non_embedding_params / 1e9) == 79  # card: "(Non-Embedding): 79B"
    # Active: 502 of 512 experts idle in each of the 48 layers.
    active = total - LAYERS * (EXPERTS - TOP_K) * EXPERT
    assert spec.active_params == active == 3_874_929_408
    # Card: "3B activated" — the matmul parameters a token uses, embedding and head apart
    # (3.25 B; 3.87 B with them). A model-sheet parser's fixture for Qwen/Qwen3-Coder-Next
    # (same config geometry) lists the same total, 79,674,391,296, and active 3,874,929,408.
    assert active - EMBEDDINGS == 3_252_599_552
    assert int((spec.active_params - EMBEDDINGS) / 1e9) == 3


def test_layer_placement_follows_full_attention_interval():
    spec = load_model("qwen3-next-80b-a3b")
    full = [i for i, b in enumerate(spec.blocks) if b.linear_attention is None]
    assert full == list(range(3, 48, 4))  # (i + 1) % 4 == 0: 12 layers
    assert len(spec.blocks) - len(full) == 36
    # An explicit layer_types list takes precedence over the interval.
    raw = copy.deepcopy(catalog_config("qwen3-next-80b-a3b"))
    raw["layer_types"] = ["full_attention"] * 2 + ["linear_attention"] * 46
    alt = from_hf_config(raw, "alt")
    assert [b.linear_attention is None for b in alt.blocks[:3]] == [True, True, False]


def test_kv_per_token_counts_only_the_attention_layers():
    spec = load_model("qwen3-next-80b-a3b")
    # 12 layers × (K + V) × 2 KV heads × 256 × 2 bytes (BF16) = 24,576 B; the 36 Gated
    # DeltaNet layers cache nothing per token.
    assert spec.kv_bytes_per_token(2) == 12 * 2 * KV_HEADS * HEAD_DIM * 2 == 24_576
    assert spec.kv_bytes(1000, 2) == 1000 * 24_576
    assert spec.kv_devices(4) == 2  # the attention layers' 2 KV heads: replicated past tp 2


def test_state_per_sequence_hand_derivation():
    spec = load_model("qwen3-next-80b-a3b")
    # Per Gated DeltaNet layer: recurrent 32 heads × 128 × 128 = 524,288 numbers in FP32
    # (2 MiB); convolution 8,192 channels × (4 − 1) = 24,576 numbers in the KV format.
    recurrent, conv = HV * DK * DV, CONV_DIM * (KERNEL - 1)
    assert (recurrent, conv) == (524_288, 24_576)
    assert spec.state_elements() == (36 * recurrent, 36 * conv)
    per_layer = recurrent * 4 + conv * 2  # BF16 conv state
    assert per_layer == 2_097_152 + 49_152 == 2_146_304
    assert spec.state_bytes_per_sequence(2) == 36 * per_layer == 77_266_944  # 73.69 MiB
    assert spec.state_bytes_per_sequence(1) == 36 * (recurrent * 4 + conv)  # FP8 conv state
    assert spec.state_bytes_per_sequence(2, 2) == 36 * (recurrent + conv) * 2  # vLLM's BF16
    assert spec.has_recurrent_state and not load_model("qwen3-8b").has_recurrent_state
    assert load_model("qwen3-8b").state_bytes_per_sequence(2) == 0


def test_tensor_parallel_splits_the_linear_attention_heads():
    spec = load_model("qwen3-next-80b-a3b")
    for tp in (1, 2, 4, 8, 16):  # 16 attention heads, 16 key heads, 32 value heads
        check_tensor_parallel(spec, tp)
    with pytest.raises(NapkinError, match="tensor_parallel: 3 does not divide"):
        check_tensor_parallel(spec, 3)
    # tp 32 splits the 32 value heads but not the 16 key heads (vLLM divides both).
    raw = copy.deepcopy(catalog_config("qwen3-next-80b-a3b"))
    raw["num_attention_heads"] = 32
    with pytest.raises(NapkinError, match="16 linear-attention key heads") as e:
        check_tensor_parallel(from_hf_config(raw, "wide"), 32)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("change", "field"), [
    ({"linear_num_value_heads": 24}, "linear_num_value_heads"),
    ({"layer_types": ["linear_attention"] * 47}, "layer_types"),
    ({"layer_types": ["sliding_attention"] * 48}, "layer_types"),
    ({"linear_key_head_dim": None}, "linear_key_head_dim"),
])
def test_bad_configs_are_refused_naming_the_field(change, field):
    raw = copy.deepcopy(catalog_config("qwen3-next-80b-a3b"))
    raw.update(change)
    if change.get("linear_key_head_dim", 0) is None:
        del raw["linear_key_head_dim"]
    with pytest.raises(NapkinError, match=field) as e:
        from_hf_config(raw, "bad")
    assert "\n" not in str(e.value)
