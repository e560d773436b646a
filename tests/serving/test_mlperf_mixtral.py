"""The shipped MLPerf v4.1 Mixtral-8x7B scenario (``examples/mlperf-mixtral-h100.yaml``) and
its Offline variant: what they carry from the published benchmark, and how the figures move
with the assumed input lengths. The hold-out figures themselves are the worked example
``mlperf-mixtral`` (tests/examples)."""

import pytest

from napkin.examples.serving import (
    MLPERF_OFFLINE_SAMPLES,
    mlperf_mixtral,
    mlperf_offline_tokens_per_gpu_s,
    mlperf_server_rate_per_gpu,
)
from napkin.serving.arrivals import generate


def test_server_scenario_is_the_submissions_engine():
    scenario, _ = mlperf_mixtral(False)
    e = scenario.engine
    # the closed-division configs: batch 896, max_num_tokens 16,384 (Server), TP 1, FP8
    assert (e.backend, e.max_num_seqs, e.max_num_batched_tokens, e.tensor_parallel) == \
        ("trtllm", 896, 16384, 1)
    assert (scenario.weights, scenario.slo.ttft_s, scenario.slo.tpot_s, scenario.slo.share) == \
        ("fp8", 2.0, 0.2, 0.99)


def test_offline_variant_queues_every_sample_at_once():
    scenario, base = mlperf_mixtral(True)
    assert scenario.engine.max_num_batched_tokens == 8192  # the Offline configs' max_num_tokens
    requests = generate(scenario.workload, base).requests
    assert len(requests.arrival_s) == MLPERF_OFFLINE_SAMPLES
    assert requests.arrival_s.max() <= 1e-3


def test_output_lengths_are_the_reference_runs():
    # mlcommons/inference language/mixtral-8x7b: 144.84 generated tokens per sample in all
    # (205.87 OpenOrca, 129.96 GSM8K, 98.70 MBXP); the draws, clipped at 1,024, keep the mean
    scenario, base = mlperf_mixtral(True)
    out = generate(scenario.workload, base).requests.output_tokens
    assert out.mean() == pytest.approx(144.84, rel=0.03)
    assert out.max() <= 1024


def test_longer_inputs_mean_less_throughput_and_a_lower_rate():
    offline = [mlperf_offline_tokens_per_gpu_s(s) for s in (0.75, 1.0, 1.25)]
    server = [mlperf_server_rate_per_gpu(s) for s in (0.75, 1.0, 1.25)]
    assert offline[0] > offline[1] > offline[2]
    assert server[0] > server[1] > server[2]
