"""``napkin moe --ep N``: the busiest GPU of a DEP decode step, against the hand derivation of
tests/accounting/test_ranks.py and the routing figures."""

import pytest

import napkin
from napkin.accounting.routing import expected_max_rank_tokens
from napkin.errors import NapkinError


def test_dep8_deepseek_v3_on_h100_is_the_hand_worked_step():
    """2,048 sequences (256 a GPU) at 2,000 cached tokens, FP8 weights, BF16 KV, 8×H100: each
    GPU reads the attention side whole (16.19 GB) and its 32 experts (81.74 GB), 36.0 GB of KV,
    and sends 25.77 MB a MoE layer: (81.74 + 16.19 + 36.00) GB / 3.35 TB/s + 58 × (25.77 MB /
    450 GB/s + 2 × 10 µs) = 39.98 + 4.48 = 44.46 ms; the busiest GPU's load is the routing
    figure over the mean 2,048·8/8."""
    r = napkin.moe("deepseek-v3", gpu="h100-sxm", weights="fp8", batch=[2048], context=2000,
                   ep=8)
    row = r.value.rows[0].rank
    assert r.value.ranks == 8
    assert row.weight_bytes == pytest.approx(16.19e9 + 81.74e9, rel=1e-3)
    assert row.bytes_moved - row.weight_bytes == pytest.approx(35.997e9, rel=1e-4)
    assert row.alltoall_bytes_per_layer == pytest.approx(25.77e6, rel=1e-3)
    assert row.step_s == pytest.approx(44.46e-3, rel=1e-3)
    assert row.experts_touched == pytest.approx(32.0)
    assert row.imbalance == pytest.approx(expected_max_rank_tokens(256, 8, 8, 2048) / 2048,
                                          rel=1e-3)
    assert row.tokens_per_s(2048) == pytest.approx(2048 / 44.46e-3, rel=1e-3)
    assert "the busiest of 8 GPUs" in r.to_table()


def test_ep_errors_name_the_option():
    with pytest.raises(NapkinError, match=r"^ep: 256 experts do not divide over 3 GPUs"):
        napkin.moe("deepseek-v3", batch=[8], ep=3)
    with pytest.raises(NapkinError, match=r"^batch: DEP over 8 GPUs needs"):
        napkin.moe("deepseek-v3", batch=[4], ep=8)
    for bad in (0, 1.5, True, "8"):
        with pytest.raises(NapkinError, match=r"^ep: must be (a whole number|a valid integer)"):
            napkin.moe("deepseek-v3", batch=[8], ep=bad)
