"""The fluid queue and per-window demand against Example 3-1 and Exercise 3-2."""

import numpy as np
import pytest

from napkin.serving.arrivals import generate
from napkin.serving.demand import demand, total
from napkin.serving.fluid import (
    burst_backlog,
    burst_drain_s,
    fluid,
    state_byte_seconds,
    waiting_state_bytes,
    waiting_tasks,
)
from napkin.serving.workload import parse_workload
from napkin.units import GiB

CLASSES = {"long_input": {"input_tokens": 8192, "output_tokens": 256},
           "long_output": {"input_tokens": 1024, "output_tokens": 2048}}


def _chapter(mix1, mix2):
    wl = {"classes": CLASSES, "arrivals": {"kind": "windows", "windows": [
        {"duration_s": 60, "requests": 240, "mix": mix1},
        {"duration_s": 60, "requests": 240, "mix": mix2}]}}
    return generate(parse_workload(wl)).requests


def test_example_3_1_window_demand():
    shifted = _chapter({"long_input": 9, "long_output": 1}, {"long_input": 1, "long_output": 9})
    w1, w2 = demand(shifted, [0, 60, 120])
    # minute 1: 216 × 8192 + 24 × 1024 tokens and 216 × 255 + 24 × 2047 steps, per 60 s
    assert w1.input_tokens_per_s == (216 * 8192 + 24 * 1024) / 60 == 29_900.8
    assert w1.decode_steps_per_s == pytest.approx((216 * 255 + 24 * 2047) / 60)  # 1,736.8
    assert w2.input_tokens_per_s == pytest.approx(6_963.2)
    assert w2.decode_steps_per_s == pytest.approx(7_471.2)
    uniform = _chapter({"long_input": 1, "long_output": 1}, {"long_input": 1, "long_output": 1})
    both = total(uniform, 120)
    assert both.input_tokens_per_s == 18_432 and both.decode_steps_per_s == 4_604
    # (255 × 8319 + 2047 × 2047) / 2302 ≈ 2,742 (Example 3-1)
    assert both.mean_decode_context == pytest.approx((255 * 8319 + 2047 * 2047) / 2302)


def test_example_3_1_fluid_backlog_and_drain():
    mu = 5591.33  # two RTX PRO 6000 cards, as printed
    result = fluid([1736.8 * 60, 7471.2 * 60], [60, 60], mu)
    assert result.windows[0].backlog_end == 0
    assert result.final_backlog == pytest.approx((7471.2 - mu) * 60)  # 1,879.87 × 60
    assert round(result.final_backlog) == 112_792
    assert round(result.drain_s, 2) == 20.17  # 112,792 / 5,591.33
    # issue 38: the total decode steps and when the queue is empty, not only the drain
    assert result.total_steps == pytest.approx((1736.8 + 7471.2) * 60)  # 552,480 steps
    assert result.empty_at_s == pytest.approx(120 + (7471.2 - mu) * 60 / mu)  # 140.17 s
    assert round(result.empty_at_s, 2) == 140.17
    _t, q = result.curve(points_per_window=4)
    assert q[-1] == pytest.approx(0, abs=1e-6) and max(q) == pytest.approx(result.peak_backlog)


def test_exercise_3_2_burst_and_tool_waits():
    lam, tau = 7471.2, 30
    # two cards at 2,796 steps/s each: (7471.2 − 5592)·30 = 56,376 steps, drained in 10.08 s
    assert burst_backlog(lam, 2 * 2796, tau) == pytest.approx(56_376)
    assert burst_drain_s(lam, 2 * 2796, tau) == pytest.approx(56_376 / 5592)
    assert burst_backlog(lam, 3 * 2796, tau) == 0  # three cards keep up
    # doubling the burst doubles backlog and drain
    assert burst_backlog(lam, 5592, 2 * tau) == pytest.approx(2 * 56_376)
    # 2 tool waits/s × 10 s × 1 GiB: 20 tasks, 20 GiB; 30 s: 60 and 60 GiB (Little's law)
    assert waiting_tasks(2, 10) == 20 and waiting_state_bytes(2, GiB, 10) == 20 * GiB
    assert waiting_state_bytes(2, GiB, 30) == 60 * GiB
    assert state_byte_seconds(GiB, 10) == 10 * GiB  # §3.1.2: 1 GiB held 10 s


def test_fluid_with_changing_capacity():
    result = fluid([100, 0, 300], [10, 10, 10], [5.0, 20.0, 10.0])
    # Q1 = 100 − 50 = 50; Q2 = max(0, 50 − 200) = 0; Q3 = 300 − 100 = 200; drain 200/10
    assert [w.backlog_end for w in result.windows] == [50, 0, 200]
    assert result.drain_s == 20


def test_windows_spacing_and_mix_are_exact():
    reqs = _chapter({"long_input": 9, "long_output": 1}, {"long_input": 1, "long_output": 9})
    first = reqs.arrival_s < 60
    assert int((reqs.input_tokens[first] == 8192).sum()) == 216
    assert np.allclose(np.diff(reqs.arrival_s[first]), 60 / 240)  # evenly spaced
    labels = reqs.label[first]
    # the 24 long-output requests are spread evenly, one in every 10
    assert np.all(np.diff(np.nonzero(labels == 1)[0]) == 10)


def test_backlog_that_empties_inside_a_later_window_is_said_so():
    # 4,000 steps/s for 60 s on 3,000: Q = 60,000; then 1,000 steps/s empties it at
    # 60 + 60,000 / (3,000 − 1,000) = 90 s, before the windows end (it used to read
    # "drains in 0.00 s")
    r = fluid([4000 * 60, 1000 * 60], [60, 60], 3000)
    assert r.peak_backlog == 60_000 and r.final_backlog == 0 and r.drain_s == 0
    assert r.emptied_at_s == pytest.approx(90.0)
    assert "empties inside the windows at t = 90.00 s (30.00 s after the peak)" in \
        r.describe_drain()
    assert fluid([1000 * 60], [60], 3000).describe_drain().endswith("no backlog")
    left = fluid([4000 * 60], [60], 3000)
    assert left.emptied_at_s is None and "drains in 20.00 s" in left.describe_drain()


def test_example_3_1_class_composition_per_window():
    """Figure 3-4's composition: 240 requests a minute at 9:1 then 1:9 are 216 long-input and
    24 long-output requests, then 24 and 216; the uniform mix has 120 of each a minute."""
    from napkin.serving.demand import class_counts

    shifted = _chapter({"long_input": 9, "long_output": 1}, {"long_input": 1, "long_output": 9})
    assert class_counts(shifted, [0, 60, 120]) == (
        {"long_input": 216, "long_output": 24}, {"long_input": 24, "long_output": 216})
    uniform = _chapter({"long_input": 1, "long_output": 1}, {"long_input": 1, "long_output": 1})
    assert class_counts(uniform, [0, 60, 120]) == ({"long_input": 120, "long_output": 120},) * 2
