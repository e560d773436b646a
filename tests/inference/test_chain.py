"""The request chain: TTFT, TPOT, end-to-end, by hand derivation."""

import pytest

from napkin.accounting import Batch, Precision, forward
from napkin.catalog import load_accelerator
from napkin.errors import NapkinError
from napkin.inference.chain import request_chain
from napkin.timing.efficiency import Efficiency
from napkin.timing.roofline import Deployment, call_time


def test_chain_is_one_prefill_and_g_minus_1_decode_steps(qwen3_8b, h100):
    # Figure 3-1: restore 6144 tokens, process 2048, return 4 tokens
    dep = Deployment(qwen3_8b, h100, Precision.of(), Efficiency(0.4, 0.5))
    chain = request_chain(dep, new=2048, gen=4, cached=6144)
    p = Precision.of()
    prefill = forward(qwen3_8b, Batch.uniform(6144, 2048), p)
    steps = [forward(qwen3_8b, Batch.decode(6144 + 2048 + j, 1), p) for j in range(3)]
    times = [call_time(c, h100, "bf16", dep.eff).time_s for c in steps]
    assert chain.decode_steps == 3
    assert chain.ttft_s == pytest.approx(call_time(prefill, h100, "bf16", dep.eff).time_s)
    assert chain.decode_s == pytest.approx(sum(times))
    assert chain.tpot_s == pytest.approx(sum(times) / 3)
    assert chain.e2e_s == pytest.approx(chain.ttft_s + sum(times))
    assert chain.decode_flops == pytest.approx(sum(c.flops for c in steps))
    assert chain.final_context == 6144 + 2048 + 3
    assert chain.mean_decode_context == 6144 + 2048 + 1


def test_single_token_has_no_decode(qwen3_8b, h100):
    chain = request_chain(Deployment(qwen3_8b, h100, Precision.of()), new=10, gen=1)
    assert (chain.decode_steps, chain.tpot_s, chain.decode_flops) == (0, 0.0, 0)
    assert chain.e2e_s == chain.ttft_s


def test_decode_steps_are_memory_bound_and_prefill_compute_bound(qwen3_8b, h100):
    chain = request_chain(Deployment(qwen3_8b, h100, Precision.of()), new=4096, gen=8)
    assert chain.prefill_time.bound == "compute"
    assert chain.decode[0].first.bytes / h100.mem_bytes_per_s > (
        chain.decode[0].first.flops / h100.peak_flops_per_s("bf16"))


@pytest.mark.parametrize("kwargs", [{"new": 0}, {"new": 5, "gen": 0}, {"new": 5, "batch": 0},
                                    {"new": 5, "cached": -1}, {"new": 40_000, "gen": 2000}])
def test_bad_chains_are_refused(qwen3_8b, kwargs):
    dep = Deployment(qwen3_8b, load_accelerator("l4"), Precision.of())
    with pytest.raises(NapkinError):
        request_chain(dep, **kwargs)
