"""Scheduler policies (vllm, trtllm, sglang), each pinned by a small hand-worked case."""

import pytest
from stepping import Stepper

from napkin.accounting import Precision
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving.arrivals import OpenLoop
from napkin.serving.engine import Engine
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.policy import policy
from napkin.serving.request import Request
from napkin.serving.requests import RequestSet
from napkin.serving.simulate import simulate
from napkin.serving.step import StepShape
from napkin.timing.efficiency import Efficiency

EFF = Efficiency(0.5, 0.8, 1e-3)


def _run(backend: str, num_blocks: int, prompts, outputs, mode: str = "fast", **spec):
    engine = Engine(load_model("qwen3-8b"), load_accelerator("h100-sxm"), Precision.of(), EFF,
                    EngineSpec(num_blocks=num_blocks, block_size=16, backend=backend, mode=mode,
                               **spec))
    reqs = RequestSet.build([0.0] * len(prompts), prompts, outputs)
    return engine, simulate([engine], OpenLoop(reqs, (0,)))


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_trtllm_reserves_the_maximum_length_and_never_evicts(mode):
    """Two requests of 160 + 160 tokens need 20 blocks each at full length; with 30 blocks
    TensorRT-LLM admits one (20 ≤ 30), then not the other (20 > 10 left) until it finishes;
    vLLM admits both (10 + 10 blocks of prompt) and must preempt once their outputs grow."""
    engine, run = _run("trtllm", 30, [160, 160], [160, 160], mode)
    r = run.records
    assert engine.preemptions == 0
    first, second = sorted(zip(r.first_token_s, r.finish_s, strict=True))
    assert second[0] > first[1]  # the second's first token comes after the first finished
    assert engine.peak_blocks == 20
    vllm, _ = _run("vllm", 30, [160, 160], [160, 160], mode)
    assert vllm.preemptions >= 1


def _a_then_b(backend: str, mode: str):
    """A (100 prompt, 5 outputs) at 0; B (100, 5) just after A's prefill step ends."""
    engine = Engine(load_model("qwen3-8b"), load_accelerator("h100-sxm"), Precision.of(), EFF,
                    EngineSpec(num_blocks=1000, backend=backend, mode=mode))
    prefill_end = engine.timer.series(engine.cost.parts(StepShape(0, 0, [(0, 100, 1)])),
                                      None, 100).time(1)
    reqs = RequestSet.build([0.0, prefill_end + 1e-5], [100, 100], [5, 5])
    return engine, simulate([engine], OpenLoop(reqs, (0,))).records


def test_sglang_never_mixes_prefill_and_decode():
    """vLLM: P_A, D_A, [D_A + P_B], [D_A D_B], [D_A D_B] — A done after step 5. SGLang: P_A,
    D_A, [P_B alone, A paused], then three decodes of both — A done after step 6. B's first
    token ends step 3 in both; 7 steps in all. (Exact mode records one step per unit.)"""
    for backend, a_done in (("vllm", 5), ("sglang", 6)):
        engine, r = _a_then_b(backend, "exact")
        ends = list(engine.series_t)
        assert ends.index(float(r.finish_s[r.rid == 0][0])) + 1 == a_done
        assert ends.index(float(r.first_token_s[r.rid == 1][0])) + 1 == 3
        assert engine.num_steps == 7
        _, fast = _a_then_b(backend, "fast")
        assert sorted(fast.finish_s) == pytest.approx(sorted(r.finish_s), rel=1e-12)


def test_sglang_ratio_reservation_admits_conservatively():
    """60 blocks of 16 = 960 tokens. At ratio 0.7 a request of 100 prompt tokens and 800
    outputs needs 100 + 0.7·800 = 660 tokens: the first is admitted; the second needs 660 plus
    0.7·800 held for the first = 1,220 > 960 − 112 (the first's 7 blocks): it waits. After k
    decode steps it needs 100 + r·800 + r·(800 − k) with r = 0.7 − 0.001k against
    (60 − ⌈(100 + k)/16⌉)·16 free: first true near k ≈ 440 (k = 400: 460 > 448)."""
    p = policy("sglang")
    assert p.new_token_ratio(0) == 0.7 and p.new_token_ratio(600) == pytest.approx(0.1)
    assert p.new_token_ratio(300) == pytest.approx(0.4)
    engine, run = _run("sglang", 60, [100, 100], [800, 800])
    r = run.records
    _, second = sorted(r.first_scheduled_s)
    # one decode of the first request at ~ its mean context over those steps
    step_s = engine.timer.series(engine.cost.parts(StepShape(1, 320, [])), None, 1).time(1)
    assert 400 < (second - r.first_token_s.min()) / step_s < 480
    engine, run = _run("vllm", 60, [100, 100], [800, 800])
    assert sorted(run.records.first_scheduled_s)[1] == 0.0  # vLLM admits both at once


def test_prefix_caching_only_with_vllm():
    with pytest.raises(NapkinError, match="enable_prefix_caching"):
        EngineSpec(num_blocks=10, backend="trtllm", enable_prefix_caching=True)
    with pytest.raises(NapkinError, match="backend: unknown 'tgi'"):
        EngineSpec(num_blocks=10, backend="tgi")


def test_trtllm_max_utilization_allocates_on_demand_like_vllm():
    """MAX_UTILIZATION: the 30-block case of the first test admits both and evicts, as vLLM,
    with the same times."""
    engine, run = _run("trtllm", 30, [160, 160], [160, 160],
                       capacity_scheduler="max_utilization")
    vllm, vrun = _run("vllm", 30, [160, 160], [160, 160])
    assert engine.preemptions == vllm.preemptions >= 1
    assert sorted(run.records.finish_s) == pytest.approx(sorted(vrun.records.finish_s))
    with pytest.raises(NapkinError, match="capacity_scheduler: applies to backend trtllm"):
        EngineSpec(num_blocks=10, capacity_scheduler="max_utilization")


def test_without_chunked_prefill_a_prompt_waits_for_a_whole_budget():
    """Budget 1,000 tokens, two 600-token prompts at once. Chunked: step 1 holds 600 + 400
    (the first's first token comes after a 1,000-token step); unchunked: step 1 holds the
    first prompt alone (600 tokens) and the second waits for step 2 whole."""
    chunked, c = _run("vllm", 1000, [600, 600], [2, 2], max_num_batched_tokens=1000)
    _, w = _run("vllm", 1000, [600, 600], [2, 2], max_num_batched_tokens=1000,
                chunked_prefill=False)
    t600 = chunked.timer.series(chunked.cost.parts(StepShape(0, 0, [(0, 600, 1)])), None,
                                600).time(1)
    assert min(w.records.first_token_s) == pytest.approx(t600)
    assert min(c.records.first_token_s) > t600
    with pytest.raises(NapkinError, match="chunked_prefill off"):
        _run("vllm", 1000, [1200], [2], max_num_batched_tokens=1000, chunked_prefill=False)


def _recv_run(mode: str, interval: int, decodes_before: float):
    """A (100 prompt, 60 outputs) at t = 0 and B (100, 5) ``decodes_before`` decode steps into
    A's decoding, on SGLang with ``--scheduler-recv-interval interval``."""
    engine = Engine(load_model("qwen3-8b"), load_accelerator("h100-sxm"), Precision.of(), EFF,
                    EngineSpec(num_blocks=1000, backend="sglang", mode=mode,
                               scheduler_recv_interval=interval))
    prefill_s = engine.timer.series(engine.cost.parts(StepShape(0, 0, [(0, 100, 1)])),
                                    None, 100).time(1)
    decode_s = engine.timer.series(engine.cost.parts(StepShape(1, 101, [])), None, 1).time(1)
    arrival = prefill_s + decodes_before * decode_s
    reqs = RequestSet.build([0.0, arrival], [100, 100], [60, 5])
    return engine, simulate([engine], OpenLoop(reqs, (0,))).records, arrival


@pytest.mark.parametrize(("interval", "decodes_before", "taken_in_after"),
                         [(1, 1.5, 3), (4, 1.5, 5), (4, 5.5, 9), (30, 1.5, 31)])
def test_sglang_takes_in_new_requests_every_recv_interval_decode_steps(
        interval, decodes_before, taken_in_after):
    """SGLang's ``--scheduler-recv-interval N``: step 1 is A's prefill, after which the
    scheduler looks at once (a prefill step counts as a full interval), then every N decode
    steps. N = 1: B, arriving in A's second decode, is taken in at the next boundary, the end of
    step 3. N = 4: the scheduler looks after decode 4 (step 5); with B arriving in decode 6,
    only after decode 8 (step 9: the look after decode 4 found nothing). N = 30: after decode 30
    (step 31). B's prefill is the next step and ends with its first token. (Exact mode records
    one step per unit; fast mode, whose decode runs stop at the scheduler's next look, must
    give the same times.)"""
    engine, r, arrival = _recv_run("exact", interval, decodes_before)
    ends = list(engine.series_t)
    b = r.rid == 1
    assert ends.index(float(r.first_scheduled_s[b][0])) + 1 == taken_in_after
    assert ends.index(float(r.first_token_s[b][0])) + 1 == taken_in_after + 1
    assert float(r.queue_wait_s[b][0]) == pytest.approx(ends[taken_in_after - 1] - arrival,
                                                        rel=1e-9)
    _, fast, _ = _recv_run("fast", interval, decodes_before)
    for column in ("first_scheduled_s", "first_token_s", "finish_s"):
        assert sorted(getattr(fast, column)) == pytest.approx(sorted(getattr(r, column)),
                                                              rel=1e-9)


def test_recv_interval_is_sglang_only():
    with pytest.raises(NapkinError, match="scheduler_recv_interval: applies to backend sglang"):
        EngineSpec(num_blocks=10, backend="vllm", scheduler_recv_interval=10)
    with pytest.raises(NapkinError, match="scheduler_recv_interval: must be >= 1"):
        EngineSpec(num_blocks=10, backend="sglang", scheduler_recv_interval=0)


def _batch_wait_run(mode: str, timeout: int, ratio: float):
    """A (100 prompt, 60 outputs) at t = 0, B (100, 5) arriving in A's second decode, on
    TensorRT-LLM with batch waiting (``timeout`` steps, ``ratio`` of the 8,192-token budget)."""
    engine = Engine(load_model("qwen3-8b"), load_accelerator("h100-sxm"), Precision.of(), EFF,
                    EngineSpec(num_blocks=1000, backend="trtllm", mode=mode,
                               batch_wait_timeout_iters=timeout,
                               batch_wait_max_tokens_ratio=ratio))
    prefill_s = engine.timer.series(engine.cost.parts(StepShape(0, 0, [(0, 100, 1)])),
                                    None, 100).time(1)
    decode_s = engine.timer.series(engine.cost.parts(StepShape(1, 101, [])), None, 1).time(1)
    reqs = RequestSet.build([0.0, prefill_s + 1.5 * decode_s], [100, 100], [60, 5])
    return engine, simulate([engine], OpenLoop(reqs, (0,))).records


@pytest.mark.parametrize(("timeout", "ratio", "first_token_step"),
                         [(0, 0.0, 4), (3, 0.9, 7), (3, 0.01, 4), (0, 0.9, 4), (3, 0.0, 4)])
def test_trtllm_batch_waiting_holds_prompts_back(timeout, ratio, first_token_step):
    """TensorRT-LLM's ``batch_wait_timeout_iters`` / ``batch_wait_max_tokens_ratio``: step 1 is
    A's prefill (nothing decodes yet, so nothing is held); B arrives in step 3. Without waiting
    B's prompt joins step 4 and its first token ends it. With 3 steps and 0.9 of the budget,
    B's 100 tokens + 1 decode (101 < 7,373) are held in steps 4, 5, 6 and run in step 7. At
    0.01 of the budget 101 ≥ 81.9 tokens: not held. As in TensorRT-LLM, either setting at 0
    ends the wait at once."""
    engine, r = _batch_wait_run("exact", timeout, ratio)
    ends = list(engine.series_t)
    b = r.rid == 1
    assert ends.index(float(r.first_token_s[b][0])) + 1 == first_token_step
    _, fast = _batch_wait_run("fast", timeout, ratio)
    for column in ("first_token_s", "finish_s"):
        assert sorted(getattr(fast, column)) == pytest.approx(sorted(getattr(r, column)),
                                                              rel=1e-9)


def test_batch_waiting_is_trtllm_only():
    with pytest.raises(NapkinError, match="batch_wait_timeout_iters: applies to backend trtllm"):
        EngineSpec(num_blocks=10, backend="vllm", batch_wait_timeout_iters=10,
                   batch_wait_max_tokens_ratio=0.5)
    with pytest.raises(NapkinError, match=r"batch_wait_max_tokens_ratio: must be in \[0, 1\]"):
        EngineSpec(num_blocks=10, backend="trtllm", batch_wait_max_tokens_ratio=1.5)


@pytest.mark.parametrize("mode", ["fast", "exact"])
def test_sglang_reserve_running_sum_equals_the_sum_over_requests(mode):
    """The reserve's decoding share kept as a running sum equals SGLang's sum of
    min(outputs left, 4,096) over the running requests at every scheduling point, with and
    without a request whose output starts above the clip (5,000 tokens)."""
    for outputs in ([40, 300, 7, 1200], [40, 5000, 7, 1200]):
        engine = Engine(load_model("qwen3-8b"), load_accelerator("h100-sxm"), Precision.of(),
                        EFF, EngineSpec(num_blocks=2000, backend="sglang", mode=mode))
        stepper = Stepper(engine)
        for i, out in enumerate(outputs):
            stepper.add(Request(i, 0.0, 100 * (i + 1), out), 0.0)
        checked = 0
        while not stepper.idle and checked < 10_000:
            s, clip = engine.steps, engine.policy.clip_max_new_tokens
            left = sum(min(r.max_out - (r.o0 + s - r.s0), clip) for r in engine.decoding.values())
            left += sum(min(r.max_out - r.outputs, clip) for r in engine.prefilling.values())
            ratio = engine.policy.new_token_ratio(s - engine.ratio_reset_step)
            assert engine._ratio_reserve_tokens() == ratio * left
            stepper.step()
            checked += 1
        assert not (engine.running or engine.waiting)
