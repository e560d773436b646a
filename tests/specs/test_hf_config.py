"""Reading Hugging Face config.json files: geometry, sliding windows, errors."""

import json

import pytest

from napkin.catalog import load_model
from napkin.errors import NapkinError
from napkin.specs.hf_config import from_hf_config, load_hf_config

# mistralai/Mistral-7B-v0.1 config.json (the keys napkin reads, values as published on HF).
MISTRAL_7B = {
    "architectures": ["MistralForCausalLM"],
    "model_type": "mistral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 32768,
    "sliding_window": 4096,
    "vocab_size": 32000,
    "tie_word_embeddings": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "torch_dtype": "bfloat16",
}

# A small Llama-like config for error cases and window semantics.
SMALL = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
}


def _small_params(layers=4, h=64, inter=128, heads=4, kv=2, vocab=100):
    head_dim = h // heads
    layer = h * h + 2 * h * kv * head_dim + h * h + 3 * h * inter + 2 * h
    return layers * layer + h + 2 * vocab * h


def test_mistral_7b_params_and_windows():
    spec = from_hf_config(dict(MISTRAL_7B), "mistral-7b")
    # Published: 7,241,732,096 (GGUF general.parameter_count of Mistral 7B, e.g. `ollama show`
    # mistral model_info). Hand derivation: 32 × (q,o 2·4096² + k,v 2·4096·1024
    # + MLP 3·4096·14336 + 2 norms 2·4096) + final norm 4096 + embed/head 2·32000·4096.
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert spec.params == 32 * layer + 4096 + 2 * 32_000 * 4096 == 7_241_732_096
    assert spec.num_layers == 32
    assert all(b.window == 4096 for b in spec.blocks)
    # 8 kv heads × 128 head_dim, K and V, per token per layer; windowed layers hold 4096 tokens.
    assert spec.kv_elements(8192) == 32 * 4096 * 2 * 8 * 128
    assert spec.kv_elements(1000) == 32 * 1000 * 2 * 8 * 128
    assert spec.blocks[0].attention.kind == "gqa"


def test_unknown_model_type_reads_as_llama_like():
    cfg = {**SMALL, "model_type": "totally-new-arch"}
    spec = from_hf_config(cfg, "new")
    assert spec.model_type == "totally-new-arch"
    assert spec.params == _small_params()
    # Same counts as the identical config labelled llama.
    assert spec.params == from_hf_config(dict(SMALL), "llama").params
    assert all(b.window is None for b in spec.blocks)
    assert not spec.is_moe


def test_head_dim_defaults_and_kv_heads_default_to_mha():
    cfg = {k: v for k, v in SMALL.items() if k != "num_key_value_heads"}
    spec = from_hf_config(cfg, "mha")
    att = spec.blocks[0].attention
    assert att.kind == "mha"
    assert att.num_kv_heads == 4
    assert att.qk_head_dim == 64 // 4
    assert spec.params == _small_params(kv=4)


def test_sliding_windows_from_layer_types_gpt_oss():
    # openai/gpt-oss-120b config.json: 36 layers alternating sliding_attention / full_attention
    # starting with sliding, sliding_window 128.
    spec = load_model("gpt-oss-120b")
    windows = [b.window for b in spec.blocks]
    assert windows.count(128) == 18
    assert windows.count(None) == 18
    assert all(w == 128 for w in windows[0::2])
    assert all(w is None for w in windows[1::2])


def test_sliding_windows_from_layer_types_inline():
    cfg = {
        **SMALL,
        "sliding_window": 16,
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention",
                        "full_attention"],
    }
    spec = from_hf_config(cfg, "lt")
    assert [b.window for b in spec.blocks] == [None, 16, 16, None]
    # 2 full layers hold all 100 tokens, 2 windowed ones 16; K+V of 2 kv heads × 16 head_dim.
    assert spec.kv_elements(100) == (2 * 100 + 2 * 16) * 2 * 2 * 16


def test_qwen2_use_sliding_window_false_gives_no_windows():
    # Qwen/Qwen2.5-7B config.json: sliding_window 131072 but use_sliding_window false.
    spec = load_model("qwen2.5-7b")
    assert all(b.window is None for b in spec.blocks)
    cfg = {**SMALL, "model_type": "qwen2", "sliding_window": 32, "use_sliding_window": False,
           "max_window_layers": 0}
    assert all(b.window is None for b in from_hf_config(cfg, "q2").blocks)


def test_qwen2_use_sliding_window_true_from_max_window_layers():
    # transformers Qwen2Config: "the first max_window_layers layers use full attention, any
    # additional layer after that uses SWA".
    cfg = {**SMALL, "model_type": "qwen2", "sliding_window": 32, "use_sliding_window": True,
           "max_window_layers": 3}
    assert [b.window for b in from_hf_config(cfg, "q2").blocks] == [None, None, None, 32]


def test_vision_language_text_config():
    raw = {"model_type": "some_vl", "tie_word_embeddings": True,
           "text_config": {**SMALL, "model_type": "qwen3_vl_text", "head_dim": 16}}
    spec = from_hf_config(raw, "vl")
    assert spec.tie_word_embeddings
    assert spec.lm_head_params == 0
    # Qwen3 text: per-head q_norm and k_norm (2 × head_dim 16) per layer; tied head.
    assert spec.params == _small_params() - 100 * 64 + 4 * 2 * 16


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def _error(raw, name="x"):
    with pytest.raises(NapkinError) as e:
        from_hf_config(raw, name)
    return str(e.value)


def test_missing_hidden_size():
    cfg = {k: v for k, v in SMALL.items() if k != "hidden_size"}
    assert "hidden_size" in _error(cfg)


def test_negative_num_hidden_layers():
    assert "num_hidden_layers" in _error({**SMALL, "num_hidden_layers": -2})


def test_zero_vocab():
    assert "vocab_size" in _error({**SMALL, "vocab_size": 0})


@pytest.mark.parametrize("raw", [[1, 2], "config", 3, None], ids=["list", "str", "int", "null"])
def test_non_dict_json(raw):
    assert "JSON object" in _error(raw)


def test_heads_not_multiple_of_kv_heads():
    msg = _error({**SMALL, "num_attention_heads": 4, "num_key_value_heads": 3})
    assert "num_attention_heads" in msg
    assert "num_key_value_heads" in msg


def test_mla_missing_qk_rope_head_dim():
    cfg = {**SMALL, "model_type": "deepseek_v3", "kv_lora_rank": 8, "q_lora_rank": 16,
           "qk_nope_head_dim": 8, "v_head_dim": 8}
    assert "qk_rope_head_dim" in _error(cfg)


def test_moe_top_k_above_num_experts():
    cfg = {**SMALL, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 5}
    assert "num_experts_per_tok" in _error(cfg)


def test_moe_without_top_k():
    cfg = {**SMALL, "model_type": "mixtral", "num_local_experts": 4}
    assert "num_experts_per_tok" in _error(cfg)


def test_dense_without_intermediate_size():
    cfg = {k: v for k, v in SMALL.items() if k != "intermediate_size"}
    assert "intermediate_size" in _error(cfg)


# ---------------------------------------------------------------------------------------------
# Files and the catalog loader
# ---------------------------------------------------------------------------------------------


def test_load_hf_config_file(tmp_path):
    path = tmp_path / "mistral.json"
    path.write_text(json.dumps(MISTRAL_7B))
    spec = load_hf_config(path)
    assert spec.name == "mistral"  # the file stem
    assert spec.params == 7_241_732_096  # published (see test_mistral_7b_params_and_windows)


def test_load_hf_config_invalid_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": 64,')
    with pytest.raises(NapkinError, match="not valid JSON"):
        load_hf_config(path)


def test_load_hf_config_non_object_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[1, 2, 3]")
    with pytest.raises(NapkinError, match="JSON object"):
        load_hf_config(path)


def test_load_hf_config_missing_file(tmp_path):
    path = tmp_path / "nope" / "config.json"
    with pytest.raises(NapkinError, match="no such file"):
        load_hf_config(path)


def test_load_model_from_directory(tmp_path):
    d = tmp_path / "mistral-dir"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(MISTRAL_7B))
    spec = load_model(str(d))
    assert spec.params == 7_241_732_096
    assert spec.model_type == "mistral"


def test_load_model_from_json_path(tmp_path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    assert load_model(str(path)).params == _small_params()


def test_load_model_missing_json_path(tmp_path):
    with pytest.raises(NapkinError):
        load_model(str(tmp_path / "missing.json"))


def test_load_model_unknown_id():
    with pytest.raises(NapkinError) as e:
        load_model("no-such-model-xyz")
    msg = str(e.value)
    assert "no-such-model-xyz" in msg
    assert "qwen3-8b" in msg  # lists the catalog ids


def test_load_model_is_case_insensitive():
    # Qwen/Qwen3-8B HF API safetensors total 8,190,735,360.
    assert load_model("Qwen3-8B").params == 8_190_735_360


def test_qwen2_moe_with_gated_shared_expert():
    # Qwen/Qwen1.5-MoE-A2.7B config.json geometry: 14,315,784,192 parameters (KerasHub preset
    # qwen1.5_moe_2.7b_en "params": 14315784192).
    cfg = {
        "model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
        "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
        "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
        "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "vocab_size": 151936, "tie_word_embeddings": False,
        "max_position_embeddings": 8192, "use_sliding_window": False, "sliding_window": 32768,
    }
    spec = from_hf_config(cfg, "qwen1.5-moe-a2.7b")
    layer = (
        4 * 2048 * 2048 + 3 * 2048  # q, k, v, o + q/k/v bias
        + 2 * 2048  # two RMSNorms
        + 60 * 2048  # router
        + 60 * 3 * 2048 * 1408  # routed experts
        + 3 * 2048 * 5632  # shared expert
        + 2048  # shared-expert gate (hidden → 1)
    )
    assert spec.params == 24 * layer + 2048 + 2 * 151_936 * 2048 == 14_315_784_192
    assert all(b.window is None for b in spec.blocks)


def test_minimax_qk_norm_shapes():
    # SMALL has 4 heads and 2 kv heads of 16: per_layer norms q over 4·16, k over 2·16 numbers;
    # per_head (Qwen3's) one 16-wide weight each.
    per_layer = from_hf_config({**SMALL, "use_qk_norm": True, "qk_norm_type": "per_layer"}, "x")
    per_head = from_hf_config({**SMALL, "use_qk_norm": True}, "x")
    plain = from_hf_config(SMALL, "x")
    assert plain.params == _small_params()
    assert per_layer.params - plain.params == 4 * (4 * 16 + 2 * 16)
    assert per_head.params - plain.params == 4 * (2 * 16)


def test_unknown_qk_norm_type_names_field_and_choices():
    msg = _error({**SMALL, "use_qk_norm": True, "qk_norm_type": "per_token"})
    assert "qk_norm_type" in msg and "per_head" in msg and "per_layer" in msg
