"""RL cycle (Example 3-4, Exercise 3-7), RL memory, economics."""

import pytest

from napkin.economics import (
    batch_cost,
    break_even_tasks,
    cost_per_success,
    lifecycle_cost,
    min_success_gain,
    min_success_rate,
    price_change_ratio,
)
from napkin.errors import NapkinError
from napkin.reinforcement.cycle import generated_for, rl_cycle
from napkin.reinforcement.memory import rl_memory
from napkin.training.memory import recipe

T = 1e12


def test_example_3_4(qwen3_8b):
    c = rl_cycle(qwen3_8b, 1024, 256, 16, 0.5)
    printed = (465.143, 129.056, 634.944, 952.416, 2181.559)
    got = (c.prefill_flops, c.decode_flops, c.reference_flops, c.update_flops, c.total_flops)
    assert [round(x / T, 3) for x in got] == list(printed)
    q = rl_cycle(qwen3_8b, 1024, 256, 16, 0.25)
    assert round(q.total_flops / T, 3) == 3410.701
    # F_cycle(n) = n(f_g + f_r) + F_u: the update does not grow with n
    assert q.update_flops == c.update_flops
    assert q.total_flops - c.total_flops == pytest.approx(32 * c.per_answer_flops)


def test_exercise_3_7(qwen3_8b):
    c = rl_cycle(qwen3_8b, 1024, 256, 16, 16 / 48, teacher=qwen3_8b, replicas=4)
    assert c.generated == 48
    assert c.teacher_flops == c.reference_flops  # same architecture, one forward per answer
    assert c.sync_bytes == 4 * 2 * 8_190_735_360  # 4 × 16.381 GB


def test_generated_for():
    assert (generated_for(16, 0.5), generated_for(16, 0.25), generated_for(16, 1 / 3)) == (
        32, 64, 48)
    with pytest.raises(NapkinError, match="keep-rate"):
        generated_for(16, 0)


def test_rl_memory_roles(qwen3_8b):
    rec = recipe("adamw")
    ppo = {r.role: r for r in rl_memory("ppo", qwen3_8b, rec)}
    grpo = {r.role: r for r in rl_memory("grpo", qwen3_8b, rec)}
    n = 8_190_735_360
    assert ppo["critic"].memory.bytes == 16 * n and ppo["reference"].memory.bytes == 2 * n
    assert set(grpo) == {"policy", "reference"}
    total = lambda roles: sum(r.memory.bytes for r in roles.values())  # noqa: E731
    assert total(ppo) == (16 + 16 + 2 + 2) * n and total(grpo) == (16 + 2) * n
    with pytest.raises(NapkinError, match="method"):
        rl_memory("a2c", qwen3_8b, rec)


def test_economics():
    assert cost_per_success(1, 0.5) == 2 and cost_per_success(2, 0.8) == 2.5  # Figure 3-9
    assert min_success_rate(1.5, 2) == 0.75
    assert price_change_ratio(0.1, 20, 0.5, 0.8) == pytest.approx(1.25)  # §3.2.2
    assert min_success_gain(0.000081, 0.013880, 0.01) == pytest.approx(1 + 0.01 * 0.01388 /
                                                                       0.000081)
    assert break_even_tasks(3.6e8, 0.72) == pytest.approx(5e8)  # §3.6.3
    assert lifecycle_cost(100, 10, [(0.5, 1), (0.5, 3)]) == 120
    empty = batch_cost([1.0, 2.0], [False, False])
    assert empty.per_success is None and empty.total_cost == 3  # no division by zero
    assert batch_cost([1, 2, 3], [True, False, True]).per_success == 3
