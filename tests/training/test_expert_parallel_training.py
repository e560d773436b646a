"""Expert parallelism in training, DeepSeek-V3-style, worked by hand.

DeepSeek-V3: 58 MoE layers of 256 routed experts (3 × 7168 × 2048 weights each,
11,274,289,152 a layer), top-8, hidden 7168. Over 64 expert-parallel ranks each holds 4
experts of every MoE layer; a token's 8 experts sit on
``D = 64·(1 − Π_{i<8} (252 − i)/(256 − i))`` distinct ranks, and each MoE layer sends the
token there (dispatch, FP8 with a 4-byte scale per 128 elements: 1 + 4/128 B an element) and
returns the outputs (combine, BF16: 2 B), 63/64 of the destinations remote: per token and
pass ``58·D·63/64·7168·(1 + 4/128 + 2)`` B. A pass is the forward, the backward (the same
bytes for the gradients) and, under full recompute, the forward again.
"""

import math

import pytest

from napkin.accounting.collectives import expert_alltoall_bytes_per_token
from napkin.accounting.routing import imbalance
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.training.flops import TrainShape
from napkin.training.memory import recipe
from napkin.training.plan import Cluster, plan_training

LAYERS, EXPERTS, TOP_K, HIDDEN, EP = 58, 256, 8, 7168, 64
D = EP * (1 - math.prod((252 - i) / (256 - i) for i in range(TOP_K)))
PER_TOKEN = LAYERS * D * 63 / 64 * HIDDEN * (1 + 4 / 128 + 2)
ROUTED = LAYERS * 11_274_289_152


@pytest.fixture(scope="module")
def dsv3():
    return load_model("deepseek-v3")


def test_destination_ranks_and_bytes_per_token(dsv3):
    assert 7.5 < D < 8  # almost every expert of a token on its own rank
    assert expert_alltoall_bytes_per_token(dsv3, EP, 1 + 4 / 128) == pytest.approx(PER_TOKEN)
    assert expert_alltoall_bytes_per_token(dsv3, 1, 1.0) == 0


def test_a_deepseek_v3_style_update(dsv3):
    """64 ranks of one 4,096-token sequence each, FSDP and EP 64, FP8, full recompute: the
    all-to-alls move 3 passes × 4,096 tokens × PER_TOKEN a rank (across nodes: 8 GPUs a node,
    at the 50 GB/s port); a rank keeps 1/64 of the routed experts (not sharded further: 64/64
    = 1 FSDP rank for them) and 1/64 of the rest; the busiest rank computes the expected
    largest share of the routed tokens."""
    h100 = load_accelerator("h100-sxm")
    plan = plan_training(dsv3, TrainShape((4096,), 1, recompute="full"),
                         Cluster(h100, 64, 3, link_bytes_per_s=450e9, mfu=0.5,
                                 precision="fp8", expert_parallel=EP), recipe("adamw"))
    mp = plan.model_parallel
    assert mp.ep_bytes == pytest.approx(3 * 4096 * PER_TOKEN)
    assert mp.ep_s == pytest.approx(mp.ep_bytes / 50e9)
    weights = plan.fit.state.weights_bytes
    assert weights == pytest.approx(ROUTED / EP * 2 + (dsv3.params - ROUTED) * 2 / 64, rel=1e-9)
    one = plan_training(dsv3, TrainShape((4096,), 1, recompute="full"),
                        Cluster(h100, 64, 3, link_bytes_per_s=450e9, mfu=0.5, precision="fp8"),
                        recipe("adamw"))
    from napkin.accounting.ops import OpKind
    skew = imbalance(EXPERTS, TOP_K, EP, EP * 4096) - 1
    assert skew >= 0
    assert plan.work.low_matmul_flops - one.work.low_matmul_flops == pytest.approx(
        skew * plan.flops.flops_of((OpKind.EXPERT,)))


def test_expert_parallel_needs_experts_and_no_tp(dsv3):
    h100 = load_accelerator("h100-sxm")
    shape = TrainShape((4096,), 1)
    with pytest.raises(NapkinError, match="ep: llama"):
        plan_training(load_model("llama-3-8b"), shape, Cluster(h100, 8, 3, expert_parallel=8),
                      recipe("adamw"))
    with pytest.raises(NapkinError, match="--tp 1"):
        plan_training(dsv3, shape, Cluster(h100, 8, 3, tensor_parallel=8, expert_parallel=8),
                      recipe("adamw"))
    with pytest.raises(NapkinError, match="does not divide"):
        plan_training(dsv3, shape, Cluster(h100, 6, 3, expert_parallel=6), recipe("adamw"))


def test_overlapped_all_to_alls_show_only_past_the_compute(dsv3):
    """DualPipe-style overlap: the update is shorter by min(all-to-all time, compute)."""
    h100 = load_accelerator("h100-sxm")
    shape = TrainShape((4096,), 1, accumulation=4)

    def plan(overlap):
        return plan_training(dsv3, shape, Cluster(h100, 64, 1, link_bytes_per_s=450e9,
                                                  mfu=0.5, precision="fp8", expert_parallel=EP,
                                                  overlap_ep=overlap), recipe("adamw"))

    plain, overlapped = plan(False), plan(True)
    ep = plain.model_parallel.ep_s
    assert plain.ep_exposed_s == ep and overlapped.ep_exposed_s == max(0.0,
                                                                       ep - plain.compute_s)
    assert plain.update_s - overlapped.update_s == pytest.approx(min(ep, plain.compute_s))
