"""MLA's and DSA's down-projections run whole on every tensor-parallel rank
(:data:`napkin.accounting.linear.REPLICATED`): :func:`~napkin.accounting.linear.tp_cost` counts
their FLOPs and weights once per rank, by hand for DeepSeek-V3, not under data-parallel
attention, and not for models without them."""

import pytest

from napkin.accounting.batch import Batch
from napkin.accounting.forward import Precision
from napkin.accounting.linear import LinearCost, replicated_rates, tp_cost
from napkin.catalog import load_model

BF16, FP8 = Precision.of("bf16"), Precision.of("fp8")


def test_deepseek_v3_down_projections_by_hand():
    """61 layers · (q_a 7,168 × 1,536 + kv_a 7,168 × 576) = 61 · 15,138,816 = 923,467,776
    parameters: 2 FLOPs each a token, 1,846,935,552; 2 bytes each in BF16, 1 in FP8."""
    flops, sixteen, weights = replicated_rates(load_model("deepseek-v3"), BF16)
    assert (flops, sixteen, weights) == (1_846_935_552, 0.0, 1_846_935_552)
    assert replicated_rates(load_model("deepseek-v3"), FP8)[2] == 923_467_776


def test_tp_cost_counts_them_once_per_rank():
    """At TP 8 the group's totals gain 7 copies, so that the timers' division by 8 leaves each
    rank its whole copy and 1/8 of the rest: a decode step of 4 sequences reads 7 · 0.923 GB
    more FP8 weights on the group and runs 7 · 4 · 1.847 GFLOP more."""
    model = load_model("deepseek-v3")
    base, eight = LinearCost.of(model, FP8), tp_cost(model, FP8, 8)
    batch = Batch.decode(1024, 4)
    b, e = base.parts(batch), eight.parts(batch)
    assert e[0] - b[0] == pytest.approx(7 * 4 * 1_846_935_552)
    assert e[2] - b[2] == pytest.approx(7 * 923_467_776)
    assert (e[1], e[3], e[4]) == (b[1], b[3], b[4])
    per_rank = e[2] / 8
    assert per_rank == pytest.approx((b[2] - 923_467_776) / 8 + 923_467_776)


def test_not_under_data_parallel_attention_nor_without_mla():
    """With attention over one rank (DP attention) each rank runs its own tokens' projections:
    nothing is added; a GQA model and TP 1 add nothing either; DeepSeek-V3.2 (DSA) and Kimi
    Linear's MLA layers (kv_a only: its query is not low-rank) do count."""
    ds = load_model("deepseek-v3")
    assert tp_cost(ds, BF16, 8, replicated_over=1) == LinearCost.of(ds, BF16)
    assert tp_cost(ds, BF16, 1) == LinearCost.of(ds, BF16)
    llama = load_model("llama-3.1-70b")
    assert tp_cost(llama, BF16, 8) == LinearCost.of(llama, BF16)
    assert replicated_rates(load_model("deepseek-v3.2"), BF16)[0] == 1_846_935_552
    kimi = load_model("kimi-linear-48b-a3b")
    kv_a = next(lin for b in kimi.blocks if b.attention.kind == "mla" for lin in b.linears
                if lin.name == "attn/kv_a")
    mla_layers = sum(1 for b in kimi.blocks if b.attention.kind == "mla")
    assert replicated_rates(kimi, BF16)[0] == 2 * kv_a.in_features * kv_a.out_features * mla_layers
