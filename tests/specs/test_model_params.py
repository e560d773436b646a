"""Parameter counts of every shipped catalog model against published figures.

Every expected number is either a published figure (source in the comment next to it) or a hand
derivation written out here from the model's config.json geometry. Nothing below was copied from
napkin's own output.
"""

import pytest

from napkin.catalog import MODELS, load_model

# ---------------------------------------------------------------------------------------------
# Published totals, one per shipped catalog model
# ---------------------------------------------------------------------------------------------

PUBLISHED_TOTALS = [
    # Qwen/Qwen3-0.6B: HF API safetensors.total 751,632,384 (BF16) stores the tied lm_head a
    # second time; unique = 751,632,384 - vocab·hidden (151,936·1,024 = 155,582,464).
    pytest.param("qwen3-0.6b", 751_632_384 - 151_936 * 1_024, id="qwen3-0.6b"),
    # Qwen/Qwen3-8B: HF API safetensors {"BF16": 8190735360, "total": 8190735360};
    # model.safetensors.index.json total_size 16,381,470,720 bytes / 2 (bf16).
    pytest.param("qwen3-8b", 8_190_735_360, id="qwen3-8b"),
    # Qwen/Qwen3-32B: model.safetensors.index.json total_size 65,524,246,528 bytes / 2 (bf16).
    pytest.param("qwen3-32b", 65_524_246_528 // 2, id="qwen3-32b"),
    # Qwen/Qwen3-30B-A3B: GGUF general.parameter_count 30,532,122,624 (several GGUF repos;
    # HF API gguf.total 30532122624).
    pytest.param("qwen3-30b-a3b", 30_532_122_624, id="qwen3-30b-a3b"),
    # Qwen/Qwen3-235B-A22B: HF API safetensors {"BF16": 235093634560, "total": 235093634560}
    # (KerasHub preset qwen3_moe_235b_a22b_en "params": 235093634560).
    pytest.param("qwen3-235b-a22b", 235_093_634_560, id="qwen3-235b-a22b"),
    # deepseek-ai/DeepSeek-R1: DeepSeek-V3's geometry (its config.json differs only in
    # transformers_version); 671,026,419,200 main-model parameters (an R1-0528 calculator
    # preset; Fireworks paramCount), MTP module excluded.
    pytest.param("deepseek-r1", 671_026_419_200, id="deepseek-r1"),
    # deepseek-ai/DeepSeek-V3.1: DeepSeek-V3's geometry (NVIDIA's NVFP4 release's config.json
    # differs from V3's only in transformers_version and the quantization block), so the same
    # main-model count; its model card: 671B total parameters, 37B activated.
    pytest.param("deepseek-v3.1", 671_026_419_200, id="deepseek-v3.1"),
    # Qwen/Qwen2.5-7B: GGUF general.parameter_count 7,615,616,512 (Ollama qwen2.5:7b show;
    # HF API gguf.total 7615616512).
    pytest.param("qwen2.5-7b", 7_615_616_512, id="qwen2.5-7b"),
    # Qwen3-VL-4B-Instruct, language part = Qwen3-4B geometry (hidden 2560, 36 layers, tied):
    # Qwen/Qwen3-4B model.safetensors.index.json total_size 8,044,936,192 bytes / 2 (bf16).
    pytest.param("qwen3-vl-4b", 8_044_936_192 // 2, id="qwen3-vl-4b"),
    # meta-llama/Llama-2-7b-hf: HF API safetensors.total 6,738,417,664 (rev 01c7f73d) includes
    # the rotary inv_freq buffers, 32 layers × 64 (head_dim 128 / 2) = 2,048 elements.
    pytest.param("llama-2-7b", 6_738_417_664 - 32 * 64, id="llama-2-7b"),
    # meta-llama/Llama-2-13b-hf: 13,015,864,320 — a DeepSpeed ZeRO-3 checkpoint of it
    # ("Reconstructed Trainable fp32 state dict with 363 params 13015864320 elements", a
    # fine-tuning tutorial's log) and model-size tables quoting Llama-2-13b-chat-hf.
    pytest.param("llama-2-13b", 13_015_864_320, id="llama-2-13b"),
    # meta-llama/Llama-2-70b-hf: togethercomputer param table / AuroraGPT-70B TOTAL_PARAMS
    # 68,976,648,192 (HF API total 68,976,653,312 = this + 80 layers × 64 inv_freq, checked below).
    pytest.param("llama-2-70b", 68_976_648_192, id="llama-2-70b"),
    # meta-llama/Meta-Llama-3-8B: 8,030,261,248 (thamada/modelQuery README; KerasHub
    # llama3_8b_en preset "params": 8030261248); index total_size 16,060,522,496 / 2.
    pytest.param("llama-3-8b", 8_030_261_248, id="llama-3-8b"),
    # meta-llama/Meta-Llama-3-70B: 70,553,706,496 (HF API safetensors.total quoted in several
    # repos, e.g. a scraper fixture {"safetensors": {"total": 70553706496}}).
    pytest.param("llama-3-70b", 70_553_706_496, id="llama-3-70b"),
    # meta-llama/Llama-3.1-8B: HF API safetensors.total 8,030,261,248 (revision-pinned table,
    # rev d04e592bb4f6aa9cfee91e2e20afa771667e1d4b); thamada/modelQuery README lists
    # Llama-3.1-8B 8030261248 params / 16,060,522,496 bytes.
    pytest.param("llama-3.1-8b", 8_030_261_248, id="llama-3.1-8b"),
    # meta-llama/Llama-3.1-70B: HF API safetensors.total 70,553,706,496 (revision-pinned table,
    # rev 349b2ddb53ce8f2849a6c168a81980ab25258dac); the same revision's checkpoint is
    # 141,107,412,992 bytes = 2 × 70,553,706,496 (bf16).
    pytest.param("llama-3.1-70b", 141_107_412_992 // 2, id="llama-3.1-70b"),
    # meta-llama/Llama-3.1-405B: HF API safetensors.total 405,853,388,800
    # (rev b906e4dc842aa489c962f9db26554dcfdde901fe).
    pytest.param("llama-3.1-405b", 405_853_388_800, id="llama-3.1-405b"),
    # mistralai/Mixtral-8x7B-v0.1: 46,702,792,704 (KerasHub mixtral_8_7b_en preset "params";
    # HF API safetensors.total of Mixtral-8x7B-Instruct-v0.1 46702792704).
    pytest.param("mixtral-8x7b", 46_702_792_704, id="mixtral-8x7b"),
    # deepseek-ai/DeepSeek-V3 main model (MTP apart): 671,026,419,200 ("671B", README_WEIGHTS;
    # exact count cross-checked against the HF API total in a test below).
    pytest.param("deepseek-v3", 671_026_419_200, id="deepseek-v3"),
    # openai/gpt-oss-120b: GGUF general.parameter_count 116,829,156,672 (ollama show
    # gpt-oss:120b); model card arXiv:2508.10925 Table 1: 116.83B.
    pytest.param("gpt-oss-120b", 116_829_156_672, id="gpt-oss-120b"),
    # openai/gpt-oss-20b: GGUF general.parameter_count 20,914,757,184 (ollama show
    # gpt-oss:20b); model card Table 1: 20.91B.
    pytest.param("gpt-oss-20b", 20_914_757_184, id="gpt-oss-20b"),
    # Fish Audio S2 Pro publishes only "Slow AR 4B + Fast AR 400M" (fishaudio/fish-speech release
    # notes, model card); exact totals are hand derivations from DualARModelArgs below.
    pytest.param("fish-s2-pro-slow", 4_032_298_496, id="fish-s2-pro-slow"),
    pytest.param("fish-s2-pro-fast", 424_696_320, id="fish-s2-pro-fast"),
    # DeepSeek publishes only "284B" (V4-Flash) and "1.6T" (V4-Pro), MTP apart (DeepSeek-V4
    # report); the exact totals are hand derivations from config.json in test_deepseek_v4.py.
    pytest.param("deepseek-v4-flash", 284_332_240_471, id="deepseek-v4-flash"),
    pytest.param("deepseek-v4-pro", 1_572_997_201_763, id="deepseek-v4-pro"),
    # MiniMax publishes only "230B total, 10B activated" (MiniMaxAI/MiniMax-M2.5 model card); the
    # exact total is the hand derivation in test_minimax_m2_5_hand_derivation.
    pytest.param("minimax-m2.5", 228_689_764_864, id="minimax-m2.5"),
    # moonshotai/Kimi-K2.5's language part has Kimi-K2's geometry: Fireworks API paramCount of
    # Kimi K2 Instruct 1,026,408,232,448; a checkpoint audit lists K2.5 at 1,026,879,376,368
    # with its vision tower and projector, which napkin leaves out.
    pytest.param("kimi-k2.5", 1_026_408_232_448, id="kimi-k2.5"),
    # meta-llama/Llama-4-Scout-17B-16E-Instruct: HF API safetensors total 108,641,793,536 (model
    # tables in several repositories) less the vision tower and projector, 871,932,416 (derived
    # in tests/specs/test_llama4.py), which napkin leaves out.
    pytest.param("llama-4-scout", 108_641_793_536 - 871_932_416, id="llama-4-scout"),
    # Llama 4 Maverick: parameter_count 401,583,781,376 (Fireworks' billing export example) less
    # the same vision tower and projector.
    pytest.param("llama-4-maverick", 401_583_781_376 - 871_932_416, id="llama-4-maverick"),
    # deepseek-ai/DeepSeek-V3.2: HF API safetensors total 685,355,329,792 less the MTP module as
    # stored (11,624,027,648 + its copies of the embedding and head, 2 × 129,280 × 7,168; see
    # tests/specs/test_deepseek_v32.py).
    pytest.param("deepseek-v3.2", 685_355_329_792 - 11_624_027_648 - 2 * 129_280 * 7_168,
                 id="deepseek-v3.2"),
    # Qwen publishes only "80B in total" (Qwen/Qwen3-Next-80B-A3B-Instruct model card); the
    # exact total is the hand derivation in tests/specs/test_qwen3_next.py (MTP layer apart).
    pytest.param("qwen3-next-80b-a3b", 79_674_391_296, id="qwen3-next-80b-a3b"),
    # Qwen publishes only "397B in total" with the vision tower (Qwen/Qwen3.5-397B-A17B model
    # card); the language part's exact total is the hand derivation in
    # tests/specs/test_qwen3_5.py (MTP layer apart).
    pytest.param("qwen3.5-397b-a17b", 396_346_350_336, id="qwen3.5-397b-a17b"),
    # zai-org/GLM-5's card: 744B; the exact total is the hand derivation in
    # tests/specs/test_glm5.py (MTP layer apart).
    pytest.param("glm-5", 743_911_218_432, id="glm-5"),
    # moonshotai/Kimi-Linear-48B-A3B-Instruct: a report that lists every tensor of the
    # checkpoint (20 safetensors files, 20,493 tensors) sums them to 49,122,681,728 (the card
    # says "48B", the Hugging Face page 49B); hand-derived in tests/specs/test_kimi_linear.py.
    pytest.param("kimi-linear-48b-a3b", 49_122_681_728, id="kimi-linear-48b-a3b"),
]


def test_kimi_k2_5_follows_deepseek_v3_layer_rules():
    # kimi_k2: DeepSeek-V3's layer (MLA with q_lora 1536, 64 heads) with 384 experts of 2048,
    # 1 shared, first_k_dense_replace 1: 60 of 61 layers are MoE; 8 routed experts per token.
    spec = load_model("kimi-k2.5")
    assert sum(1 for b in spec.blocks if b.experts) == 60
    assert spec.blocks[0].experts is None
    assert spec.blocks[1].experts.num_experts == 384
    assert spec.blocks[1].attention.kind == "mla"
    # Kimi K2 card: "32 billion activated parameters" (32.86 B here, embedding and head in)
    assert round(spec.active_params / 1e9) == 33 and spec.active_params > 32e9


def test_minimax_m2_5_hand_derivation():
    # config.json: hidden 3072, 62 layers, 48 heads and 8 kv heads of 128, 256 experts of
    # SwiGLU 1536 (top 8, sigmoid router with a routing bias), per-layer q/k RMSNorm over all
    # heads, vocab 200,064 untied; its 3 MTP modules are not counted.
    h, q, kv, experts, inter, vocab = 3072, 48 * 128, 8 * 128, 256, 1536, 200_064
    attn = h * q + 2 * h * kv + q * h + q + kv  # q, k, v, o + q_norm (q wide), k_norm (kv wide)
    def layer(routed: int) -> int:
        return attn + routed * 3 * h * inter + h * experts + experts + 2 * h  # router, bias, norms
    spec = load_model("minimax-m2.5")
    assert spec.params == 62 * layer(experts) + h + 2 * vocab * h == 228_689_764_864
    assert round(spec.params / 1e10) == 23  # "230B"
    # Activated per token without the embedding and LM head: 9.80 B ("10B"; 9.8 B in the
    # MiniMax-M2 series' reports).
    active = spec.active_params - 2 * vocab * h
    assert active == 62 * layer(8) + h == 9_801_359_872


def test_fish_s2_pro_hand_derivation_and_published_sizes():
    # dim 2560, 32 heads × 128 (q 4096 wide), 8 kv heads, SwiGLU 9728; slow: 36 layers, qk-norm,
    # vocab 155,776 tied; fast: 4 layers, no qk-norm, 4,096-entry codebook in and out.
    attn = 2560 * 4096 + 2 * 2560 * 1024 + 4096 * 2560
    mlp = 3 * 2560 * 9728
    slow = 36 * (attn + mlp + 2 * 2560 + 2 * 128) + 2560 + 155_776 * 2560
    fast = 4 * (attn + mlp + 2 * 2560) + 2560 + 2 * 4096 * 2560
    assert (slow, fast) == (4_032_298_496, 424_696_320)
    assert round(slow / 1e9) == 4 and round(fast / 1e8) == 4  # "4B + 400M"


def test_every_catalog_model_has_a_published_total():
    assert {p.values[0] for p in PUBLISHED_TOTALS} == {m.id for m in MODELS}


@pytest.mark.parametrize(("model_id", "published"), PUBLISHED_TOTALS)
def test_total_params_match_published(model_id, published):
    assert load_model(model_id).params == published


# ---------------------------------------------------------------------------------------------
# Checkpoint-storage traps
# ---------------------------------------------------------------------------------------------


def test_qwen3_0_6b_tied_head_stored_twice_in_checkpoint():
    spec = load_model("qwen3-0.6b")
    assert spec.tie_word_embeddings
    assert spec.lm_head_params == 0
    # HF API safetensors.total 751,632,384 = unique params + a materialised copy of the head.
    assert spec.params + 151_936 * 1_024 == 751_632_384
    # Hand derivation (hidden 1024, 28 layers, 16 heads, 8 kv heads, head_dim 128, inter 3072):
    layer = (
        1024 * 16 * 128  # q
        + 1024 * 8 * 128  # k
        + 1024 * 8 * 128  # v
        + 16 * 128 * 1024  # o
        + 128 + 128  # q_norm, k_norm
        + 2 * 1024  # input + post-attention RMSNorm
        + 3 * 1024 * 3072  # gate, up, down
    )
    assert spec.params == 28 * layer + 1024 + 151_936 * 1024 == 596_049_920


def test_llama_2_checkpoints_include_rotary_inv_freq_buffers():
    # HF API safetensors.total counts the non-persistent rotary inv_freq buffer of every layer
    # (head_dim/2 = 64 elements each), which is not a parameter.
    # meta-llama/Llama-2-7b-hf: 6,738,417,664 (rev 01c7f73d); 32 layers.
    assert load_model("llama-2-7b").params == 6_738_417_664 - 32 * 64
    # meta-llama/Llama-2-70b-hf: 68,976,653,312 (rev 3aba440b); 80 layers.
    assert load_model("llama-2-70b").params == 68_976_653_312 - 80 * 64


def test_llama_2_7b_hand_derivation():
    # hidden 4096, 32 layers, MHA 32 heads, inter 11008, vocab 32000, untied.
    layer = 4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    assert load_model("llama-2-7b").params == 32 * layer + 4096 + 2 * 32_000 * 4096


def test_qwen3_vl_4b_language_part_equals_qwen3_4b():
    spec = load_model("qwen3-vl-4b")
    assert spec.tie_word_embeddings
    assert spec.lm_head_params == 0
    # Qwen3-4B geometry: hidden 2560, 36 layers, 32 heads, 8 kv heads, head_dim 128, inter 9728.
    layer = (
        2560 * 32 * 128 + 2 * 2560 * 8 * 128 + 32 * 128 * 2560  # q, k, v, o
        + 2 * 128  # q_norm, k_norm
        + 2 * 2560  # two RMSNorms
        + 3 * 2560 * 9728  # gate, up, down
    )
    # Qwen/Qwen3-4B bf16 checkpoint 8,044,936,192 bytes / 2 = 4,022,468,096.
    assert spec.params == 36 * layer + 2560 + 151_936 * 2560 == 8_044_936_192 // 2


def test_deepseek_v3_mtp_reported_apart():
    spec = load_model("deepseek-v3")
    assert spec.mtp is not None
    assert spec.mtp.num_modules == 1  # config num_nextn_predict_layers = 1
    h = 7168
    moe_layer = 11_507_286_272  # derived in test_deepseek_v3_layer_groups below
    # One MTP module: enorm + hnorm (2h), eh_proj (2h × h), one MoE block, shared_head norm (h).
    unique = 2 * h + 2 * h * h + moe_layer + h
    assert spec.mtp.params == unique == 11_610_068_224
    # As stored on HF: plus its own copy of embed_tokens and shared_head (2 × vocab·h).
    assert spec.mtp.params_as_stored == unique + 2 * 129_280 * h == 13_463_426_304
    # README_WEIGHTS: "MTP ... 11.5B unique parameters" (a rounded-down figure; 11.61B here).
    assert 11.5e9 <= spec.mtp.params < 11.7e9


def test_deepseek_v3_matches_hf_api_total_with_fp8_scales():
    spec = load_model("deepseek-v3")
    # HF API /api/models/deepseek-ai/DeepSeek-V3 safetensors.total = 684,531,386,000
    # (BF16 3,918,786,560 + F8_E4M3 680,571,043,840 + F32 41,555,600). Besides parameters it
    # counts the float32 weight_scale_inv tensors: one scale per 128×128 block of every FP8 matmul.
    def blocks(out_f, in_f):
        return -(-out_f // 128) * -(-in_f // 128)

    attn = (
        blocks(1536, 7168)  # q_a
        + blocks(128 * 192, 1536)  # q_b
        + blocks(512 + 64, 7168)  # kv_a (with MQA rope part)
        + blocks(128 * (128 + 128), 512)  # kv_b
        + blocks(7168, 128 * 128)  # o
    )
    dense_mlp = 2 * blocks(18432, 7168) + blocks(7168, 18432)
    expert = 2 * blocks(2048, 7168) + blocks(7168, 2048)
    moe_mlp = (1 + 256) * expert  # shared + routed; the router gate stays bf16
    scales = 3 * (attn + dense_mlp) + (58 + 1) * (attn + moe_mlp)  # 58 MoE layers + 1 MTP
    assert scales == 41_540_496
    assert spec.params + spec.mtp.params_as_stored + scales == 684_531_386_000


def test_deepseek_v3_layer_groups():
    spec = load_model("deepseek-v3")
    groups = spec.layer_groups
    assert [g.num_layers for g in groups] == [3, 58]  # first_k_dense_replace = 3, 61 layers
    assert groups[0].layer_indices == (0, 1, 2)
    h = 7168
    attn = (
        h * 1536  # q_a
        + 1536  # q_a_layernorm
        + 1536 * 128 * (128 + 64)  # q_b: heads × (qk_nope + qk_rope)
        + h * (512 + 64)  # kv_a_proj_with_mqa
        + 512  # kv_a_layernorm
        + 512 * 128 * (128 + 128)  # kv_b: heads × (qk_nope + v_head_dim)
        + 128 * 128 * h  # o
    )
    assert attn == 187_107_328
    dense = attn + 2 * h + 3 * h * 18432
    moe = (
        attn
        + 2 * h  # two RMSNorms
        + h * 256  # router gate
        + 256  # e_score_correction_bias (noaux_tc)
        + 3 * h * 2048  # one shared expert
        + 256 * 3 * h * 2048  # 256 routed experts
    )
    assert groups[0].block.params == dense == 583_483_392
    assert groups[1].block.params == moe == 11_507_286_272
    assert groups[0].block.experts is None
    assert groups[1].block.experts.num_experts == 256
    assert groups[1].block.experts.num_active == 8
    total = 3 * dense + 58 * moe + 2 * 129_280 * h + h
    assert spec.params == total == 671_026_419_200


def test_deepseek_v3_active_params():
    spec = load_model("deepseek-v3")
    h = 7168
    attn = 187_107_328  # derived in test_deepseek_v3_layer_groups
    dense = attn + 2 * h + 3 * h * 18432
    moe_active = attn + 2 * h + h * 256 + 256 + 3 * h * 2048 + 8 * 3 * h * 2048
    embedding = 129_280 * h
    active = 3 * dense + 58 * moe_active + embedding + h + embedding
    assert spec.active_params == active == 37_552_297_472
    assert spec.active_params - spec.embedding_params == 36_625_618_432
    # DeepSeek-V3 technical report / README: "671B total parameters with 37B activated".
    assert 37e9 <= spec.active_params < 38e9
    # README_WEIGHTS: "Activation parameters: 36.7B". Only the count without the input
    # embedding (a lookup, not a matmul) comes near it; 36.63B vs 36.7B, so a loose tolerance.
    assert spec.active_params - spec.embedding_params == pytest.approx(36.7e9, abs=0.1e9)


# ---------------------------------------------------------------------------------------------
# Per-layer derivations and structure
# ---------------------------------------------------------------------------------------------


def test_qwen3_8b_one_layer():
    spec = load_model("qwen3-8b")
    (group,) = spec.layer_groups
    assert group.num_layers == 36
    # hidden 4096, 32 heads, 8 kv heads, head_dim 128, intermediate 12288.
    layer = (
        4096 * 32 * 128  # q   16,777,216
        + 4096 * 8 * 128  # k   4,194,304
        + 4096 * 8 * 128  # v   4,194,304
        + 32 * 128 * 4096  # o  16,777,216
        + 128 + 128  # q_norm, k_norm (per-head RMSNorm)
        + 2 * 4096  # input_layernorm, post_attention_layernorm
        + 3 * 4096 * 12288  # gate, up, down 150,994,944
    )
    assert group.block.params == layer == 192_946_432
    parts = group.block.params_by_part()
    assert parts["attention"] == 4096 * 4096 * 2 + 2 * 4096 * 1024 + 256
    assert parts["mlp"] == 3 * 4096 * 12288
    assert parts["norms"] == 2 * 4096
    assert spec.params == 36 * layer + 4096 + 2 * 151_936 * 4096 == 8_190_735_360


def test_qwen2_5_7b_qkv_bias():
    spec = load_model("qwen2.5-7b")
    (group,) = spec.layer_groups
    bias = sum(lin.out_features for lin in group.block.linears if lin.bias)
    # q, k, v biases: 28 heads × 128 + 4 kv heads × 128 (k) + 4 × 128 (v); o has none.
    assert bias == 3584 + 512 + 512
    assert spec.num_layers * bias == 28 * (3584 + 512 + 512) == 129_024
    # Whole-model derivation: hidden 3584, 28 layers, 28 heads, 4 kv, inter 18944, vocab 152064.
    layer = (
        3584 * 3584 + 3584  # q + bias
        + 2 * (3584 * 512 + 512)  # k, v + bias
        + 3584 * 3584  # o
        + 2 * 3584  # norms
        + 3 * 3584 * 18944  # MLP
    )
    assert spec.params == 28 * layer + 3584 + 2 * 152_064 * 3584 == 7_615_616_512


def test_tied_vs_untied_heads():
    for model_id in ("qwen3-0.6b", "qwen3-vl-4b"):  # config tie_word_embeddings: true
        spec = load_model(model_id)
        assert spec.tie_word_embeddings
        assert spec.lm_head_params == 0
    spec = load_model("qwen3-8b")  # tie_word_embeddings: false
    assert not spec.tie_word_embeddings
    assert spec.lm_head_params == spec.embedding_params == 151_936 * 4096
    spec = load_model("llama-3-8b")
    assert spec.lm_head_params == 128_256 * 4096


# ---------------------------------------------------------------------------------------------
# Non-embedding counts against the Qwen model cards
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "card", "half_unit"),
    [
        pytest.param("qwen3-0.6b", 0.44e9, 0.005e9, id="qwen3-0.6b"),  # card: 0.44B
        pytest.param("qwen3-8b", 6.95e9, 0.005e9, id="qwen3-8b"),  # card: 6.95B
        pytest.param("qwen3-32b", 31.2e9, 0.05e9, id="qwen3-32b"),  # card: 31.2B
        pytest.param("qwen3-30b-a3b", 29.9e9, 0.05e9, id="qwen3-30b-a3b"),  # card: 29.9B
        pytest.param("qwen2.5-7b", 6.53e9, 0.005e9, id="qwen2.5-7b"),  # card: 6.53B
    ],
)
def test_non_embedding_against_qwen_cards(model_id, card, half_unit):
    # Tolerance: half a unit of the card's last printed digit (the card rounds).
    assert abs(load_model(model_id).non_embedding_params - card) <= half_unit


def test_non_embedding_exact_qwen3_8b():
    # 36 layers × 192,946,432 (test_qwen3_8b_one_layer) + final norm 4096.
    assert load_model("qwen3-8b").non_embedding_params == 36 * 192_946_432 + 4096
    assert 36 * 192_946_432 + 4096 == 6_946_075_648


def test_non_embedding_exact_qwen3_32b():
    # hidden 5120, 64 layers, 64 heads, 8 kv, head_dim 128, inter 25600.
    layer = (
        5120 * 64 * 128 + 2 * 5120 * 8 * 128 + 64 * 128 * 5120
        + 2 * 128 + 2 * 5120 + 3 * 5120 * 25600
    )
    assert load_model("qwen3-32b").non_embedding_params == 64 * layer + 5120 == 31_206_298_624


# ---------------------------------------------------------------------------------------------
# Mixture of experts: active parameters
# ---------------------------------------------------------------------------------------------


def test_qwen3_30b_a3b_active():
    spec = load_model("qwen3-30b-a3b")
    h = 2048
    # 48 layers, 32 heads, 4 kv heads, head_dim 128, 128 experts of moe_intermediate 768, top-8.
    attn = h * 32 * 128 + 2 * h * 4 * 128 + 32 * 128 * h + 2 * 128
    expert = 3 * h * 768
    layer_total = attn + 2 * h + h * 128 + 128 * expert
    layer_active = attn + 2 * h + h * 128 + 8 * expert
    embeddings = 2 * 151_936 * h  # untied
    assert spec.params == 48 * layer_total + h + embeddings == 30_532_122_624
    assert spec.non_embedding_params == 48 * layer_total + h == 29_909_792_768
    assert spec.active_params == 48 * layer_active + h + embeddings == 3_353_032_704
    # Qwen3-30B-A3B model card: "Number of Activated Parameters: 3.3B" (3.353B, truncated).
    assert 3.3e9 <= spec.active_params < 3.4e9


def test_mixtral_active():
    spec = load_model("mixtral-8x7b")
    h = 4096
    attn = 2 * h * h + 2 * h * 1024  # q, o; k, v with 8 kv heads × 128
    expert = 3 * h * 14336
    layer_total = attn + 2 * h + h * 8 + 8 * expert
    layer_active = attn + 2 * h + h * 8 + 2 * expert  # top-2 of 8
    embeddings = 2 * 32_000 * h
    assert spec.params == 32 * layer_total + h + embeddings == 46_702_792_704
    assert spec.active_params == 32 * layer_active + h + embeddings == 12_879_925_248
    # Mistral AI, "Mixtral of experts" (Dec 2023): "uses 12.9B parameters per token".
    assert abs(spec.active_params - 12.9e9) <= 0.05e9


def _gpt_oss_layer(num_experts: int) -> tuple[int, int, int, int]:
    """(attention, mlp, mlp_active, norms) of one gpt-oss layer, by hand.

    hidden 2880, 64 heads × 64, 8 kv heads, every projection biased, one sink per head;
    experts of width 2880 with biased gate/up/down, biased router, top-4.
    """
    h = 2880
    attention = (
        h * 64 * 64 + 64 * 64  # q + bias
        + 2 * (h * 8 * 64 + 8 * 64)  # k, v + bias
        + 64 * 64 * h + h  # o + bias
        + 64  # sinks
    )
    expert = 3 * (h * 2880 + 2880)
    router = h * num_experts + num_experts
    return attention, router + num_experts * expert, router + 4 * expert, 2 * h


@pytest.mark.parametrize(
    ("model_id", "layers", "experts", "attn_total", "mlp_total", "active_no_emb", "card"),
    [
        # gpt-oss model card (arXiv:2508.10925) Table 1, gpt-oss-120b: MLP 114.71B,
        # Attention 0.96B, Active 5.13B (unembedding counted, embedding not).
        pytest.param("gpt-oss-120b", 36, 128, 955_805_184, 114_714_874_368, 5_132_849_472,
                     (114.71e9, 0.96e9, 5.13e9), id="gpt-oss-120b"),
        # Same table, gpt-oss-20b: MLP 19.12B, Attention 0.64B, Active 3.61B.
        pytest.param("gpt-oss-20b", 24, 32, 637_203_456, 19_119_145_728, 3_608_307_264,
                     (19.12e9, 0.64e9, 3.61e9), id="gpt-oss-20b"),
    ],
)
def test_gpt_oss_parts(model_id, layers, experts, attn_total, mlp_total, active_no_emb, card):
    spec = load_model(model_id)
    attention, mlp, mlp_active, norms = _gpt_oss_layer(experts)
    assert layers * attention == attn_total
    assert layers * mlp == mlp_total
    parts = [g.block.params_by_part() for g in spec.layer_groups for _ in g.layer_indices]
    assert len(parts) == layers
    got_attn = sum(p["attention"] for p in parts)
    got_mlp = sum(p["routed_experts"] + p["router"] + p["mlp"] + p["shared_experts"]
                  for p in parts)
    assert got_attn == attn_total
    assert got_mlp == mlp_total
    assert sum(p["norms"] for p in parts) == layers * norms
    embedding = 201_088 * 2880
    active = layers * (attention + mlp_active + norms) + 2880 + embedding  # + unembedding
    assert active == active_no_emb
    assert spec.active_params - spec.embedding_params == active_no_emb
    card_mlp, card_attn, card_active = card
    assert abs(got_mlp - card_mlp) <= 0.005e9
    assert abs(got_attn - card_attn) <= 0.005e9
    assert abs(active_no_emb - card_active) <= 0.005e9
    # Embed + Unembed 1.16B in the same table.
    assert abs(spec.embedding_params + spec.lm_head_params - 1.16e9) <= 0.005e9

