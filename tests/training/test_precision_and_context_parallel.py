"""FP8 training recipes, context parallelism and asynchronous TP in the training planner, worked
by hand.

Llama-3-8B (hidden 4096, 32 layers, 32 query heads and 8 KV heads of 128, FFN 14,336): one
layer's block linears hold q 4096² + k 4096·1024 + v 4096·1024 + o 4096² + gate/up/down
3·4096·14,336 = 218,103,808 weights, the 32 layers 6,979,321,856. A token's forward through
them is 2 FLOPs a weight; backward (dX and dW) twice that; full recompute one forward more.
"""

import pytest

from napkin.accounting.collectives import context_parallel_kv_bytes_per_token
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.training.efficiency import RankWork, compute_s
from napkin.training.flops import ATTENTION, BLOCK_LINEARS, TrainShape, train_flops
from napkin.training.memory import recipe
from napkin.training.plan import Cluster, plan_training

LINEAR_WEIGHTS = 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336)
SEQ = 8192
PAIRS = SEQ * (SEQ + 1) // 2
"""Causal query–key pairs of one sequence."""


@pytest.fixture(scope="module")
def llama():
    return load_model("llama-3-8b")


def test_block_linear_weights_by_hand():
    assert LINEAR_WEIGHTS == 6_979_321_856


@pytest.mark.parametrize(("recompute", "passes"), [("none", 6), ("selective", 6), ("full", 8)])
def test_fp8_runs_the_block_linears_forward_backward_and_recompute(llama, recompute, passes):
    flops = train_flops(llama, TrainShape((SEQ,), 2, recompute=recompute))
    assert flops.flops_of(BLOCK_LINEARS) == pytest.approx(passes * LINEAR_WEIGHTS * 2 * SEQ)
    # QKᵀ and AV: 2 FLOPs per multiply-add over the causal pairs and 32·128 query dims each,
    # forward 1, backward 2, recompute (selective or full) 1 more
    attention_passes = 3 if recompute == "none" else 4
    assert flops.flops_of(ATTENTION) == pytest.approx(
        attention_passes * 32 * 2 * (2 * 2 * PAIRS * 4096))
    # the split covers the micro-batch: nothing counted twice or left out
    from napkin.accounting.ops import OpKind
    assert flops.flops_of(tuple(OpKind)) == pytest.approx(flops.micro_batch_flops)


def test_an_fp8_update_on_8_h100_at_a_plain_efficiency(llama):
    """FSDP over 8 H100 SXM, 2 sequences of 8,192 tokens a rank, selective recompute, FP8
    block linears at 1,978.9 dense FP8 TFLOP/s, the rest at the BF16 989.4 (catalog), both at
    mfu 0.5; memory as BF16 (torchao keeps the weights in high precision and casts per step)."""
    h100 = load_accelerator("h100-sxm")
    shape = TrainShape((SEQ,), 2, recompute="selective")
    bf16 = plan_training(llama, shape, Cluster(h100, 8, 3, mfu=0.5), recipe("adamw"))
    fp8 = plan_training(llama, shape, Cluster(h100, 8, 3, mfu=0.5, precision="fp8"),
                        recipe("adamw"))
    low = 6 * LINEAR_WEIGHTS * 2 * SEQ
    assert fp8.work.low_matmul_flops == pytest.approx(low)
    assert fp8.work.matmul_flops + fp8.work.low_matmul_flops == pytest.approx(
        bf16.work.matmul_flops)
    saved = low / h100.peak_flops_per_s("bf16") / 0.5 - low / h100.peak_flops_per_s("fp8") / 0.5
    assert bf16.compute_s - fp8.compute_s == pytest.approx(saved)
    assert fp8.fit.total_bytes == bf16.fit.total_bytes


def test_plain_efficiency_divides_every_matmul_by_its_peak():
    h100 = load_accelerator("h100-sxm")
    work = RankWork(1e15, 2e15, 0.5e15, 1e9)
    p16, p8 = h100.peak_flops_per_s("bf16"), h100.peak_flops_per_s("fp8")
    assert compute_s(work, h100, mfu=0.4, precision="fp8") == pytest.approx(
        (1e15 / p16 + 2e15 / p8 + 0.5e15 / p16) / 0.4)
    with pytest.raises(NapkinError, match="precision"):
        compute_s(work, h100, mfu=0.4, precision="fp4")


def test_context_parallel_kv_traffic_by_hand(llama):
    # each rank gathers the other 3 shards' K and V: 32 layers × (8 + 8) heads × 128 × 2 B
    assert context_parallel_kv_bytes_per_token(llama, 4) == 3 / 4 * 32 * 2 * 8 * 128 * 2
    assert context_parallel_kv_bytes_per_token(llama, 1) == 0


def test_context_parallel_splits_the_sequence_over_its_ranks(llama):
    """FSDP 2 × CP 4 on 8 H100 with 32,768-token sequences, full recompute: 8 GPUs; each rank
    computes a quarter of the tokens and of the causal attention, holds a quarter of the
    activations, shards the state 8 ways like FSDP 8, and receives the other shards' K and V
    in the forward, twice in the backward and once more in the recompute."""
    h100 = load_accelerator("h100-sxm")
    seq = 32768
    shape = TrainShape((seq,), 1, recompute="full")
    cp4 = plan_training(llama, shape, Cluster(h100, 2, 3, link_bytes_per_s=450e9, mfu=0.5,
                                              context_parallel=4),
                        recipe("adamw"))
    one = plan_training(llama, shape, Cluster(h100, 2, 3, mfu=0.5), recipe("adamw"))
    fsdp8 = plan_training(llama, shape, Cluster(h100, 8, 3, mfu=0.5), recipe("adamw"))
    assert cp4.gpus == 8 and cp4.tokens_per_update == 2 * seq
    assert cp4.work.attention_flops == pytest.approx(one.work.attention_flops / 4)
    assert cp4.work.matmul_flops == pytest.approx(one.work.matmul_flops / 4)
    assert cp4.fit.activations_bytes == pytest.approx(one.fit.activations_bytes / 4)
    assert cp4.fit.state.bytes == pytest.approx(fsdp8.fit.state.bytes)
    assert cp4.model_parallel.cp_bytes == pytest.approx(4 * seq * 3 / 4 * 32 * 2 * 8 * 128 * 2)
    assert cp4.model_parallel.cp_s == pytest.approx(cp4.model_parallel.cp_bytes / 450e9)
    with pytest.raises(NapkinError, match="cp:"):
        plan_training(llama, TrainShape((1000,), 1), Cluster(h100, 1, 3, context_parallel=3),
                      recipe("adamw"))


def test_async_tp_exposes_only_the_traffic_past_the_compute(llama):
    """TP 8 over one node: vanilla TP adds its collectives to the compute; asynchronous TP
    overlaps them, so the update is shorter by min(TP traffic, compute)."""
    h100 = load_accelerator("h100-sxm")
    shape = TrainShape((SEQ,), 4, recompute="full")
    plain = plan_training(llama, shape, Cluster(h100, 4, 3, mfu=0.5, tensor_parallel=8,
                                                sequence_parallel=True), recipe("adamw"))
    overlapped = plan_training(llama, shape, Cluster(h100, 4, 3, mfu=0.5, tensor_parallel=8,
                                                     sequence_parallel=True, async_tp=True),
                               recipe("adamw"))
    tp = plain.model_parallel.tp_s
    assert tp > 0
    assert plain.update_s - overlapped.update_s == pytest.approx(min(tp, plain.compute_s))


def test_activation_offload_by_hand(llama):
    """One 32,768-token sequence a rank, no recompute: 32 layers × s·h·(18 + 4·14,336/4,096)
    = 32 × 32,768 × 4,096 × 32 B = 137.4 GB of saved activations; offloaded, the GPU keeps two
    layers' worth (2/32) and the other 30/32 cross a 32 GB/s host link out and back: 2 × 128.8
    GB / 32 GB/s = 8.05 s, under a longer compute, on top of a shorter one."""
    h100 = load_accelerator("h100-sxm")
    saved = 32 * 32768 * 4096 * 32
    plan = plan_training(llama, TrainShape((32768,), 1),
                         Cluster(h100, 8, 3, link_bytes_per_s=450e9, mfu=0.5,
                                 offload_activations=True, host_link_bytes_per_s=32e9),
                         recipe("adamw"))
    assert plan.fit.activations_bytes == pytest.approx(saved * 2 / 32)
    assert plan.fit.offloaded_activation_bytes == pytest.approx(saved * 30 / 32)
    assert plan.host_transfer_s == pytest.approx(2 * saved * 30 / 32 / 32e9)
    slow = plan_training(llama, TrainShape((32768,), 1),
                         Cluster(h100, 8, 3, link_bytes_per_s=450e9, mfu=0.5,
                                 offload_activations=True, host_link_bytes_per_s=1e9),
                         recipe("adamw"))
    assert slow.host_transfer_s > slow.compute_s
    assert slow.update_s == pytest.approx(slow.host_transfer_s + slow.optimizer_s)


def test_optimizer_in_backward_holds_one_layers_gradients(llama):
    """Llama-3-8B on one GPU: a layer holds 218,103,808 linear weights; stepping each gradient
    as backward produces it keeps those BF16 gradients (436 MB), not all 8.03e9 (16.1 GB)."""
    h100 = load_accelerator("h100-sxm")
    plan = plan_training(llama, TrainShape((4096,), 1),
                         Cluster(h100, mfu=0.5, optimizer_in_backward=True), recipe("adamw"))
    assert plan.fit.state.grads_bytes == pytest.approx(218_103_808 * 2)
    with pytest.raises(NapkinError, match="optimizer-in-backward"):
        plan_training(llama, TrainShape((4096,), 1, accumulation=2),
                      Cluster(h100, mfu=0.5, optimizer_in_backward=True), recipe("adamw"))


def test_parameter_offload_by_hand(llama):
    """FSDP's CPU offload over 8 GPUs: the rank's whole state (8,030,261,248 / 8 parameters ×
    16 B) lives in host memory; each forward and backward copies its BF16 weight shard in over
    a 32 GB/s link: 2 × 8,030,261,248 / 8 × 2 B / 32 GB/s."""
    h100 = load_accelerator("h100-sxm")
    n = 8_030_261_248
    plan = plan_training(llama, TrainShape((4096,), 1),
                         Cluster(h100, 8, 3, link_bytes_per_s=450e9, mfu=0.5,
                                 offload_params=True, host_link_bytes_per_s=32e9),
                         recipe("adamw"))
    assert plan.fit.state.bytes == 0
    assert plan.fit.state.offloaded_bytes == pytest.approx(n / 8 * 16)
    assert plan.host_transfer_s == pytest.approx(2 * n / 8 * 2 / 32e9)
    assert plan.offload is not None  # the optimizer steps on the CPU
    with pytest.raises(NapkinError, match="offload-params"):
        plan_training(llama, TrainShape((4096,), 1), Cluster(h100, 8, 1, offload_params=True),
                      recipe("adamw"))
