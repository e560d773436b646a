"""Disaggregated prefill/decode (1P1D and more), pinned by hand against the aggregated run."""

from pathlib import Path

import pytest

from napkin.errors import NapkinError
from napkin.serving.metrics import summarize
from napkin.serving.scenario import Scenario, build

P, G = 1600, 11
KV_BYTES = 28 * 8 * 128 * 2 * 2  # Qwen3-0.6B: layers × KV heads × head dim × (K, V) × BF16
LINK_GBS, LATENCY_US = 10.0, 20.0


def _scenario(n: int, disagg: dict | None, tp: int = 1) -> Scenario:
    """``n`` requests of P prompt and G output tokens at t = 0; roofline with a 100 ms step
    overhead (Qwen3-0.6B on an H100)."""
    engine = {"kv_pool_gib": 2, "tensor_parallel": tp}
    if disagg is not None:
        engine["disaggregated"] = disagg
    return Scenario.model_validate({
        "model": "qwen3-0.6b", "gpu": "h100-sxm", "calibration": "roofline",
        "step_overhead_ms": 100, "engine": engine,
        "workload": {"classes": {"a": {"input_tokens": P, "output_tokens": G}},
                     "arrivals": {"kind": "closed_loop", "clients": n, "num_requests": n}}})


def _records(s: Scenario):
    built = build(s, Path("."))
    run = built.simulate()
    return built, run, run.records


def test_1p1d_moves_the_kv_into_the_first_inter_token_gap():
    """The prefill replica runs the same prefill step as an aggregated engine, so TTFT is
    unchanged; the decode replica then runs the same G − 1 one-token steps, after the KV
    (P × 114,688 bytes = 183.5 MB) crossed a 10 GB/s link with 20 µs latency: the finish moves
    by 183.5 MB / 10 GB/s + 20 µs = 18.37 ms, which TPOT carries over G − 1 = 10 gaps."""
    _, _, agg = _records(_scenario(1, None))
    _, run, dis = _records(_scenario(1, {"kv_link_gbs": LINK_GBS,
                                             "kv_link_latency_us": LATENCY_US}))
    assert [e.name for e in run.engines] == ["prefill-0", "decode-0"]
    transfer = P * KV_BYTES / (LINK_GBS * 1e9) + LATENCY_US * 1e-6
    assert transfer == pytest.approx(18.37e-3, abs=1e-5)
    assert dis.first_token_s[0] == pytest.approx(agg.first_token_s[0], rel=1e-12)
    assert dis.finish_s[0] - agg.finish_s[0] == pytest.approx(transfer, abs=2e-4)
    s_agg, s_dis = summarize(_records(_scenario(1, None))[1]), summarize(run)
    assert s_dis.tpot.mean_s - s_agg.tpot.mean_s == pytest.approx(transfer / (G - 1), abs=2e-5)
    prefill, decode = run.engines
    assert prefill.num_steps == 1 and decode.num_steps == G - 1
    # the prefill replica held the prompt's 1,600 tokens (100 blocks of 16); the decode
    # replica the whole context, P + G − 1 = 1,610 tokens (101 blocks), never recomputed
    assert (prefill.peak_blocks, decode.peak_blocks) == (100, 101)


def test_transfers_leave_one_prefill_replica_one_after_another():
    """Two requests prefilled in the same step leave over the same link: the second's KV
    arrives P × 114,688 B / 10 GB/s = 18.35 ms after the first's; on two decode replicas (least
    outstanding: one each) both start on arrival, so they finish that far apart."""
    _, _, r = _records(_scenario(2, {"decode_replicas": 2, "kv_link_gbs": LINK_GBS}))
    assert sorted(r.engine.tolist()) == [1, 2]
    finish = sorted(r.finish_s.tolist())
    assert finish[1] - finish[0] == pytest.approx(P * KV_BYTES / (LINK_GBS * 1e9), abs=2e-4)
    assert r.first_token_s[0] == pytest.approx(r.first_token_s[1])


def test_pools_have_their_own_tensor_parallelism_and_default_link():
    """Prefill TP 1, decode TP 2; the default link is the GPU's per-direction interconnect
    (H100 NVLink 900 GB/s bidirectional → 450 GB/s) per prefill rank."""
    built = build(_scenario(1, {"prefill_tensor_parallel": 1}, tp=2), Path("."))
    assert built.prefill_spec.tensor_parallel == 1 and built.spec.tensor_parallel == 2
    assert built.disagg.link_bytes_per_s == pytest.approx(450e9)
    assert built.disagg.kv_bytes_per_token == KV_BYTES


def test_disaggregated_pools_replace_replicas():
    s = _scenario(1, {"decode_replicas": 2})
    bad = s.model_copy(update={"engine": s.engine.model_copy(update={"replicas": 2})})
    with pytest.raises(NapkinError, match=r"engine\.replicas"):
        build(bad, Path("."))


def test_pool_metrics_split_prefill_from_decode():
    """1P1D, one request: the prefill replica ran 1 of the run's G steps, the decode replica
    the other G − 1, and their busy shares add up to the busy time over the makespan."""
    _, run, _ = _records(_scenario(1, {"kv_link_gbs": LINK_GBS}))
    s = summarize(run)
    pre, dec = s.pools
    assert (pre.name, pre.replicas, pre.steps) == ("prefill", 1, 1)
    assert (dec.name, dec.replicas, dec.steps) == ("decode", 1, G - 1)
    busy = sum(e.busy_s for e in run.engines)
    assert (pre.busy_frac + dec.busy_frac) * s.makespan_s == pytest.approx(busy)
    assert dec.peak_kv_frac == pytest.approx(101 / run.engines[1].spec.num_blocks)


def test_the_kv_link_leaves_nvlink_once_the_pools_span_nodes():
    """Without ``kv_link_gbs`` a prefill replica sends its KV over one link a rank: NVLink's
    450 GB/s per direction (H100) while both pools fit one 8-GPU node — 1P1D at TP 4 is 4 + 4
    GPUs, 4 × 450 GB/s — and a rank's 50 GB/s NIC once they do not: 2P2D at TP 4 is 16 GPUs,
    4 × 50 GB/s; ``engine.gpus_per_node: 16`` puts them back in one domain."""
    cases = (({}, 4 * 450e9), ({"prefill_replicas": 2, "decode_replicas": 2}, 4 * 50e9))
    for disagg, link in cases:
        built = build(_scenario(2, disagg, tp=4), Path("."))
        assert built.disagg.link_bytes_per_s == pytest.approx(link)
    wide = _scenario(2, {"prefill_replicas": 2, "decode_replicas": 2}, tp=4).model_dump(
        mode="json", exclude_unset=True)
    wide["engine"]["gpus_per_node"] = 16
    assert build(Scenario.model_validate(wide), Path(".")).disagg.link_bytes_per_s == \
        pytest.approx(4 * 450e9)
