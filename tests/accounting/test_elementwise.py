"""Elementwise bytes a token, derived by hand from the model configs."""

import pytest

from napkin.accounting.elementwise import elementwise_bytes_per_token, elementwise_elements
from napkin.catalog import load_model
from napkin.errors import NapkinError


def test_llama_8b_by_hand():
    """Llama-3.1-8B: per layer 8 · 4,096 = 32,768 replicated elements (two fused residual-add +
    RMSNorm kernels, each reading input and residual and writing both) and 2 · (32 + 8) · 128 =
    10,240 (rotary reads and writes q and k) + 3 · 14,336 = 43,008 (SwiGLU reads gate and up,
    writes their product) = 53,248 sharded; 32 layers."""
    assert elementwise_elements(load_model("llama-3.1-8b")) == (32 * 32_768, 32 * 53_248)
    m = load_model("llama-3.1-8b")
    assert elementwise_bytes_per_token(m, 1) == (32 * 32_768 * 2, 32 * 53_248 * 2) == (
        2_097_152, 3_407_872)
    assert elementwise_bytes_per_token(m, 8) == (2_097_152, 3_407_872 / 8)


def test_deepseek_v3_counts_shared_experts_and_leaves_routed_ones_out():
    """DeepSeek-V3 (h 7,168, 61 layers: 3 dense with I = 18,432, 58 MoE with one shared expert
    of I = 2,048; MLA with 128 query heads and one latent KV head of 192 query-key dims):
    replicated 61 · 8 · 7,168; sharded 61 · 2 · (128 + 1) · 192 (rotary) + 3 · 3 · 18,432 +
    58 · 3 · 2,048 (the shared experts' activation). The routed experts' activations are per
    (token, expert) pair, not here."""
    replicated, sharded = elementwise_elements(load_model("deepseek-v3"))
    assert replicated == 61 * 8 * 7168 == 3_497_984
    assert sharded == 61 * 2 * 129 * 192 + 3 * 3 * 18_432 + 58 * 3 * 2048 == 3_543_936


def test_tp_must_be_positive():
    with pytest.raises(NapkinError, match="tensor_parallel: must be >= 1"):
        elementwise_bytes_per_token(load_model("llama-3.1-8b"), 0)
