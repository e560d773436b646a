"""Expert parallelism: the collectives of a forward, their step time, a simulated EP
deployment, and its errors, against hand derivations."""

from pathlib import Path

import pytest

from napkin.accounting.collectives import ep_collectives, parallel_collectives
from napkin.accounting.forward import Precision
from napkin.accounting.linear import LinearCost
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving.metrics import summarize
from napkin.serving.scenario import Scenario, build
from napkin.serving.step import StepShape
from napkin.timing import Efficiency, RooflineTimer


def test_ep_collectives_of_qwen3_30b_a3b_on_four_ranks():
    """48 layers, all MoE, top-8 of 128 experts, hidden 2,048 (4,096 B in BF16), n = 4:
    48 attention all-reduces of 2·¾·4,096 = 6,144 B and 96 all-to-alls of ¾·8·4,096 =
    24,576 B per token: 144 collectives, 294,912 + 2,359,296 = 2,654,208 B. Tensor parallel
    instead: 96 all-reduces × 6,144 B = 589,824 B."""
    m = load_model("qwen3-30b-a3b")
    assert ep_collectives(m, 4) == (144, 2_654_208)
    assert parallel_collectives(m, 4) == (96, 589_824)
    assert ep_collectives(m, 1) == (0, 0.0)


def test_deepseek_v3_dense_layers_keep_their_all_reduce():
    """3 dense + 58 MoE layers (top-8, hidden 7,168 → 14,336 B), n = 8: 61 + 3 all-reduces
    of 2·⅞·14,336 = 25,088 B and 116 all-to-alls of ⅞·8·14,336 = 100,352 B."""
    assert ep_collectives(load_model("deepseek-v3"), 8) == (180, 64 * 25_088 + 116 * 100_352)


def test_ep_step_time_differs_by_its_collectives():
    """Roofline with 10 µs per collective over a 450 GB/s link, a 64-token decode step:
    EP − TP = 48 × 10 µs + 64 × (2,654,208 − 589,824) B / 450 GB/s."""
    m, acc = load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm")
    parts = LinearCost.of(m, Precision.of("bf16")).parts(StepShape(64, 64 * 1000, []))
    t = {ep: RooflineTimer.of(m, acc, "bf16", Efficiency(), 4, 450e9, 10e-6, ep)
         .series(parts, None, 64).time(1) for ep in (False, True)}
    assert t[True] - t[False] == pytest.approx(48 * 10e-6 + 64 * 2_064_384 / 450e9, rel=1e-9)


def _scenario(**engine) -> Scenario:
    return Scenario.model_validate({
        "model": "qwen3-30b-a3b", "gpu": "h100-sxm", "calibration": "roofline", "mfu": 0.5,
        "mbu": 0.8, "engine": {"tensor_parallel": 4, "max_num_seqs": 64, **engine},
        "workload": {"classes": {"a": {"input_tokens": 512, "output_tokens": 64}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 20, "num_requests": 100}}})


def test_an_ep_deployment_simulates_and_pays_for_its_all_to_alls():
    """Same requests, same schedule inputs: EP's steps carry more collective time, so every
    request's decode is slower and its TPOT higher."""
    tp = summarize(build(_scenario(), Path(".")).simulate())
    ep = summarize(build(_scenario(expert_parallel=True), Path(".")).simulate())
    assert ep.requests == tp.requests == 100
    assert ep.tpot.mean_s > tp.tpot.mean_s


@pytest.mark.parametrize(("model", "tp"), [("qwen3-8b", 4), ("qwen3-30b-a3b", 1)])
def test_ep_needs_a_moe_model_on_several_ranks(model, tp):
    s = _scenario(expert_parallel=True).model_copy(update={"model": model})
    s = s.model_copy(update={"engine": s.engine.model_copy(update={"tensor_parallel": tp})})
    with pytest.raises(NapkinError, match="expert_parallel"):
        build(s, Path("."))
