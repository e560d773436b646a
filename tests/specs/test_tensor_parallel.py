"""Tensor-parallel sizes vLLM accepts: heads (and KV heads) must split evenly."""

import pytest

from napkin.catalog import load_model
from napkin.errors import NapkinError
from napkin.specs.hf_config import from_hf_config
from napkin.specs.model import check_tensor_parallel


def _toy(heads: int, kv_heads: int):
    cfg = {"model_type": "llama", "hidden_size": heads * 64, "num_hidden_layers": 2,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads,
           "intermediate_size": 1024, "vocab_size": 1000}
    return from_hf_config(cfg, f"toy-{heads}-{kv_heads}")


def test_tp3_on_qwen3_32b_is_refused():
    # Qwen3-32B: 64 attention heads, 8 KV heads; vLLM: "Total number of attention heads (64)
    # must be divisible by tensor parallel size (3)".
    model = load_model("qwen3-32b")
    assert model.blocks[0].attention.num_heads == 64
    with pytest.raises(NapkinError) as e:
        check_tensor_parallel(model, 3)
    msg = str(e.value)
    assert msg.startswith("tensor_parallel:")
    assert "\n" not in msg
    assert "64 attention heads" in msg and "3" in msg


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16, 32, 64])
def test_divisors_of_the_heads_are_accepted_on_qwen3_32b(tp):
    # tp 16..64 exceed the 8 KV heads: vLLM replicates each KV head tp/8 times.
    check_tensor_parallel(load_model("qwen3-32b"), tp)


def test_tp8_accepted():
    check_tensor_parallel(load_model("qwen3-32b"), 8)
    check_tensor_parallel(load_model("llama-3.1-70b"), 8)
    check_tensor_parallel(load_model("deepseek-v3"), 8)  # MLA: one latent, replicated


@pytest.mark.parametrize("tp", [0, -2])
def test_tp_must_be_positive(tp):
    with pytest.raises(NapkinError, match="tensor_parallel: must be >= 1"):
        check_tensor_parallel(load_model("qwen3-8b"), tp)


def test_kv_heads_must_split_or_replicate_evenly():
    # 48 heads, 12 KV heads: tp 8 divides the heads but not the 12 KV heads
    # (vLLM QKVParallelLinear: divide(12, 8) fails).
    with pytest.raises(NapkinError, match="12 KV heads"):
        check_tensor_parallel(_toy(48, 12), 8)
    check_tensor_parallel(_toy(48, 12), 4)  # 3 KV heads per GPU
    check_tensor_parallel(_toy(48, 12), 12)  # 1 KV head per GPU
    check_tensor_parallel(_toy(48, 12), 24)  # each KV head replicated twice
    # 40 heads, 8 KV heads: tp 20 divides the heads, but 8 KV heads cannot be replicated
    # evenly over 20 GPUs (divide(20, 8) fails)
    with pytest.raises(NapkinError, match="8 KV heads"):
        check_tensor_parallel(_toy(40, 8), 20)
