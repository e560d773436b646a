"""``napkin plan``: candidates, the analytic pruning, early stopping, dominance, the pool, the
prices and the launch commands, on a deployment whose numbers follow by hand."""

from dataclasses import replace
from pathlib import Path

import pytest

from napkin.errors import NapkinError
from napkin.planning.evaluate import evaluate
from napkin.planning.launch import launch_commands
from napkin.planning.prices import price_catalog, price_of
from napkin.planning.search import run_plan
from napkin.planning.spec import Candidate, PlanFile, candidates
from napkin.serving.scenario import build

HERE = Path(".")


def _plan(rate: float, ttft_s: float = 2.0, **search) -> PlanFile:
    """One sequence per engine, every step 100 ms (the step overhead dwarfs Qwen3-0.6B's
    roofline time on an H100, ≈ 0.4 ms), 16-token prompts and 10-token answers, even arrivals
    over 60 s: a request holds its engine for 10 steps ≈ 1.004 s."""
    return PlanFile.model_validate({
        "name": "toy", "model": "qwen3-0.6b", "calibration": "roofline",
        "step_overhead_ms": 100,
        "workload": {"seed": 0, "classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
                     "arrivals": {"kind": "windows", "spacing": "even",
                                  "windows": [{"duration_s": 60, "rate_per_s": rate}]}},
        "slo": {"ttft_s": ttft_s, "tpot_s": 1.0, "share": 0.9},
        "search": {"gpus": ["h100-sxm"], "tensor_parallel": [1], "replicas": [1, 2, 3],
                   "max_num_seqs": [1], **search},
        "prices": {"h100-sxm": 2.0}, "seeds": 2})


def test_candidates_are_the_product_within_max_gpus():
    plan = _plan(0.5, tensor_parallel=[1, 2, 4], replicas=[1, 2, 3], max_gpus=4,
                 backends=["vllm", "sglang"])
    # (tp, replicas) with tp·replicas ≤ 4: (1,1) (1,2) (1,3) (2,1) (2,2) (4,1) → 6 × 2 engines
    cands = candidates(plan)
    assert len(cands) == 12
    assert all(c.gpus <= 4 for c in cands)


def test_capacity_bound_prunes_what_cannot_keep_up():
    """ρ = λ/R · (16·t_prefill + 9·t_decode): t_decode = 100 ms (a batch of one), t_prefill
    = 100 ms over a full 8,192-token budget of 16-token prompts (512 of them) ≈ 12 µs, so
    ρ ≈ 0.9·λ/R: 1.8 at 2 requests/s on one replica, 0.9 on two."""
    plan = _plan(2.0)
    wl = plan.workload
    one, two = (Candidate("h100-sxm", 1, r, "bf16", "bf16", 1, 8192, "vllm") for r in (1, 2))
    e1 = evaluate(one, plan, wl, HERE)
    assert e1.status == "pruned" and e1.reason.startswith("capacity bound")
    assert e1.capacity_utilization == pytest.approx(2.0 * (16 * 0.1 / 8192 + 9 * 0.1), rel=0.01)
    assert e1.usd_per_hour == 2.0 and e1.seeds_run == 0
    e2 = evaluate(two, plan, wl, HERE)
    assert e2.capacity_utilization == pytest.approx(e1.capacity_utilization / 2)
    assert e2.status != "pruned"


def test_a_lost_slo_stops_the_simulation_early():
    """A TTFT bound below one step (50 ms < 100 ms) fails every request: the run stops once
    more than 10 % of the 30 have missed it — after 4 — and the other seed is not run."""
    plan = _plan(0.5, ttft_s=0.05)
    c = Candidate("h100-sxm", 1, 1, "bf16", "bf16", 1, 8192, "vllm")
    e = evaluate(c, plan, plan.workload, HERE)
    assert e.status == "infeasible" and e.stopped_early and e.seeds_run == 1
    assert e.slo_met_frac == 0.0 and e.output_tokens_per_s is None


def test_larger_replica_counts_are_dominated_once_one_suffices():
    """At 1.5 requests/s one replica is capacity-bound (ρ ≈ 1.35); two serve it (ρ ≈ 0.68)
    and every seed meets the SLO, so three are not simulated; 2 × $2/GPU-hour = $4/hour."""
    result = run_plan(_plan(1.5), HERE, jobs=1)
    status = [(e.candidate.replicas, e.status) for e in result.evaluations]
    assert status == [(1, "pruned"), (2, "feasible"), (3, "pruned")]
    assert result.evaluations[2].reason.startswith("dominated")
    best = result.cheapest
    assert best.candidate.replicas == 2 and best.usd_per_hour == 4.0
    assert best.seeds_run == 2 and best.slo_met_frac >= 0.9
    # served ≈ offered: 90 requests × 10 tokens over ≈ 61 s
    assert best.output_tokens_per_s == pytest.approx(900 / 61, rel=0.03)
    assert best.usd_per_m_output_tokens == pytest.approx(
        4.0 / (best.output_tokens_per_s * 3600) * 1e6)
    assert result.max_rates[best.candidate] == pytest.approx(2.0, rel=0.15)  # 2 × μ(1 + …)


def test_the_process_pool_gives_the_same_answer():
    plan = _plan(1.5, backends=["vllm", "sglang"])
    a, b = run_plan(plan, HERE, jobs=1), run_plan(plan, HERE, jobs=2)
    strip = [replace(e, sim_s=0.0) for e in a.evaluations]
    assert strip == [replace(e, sim_s=0.0) for e in b.evaluations]


def test_the_compiled_core_gives_the_same_answer(monkeypatch):
    """A plan whose runs take the compiled core (one engine, and replicas behind its
    least-outstanding router) evaluates every candidate as the scheduler does."""
    from napkin.serving import compiled

    plan = _plan(1.5, backends=["vllm", "sglang"])
    answers, calls = [], []
    core = compiled.run_routed
    monkeypatch.setattr(compiled, "run_routed", lambda *a: calls.append(1) or core(*a))
    for after in (10**18, 0):
        monkeypatch.setattr(compiled, "COMPILED_AFTER", after)
        answers.append([replace(e, sim_s=0.0) for e in run_plan(plan, HERE, jobs=1).evaluations])
    assert answers[0] == answers[1]
    assert calls  # (the replicas' runs took it)


def test_prices_come_with_sources_and_plan_overrides_win():
    for gpu in ("h100-sxm", "h200", "b200"):
        p = price_catalog()[gpu]
        assert p.usd_per_gpu_hour > 0 and p.source and p.date
    assert price_of("h100-sxm", {"h100-sxm": 1.5}).usd_per_gpu_hour == 1.5
    with pytest.raises(NapkinError, match="prices"):
        price_of("tpu-v5e", {})


def test_launch_commands_name_the_engines_flags():
    c = Candidate("h100-sxm", 4, 2, "fp8", "fp8", 256, 8192, "vllm")
    cmds = launch_commands(c, "llama-3.1-70b")
    assert cmds["vllm"] == ("vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 4 "
                            "--max-num-seqs 256 --max-num-batched-tokens 8192 "
                            "--quantization fp8 --kv-cache-dtype fp8")
    assert "--tp 4" in cmds["sglang"] and "--max-running-requests 256" in cmds["sglang"]
    assert "--tp_size 4" in cmds["trtllm"] and "--max_num_tokens 8192" in cmds["trtllm"]


def test_local_ray_gives_the_process_pools_answer():
    pytest.importorskip("ray")
    plan = _plan(1.5, backends=["vllm", "sglang"])
    a = run_plan(plan, HERE, jobs=2)
    b = run_plan(plan, HERE, jobs=2, executor="ray")
    assert [replace(e, sim_s=0.0) for e in a.evaluations] == \
        [replace(e, sim_s=0.0) for e in b.evaluations]
    assert a.max_rates == b.max_rates


def test_expert_parallel_candidates_only_for_moe_models_on_several_ranks():
    plan = _plan(0.5, tensor_parallel=[1, 2], replicas=[1], expert_parallel=[False, True])
    assert [(c.tensor_parallel, c.expert_parallel) for c in candidates(plan)] == \
        [(1, False), (2, False)]  # Qwen3-0.6B is dense
    moe = plan.model_copy(update={"model": "qwen3-30b-a3b"})
    assert [(c.tensor_parallel, c.expert_parallel) for c in candidates(moe)] == \
        [(1, False), (2, False), (2, True)]
    c = Candidate("h100-sxm", 4, 1, "bf16", "bf16", 256, 8192, "vllm", True)
    cmds = launch_commands(c, "qwen3-30b-a3b")
    assert "--tensor-parallel-size 4 --enable-expert-parallel" in cmds["vllm"]
    assert "--ep-size 4" in cmds["sglang"] and "--ep_size 4" in cmds["trtllm"]


def test_data_parallel_attention_candidates_and_their_commands():
    """DEP layouts are searched for MoE models only; a DEP8 replica is 8 GPUs, its SGLang
    command counts the running requests of all 8 groups, TensorRT-LLM turns on attention DP,
    and an attention-TP × DP layout TensorRT-LLM cannot spell says so."""
    plan = _plan(0.5, tensor_parallel=[1, 2], data_parallel=[1, 4], replicas=[1],
                 expert_parallel=[True], two_batch_overlap=[False, True])
    assert candidates(plan) == []  # a dense model: no EP, no DP attention
    moe = plan.model_copy(update={"model": "qwen3-30b-a3b"})
    got = [(c.parallel.label(), c.gpus) for c in candidates(moe)]
    assert got == [("dp4 ep4", 4), ("dp4 ep4 tbo", 4), ("tp2 ep2", 2), ("tp2 dp4 ep8", 8),
                   ("tp2 dp4 ep8 tbo", 8)]
    dep = Candidate("h200", 1, 2, "fp8", "bf16", 64, 4096, "sglang", True, data_parallel=8)
    cmds = launch_commands(dep, "deepseek-v3")
    assert ("--tp 8 --dp 8 --enable-dp-attention --moe-dense-tp-size 1 --ep-size 8 "
            "--moe-a2a-backend deepep --max-running-requests 512") in cmds["sglang"]
    assert ("--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel "
            "--max-num-seqs 64") in cmds["vllm"]
    assert cmds["trtllm"].endswith("--tp_size 8 --ep_size 8 --max_batch_size 64 --max_num_tokens "
                                   "4096 --extra_llm_api_options <(printf '%s\\n' "
                                   "'enable_attention_dp: true')")
    mixed = Candidate("h200", 2, 1, "fp8", "bf16", 64, 4096, "sglang", True, data_parallel=4)
    assert "# not expressible" in launch_commands(mixed, "deepseek-v3")["trtllm"]
    assert dep.gpus == 16 and dep.label().startswith("2×h200 dp8 ep8 fp8")


def test_disaggregated_layouts_are_searched_as_their_own_groups():
    """1P1D at 0.6 requests/s: prefill on one engine (one 100 ms step per request), decode on
    the other (9 steps ≈ 0.9 s per request, ρ ≈ 0.54): it meets the SLO on 2 GPUs ($4/hour);
    the aggregated single replica (10 steps per request, ρ ≈ 0.6, $2/hour) stays cheapest."""
    plan = _plan(0.6, replicas=[1], disaggregated=["1P1D"])
    cands = candidates(plan)
    assert [(c.layout, c.gpus) for c in cands] == [("1×", 1), ("1P1D×", 2)]
    result = run_plan(plan, HERE, jobs=1)
    by_layout = {e.candidate.layout: e for e in result.evaluations}
    assert by_layout["1P1D×"].status == "feasible" and by_layout["1P1D×"].usd_per_hour == 4.0
    assert by_layout["1×"].usd_per_hour == 2.0
    assert result.cheapest.candidate.layout == "1×"


def test_disaggregated_dep_decode_candidates_and_their_prefill_pool():
    """For a MoE model, xPyD layouts are searched with data-parallel decode replicas too: a
    1P1D of DEP8 is 16 GPUs (a TP8 prefill replica and a DEP8 decode one), its scenario
    decodes in dp8 ep8 and prefills in tp8, and the prefill pool gets its own command."""
    plan = PlanFile.model_validate({
        **_plan(0.5).model_dump(mode="json", exclude_unset=True), "model": "deepseek-v3",
        "weights": "fp8",
        "search": {"gpus": ["h200"], "tensor_parallel": [1], "data_parallel": [8],
                   "expert_parallel": [True], "replicas": [1], "max_num_seqs": [64],
                   "disaggregated": ["1P1D"]}})
    dep = [c for c in candidates(plan) if c.prefill_replicas]
    assert [(c.layout, c.parallel.label(), c.gpus) for c in dep] == [("1P1D×", "dp8 ep8", 16)]
    built = build(dep[0].scenario(plan, plan.workload), HERE)
    assert built.layout.label() == "dp8 ep8" and built.prefill_layout.label() == "tp8"
    prefill = dep[0].prefill_pool()
    assert (prefill.parallel.label(), prefill.replicas, prefill.gpus) == ("tp8", 1, 8)
    assert launch_commands(prefill, "deepseek-v3")["sglang"].count("--tp 8") == 1


def test_prefill_pools_in_dep_are_searched_too():
    """``search.prefill_layouts: [tp, dep tbo]``: the 1P1D DEP8 deployment above once more with
    its prefill replica over DP attention, experts spread and two-batch overlap (SGLang's
    large-scale EP prefill), as a candidate of its own whose scenario prefills in dp8 ep8 tbo,
    whose label and record name both pools, and whose prefill command runs that layout; a
    dense model and one-GPU replicas skip it. The two prefill layouts time the same
    16,384-token prefill step differently: TP8 splits every matmul over 8 GPUs, DEP8 runs each
    GPU's own prompts with the busiest expert rank's routed work and the all-to-alls."""
    from napkin.report.plan_views import evaluation_record

    plan = PlanFile.model_validate({
        **_plan(0.5).model_dump(mode="json", exclude_unset=True), "model": "deepseek-v3",
        "weights": "fp8",
        "search": {"gpus": ["h200"], "tensor_parallel": [1], "data_parallel": [8],
                   "expert_parallel": [True], "replicas": [1], "max_num_seqs": [64],
                   "disaggregated": ["1P1D"], "prefill_layouts": ["tp", "dep tbo"]}})
    dep = [c for c in candidates(plan) if c.prefill_replicas]
    assert [c.prefill_layout for c in dep] == ["tp", "dep tbo"]
    c = dep[1]
    assert c.label().startswith("1P1D×h200 prefill dp8 ep8 tbo / decode dp8 ep8 ")
    assert dep[0].label().startswith("1P1D×h200 dp8 ep8 ")  # the default says nothing more
    built = build(c.scenario(plan, plan.workload), HERE)
    assert built.layout.label() == "dp8 ep8" and built.prefill_layout.label() == "dp8 ep8 tbo"
    prefill = c.prefill_pool()
    assert (prefill.parallel.label(), prefill.replicas, prefill.gpus) == ("dp8 ep8 tbo", 1, 8)
    assert "--enable-two-batch-overlap" in launch_commands(prefill, "deepseek-v3")["sglang"]
    tp_pool = build(dep[0].scenario(plan, plan.workload), HERE).engines()[0]
    dep_pool = built.engines()[0]
    chunks = [(0, 2048, 1)] * 8
    assert tp_pool.timer.step_s(tp_pool.cost.step_parts(0, 0, chunks), 16384, True) != \
        dep_pool.timer.step_s(dep_pool.cost.step_parts(0, 0, chunks), 16384, True)
    from napkin.planning.evaluate import Evaluation
    fields = Evaluation.__dataclass_fields__
    e = Evaluation(**{k: None for k in fields} | {"candidate": c, "status": "feasible",
                                                   "warnings": ()})
    assert evaluation_record(e)["prefill_parallel"] == "dp8 ep8 tbo"
    dense = _plan(0.5, tensor_parallel=[2], disaggregated=["1P1D"],
                  prefill_layouts=["tp", "dep"])
    assert [x.prefill_layout for x in candidates(dense) if x.prefill_replicas] == ["tp"]
    with pytest.raises(ValueError, match="prefill_layouts"):
        _plan(0.5, prefill_layouts=["tp", "tp"])
    with pytest.raises(ValueError, match="prefill_layouts"):
        _plan(0.5, prefill_layouts=["ep"])


@pytest.mark.parametrize("text", ["1P", "0P1D", "P1D", "1p0d", "x"])
def test_bad_disaggregated_layouts_are_refused(text):
    with pytest.raises(ValueError, match="disaggregated"):
        _plan(0.5, disaggregated=[text])


def test_python_api_plans_a_file(tmp_path):
    import yaml

    from napkin.api.planning import plan

    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(_plan(1.5).model_dump(exclude_none=True)))
    result = plan(path, jobs=1).value
    assert result.cheapest.candidate.replicas == 2
    assert result.cheapest.slo_met_best >= result.cheapest.slo_met_frac
    # the frontier: no feasible configuration beats a frontier one on both axes, and every
    # feasible one off it is matched or beaten on both by one on it
    feasible = [e for e in result.evaluations if e.status == "feasible"]
    front = result.pareto
    assert front and all(e in feasible for e in front)

    def dominates(a, b):
        return (a.tokens_per_s_per_user >= b.tokens_per_s_per_user
                and a.tokens_per_s_per_gpu >= b.tokens_per_s_per_gpu and a is not b)

    for f in front:
        assert not any(dominates(e, f) and (e.tokens_per_s_per_user > f.tokens_per_s_per_user
                                            or e.tokens_per_s_per_gpu > f.tokens_per_s_per_gpu)
                       for e in feasible)
    for e in feasible:
        assert e in front or any(dominates(f, e) for f in front)


def test_plans_carry_the_parts_kept_in_bf16_to_every_candidate():
    """``unquantized`` reaches each candidate's scenario (``checkpoint`` resolved per weight
    format when the scenario is built); a part napkin does not know is refused before the
    search, naming the field."""
    from napkin.planning.search import check

    plan = _plan(0.5).model_copy(update={"model": "gpt-oss-20b", "weights": "mxfp4",
                                         "unquantized": "checkpoint"})
    check(plan)
    scenario = candidates(plan)[0].scenario(plan, plan.workload)
    assert scenario.unquantized == "checkpoint"
    built = build(scenario, HERE)
    assert built.precision.unquantized == {"attention", "router", "embedding", "lm-head"}
    with pytest.raises(NapkinError, match="unquantized: attn not a part kept in BF16"):
        check(plan.model_copy(update={"unquantized": "attn"}))


def test_deepseek_v3_plans_dep_layouts_with_their_own_numbers():
    """DeepSeek-V3 (FP8) on H200 and B200: the DEP8 candidates are simulated in their layout,
    not as TP8. At a light load each DEP8 GPU reads the whole attention side (16.2 GB: MLA,
    the 3 dense layers, shared experts, head) where a TP8 GPU reads an eighth of it, so its
    TPOT is the longer one; its launch commands spell data-parallel attention."""
    plan = PlanFile.model_validate({
        "name": "dsv3", "model": "deepseek-v3", "weights": "fp8", "calibration": "roofline",
        "workload": {"seed": 0, "classes": {"a": {"input_tokens": 500, "output_tokens": 50}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 2, "num_requests": 40}},
        "slo": {"ttft_s": 5.0, "tpot_s": 1.0, "share": 0.9},
        "search": {"gpus": ["h200", "b200"], "tensor_parallel": [1, 8],
                   "data_parallel": [1, 8], "expert_parallel": [True], "replicas": [1],
                   "max_gpus": 8},
        "seeds": 1})
    cands = candidates(plan)
    assert sorted({(c.gpu, c.parallel.label()) for c in cands}) == [
        ("b200", "dp8 ep8"), ("b200", "tp8 ep8"), ("h200", "dp8 ep8"), ("h200", "tp8 ep8")]
    for gpu in ("h200", "b200"):
        dep, tp = (evaluate(c, plan, plan.workload, HERE) for c in cands if c.gpu == gpu)
        assert (dep.candidate.data_parallel, tp.candidate.tensor_parallel) == (8, 8)
        assert tp.status == dep.status == "feasible"
        assert dep.p95_tpot_s > tp.p95_tpot_s
        assert "--data-parallel-size 8" in launch_commands(dep.candidate, plan.model)["vllm"]


def test_plans_try_mtp_on_and_off():
    """search.speculative [null, one MTP token kept 85 %]: DeepSeek-V3 on 8×H200 with MTP
    decodes faster at a light load (a memory-bound step verifies 2 tokens for about the cost
    of one, plus a 4.4 % draft, and keeps 1.85: at most 1.85/1.044 = 1.77× on decode-only
    steps, less where prompts share the step), and its commands turn MTP on in each engine;
    a model without MTP modules gets a note to add its draft model's flags."""
    plan = PlanFile.model_validate({
        "name": "mtp", "model": "deepseek-v3", "weights": "fp8", "calibration": "roofline",
        "workload": {"seed": 0, "classes": {"a": {"input_tokens": 500, "output_tokens": 50}},
                     "arrivals": {"kind": "poisson", "rate_per_s": 2, "num_requests": 40}},
        "slo": {"ttft_s": 5.0, "tpot_s": 1.0, "share": 0.9},
        "search": {"gpus": ["h200"], "tensor_parallel": [8], "replicas": [1],
                   "speculative": [None, {"draft_tokens": 1, "acceptance": 0.85}]},
        "seeds": 1})
    plain, mtp = candidates(plan)
    assert (plain.speculative, mtp.speculative) == (None, (1, (0.85,), None))
    assert "spec1" in mtp.label()
    a, b = (evaluate(c, plan, plan.workload, HERE) for c in (plain, mtp))
    assert a.status == b.status == "feasible"
    assert 1.3 < b.tokens_per_s_per_user / a.tokens_per_s_per_user < 1.85  # 1/median TPOT
    assert b.p95_tpot_s < a.p95_tpot_s
    cmds = launch_commands(mtp, "deepseek-v3")
    assert '--speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\'' in cmds["vllm"]
    assert "--speculative-algorithm EAGLE --speculative-num-steps 1" in cmds["sglang"]
    assert "decoding_type: MTP" in cmds["trtllm"]
    other = replace(mtp, speculative=(2, (0.8, 0.6), 0.05))
    assert "# speculative (2 draft tokens)" in launch_commands(other, "qwen3-8b")["vllm"]


def test_gpus_side_by_side_at_one_replica_s_maximum_rate():
    """One replica of the toy deployment holds each request for 10 steps of ≈ 100.4 ms, so it
    serves at most 1/1.004 ≈ 0.996 req/s; the sweep's bracket is within 10 %, so its maximum
    sustainable rate lies in [0.996/1.1, 0.996]; at that rate every request yields 10 output
    tokens, and $/M out = $2/GPU-hour / (tokens/s · 3600) · 10⁶."""
    result = run_plan(_plan(0.5), HERE, jobs=1)
    best = result.gpu_best()
    assert list(best) == ["h100-sxm"]
    pt = best["h100-sxm"]
    assert pt.candidate.replicas == 1 and pt.gpus == 1
    assert 0.996 / 1.1 <= pt.requests_per_s <= 1 / 1.004
    assert pt.output_tokens_per_s == pytest.approx(10 * pt.requests_per_s, rel=0.05)
    assert pt.usd_per_m_output_tokens == pytest.approx(
        2.0 / (pt.output_tokens_per_s * 3600) * 1e6)
    assert pt.requests_per_s_per_gpu == pt.requests_per_s
