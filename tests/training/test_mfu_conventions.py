"""MFU conventions on one example, worked by hand.

Llama-3.1-8B (8,030,261,248 parameters, 32 layers of 32 heads × 128) on 8 H100 SXM (989.4 dense
BF16 TFLOP/s), FSDP, 2 × 8,192-token sequences a rank, selective recompute, at mfu 0.5:

- published MFU (PaLM App. B, the Llama 3 paper, torchtitan): 6N + 12·L·H·Q·T =
  48,181,567,488 + 12,884,901,888 = 61,066,469,376 FLOPs a token, full attention;
- napkin's MFU: its itemized model FLOPs (causal attention pairs, no embedding matmul, no
  recompute) over the same time;
- HFU: with the recompute.
"""

import pytest

from napkin.catalog import load_accelerator, load_model
from napkin.training.flops import TrainShape, palm_flops_per_token
from napkin.training.memory import recipe
from napkin.training.plan import Cluster, plan_training

PALM = 6 * 8_030_261_248 + 12 * 32 * 32 * 128 * 8192


def test_the_published_convention_by_hand():
    assert PALM == 61_066_469_376
    assert palm_flops_per_token(load_model("llama-3.1-8b"), 8192) == PALM


def test_three_utilizations_of_one_update():
    h100 = load_accelerator("h100-sxm")
    plan = plan_training(load_model("llama-3.1-8b"), TrainShape((8192,), 2, recompute="selective"),
                         Cluster(h100, 8, 3, link_bytes_per_s=450e9, mfu=0.5), recipe("adamw"))
    seconds_of_peak = plan.update_s * 8 * 989.4e12
    assert plan.tokens_per_update == 8 * 2 * 8192
    assert plan.published_mfu == pytest.approx(PALM * plan.tokens_per_update / seconds_of_peak)
    assert plan.achieved_mfu == pytest.approx(plan.model_flops / seconds_of_peak)
    assert plan.achieved_hfu == pytest.approx(plan.update_flops / seconds_of_peak)
    # causal pairs count half the attention and the embedding is a lookup: napkin's model
    # FLOPs are below the published count, by the ratio of the two counts per token
    assert plan.published_mfu / plan.achieved_mfu == pytest.approx(
        PALM * plan.tokens_per_update / plan.model_flops)
    assert plan.achieved_mfu < plan.achieved_hfu < plan.published_mfu
