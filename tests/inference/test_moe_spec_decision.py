"""MoE analytics, speculative decoding, the decision request, CED passes."""

import pytest

from napkin.accounting import Batch, Precision
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.inference.ced import expert_layer_passes
from napkin.inference.decision import (
    break_even_escalation,
    decision_vs_generation,
    escalation_cost,
    usd_per_million,
)
from napkin.inference.moe import moe_table
from napkin.inference.speculative import expected_tokens, speedup
from napkin.timing.efficiency import Efficiency
from napkin.timing.roofline import Deployment


def test_moe_compute_bound_batch_is_the_first(h100):
    dep = Deployment(load_model("qwen3-30b-a3b"), h100, Precision.of())
    table = moe_table(dep, [1, 64], context=1)
    b = table.compute_bound_batch
    assert b is not None and b > 1

    def bound(batch: int) -> str:
        return dep.time(dep.cost(Batch.decode(1, batch))).bound

    assert bound(b) == "compute" and bound(b - 1) == "memory"
    # uniform routing: share 1 − (120/128)^B
    assert table.rows[1].experts_touched_frac == pytest.approx(1 - (120 / 128) ** 64)


def test_moe_refuses_dense_models(qwen3_8b, h100):
    with pytest.raises(NapkinError, match="no MoE"):
        moe_table(Deployment(qwen3_8b, h100, Precision.of()), [1])


def test_speculative_tokens():
    assert expected_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2)  # q39: 3.36
    assert round(expected_tokens(0.8, 4), 2) == 3.36
    assert expected_tokens(1.0, 4) == 5
    assert expected_tokens(0.0, 4) == 1
    assert speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    with pytest.raises(NapkinError):
        expected_tokens(1.5, 4)


def test_decision_request(qwen3_8b, h100):
    # §3.2.4: ≈ 28 TFLOPs, ≈ 70 ms at 40% MFU; decode ≈ 9 ms/step at 50% MBU; 0.65 s for 64
    dep = Deployment(qwen3_8b, h100, Precision.of(), Efficiency(0.4, 0.5))
    cmp = decision_vs_generation(dep, 1929, 8, 64)
    assert cmp.decision.flops / 1e12 == pytest.approx(28, rel=0.01)
    assert cmp.decision_time.time_s == pytest.approx(cmp.decision.flops / (0.4 * 989.4e12))
    assert cmp.generation.e2e_s == pytest.approx(0.65, abs=0.005)
    # $2/h: seconds × 2/3600 × 1e6/1929
    assert cmp.decision_usd_per_million_input_tokens == pytest.approx(
        cmp.decision_time.time_s * 2 / 3600 * 1e6 / 1929)
    assert 0.02 <= cmp.decision_usd_per_million_input_tokens <= 0.025
    assert cmp.latency_ratio == pytest.approx(cmp.generation.e2e_s / cmp.decision_time.time_s)


def test_escalation():
    assert break_even_escalation(0.000081, 0.013880) == pytest.approx(0.005836, rel=1e-3)
    assert escalation_cost(1.0, 10.0, 0.05) == 1.5
    assert usd_per_million(3600, 1_000_000, 2.0) == 2.0
    with pytest.raises(NapkinError):
        escalation_cost(1, 1, 2)


def test_ced_passes():
    p = expert_layer_passes(8192)
    assert (p.full, p.ced) == (40 * 8192, 20 * 8192 + 20 * 128)
    short = expert_layer_passes(100)
    assert short.ced == short.full  # P ≤ 128: nothing saved


def test_decision_refuses_more_questions_than_tokens(qwen3_8b):
    dep = Deployment(qwen3_8b, load_accelerator("l4"), Precision.of())
    with pytest.raises(NapkinError, match="questions"):
        decision_vs_generation(dep, 5, 6, 2)
