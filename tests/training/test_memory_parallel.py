"""Training memory, sharding, activations, communication and time against the chapter and the
question bank."""

import pytest

from napkin.catalog import load_accelerator
from napkin.errors import NapkinError
from napkin.training.memory import (
    FROZEN_WEIGHT_BYTES,
    activation_bytes_per_layer,
    largest_micro_batch,
    recipe,
    state_memory,
)
from napkin.training.parallel import communication, pipeline_bubble
from napkin.training.schedule import budget_flops, calendar_days, equivalent_hours, step_time_s

GB = 1e9


def test_recipes():
    assert recipe("adamw-fp32-grads").bytes_per_param == 18  # Example 3-3
    assert recipe("adamw").bytes_per_param == 16  # q21
    assert state_memory(8_190_735_360, 0, recipe("adamw-fp32-grads")).bytes == (
        18 * 8_190_735_360)  # 147.433 GB
    with pytest.raises(NapkinError, match="optimizer"):
        recipe("lion")


def test_zero_stages_and_offload():
    n, rec = 7_000_000_000, recipe("adamw")
    assert state_memory(n, 0, rec, 4, 0).bytes == 16 * n
    assert state_memory(n, 0, rec, 4, 1).bytes == (2 + 2 + 12 / 4) * n
    assert state_memory(n, 0, rec, 4, 2).bytes == (2 + 2 / 4 + 12 / 4) * n
    assert state_memory(n, 0, rec, 4, 3).bytes == 16 * n / 4  # task 1: 28 GB per card
    off = state_memory(n, 0, rec, 1, 0, offload=True)
    assert (off.bytes, off.offloaded_bytes) == (4 * n, 12 * n)


def test_qlora_nf4_bits():
    # NF4: 4 bits + FP8 absmax per 64 + FP32 second-level scale per 256 blocks (Dettmers 2023)
    assert FROZEN_WEIGHT_BYTES["nf4-dq"] * 8 == pytest.approx(4.127, abs=1e-3)


def test_korthikanti_formulas():
    s, b, h, a = 2048, 1, 12288, 96  # GPT-3-like layer
    sbh = s * b * h
    assert activation_bytes_per_layer(s, b, h, a) == sbh * (34 + 5 * a * s / h)
    assert activation_bytes_per_layer(s, b, h, a, flash=True) == 34 * sbh
    assert activation_bytes_per_layer(s, b, h, a, recompute="full") == 2 * sbh
    assert activation_bytes_per_layer(s, b, h, a, tensor_parallel=8) == pytest.approx(
        sbh * (10 + 24 / 8 + 5 * a * s / (h * 8)))
    assert activation_bytes_per_layer(s, b, h, a, tensor_parallel=8, sequence_parallel=True,
                                      recompute="selective") == pytest.approx(sbh * 34 / 8)
    # task 1: 34·4096·4096·32 ≈ 18 GB, and 2·4096·4096·32 ≈ 1.1 GB
    assert 32 * activation_bytes_per_layer(4096, 1, 4096, 32, flash=True) / GB == pytest.approx(
        18.25, abs=0.01)


def test_pipeline_activation_factor():
    from napkin.training.memory import pipeline_activation_factor

    # 1F1B: the first stage holds p micro-batches of L/p layers (L layers' worth), fewer when
    # m < p; interleaved: 1 + (p − 1)/(p·v) (Korthikanti et al. 2022 §4.2.3, §5)
    assert pipeline_activation_factor(1, 4) == 1.0
    assert pipeline_activation_factor(8, 64) == 1.0
    assert pipeline_activation_factor(8, 2) == 2 / 8
    assert pipeline_activation_factor(8, 64, 3) == 1 + 7 / 24
    assert pipeline_activation_factor(16, 32, 8) == 1 + 15 / 128


def test_largest_micro_batch():
    state = state_memory(1_000_000_000, 0, recipe("adamw"))  # 16 GB
    assert largest_micro_batch(state, 3e9, 80e9, reserve_bytes=4e9) == 20  # (80−4−16)/3


def test_communication_task_1():
    comm = communication("fsdp", 7_000_000_000, 4, weight_bytes=2, grad_bytes=4,
                         link_bytes_per_s=10e9, compute_s=4.4)
    assert comm.bytes_per_device == 0.75 * (2 * 14e9 + 28e9) == 42e9
    assert comm.time_s == pytest.approx(4.2) and comm.hidden
    ddp = communication("ddp", 1_000_000_000, 8, grad_bytes=2)
    assert ddp.bytes_per_device == 2 * 7 / 8 * 2e9
    with pytest.raises(NapkinError, match="sharding"):
        communication("pipeline", 1, 2)


def test_bubble_and_time():
    assert pipeline_bubble(4, 8) == 3 / 11
    assert pipeline_bubble(1, 8) == 0
    # interleaved 1F1B, v chunks per rank: bubble/ideal = (p − 1)/(v·m) (Narayanan et al. 2021
    # §2.2.2), so the idle share is (p − 1)/(v·m + p − 1); Llama 3 405B: p 16, V 8, M 32
    assert pipeline_bubble(4, 8, 2) == 3 / 19
    assert pipeline_bubble(16, 32, 8) == 15 / 271
    with pytest.raises(NapkinError, match="virtual"):
        pipeline_bubble(4, 8, 0)
    rtx = load_accelerator("rtx-4080")
    # task 4: 4 × 97.5 TFLOP/s × 0.4 × 30 days ≈ 4.0e20
    assert budget_flops(rtx, 4, 30) == pytest.approx(4 * 97.5e12 * 0.4 * 30 * 86_400)
    assert step_time_s(6 * 7e9 * 16384, rtx, 4, 0.4) == pytest.approx(4.41, abs=0.01)
    assert calendar_days(1_022_362, 2048) == pytest.approx(20.80, abs=0.005)
    h100, a100 = load_accelerator("h100-sxm"), load_accelerator("a100-80gb-sxm")
    assert equivalent_hours(1, h100, a100) == pytest.approx(989.4 / 312)


def test_optimizer_step_traffic():
    # AdamW mixed: reads 2 + 2 + 4 + 8 bytes and writes 2 + 4 + 8 per parameter and update
    assert recipe("adamw").update_traffic_bytes == 16 + 14
    assert recipe("adamw-fp32-grads").update_traffic_bytes == 18 + 14


def test_loss_normalization_trap():
    from napkin.training.loss_norm import loss_normalization

    trap = loss_normalization([100, 900], [1.0, 2.0])
    assert trap.token_mean == pytest.approx((100 * 1.0 + 900 * 2.0) / 1000)  # 1.9
    assert trap.mean_of_means == pytest.approx(1.5)
    # a short-batch token weighs 1000/(2·100) = 5× its fair share, a long-batch one 0.56×
    assert trap.token_weight(0) / trap.token_weight(1) == pytest.approx(9)
