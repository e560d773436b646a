"""Expert parallelism over the tensor-parallel group: its collectives, its step time, a
simulated EP deployment, and its errors, against hand derivations."""

from pathlib import Path

import pytest

from napkin.accounting.collectives import parallel_collectives
from napkin.accounting.forward import Precision
from napkin.accounting.linear import LinearCost
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving.metrics import summarize
from napkin.serving.scenario import Scenario, build
from napkin.serving.step import StepShape
from napkin.timing.efficiency import Efficiency
from napkin.timing.steps import RooflineTimer


def test_collectives_of_qwen3_30b_a3b_on_four_ranks():
    """48 layers, hidden 2,048 (4,096 B in BF16), n = 4: two all-reduces per layer (attention,
    then the MoE outputs, whether the experts are sliced or spread whole over the ranks) of
    2·¾·4,096 = 6,144 B: 96 all-reduces, 589,824 B per token; none on one rank."""
    m = load_model("qwen3-30b-a3b")
    assert parallel_collectives(m, 4) == (96, 589_824)
    assert parallel_collectives(m, 1) == (0, 0.0)


def test_deepseek_v3_on_eight_ranks():
    """61 layers (3 dense, 58 MoE), hidden 7,168 → 14,336 B, n = 8: 122 all-reduces of
    2·⅞·14,336 = 25,088 B."""
    assert parallel_collectives(load_model("deepseek-v3"), 8) == (122, 122 * 25_088)


def _step_s(m, acc, parts) -> float:
    return RooflineTimer.of(m, acc, "bf16", Efficiency(), 4, 450e9, 10e-6) \
        .series(parts, None, 64).time(1)


def test_tp_step_time_by_hand():
    """Roofline, 10 µs per collective over a 450 GB/s link, a 64-token decode step on TP 4:
    the step is its compute/memory time plus 96 × 10 µs + 64 × 589,824 B / 450 GB/s."""
    m, acc = load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm")
    parts = LinearCost.of(m, Precision.of("bf16")).parts(StepShape(64, 64 * 1000, []))
    t1 = RooflineTimer.of(m, acc, "bf16", Efficiency(), 1).series(parts, None, 64).time(1)
    t4 = _step_s(m, acc, parts)
    assert t4 - t1 / 4 == pytest.approx(96 * 10e-6 + 64 * 589_824 / 450e9, rel=1e-6)


def _scenario(**engine) -> Scenario:
    return Scenario.model_validate({
        "model": "qwen3-30b-a3b", "gpu": "h100-sxm", "calibration": "roofline", "mfu": 0.5,
        "mbu": 0.8, "engine": {"tensor_parallel": 4, "max_num_seqs": 64, **engine},
        "workload": {"classes": {"a": {"input_tokens": 512, "output_tokens": 64}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 20, "num_requests": 100}}})


def test_an_ep_deployment_waits_for_its_busiest_rank():
    """Same requests and the same collectives (the MoE outputs meet in one all-reduce either
    way), but whole experts make each step wait for the rank whose experts the batch touches
    most (:mod:`napkin.accounting.routing`): at these small decode batches EP reads more
    expert weights than TP's even slices, so its TPOT is longer."""
    tp = summarize(build(_scenario(), Path(".")).simulate())
    ep = summarize(build(_scenario(expert_parallel=True), Path(".")).simulate())
    assert ep.requests == tp.requests == 100
    assert ep.tpot.mean_s > tp.tpot.mean_s


@pytest.mark.parametrize(("model", "tp"), [("qwen3-8b", 4), ("qwen3-30b-a3b", 1)])
def test_ep_needs_a_moe_model_on_several_ranks(model, tp):
    s = _scenario(expert_parallel=True).model_copy(update={"model": model})
    s = s.model_copy(update={"engine": s.engine.model_copy(update={"tensor_parallel": tp})})
    with pytest.raises(NapkinError, match=r"^engine\.expert_parallel: needs a MoE model on more"):
        build(s, Path("."))
