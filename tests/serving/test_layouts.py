"""Scenarios in parallel layouts: KV pools, step timers and errors, against hand derivations."""

from pathlib import Path

import pytest

from napkin.accounting.forward import Precision, routed_weight_bytes, weight_bytes
from napkin.catalog import load_model
from napkin.errors import NapkinError
from napkin.serving.metrics import summarize
from napkin.serving.replica import activation_peak_bytes
from napkin.serving.scenario import Scenario, build
from napkin.timing.efficiency import Efficiency
from napkin.timing.layout import LayoutTimer
from napkin.units import GiB, MiB

# H200 SXM: 143,771 MiB reported to CUDA (catalog, nvidia-smi); vLLM's default
# gpu_memory_utilization 0.9 and napkin's 1 GiB reserve. DeepSeek-V3 in FP8 with FP8 KV:
# 61 layers × 576 latent numbers × 1 B = 35,136 B of KV per token, one latent head (TP
# replicates it on every GPU).
USABLE = 143_771 * MiB * 0.9
KV_TOKEN = 61 * 576


def _scenario(calibration: dict | None = None, **engine) -> Scenario:
    return Scenario.model_validate({
        "model": "deepseek-v3", "gpu": "h200", "weights": "fp8", "kv_dtype": "fp8",
        **(calibration or {"calibration": "roofline", "mfu": 0.5, "mbu": 0.7}),
        "engine": {"max_num_seqs": 64, "max_num_batched_tokens": 4096, "block_size": 64,
                   **engine},
        "workload": {"classes": {"a": {"input_tokens": 1000, "output_tokens": 200}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 20, "num_requests": 200}}})


def test_dep8_kv_pool_is_eight_groups_of_one_gpu_each():
    """TP8: weights/8 a GPU, and every GPU holds the whole latent of every request, so the
    replica's pool is one GPU's free memory. DEP8: the attention side (all but the routed
    experts) whole on each GPU and the experts / 8, the activation peak of one group's
    64 sequences / 4,096 tokens, and eight pools of their own requests."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8", "fp8")
    w, routed = weight_bytes(m, p), routed_weight_bytes(m, p)
    act = activation_peak_bytes(m, 4096, 64)

    tp8 = build(_scenario(tensor_parallel=8), Path("."))
    free_tp8 = USABLE - w / 8 - act / 8 - GiB
    assert tp8.kv_pool_bytes == pytest.approx(free_tp8 // (64 * KV_TOKEN) * 64 * KV_TOKEN)
    assert tp8.spec.max_num_seqs == 64

    dep8 = build(_scenario(tensor_parallel=1, data_parallel=8, expert_parallel=True),
                 Path("."))
    free_dep8 = USABLE - (w - routed) - routed / 8 - act - GiB
    assert dep8.kv_pool_bytes == pytest.approx(
        8 * free_dep8 // (64 * KV_TOKEN) * 64 * KV_TOKEN)
    assert dep8.spec.max_num_seqs == 8 * 64 and dep8.spec.max_num_batched_tokens == 8 * 4096
    assert isinstance(dep8.engines()[0].timer, LayoutTimer)
    assert dep8.layout.label() == "dp8 ep8"


def test_dep_simulates_and_differs_from_tp():
    """The same 20 requests/s through TP8 and DEP8 (max_num_seqs 64 each): TP8 runs at most
    64 requests, so arrivals queue (a request lives ~200 steps of ~25 ms, 5 s: about 100 wanted
    at once); DEP8 runs 64 in each of its 8 groups, so nothing waits — but each of its GPUs
    reads the whole attention side and its steps carry more sequences, so its TPOT is the
    longer one."""
    tp = summarize(build(_scenario(tensor_parallel=8), Path(".")).simulate())
    dep = summarize(build(_scenario(tensor_parallel=1, data_parallel=8, expert_parallel=True),
                          Path(".")).simulate())
    assert tp.requests == dep.requests == 200
    assert dep.ttft.mean_s < tp.ttft.mean_s / 10
    assert dep.tpot.mean_s > tp.tpot.mean_s


def test_a_measured_balancedness_slows_the_busiest_gpu_and_is_echoed():
    """DEP8 with EPLB's measured balancedness 0.5: the busiest GPU carries twice the mean
    routed load, so the steps that are compute-bound on the experts (prefills of up to 4,096
    tokens a group) take longer, and TTFT with them; the inputs echo the figure and the label
    carries it."""
    dep = dict(tensor_parallel=1, data_parallel=8, expert_parallel=True)
    even = build(_scenario(**dep), Path("."))
    skew = build(_scenario(**dep, expert_balancedness=0.5), Path("."))
    assert skew.layout.label() == "dp8 ep8 bal 0.5"
    a, b = summarize(even.simulate()), summarize(skew.simulate())
    assert b.ttft.mean_s > a.ttft.mean_s
    from napkin.report.serve_views import scenario_inputs
    assert scenario_inputs(skew)["expert_balancedness"] == 0.5
    assert "expert_balancedness" not in scenario_inputs(even)


def test_the_engine_hands_the_busiest_group_its_largest_chunk():
    """A DEP8 engine's step of 20 decodes (at 30,000 tokens of context in all) and chunks of
    512 and 1,000 new tokens: the busiest group runs ⌈20/8⌉ = 3 decodes at the mean context
    (3 · 30,000 // 20 = 4,500 tokens in all) and the 1,000-token chunk whole; the step with it
    takes longer than the even split."""
    built = build(_scenario(tensor_parallel=1, data_parallel=8, expert_parallel=True),
                  Path("."))
    engine = built.engines()[0]
    assert engine.dp == 8
    chunks = [(0, 512, 1), (200, 1000, 1)]
    parts, tokens = engine.busiest_group(20, 30000, chunks)
    assert tokens == 3 + 1000
    assert parts == engine.cost.step_parts(3, 4500, [(200, 1000, 1)])
    step = engine.cost.step_parts(20, 30000, chunks)
    timer = engine.timer
    assert isinstance(timer, LayoutTimer)
    assert timer.step_s(step, 20 + 1512, True, (parts, tokens)) > timer.step_s(step, 1532, True)
    assert build(_scenario(tensor_parallel=8), Path(".")).engines()[0].dp == 1


def test_disaggregated_pools_decode_in_dep_and_prefill_in_tp():
    """Prefill/decode disaggregation with a DEP8 decode pool (as SGLang's large-scale EP runs
    it): the decode replicas time their steps as the busiest of 8 ranks with all-to-alls and
    hold eight groups' KV pools (the pool of the DEP8 test above); the prefill replicas run TP8
    over as many GPUs (the default), their pool one GPU's free memory as TP8's."""
    m, p = load_model("deepseek-v3"), Precision.of("fp8", "fp8")
    w, routed = weight_bytes(m, p), routed_weight_bytes(m, p)
    act = activation_peak_bytes(m, 4096, 64)
    b = build(_scenario(tensor_parallel=1, data_parallel=8, expert_parallel=True,
                        disaggregated={"prefill_replicas": 1, "decode_replicas": 1}), Path("."))
    assert b.layout.label() == "dp8 ep8" and b.prefill_layout.label() == "tp8"
    prefill, decode = b.engines()
    assert not isinstance(prefill.timer, LayoutTimer) and isinstance(decode.timer, LayoutTimer)
    free_dep8 = USABLE - (w - routed) - routed / 8 - act - GiB
    assert b.kv_pool_bytes == pytest.approx(8 * free_dep8 // (64 * KV_TOKEN) * 64 * KV_TOKEN)
    free_tp8 = USABLE - w / 8 - act / 8 - GiB
    assert prefill.spec.num_blocks == pytest.approx(free_tp8 // (64 * KV_TOKEN), abs=1)
    s = summarize(b.simulate())
    assert s.requests == 200 and s.tpot.mean_s > 0


def test_a_prefill_pool_in_dep_too():
    """SGLang's large-scale EP prefills over DP attention as well: prefill_data_parallel 8 with
    expert parallelism and two-batch overlap makes the prefill replicas dp8 ep8 tbo (a decode
    replica's 8 GPUs, attention TP 8/8 = 1); errors name the prefill fields."""
    dep = dict(tensor_parallel=1, data_parallel=8, expert_parallel=True)
    b = build(_scenario(**dep, disaggregated={
        "prefill_replicas": 1, "decode_replicas": 1, "prefill_data_parallel": 8,
        "prefill_expert_parallel": True, "prefill_two_batch_overlap": True}), Path("."))
    assert b.prefill_layout.label() == "dp8 ep8 tbo"
    prefill = b.engines()[0]
    assert isinstance(prefill.timer, LayoutTimer) and prefill.dp == 8
    assert prefill.timer.engine == "vllm"  # the scenario's backend sets the overlap schedule
    sglang = build(_scenario(**dep, backend="sglang", two_batch_overlap=True), Path("."))
    timer = sglang.engines()[0].timer
    assert isinstance(timer, LayoutTimer) and timer.engine == "sglang"
    assert summarize(b.simulate()).requests == 200
    for extra, message in (
            ({"prefill_data_parallel": 3},
             "engine.disaggregated.prefill_data_parallel: 3 groups do not divide"),
            ({"prefill_two_batch_overlap": True},
             "engine.disaggregated.prefill_two_batch_overlap: overlaps"),
            ({"prefill_expert_parallel": 3, "prefill_data_parallel": 2},
             "engine.disaggregated.prefill_expert_parallel: true, false or a number")):
        with pytest.raises(NapkinError) as e:
            build(_scenario(**dep, disaggregated={"prefill_replicas": 1, "decode_replicas": 1,
                                                  **extra}), Path("."))
        assert str(e.value).startswith(message)


@pytest.mark.parametrize("value", ["x", 0, -2, 2.5, None])
def test_expert_parallel_is_a_switch_or_a_size(value):
    with pytest.raises(ValueError, match="expert-parallel size"):
        _scenario(tensor_parallel=8, expert_parallel=value)
    assert _scenario(tensor_parallel=8, expert_parallel="4").engine.expert_parallel == 4
    assert _scenario(tensor_parallel=8, expert_parallel="true").engine.expert_parallel is True


def test_moe_tp_by_ep_is_a_layout_of_its_own():
    """expert_parallel: 4 on TP8 is MoE TP 2 × EP 4: its own layout and step times, between
    plain TP8 and whole experts on every GPU; 1 is plain TP."""
    tp = build(_scenario(tensor_parallel=8), Path("."))
    mixed = build(_scenario(tensor_parallel=8, expert_parallel=4), Path("."))
    one = build(_scenario(tensor_parallel=8, expert_parallel=1), Path("."))
    assert mixed.layout.label() == "tp8 ep4" and mixed.layout.moe_tp == 2
    assert one.layout == tp.layout
    assert isinstance(mixed.engines()[0].timer, LayoutTimer)
    assert summarize(mixed.simulate()).requests == 200


def test_a_profile_warns_outside_its_layouts():
    """The SGLang profile was fitted on tensor-parallel rows only (no layouts recorded: tp);
    a DEP8 scenario says it extrapolates, and still runs in its layout."""
    b = build(_scenario({"calibration": "sglang"}, tensor_parallel=1, data_parallel=8,
                        expert_parallel=True), Path("."))
    assert any(w.startswith("outside profile 'sglang': layout dp8 ep8 (fitted on tp layouts")
               for w in b.warnings)
    assert isinstance(b.engines()[0].timer, LayoutTimer)
    tp = build(_scenario({"calibration": "sglang"}, tensor_parallel=8), Path("."))
    assert not any("layout" in w for w in tp.warnings)


def test_a_profile_warns_past_the_attention_data_parallelism_it_saw():
    """TensorRT-LLM's profile saw attention-DP layouts (gpt-oss-120b over 2 and 4 ranks: its
    all-to-alls' fixed time comes from them): Qwen3-235B-A22B in DEP8 lies past them and says
    so; in DEP4 it does not."""
    def warnings(dp: int) -> list[str]:
        b = build(_scenario({"calibration": "trtllm", "model": "qwen3-235b-a22b"},
                            backend="trtllm", tensor_parallel=1,
                            data_parallel=dp, expert_parallel=True), Path("."))
        return [w for w in b.warnings if "attention data parallel" in w]
    assert warnings(8) == ["outside profile 'trtllm': attention data parallel 8 (fitted on 1–4)"]
    assert warnings(4) == []


@pytest.mark.parametrize(("engine", "message"), [
    ({"tensor_parallel": 1, "data_parallel": 8, "two_batch_overlap": True,
      "model": "qwen3-8b"}, "engine.data_parallel: qwen3-8b is dense"),
    ({"tensor_parallel": 8, "two_batch_overlap": True}, "engine.two_batch_overlap:"),
    ({"tensor_parallel": 1, "data_parallel": 3, "expert_parallel": True},
     "engine.expert_parallel: 256 experts do not divide over 3"),
    ({"tensor_parallel": 1, "expert_parallel": True}, "engine.expert_parallel: needs"),
    ({"tensor_parallel": 1, "data_parallel": 8, "expert_balancedness": 0.8},
     "engine.expert_balancedness: a balance between GPUs of whole experts needs"),
    ({"tensor_parallel": 8, "expert_parallel": 3},
     "engine.expert_parallel: true, false or a number of expert-parallel groups dividing"),
    ({"tensor_parallel": 8, "expert_parallel": 16},
     "engine.expert_parallel: true, false or a number of expert-parallel groups dividing"),
])
def test_layout_errors_name_the_field(engine, message):
    model = engine.pop("model", "deepseek-v3")
    s = _scenario(**engine).model_copy(update={"model": model})
    with pytest.raises(NapkinError) as e:
        build(s, Path("."))
    assert str(e.value).startswith(message)


def test_a_linear_attention_hybrid_reserves_its_state_per_running_sequence():
    """Qwen3-Next-80B-A3B keeps a fixed state per sequence in its 36 Gated DeltaNet layers:
    32 value heads × 128 × 128 FP32 numbers (2,097,152 B) plus the convolution's 8,192 × 3
    BF16 numbers (49,152 B) a layer, 77,266,944 B a sequence. The pool sizing sets aside
    max_num_seqs of them over the TP ranks before the KV blocks."""
    s = Scenario.model_validate({
        "model": "qwen3-next-80b-a3b", "gpu": "h200", "weights": "fp8",
        "calibration": "roofline",
        "engine": {"max_num_seqs": 128, "tensor_parallel": 2},
        "workload": {"classes": {"a": {"input_tokens": 100, "output_tokens": 10}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 5, "num_requests": 5}}})
    b = build(s, Path("."))
    per_sequence = 36 * (32 * 128 * 128 * 4 + 8192 * 3 * 2)
    assert per_sequence == 77_266_944
    assert b.pool_derivation["state_bytes_per_device"] == 128 * per_sequence / 2
    d = b.pool_derivation
    assert d["kv_pool_bytes_per_device"] == pytest.approx(
        d["usable_bytes_per_device"] - d["weights_bytes_per_device"]
        - d["activation_peak_bytes_per_device"] - 128 * per_sequence / 2 - GiB, rel=1e-12)


def test_a_linear_attention_state_splits_over_every_tp_rank():
    """Qwen3-Next-80B-A3B at TP 8: its 12 attention layers have 2 KV heads, so each GPU holds
    half the KV (kv_devices 2), but the Gated DeltaNet state's 32 value heads split over all 8
    GPUs. A decode step of one sequence reads and writes its state (2 × 77,266,944 B): a GPU
    moves an eighth of that, plus half the KV."""
    from napkin.accounting.forward import Precision
    from napkin.accounting.linear import LinearCost
    from napkin.catalog import load_accelerator
    from napkin.serving.engine import Engine
    from napkin.serving.engine_spec import EngineSpec

    m, p = load_model("qwen3-next-80b-a3b"), Precision.of("bf16")
    assert m.kv_devices(8) == 2
    spec = EngineSpec(num_blocks=1000, tensor_parallel=8)
    engine = Engine(m, load_accelerator("h200"), p, Efficiency(), spec)
    kv_per_gpu = engine.cost.decode_parts(1, 1000)[3] / m.kv_devices(8)
    plain = LinearCost.of(m, p)
    state = 2 * 77_266_944
    attention_kv = plain.decode_parts(1, 1000)[3] - state
    assert kv_per_gpu == pytest.approx(attention_kv / 2 + state / 8, rel=1e-12)


def _balanced_run(timeout: int, batching: int, arrivals: list[float], mode: str = "exact"):
    """DeepSeek-V3 on DEP2 (TensorRT-LLM, 4,096-token budget, a 10 GiB KV pool a GPU: its
    weights would not leave one) with attention-DP balancing: requests of 1,000 prompt tokens
    and 50 outputs arriving at ``arrivals`` (seconds)."""
    from napkin.serving.arrivals import OpenLoop
    from napkin.serving.requests import RequestSet
    from napkin.serving.simulate import simulate

    engine = build(_scenario(tensor_parallel=1, data_parallel=2, expert_parallel=True,
                             backend="trtllm", mode=mode, kv_pool_gib=10,
                             attention_dp_timeout_iters=timeout,
                             attention_dp_batching_wait_iters=batching), Path(".")).engines()[0]
    assert engine.dp == 2
    n = len(arrivals)
    reqs = RequestSet.build(arrivals, [1000] * n, [50] * n)
    return engine, simulate([engine], OpenLoop(reqs, (0,))).records


@pytest.mark.parametrize(("timeout", "batching", "first_token_step"),
                         [(0, 0, 4), (5, 0, 6), (3, 0, 4), (4, 0, 5), (5, 2, 6)])
def test_trtllm_attention_dp_balancing_holds_a_lone_prompt_to_the_timeout(
        timeout, batching, first_token_step):
    """TensorRT-LLM's ``attention_dp_config`` on 2 attention-DP ranks. A and B arrive at 0:
    step 1 runs both prompts (no rank decodes yet, so the count restarts: step 1 is its 0).
    Steps 2, 3 … decode both — every rank decodes — and the count runs 1, 2 …; C arrives
    during step 3, one prompt for two ranks, so it waits for the step whose count reaches
    ``timeout_iters``: step 1 + timeout (6 at 5, 5 at 4; at 3 step 4 is that step already).
    Without balancing C's prompt joins step 4. ``batching_wait_iters`` acts only once every
    rank has a prompt, which one lone prompt never gives."""
    probe, _ = _balanced_run(0, 0, [0.0, 0.0])
    ends = list(probe.series_t)
    c_at = (ends[1] + ends[2]) / 2  # during step 3
    engine, r = _balanced_run(timeout, batching, [0.0, 0.0, c_at])
    ends = list(engine.series_t)
    c = r.rid == 2
    assert ends.index(float(r.first_token_s[c][0])) + 1 == first_token_step
    _, fast = _balanced_run(timeout, batching, [0.0, 0.0, c_at], "fast")
    for column in ("first_token_s", "finish_s"):
        assert sorted(getattr(fast, column)) == pytest.approx(sorted(getattr(r, column)),
                                                              rel=1e-9)


def test_attention_dp_balancing_lets_prompts_on_every_rank_start_after_the_batching_wait():
    """Two prompts arrive together during step 3 (one for each rank): every rank has one, so
    the count restarts and, with every rank decoding, they wait ``batching_wait_iters`` = 2
    steps (4, 5) and start in step 6; with 0 they start in step 4 whatever the timeout."""
    probe, _ = _balanced_run(0, 0, [0.0, 0.0])
    ends = list(probe.series_t)
    at = (ends[1] + ends[2]) / 2
    for batching, step in ((2, 6), (0, 4)):
        engine, r = _balanced_run(50, batching, [0.0, 0.0, at, at])
        ends = list(engine.series_t)
        late = r.rid >= 2
        assert [ends.index(float(t)) + 1 for t in r.first_token_s[late]] == [step, step]


def test_attention_dp_balancing_is_trtllm_only():
    from napkin.serving.engine_spec import EngineSpec

    with pytest.raises(NapkinError, match="attention_dp_timeout_iters: applies to backend"):
        EngineSpec(num_blocks=10, backend="sglang", attention_dp_timeout_iters=60)


@pytest.mark.parametrize("seed", range(6))
def test_attention_dp_balancing_finishes_every_request_alike_in_both_modes(seed):
    """Random arrivals, timeouts and batching waits: every request finishes, and the fast mode
    (units of many steps, cut where a hold ends) gives the exact mode's times."""
    import random

    rng = random.Random(seed)
    arrivals = sorted(rng.uniform(0, 2.0) for _ in range(7))
    timeout, batching = rng.randint(1, 80), rng.randint(0, 20)
    _, exact = _balanced_run(timeout, batching, arrivals)
    _, fast = _balanced_run(timeout, batching, arrivals, "fast")
    assert len(exact.finish_s) == 7 and (exact.finish_s > exact.first_token_s).all()
    for column in ("first_token_s", "finish_s"):
        assert sorted(getattr(fast, column)) == pytest.approx(sorted(getattr(exact, column)),
                                                              rel=1e-9)
