"""Pipeline parallelism in serving: virtual engines, the boundary transfers, the KV pool."""

from pathlib import Path

import pytest

from napkin.accounting.collectives import stage_boundary_bytes_per_token
from napkin.errors import NapkinError
from napkin.serving.metrics import pool_summaries
from napkin.serving.scenario import Scenario, build

BASE = {"name": "pp", "model": "llama-3.1-70b", "gpu": "h100-sxm", "weights": "bf16",
        "calibration": "roofline", "mfu": 0.5, "mbu": 0.8,
        "engine": {"tensor_parallel": 4, "max_num_seqs": 64},
        "workload": {"seed": 0, "classes": {"chat": {"input_tokens": 1000, "output_tokens": 65}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 1, "num_requests": 1}}}


def _built(tp: int, pp: int, **engine):
    s = Scenario.model_validate({**BASE, "engine": {**BASE["engine"], "tensor_parallel": tp,
                                                     "pipeline_parallel": pp, **engine}})
    return build(s, Path("."))


def test_a_boundary_carries_each_ranks_share_of_the_hidden_vector():
    """Llama-3.1-70B's hidden size 8,192 at 2 B over 4 tensor-parallel ranks: 4,096 B a token
    each rank sends across a stage boundary."""
    assert stage_boundary_bytes_per_token(8192, 4) == 4096


def test_one_request_pays_a_whole_pass_and_the_boundaries():
    """One request alone (no other in-flight batch: the bubble): at TP 4 × PP 2 each decode
    step is the whole model's at TP 4 plus one boundary — 10 µs (the all-reduce latency
    setting) + 4,096 B / 450 GB/s (H100's NVLink per direction) = 10.0091 µs; its TPOT and TTFT
    are TP 4's plus that."""
    one, two = (_built(4, pp).simulate() for pp in (1, 2))
    extra = 10e-6 + 4096 / 450e9
    t1, t2 = one.records, two.records
    tpot = lambda r: (r.finish_s[0] - r.first_token_s[0]) / 64  # noqa: E731
    assert tpot(t2) - tpot(t1) == pytest.approx(extra, rel=1e-6)
    ttft = lambda r: r.first_token_s[0] - r.arrival_s[0]  # noqa: E731
    assert ttft(t2) - ttft(t1) == pytest.approx(1000 * 4096 / 450e9 + 10e-6, rel=1e-6)


def test_stages_hold_their_share_of_weights_and_kv():
    """TP 4 × PP 2 on H100s: each GPU holds half the layers' weights and KV, so the replica's
    pool is that of 8 GPUs (about TP 8's, whose activations differ) and its two virtual engines
    get half each, with half of max_num_seqs and the whole token budget."""
    b = _built(4, 2)
    d1 = _built(4, 1).pool_derivation
    assert b.pool_derivation["weights_bytes_per_device"] == pytest.approx(
        d1["weights_bytes_per_device"] / 2)
    per_device = b.pool_derivation["kv_pool_bytes_per_device"]
    kv_token = 80 * 2 * 8 * 128 * 2
    assert b.spec.num_blocks == int(per_device * 4 * 2 // (16 * kv_token))
    engines = b.engines()
    assert [e.name for e in engines] == ["engine-0:0", "engine-0:1"]
    assert all(e.spec.num_blocks == b.spec.num_blocks // 2 for e in engines)
    assert all(e.spec.max_num_seqs == 32 and e.spec.max_num_batched_tokens == 8192
               for e in engines)
    assert pool_summaries(b.simulate(), 1.0)[0].replicas == 1  # two engines, one replica


@pytest.mark.parametrize(("model", "engine", "message"), [
    ("qwen3-0.6b", {"tensor_parallel": 1, "pipeline_parallel": 29},
     "at most the model's 28 layers"),
    ("llama-3.1-70b", {"pipeline_parallel": 2, "disaggregated": {"decode_replicas": 1}},
     "tensor-parallel replicas only"),
])
def test_pipelines_napkin_does_not_model_are_refused(model, engine, message):
    s = Scenario.model_validate({**BASE, "model": model,
                                 "engine": {**BASE["engine"], **engine}})
    with pytest.raises(NapkinError, match=f"engine.pipeline_parallel: .*{message}"):
        build(s, Path("."))
