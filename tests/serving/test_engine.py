"""The engine against hand derivations and the inference layer's request chain."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from napkin.accounting import Batch, Precision, Segment, forward
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.inference.chain import request_chain
from napkin.serving.arrivals import OpenLoop
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.request import Request
from napkin.serving.requests import RequestSet
from napkin.serving.simulate import simulate
from napkin.timing.efficiency import Efficiency
from napkin.timing.roofline import Deployment, call_time

EFF = Efficiency(0.4, 0.5, 0.0)


def _open(arrivals, prompts, outputs, shared=0) -> OpenLoop:
    reqs = RequestSet.build(arrivals, prompts, outputs)
    return OpenLoop(reqs, (shared,))


def _engine(model="qwen3-8b", gpu="h100-sxm", **spec) -> Engine:
    spec.setdefault("num_blocks", 100_000)
    return Engine(load_model(model), load_accelerator(gpu), Precision.of(), EFF,
                  EngineSpec(**spec))


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_single_request_matches_the_request_chain(mode):
    engine = _engine(mode=mode)
    run = simulate([engine], _open([1.0], [1000], [50]))
    chain = request_chain(Deployment(engine.model, engine.acc, Precision.of(), EFF),
                          new=1000, gen=50)
    r = run.records
    assert r.first_token_s[0] == pytest.approx(1.0 + chain.ttft_s, rel=1e-12)
    assert r.finish_s[0] == pytest.approx(1.0 + chain.e2e_s, rel=1e-12)
    assert engine.num_steps == 50  # 1 prefill + 49 decode steps


def test_two_requests_in_lockstep_match_a_batch_of_two():
    engine = _engine()
    run = simulate([engine], _open([0.0, 0.0], [700, 700], [30, 30]))
    chain = request_chain(Deployment(engine.model, engine.acc, Precision.of(), EFF),
                          new=700, gen=30, batch=2)
    assert run.records.finish_s == pytest.approx([chain.e2e_s] * 2, rel=1e-12)


def test_chunked_prefill_takes_ceil_p_over_budget_steps():
    engine = _engine(max_num_batched_tokens=2048, max_num_seqs=8)
    run = simulate([engine], _open([0.0], [5000], [1]))
    dep = Deployment(engine.model, engine.acc, Precision.of(), EFF)
    chunks = [(0, 2048, 0), (2048, 2048, 0), (4096, 904, 1)]  # 2048 + 2048 + 904 = 5000
    expected = sum(call_time(forward(dep.model, Batch((Segment(c, n, o),)), dep.precision),
                             dep.acc, "bf16", EFF).time_s for c, n, o in chunks)
    assert engine.num_steps == 3
    assert run.records.first_token_s[0] == pytest.approx(expected, rel=1e-12)


def test_max_num_seqs_queues_the_second_request():
    engine = _engine(max_num_seqs=1)
    run = simulate([engine], _open([0.0, 0.0], [100, 100], [10, 10]))
    r = run.records
    order = np.argsort(r.rid)
    first, second = order
    assert r.first_scheduled_s[second] == pytest.approx(r.finish_s[first])
    assert r.queue_wait_s[second] == pytest.approx(r.finish_s[first])


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_preemption_by_hand(mode):
    # block_size 16, 6 blocks; A and B: 32 prompt tokens, 33 outputs, both at t = 0.
    # Step 0 prefills both (2 blocks each). Steps 1 and 17 each need a block per sequence
    # (contexts 32 and 48); at step 17 only 0 are free: B (admitted last) is preempted with 17
    # outputs. A finishes after step 32 (1 + 32 outputs); B then re-prefills its 49 tokens
    # (4 blocks) at step 33 and needs 15 more decode steps: 49 steps in all.
    engine = _engine(model="qwen3-0.6b", gpu="l4", num_blocks=6, max_num_seqs=4, mode=mode)
    run = simulate([engine], _open([0.0, 0.0], [32, 32], [33, 33]))
    r = run.records
    by_rid = {int(rid): i for i, rid in enumerate(r.rid)}
    a, b = by_rid[0], by_rid[1]
    assert (r.preemptions[a], r.preemptions[b]) == (0, 1)
    assert engine.preemptions == 1
    assert engine.num_steps == 49
    assert r.finish_s[b] > r.finish_s[a]
    assert r.first_token_s[b] < r.finish_s[a]  # B's first token came before its preemption
    assert engine.peak_blocks == 6


def test_prefix_cache_hits_skip_shared_blocks():
    # a 64-token shared prefix (4 blocks of 16); the second request arrives after the first
    # finished, so its blocks are cached and evictable: it skips 64 tokens of prefill
    src = _open([0.0, 10.0], [200, 200], [5, 5], shared=64)
    on = _engine(enable_prefix_caching=True)
    run = simulate([on], src)
    cached = dict(zip(run.records.rid.tolist(), run.records.cached_tokens.tolist(),
                      strict=True))
    assert cached == {0: 0, 1: 64}
    off = _engine(enable_prefix_caching=False)
    assert simulate([off], src).records.cached_tokens.tolist() == [0, 0]


def test_session_rounds_reuse_history_blocks():
    engine = _engine(enable_prefix_caching=True, block_size=16)
    src_req = [Request(0, 0.0, 100, 20, 0, ("session", 7), 7)]

    class Two:
        names = ("session",)

        def start(self, rid):
            return src_req

        def on_finish(self, req, t, rid):
            if req.rid == 0:  # round 2: history (100 + 20) + 30 new tokens
                return Request(rid, t, 150, 10, 0, ("session", 7), 7)
            return None

    run = simulate([engine], Two())
    cached = dict(zip(run.records.rid.tolist(), run.records.cached_tokens.tolist(),
                      strict=True))
    # round 1 computed 100 + 19 = 119 tokens: 7 full blocks (112 tokens) are named; round 2
    # may hit at most floor((150 − 1)/16) = 9 blocks, so it hits the 7: 112 tokens
    assert cached == {0: 0, 1: 112}


def test_tensor_parallel_adds_allreduce_time():
    one = _engine(model="qwen3-8b", tensor_parallel=1, mode="exact")
    two = _engine(model="qwen3-8b", tensor_parallel=2, mode="exact",
                  allreduce_bytes_per_s=100e9, allreduce_latency_s=5e-6)
    t1 = simulate([one], _open([0.0], [4000], [1])).records.finish_s[0]
    t2 = simulate([two], _open([0.0], [4000], [1])).records.finish_s[0]
    # 4000-token prefill: compute-bound, halved by TP 2; plus 2 all-reduces per layer of
    # 2·(2−1)/2 · 4000 · 4096 · 2 bytes at 100 GB/s + 5 µs each, 36 layers
    allreduce = 2 * 36 * (4000 * 4096 * 2 / 100e9 + 5e-6)
    assert t2 == pytest.approx(t1 / 2 + allreduce, rel=1e-9)


def test_round_robin_and_least_outstanding_routing():
    src = _open([0.0, 0.0, 0.0, 0.0], [100] * 4, [5] * 4)
    engines = [_engine(), _engine()]
    run = simulate(engines, src, "round_robin")
    assert sorted(run.records.engine.tolist()) == [0, 0, 1, 1]
    # r0 (500 outputs, ≈ 5 s) goes to engine 0, r1 (5 outputs, milliseconds) to engine 1;
    # at t = 1 s engine 1 is empty again and engine 0 still busy: r2 goes to engine 1
    engines = [_engine(max_num_seqs=1), _engine(max_num_seqs=1)]
    run = simulate(engines, _open([0.0, 0.0, 1.0], [100, 100, 100], [500, 5, 5]),
                   "least_outstanding")
    by_rid = dict(zip(run.records.rid.tolist(), run.records.engine.tolist(), strict=True))
    assert by_rid == {0: 0, 1: 1, 2: 1}


def test_requests_larger_than_the_pool_are_refused():
    engine = _engine(num_blocks=10, block_size=16)
    with pytest.raises(NapkinError, match="KV blocks"):
        simulate([engine], _open([0.0], [150], [20]))  # 170 tokens need 11 blocks


def test_engine_spec_validation():
    with pytest.raises(NapkinError, match="max_num_batched_tokens"):
        EngineSpec(num_blocks=10, max_num_seqs=64, max_num_batched_tokens=32)
    with pytest.raises(NapkinError, match="mode"):
        EngineSpec(num_blocks=10, mode="slow")  # type: ignore[arg-type]


def test_kv_state_integral_by_hand():
    # one request alone: during step j the cache holds P + (j − 1) tokens (0 before the
    # prefill step writes them): Σ_j tokens_j · t_j
    engine = _engine(mode="exact")
    simulate([engine], _open([0.0], [1000], [4]))
    dep = Deployment(engine.model, engine.acc, Precision.of(), EFF)
    steps = [(0, 1000, 1)] + [(1000 + j, 1, 1) for j in range(3)]
    times = [call_time(forward(dep.model, Batch((Segment(c, n, o),)), dep.precision), dep.acc,
                       "bf16", EFF).time_s for c, n, o in steps]
    held = [0, 1000, 1001, 1002]
    assert engine.kv_token_seconds == pytest.approx(sum(h * t for h, t in zip(held, times,
                                                                              strict=True)))
    assert math.isclose(engine.busy_s, sum(times))


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_a_step_with_a_prefill_chunk_waits_for_the_eager_floor(mode):
    """A fitted timer of 1 ms per step and a 1 ms per layer floor on steps with a prefill chunk
    (Qwen3-8B: 36 layers): a lone 100-token prompt with 4 output tokens takes 36 ms to its first
    token (the prefill step, floored) and 3 decode steps of 1 ms after it; a second request
    arriving mid-decode puts its prompt into a mixed step, which takes the 36 ms floor too."""
    from napkin.calibration.basis import FittedTimer, StepBasis, StepModel

    model, acc = load_model("qwen3-8b"), load_accelerator("h100-sxm")
    timer = FittedTimer(StepBasis.of(model, acc, "bf16", 1, 450e9),
                        StepModel.of({"step": 1e-3, "eager_layer": 1e-3}))
    engine = Engine(model, acc, Precision.of(), EFF, EngineSpec(100_000, mode=mode),
                    timer=timer)
    run = simulate([engine], _open([0.0, 0.0365], [100, 100], [4, 4]))
    r = run.records
    assert r.first_token_s[0] == pytest.approx(0.036)
    assert r.finish_s[0] == pytest.approx(0.036 + 0.001 + 0.036 + 0.001)
    assert r.first_token_s[1] == pytest.approx(0.036 + 0.001 + 0.036)


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_chunked_prefill_holds_ceil_tokens_over_block_size_blocks(mode):
    """A 100-token prompt under a 40-token budget runs as chunks of 40, 40, 20; with 16-token
    blocks it holds ⌈40/16⌉ = 3, ⌈80/16⌉ = 5, then ⌈100/16⌉ = 7 blocks; the decode step of
    its second output writes token 101 into the seventh block (⌈101/16⌉ = 7) and frees all,
    so a pool of exactly 7 blocks runs it without a preemption."""
    engine = _engine(max_num_batched_tokens=40, max_num_seqs=1, num_blocks=7, mode=mode)
    run = simulate([engine], _open([0.0], [100], [2]))
    assert len(run.records.rid) == 1
    used = list(engine.series_blocks)  # blocks in use after each unit
    assert used == [3, 5, 7, 0]
    assert engine.preemptions == 0


def test_open_loop_columns_fit_their_typed_arrays():
    """The simulator copies token counts into 32-bit arrays: the largest request napkin
    accepts must fit, and a request of that size comes back unchanged."""
    from napkin.serving.requests import MAX_REQUEST_TOKENS
    from napkin.serving.simulate import OpenFeed

    assert MAX_REQUEST_TOKENS < 2**31
    feed = OpenFeed(_open([0.5], [MAX_REQUEST_TOKENS], [MAX_REQUEST_TOKENS]), 0.25)
    req = feed.take(0)
    assert (req.prompt, req.max_out, req.arrival_s, feed.times[0]) == (
        MAX_REQUEST_TOKENS, MAX_REQUEST_TOKENS, 0.5, 0.75)


@given(st.lists(st.integers(0, 5), min_size=16, max_size=16), st.integers(0, 10_000),
       st.integers(0, 200))
def test_blocks_needed_counts_each_step_s_new_blocks(residues, first, k):
    """Over k decode steps from step count ``first``, a sequence whose context hits a block
    boundary at step s needs a block: Σ_j residues[(first + j) mod 16] (whole cycles in one
    product, the partial one by slices that may wrap)."""
    engine = _engine(block_size=16)
    engine.residues = list(residues)
    engine.decoding = dict.fromkeys(range(sum(residues)))
    assert engine._blocks_needed(first, k) == sum(residues[(first + j) % 16] for j in range(k))
