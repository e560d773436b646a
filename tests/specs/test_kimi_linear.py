"""Kimi-Linear-48B-A3B from its config.json: parameters, layer placement, KV and state sizes.

Expected values are the model card's figures (moonshotai/Kimi-Linear-48B-A3B-Instruct README:
"#Total Params 48B", "#Activated Params 3B", context 1M, "A 3:1 KDA-to-global MLA ratio"), a
published checkpoint total (a report that lists every tensor of the checkpoint, 20 safetensors
files: 49,122,681,728 parameters; the Hugging Face model page rounds the same count to 49B), or
hand derivations written out below from the config geometry and the module shapes of vLLM's
``models/kimi_linear.py`` and ``layers/kda.py`` (which are the checkpoint's tensor shapes);
nothing is copied from napkin's output.
"""

import copy

import pytest

from napkin.catalog import catalog_config, load_model
from napkin.errors import NapkinError
from napkin.specs.hf_config import from_hf_config
from napkin.specs.model import check_tensor_parallel

MODEL = "kimi-linear-48b-a3b"
# config.json: hidden 2304, 27 layers, vocab 163,840 untied; KDA layers (1-based) all but 4, 8,
# 12, 16, 20, 24, 27, with 32 heads of 128 and a 4-tap short convolution; MLA in those 7 with
# 32 heads, kv_lora_rank 512, q_lora_rank null, qk_nope 128, qk_rope 64, v_head_dim 128;
# 256 experts of 1024, top 8, 1 shared expert; first_k_dense_replace 1, dense MLP 9216.
H, VOCAB, LAYERS = 2304, 163_840, 27
KDA_HEADS, D, KERNEL = 32, 128, 4
HEADS, RANK, NOPE, ROPE, V_DIM = 32, 512, 128, 64, 128
EXPERTS, TOP_K, INTER, DENSE = 256, 8, 1024, 9216
MLA_AT = [3, 7, 11, 15, 19, 23, 26]  # 0-based indexes of full_attn_layers 4, 8, …, 24, 27

# KDA (vLLM KimiDeltaAttention): projection_size = 32·128 = 4,096.
P = KDA_HEADS * D
KDA = (3 * H * P  # q_proj, k_proj, v_proj: 2,304 × 4,096 each = 28,311,552
       + H * D + D * P  # f_a_proj 2,304 → 128, f_b_proj 128 → 4,096: 294,912 + 524,288
       + H * D + D * P  # g_a_proj, g_b_proj: the same
       + H * KDA_HEADS  # b_proj 2,304 → 32: 73,728
       + 3 * P * KERNEL  # q_conv1d, k_conv1d, v_conv1d (4,096, 1, 4) each: 49,152
       + KDA_HEADS + P  # A_log (1, 1, 32, 1), dt_bias (4,096)
       + D  # o_norm over head_dim
       + P * H)  # o_proj 4,096 → 2,304: 9,437,184
# MLA (vLLM KimiMLAAttention, q_lora_rank None).
MLA = (H * HEADS * (NOPE + ROPE)  # q_proj 2,304 → 6,144: 14,155,776
       + H * (RANK + ROPE)  # kv_a_proj_with_mqa 2,304 → 576: 1,327,104
       + RANK  # kv_a_layernorm
       + RANK * HEADS * (NOPE + V_DIM)  # kv_b_proj 512 → 8,192: 4,194,304
       + HEADS * V_DIM * H)  # o_proj 4,096 → 2,304: 9,437,184
EXPERT = 3 * H * INTER  # w1, w2, w3: 7,077,888
MOE = EXPERTS * EXPERT + EXPERT + H * EXPERTS + EXPERTS  # routed, shared, gate, score bias
NORMS = 2 * H
EMBEDDINGS = 2 * VOCAB * H  # embed_tokens + lm_head: 2 × 377,487,360


def test_hand_derivation_of_one_layer_of_each_kind():
    assert KDA == 28_311_552 + 2 * (294_912 + 524_288) + 73_728 + 49_152 + 32 + 4_096 + 128 \
        + 9_437_184 == 39_514_272
    assert MLA == 14_155_776 + 1_327_104 + 512 + 4_194_304 + 9_437_184 == 29_114_880
    assert MOE == 1_811_939_328 + 7_077_888 + 589_824 + 256 == 1_819_607_296
    spec = load_model(MODEL)
    assert [i for i, b in enumerate(spec.blocks) if b.linear_attention is None] == MLA_AT
    first, kda, mla = spec.blocks[0], spec.blocks[1], spec.blocks[3]
    assert first.experts is None and kda.experts is not None  # first_k_dense_replace 1
    assert first.params_by_part()["attention"] == kda.params_by_part()["attention"] == KDA
    assert mla.params_by_part()["attention"] == MLA
    assert first.params == KDA + 3 * H * DENSE + NORMS == 103_219_872
    assert kda.params == KDA + MOE + NORMS == 1_859_126_176
    assert mla.params == MLA + MOE + NORMS == 1_848_726_784
    assert kda.linear_attention.kind == "kda" and mla.attention.kind == "mla"


def test_total_and_active_against_the_model_card():
    spec = load_model(MODEL)
    total = (20 * (KDA + NORMS) + 7 * (MLA + NORMS) + 3 * H * DENSE + 26 * MOE
             + H + EMBEDDINGS)
    # = the checkpoint's tensor total, 49,122,681,728, listed tensor by tensor
    assert spec.params == total == 49_122_681_728
    # card: "48B" total — the parameters without the embedding and LM head, 48.37 B
    assert spec.non_embedding_params == total - EMBEDDINGS == 48_367_707_008
    assert round(spec.non_embedding_params / 1e9) == 48
    # Active: 248 of 256 experts idle in each of the 26 MoE layers.
    active = total - 26 * (EXPERTS - TOP_K) * EXPERT
    assert spec.active_params == active == 3_484_459_904
    # card: "3B activated" — 3.11 B without the input embedding (the LM head in), 2.73 B
    # without both, 3.48 B with both
    assert active - VOCAB * H == 3_106_972_544
    assert round((active - VOCAB * H) / 1e9) == round((active - EMBEDDINGS) / 1e9) == 3
    assert spec.max_position_embeddings == 1_048_576  # card: context 1M (model_max_length)


def test_kv_per_token_counts_only_the_mla_layers():
    spec = load_model(MODEL)
    # 7 MLA layers × one latent of kv_lora_rank + qk_rope_head_dim = 576 numbers (mla_use_nope:
    # no rotary, but the 64 dims are still projected by kv_a_proj_with_mqa and cached) × 2 B.
    assert spec.kv_bytes_per_token(2) == 7 * (RANK + ROPE) * 2 == 8_064
    assert spec.kv_bytes(1000, 2) == 1000 * 8_064
    # A full-MLA model of the same 27 layers: 27 × 1,152 = 31,104 B; the hybrid keeps 7/27 of
    # it (card: "reducing KV cache usage by up to 75%"; 74 % here).
    assert 1 - spec.kv_bytes_per_token(2) / (LAYERS * 576 * 2) == pytest.approx(20 / 27)
    assert spec.kv_devices(8) == 1  # the latent sits whole on every device


def test_state_per_sequence_hand_derivation():
    spec = load_model(MODEL)
    # Per KDA layer (vLLM MambaStateShapeCalculator.kda_state_shape): recurrent 32 heads ×
    # 128 × 128 = 524,288 numbers in FP32 (2 MiB); three convolution states (q, k, v) of
    # 4,096 channels × (4 − 1) = 36,864 numbers in the KV format.
    recurrent, conv = KDA_HEADS * D * D, 3 * P * (KERNEL - 1)
    assert (recurrent, conv) == (524_288, 36_864)
    assert spec.state_elements() == (20 * recurrent, 20 * conv) == (10_485_760, 737_280)
    per_layer = recurrent * 4 + conv * 2  # BF16 conv state
    assert per_layer == 2_097_152 + 73_728 == 2_170_880
    assert spec.state_bytes_per_sequence(2) == 20 * per_layer == 43_417_600  # 41.41 MiB
    assert spec.state_bytes_per_sequence(1) == 20 * (recurrent * 4 + conv)  # FP8 conv state
    assert spec.has_recurrent_state


def test_tensor_parallel_splits_the_kda_heads():
    spec = load_model(MODEL)
    for tp in (1, 2, 4, 8, 16, 32):  # 32 KDA heads, 32 MLA heads (vLLM divides both)
        check_tensor_parallel(spec, tp)
    with pytest.raises(NapkinError, match="tensor_parallel: 3 does not divide") as e:
        check_tensor_parallel(spec, 3)
    assert "\n" not in str(e.value)


def test_renamed_keys_are_read_and_ours_win():
    raw = copy.deepcopy(catalog_config(MODEL))
    spec = from_hf_config(raw, "k")
    assert spec.blocks[1].experts.num_active == 8  # num_experts_per_token
    assert spec.blocks[1].params_by_part()["shared_experts"] == EXPERT  # num_shared_experts 1
    raw["num_shared_experts"] = 2
    assert from_hf_config(raw, "k2").blocks[1].params_by_part()["shared_experts"] == 2 * EXPERT


@pytest.mark.parametrize(("change", "field"), [
    ({"linear_attn_config": {"kda_layers": [1], "full_attn_layers": [2], "num_heads": 32}},
     "linear_attn_config.head_dim"),
    ({"linear_attn_config": None}, "linear_attn_config"),
    ({"num_nextn_predict_layers": 1}, "num_nextn_predict_layers"),
    ({"kv_lora_rank": None}, "kv_lora_rank"),
])
def test_bad_configs_are_refused_naming_the_field(change, field):
    raw = copy.deepcopy(catalog_config(MODEL))
    raw.update(change)
    with pytest.raises(NapkinError, match=field) as e:
        from_hf_config(raw, "bad")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("kda", "full", "message"), [
    ([0, 1, 2], [4], "outside 1..27"),  # numbered from 0 by mistake
    (list(range(1, 27)), [26, 27], "listed twice"),
    (list(range(1, 26)), [27], r"layers \[26\] are missing"),
])
def test_layer_lists_must_cover_every_layer_once(kda, full, message):
    raw = copy.deepcopy(catalog_config(MODEL))
    raw["linear_attn_config"] = {**raw["linear_attn_config"], "kda_layers": kda,
                                 "full_attn_layers": full}
    with pytest.raises(NapkinError, match=f"linear_attn_config.*{message}") as e:
        from_hf_config(raw, "bad")
    assert "\n" not in str(e.value)
