"""What a run spends around its updates, worked by hand.

Llama 3 405B's pre-training (Llama Team 2024, §3.3.4): 419 unexpected interruptions in a
54-day snapshot on 16,384 H100 — 419 / (54 × 24 × 16,384) = 1.974e-5 a GPU-hour, 0.323 an
hour for the job. Each loses the work since the last checkpoint, half an interval on average:
at 30 minutes, 0.323 × 0.25 h = 8.1 % of every hour, so the updates fill 1 − 0.081 = 91.9 % of
the wall time — the paper reports "higher than 90 % effective training time".
"""

import pytest

from napkin.errors import NapkinError
from napkin.training.run import LLAMA3_FAILURES_PER_GPU_HOUR, Goodput, training_run


def test_llama3_failure_rate_by_hand():
    rate_per_gpu = LLAMA3_FAILURES_PER_GPU_HOUR
    assert rate_per_gpu == pytest.approx(1.974e-5, rel=1e-3)
    rate = LLAMA3_FAILURES_PER_GPU_HOUR * 16384
    assert rate == pytest.approx(0.3234, rel=1e-3)
    run = training_run(1e12, None, None, 16 * 1024 * 8192, 10.0, 16384, 2.0, "test",
                       Goodput())
    assert run.goodput == pytest.approx(1 - rate * 0.5 / 2)
    assert run.goodput > 0.90
    assert run.gpu_hours == pytest.approx(run.wall_s * 16384 / 3600)


def test_every_term_by_hand():
    """10 h of updates on 1,000 GPUs, 5 % evaluation, a 60 s blocking checkpoint every
    1,200 s, 1e-5 failures a GPU-hour (0.01 an hour), each losing 600 s of work and a 300 s
    restart: W·(1 − 0.05 − 0.01/3600·(300 + 600)) = 36,000·(1 + 60/1,200)."""
    g = Goodput(0.05, 60.0, 1200.0, 1e-5, 300.0)
    wall = 36000 * 1.05 / (1 - 0.05 - 0.01 / 3600 * 900)
    assert g.wall_s(36000.0, 1000) == pytest.approx(wall)


def test_no_time_left_is_one_error():
    with pytest.raises(NapkinError, match="failures-per-gpu-hour: failures, restarts"):
        Goodput(failures_per_gpu_hour=1.0).wall_s(100.0, 16384)
    with pytest.raises(NapkinError, match="eval-share: must be below 1"):
        Goodput(eval_share=1.0)
