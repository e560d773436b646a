"""KV heads replicated over tensor-parallel ranks: the KV pool holds each token once per
replica, and every device reads its replica's KV (MLA's latent cache sits whole on each)."""

import pytest

from napkin.calibration.basis import TERMS, StepBasis
from napkin.catalog import load_accelerator, load_model
from napkin.serving.scenario import build, load_scenario
from napkin.timing.efficiency import Efficiency
from napkin.timing.steps import RooflineTimer


@pytest.mark.parametrize(("model", "tp", "devices"), [
    ("deepseek-v3", 8, 1.0),       # MLA: one latent head, on every device
    ("deepseek-v3", 1, 1.0),
    ("qwen3-235b-a22b", 8, 4.0),   # 4 KV heads: each on two of the eight devices
    ("qwen3-235b-a22b", 2, 2.0),
    ("llama-3.1-70b", 8, 8.0),     # 8 KV heads: one per device
    ("llama-3.1-70b", 4, 4.0),
    ("llama-3.1-8b", 1, 1.0),
])
def test_kv_devices_is_tp_up_to_the_kv_heads(model, tp, devices):
    assert load_model(model).kv_devices(tp) == devices


def _pool(tmp_path, model: str, tp: int) -> tuple[int, dict[str, float], float]:
    (tmp_path / "s.yaml").write_text(
        f"model: {model}\ngpu: h200\nweights: fp8\ncalibration: roofline\n"
        f"engine: {{tensor_parallel: {tp}, max_num_seqs: 64, max_num_batched_tokens: 8192}}\n"
        "workload: {classes: {a: {input_tokens: 100, output_tokens: 5}},"
        " arrivals: {kind: poisson, rate_per_s: 1, num_requests: 3}}\n")
    built = build(*load_scenario(tmp_path / "s.yaml"))
    kv_token = load_model(model).kv_bytes_per_token(built.precision.kv.bytes_per_element)
    return built.spec.num_blocks, built.pool_derivation, kv_token


def test_the_pool_holds_each_token_once_per_replica(tmp_path):
    """Qwen3-235B-A22B FP8 at TP 8 on H200: its 4 KV heads sit on two devices each, so the
    group's pool is 4 devices' KV memory (not 8); DeepSeek-V3 at TP 8: one device's."""
    blocks, d, kv_token = _pool(tmp_path, "qwen3-235b-a22b", 8)
    assert kv_token == 94 * 4 * 2 * 128 * 2  # layers × KV heads × (K, V) × head dim × BF16
    assert blocks == int(d["kv_pool_bytes_per_device"] * 4 // (16 * kv_token))
    blocks, d, kv_token = _pool(tmp_path, "deepseek-v3", 8)
    assert kv_token == 61 * 576 * 2  # layers × (512 latent + 64 rope) × BF16
    assert blocks == int(d["kv_pool_bytes_per_device"] // (16 * kv_token))


def test_each_device_reads_its_replica_of_the_kv():
    """DeepSeek-V3 at TP 8 on H200: a decode step's KV time is the whole KV bytes over one
    device's bandwidth (the weights' over eight), in the fitted basis and in the roofline."""
    model, acc = load_model("deepseek-v3"), load_accelerator("h200")
    bw = acc.mem_bytes_per_s
    basis = StepBasis.of(model, acc, "fp8", 8, 450e9)
    x = basis.terms((0.0, 0.0, 8e9, 2e9, 0.0), 32)
    assert x[TERMS.index("kv")] == pytest.approx(2e9 / bw)
    assert x[TERMS.index("weights")] == pytest.approx(8e9 / (8 * bw))
    timer = RooflineTimer.of(model, acc, "fp8", Efficiency(1.0, 1.0, 0.0), 8, 450e9, 0.0)
    step = timer.series((0.0, 0.0, 8e9, 2e9, 0.0), None, 32).time(1)
    ar = timer.allreduce_s_per_token * 32
    assert step == pytest.approx(8e9 / (8 * bw) + 2e9 / bw + ar)
    dense = RooflineTimer.of(load_model("llama-3.1-70b"), acc, "fp8",
                             Efficiency(1.0, 1.0, 0.0), 8, 450e9, 0.0)
    assert dense.kv_devices == 8.0

