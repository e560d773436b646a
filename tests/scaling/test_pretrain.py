"""``plan_pretrain``: question-bank task 4 (4 × RTX 4080, 30 days, MFU 0.4) by hand."""

import math

import pytest

from napkin.catalog import load_accelerator
from napkin.errors import NapkinError
from napkin.scaling.lawfile import resolve
from napkin.scaling.pretrain import plan_pretrain


def test_task_4_budget_rule_and_state_by_hand():
    """C = 4 × 97.5 TFLOP/s (RTX 4080 dense BF16) × 0.4 × 30 × 86,400 s ≈ 4.04e20 FLOPs (the
    task's ≈ 4.0e20); the rule's N = √(C/120) ≈ 1.83e9 with D = 20N; AdamW mixed precision
    holds 16 B/param: 29.3 GB replicated (DDP, over the 16 GB card) and a quarter, 7.3 GB,
    sharded over 4 (FSDP); the run must sustain D / 30 days of tokens per second."""
    acc = load_accelerator("rtx-4080")
    plan = plan_pretrain(acc, 4, 30.0, 0.4, resolve("chinchilla", {}), [1e9])
    c = 4 * acc.peak_flops_per_s("bf16") * 0.4 * 30 * 86_400
    assert plan.budget_flops == pytest.approx(c)
    assert plan.budget_flops == pytest.approx(4.0e20, rel=0.02)
    rule, _, extra = plan.options
    n = math.sqrt(c / 120)
    assert (rule.params, rule.tokens) == (pytest.approx(n), pytest.approx(20 * n))
    assert rule.params == pytest.approx(1.83e9, rel=0.01)
    assert rule.ddp_state_bytes == 16 * int(n) and not rule.ddp_fits
    assert rule.fsdp_state_bytes == pytest.approx(16 * n / 4, rel=1e-6) and rule.fsdp_fits
    assert rule.tokens_per_s == pytest.approx(20 * n / (30 * 86_400))
    assert extra.tokens == pytest.approx(c / 6e9) and extra.inference_cost_vs_rule == \
        pytest.approx(1e9 / n)


def test_bad_inputs_name_their_field():
    acc = load_accelerator("rtx-4080")
    with pytest.raises(NapkinError, match="count"):
        plan_pretrain(acc, 0, 30.0, 0.4, resolve("chinchilla", {}))
    with pytest.raises(NapkinError, match="alt"):  # the --alt option
        plan_pretrain(acc, 4, 30.0, 0.4, resolve("chinchilla", {}), [-1.0])
    with pytest.raises(NapkinError, match=r"mfu: must be in \[0.001, 1\], got 1.0000001"):
        plan_pretrain(acc, 4, 30.0, 1.0000001, resolve("chinchilla", {}))
