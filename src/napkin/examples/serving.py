"""Worked examples of chapter 3.1 (queues, metrics) and the shipped serving scenarios."""

from pathlib import Path

from napkin.accounting.forward import Precision
from napkin.catalog import load_accelerator, load_model, scenario_file
from napkin.examples.row import Example, Row, rounded
from napkin.inference.chain import request_chain
from napkin.inference.decode import decode_row
from napkin.serving.arrivals import OpenLoop, generate
from napkin.serving.demand import demand, total
from napkin.serving.fluid import (
    burst_backlog,
    burst_drain_s,
    fluid,
    state_byte_seconds,
    waiting_state_bytes,
    waiting_tasks,
)
from napkin.serving.metrics import summarize
from napkin.serving.scenario import Scenario, build, load_scenario
from napkin.serving.sweep import sweep
from napkin.serving.workload import load_workload
from napkin.stats import nearest_rank
from napkin.timing.roofline import Deployment
from napkin.units import GB, MS, GiB


def _chapter_requests(order: str):
    workload, base = load_workload(scenario_file(f"chapter-3-1-{order}.workload.yaml"))
    source = generate(workload, base)
    assert isinstance(source, OpenLoop)  # a windows workload is open loop by construction
    return source.requests


def ex_3_1() -> list[Row]:
    """Example 3-1: demand per window, decode capacity of RTX PRO 6000 cards, the fluid queue."""
    uniform, shifted = _chapter_requests("uniform"), _chapter_requests("shifted")
    both = total(uniform, 120)
    m1, m2 = demand(shifted, [0, 60, 120])
    model = load_model("qwen3-8b")
    dep = Deployment(model, load_accelerator("rtx-pro-6000"), Precision.of())
    long_in = request_chain(dep, new=8192, gen=256)
    long_out = request_chain(dep, new=1024, gen=2048)
    row = decode_row(dep, batch=64, context=2742)
    per_card = row.tokens_per_s
    queue = fluid([m1.decode_steps, m2.decode_steps], [60, 60], 2 * per_card)
    total_steps = 240 * long_in.decode_steps + 240 * long_out.decode_steps
    return [
        Row("uniform mix: new input tokens/s", both.input_tokens_per_s, 18_432, "tok/s"),
        Row("uniform mix: decode steps/s", both.decode_steps_per_s, 4_604, "steps/s"),
        Row("minute 1 (9:1): new input tokens/s", m1.input_tokens_per_s, 29_900.8, "tok/s"),
        Row("minute 1 (9:1): decode steps/s", m1.decode_steps_per_s, 1_736.8, "steps/s"),
        Row("minute 2 (1:9): new input tokens/s", m2.input_tokens_per_s, 6_963.2, "tok/s"),
        Row("minute 2 (1:9): decode steps/s", m2.decode_steps_per_s, 7_471.2, "steps/s"),
        rounded("step-weighted mean decode context", both.mean_decode_context, 2742,
                unit="tokens"),
        Row("bytes per step (64 seq. at 2,742)", row.bytes_moved / GB, 41.02, "GB",
            note="published '≥ 41.02 GB' (a lower bound)"),
        Row("step time at 1,792 GB/s", row.step_s / MS, 22.89, "ms"),
        Row("decode steps/s, one card", per_card, 2795.66, "steps/s"),
        Row("decode steps/s, two cards", 2 * per_card, 5591.33, "steps/s"),
        Row("fluid queue: backlog after minute 2", queue.final_backlog, 112_792, "steps"),
        Row("fluid queue: drain time", queue.drain_s, 20.17, "s"),
        Row("decode steps of the 480 requests", total_steps, 552_480, "steps"),
        Row("their time on one card", total_steps / per_card, 197.6, "s",
            note="published '≥ 197.6 s'"),
    ]


def ex_3_2() -> list[Row]:
    """Exercise 3-2: a 30 s burst at 7,471.2 steps/s on 2 and 3 cards of 2,796 steps/s; tool
    waits of 10 s and 30 s at 2 per second, 1 GiB each (no printed answers)."""
    lam, card = 7471.2, 2796.0
    rows = []
    for cards in (2, 3):
        mu = cards * card
        curve = fluid([lam * 10] * 3, [10, 10, 10], mu)
        rows += [Row(f"{cards} cards: backlog at {10 * (k + 1)} s", w.backlog_end, None,
                     "steps") for k, w in enumerate(curve.windows)]
        rows += [Row(f"{cards} cards: (λ − μ)τ", burst_backlog(lam, mu, 30), None, "steps"),
                 Row(f"{cards} cards: drain (λ − μ)τ/μ", burst_drain_s(lam, mu, 30), None, "s")]
    for wait in (10, 30):
        rows += [Row(f"tool wait {wait} s: tasks waiting (λτ)", waiting_tasks(2, wait), None,
                     "tasks"),
                 Row(f"tool wait {wait} s: state held (λM₀τ)",
                     waiting_state_bytes(2, GiB, wait) / GiB, None, "GiB")]
    return rows


def ex_3_1_2() -> list[Row]:
    """§3.1.2: nearest-rank p95 ranks, and the area of held state."""
    return [
        Row("p95 rank among 4 observations", nearest_rank(4, 0.95), 4, "th"),
        Row("p95 rank among 480 observations", nearest_rank(480, 0.95), 456, "th"),
        Row("1 GiB held for 10 s", state_byte_seconds(GiB, 10) / GiB, 10, "GiB·s"),
    ]


def ex_scenarios() -> list[Row]:
    """The chapter's two-minute workload on one RTX PRO 6000 (the shipped scenarios), both
    arrival orders; the real run's figures are withheld from the chapter, so nothing printed."""
    rows = []
    for order in ("uniform", "shifted"):
        scenario, base = load_scenario(scenario_file(f"chapter-3-1-{order}.yaml"))
        built = build(scenario, base)
        s = summarize(built.simulate(), built.slo)
        rows += [Row(f"{order}: p95 TTFT", s.ttft.p95_s, None, "s"),
                 Row(f"{order}: p95 end-to-end", s.e2e.p95_s, None, "s"),
                 Row(f"{order}: p95 wait to first schedule", s.first_schedule_wait.p95_s, None,
                     "s"),
                 Row(f"{order}: makespan", s.makespan_s, None, "s"),
                 Row(f"{order}: preemptions", s.preemptions, None, "")]
    return rows


MLPERF_MIXTRAL = "mlperf-mixtral-h100.yaml"
MLPERF_OFFLINE_SAMPLES = 15_000
"""Samples queued at once in napkin's Offline run of one GPU: the dataset's 15,000 (the real run
repeats it for ten minutes; the drain of the last batch is then under 2 % of the time)."""


def mlperf_mixtral(offline: bool, input_scale: float = 1.0) -> tuple[Scenario, Path]:
    """The shipped MLPerf Mixtral-8x7B scenario (one H100 of the v4.1 closed-division systems),
    as Server (Poisson arrivals, 16,384 tokens a step) or Offline (every sample at t = 0, 8,192
    tokens a step); ``input_scale`` multiplies every assumed input length (the median of each
    class's lognormal)."""
    scenario, base = load_scenario(scenario_file(MLPERF_MIXTRAL))
    data = scenario.model_dump(mode="json", exclude_unset=True)
    for spec in data["workload"]["classes"].values():
        spec["input_tokens"]["median"] *= input_scale
    if offline:
        data["workload"]["arrivals"] = {"kind": "windows", "windows": [{
            "duration_s": 1e-3, "requests": MLPERF_OFFLINE_SAMPLES,
            "mix": dict.fromkeys(data["workload"]["classes"], 1)}]}
        data["engine"]["max_num_batched_tokens"] = 8192
    return Scenario.model_validate(data), base


def mlperf_offline_tokens_per_gpu_s(input_scale: float = 1.0) -> float:
    """MLPerf Offline: output tokens/s of one GPU's engine with every sample queued at once."""
    scenario, base = mlperf_mixtral(True, input_scale)
    built = build(scenario, base)
    return summarize(built.simulate(), built.slo).output_tokens_per_s


def mlperf_server_rate_per_gpu(input_scale: float = 1.0) -> float:
    """MLPerf Server: the largest Poisson rate (samples/s, within 3 %) at which one GPU's engine
    keeps 99 % of requests within TTFT ≤ 2 s and TPOT ≤ 200 ms."""
    scenario, base = mlperf_mixtral(False, input_scale)
    return sweep(scenario, base, [scenario.workload.arrivals.rate_per_s]).max_sustainable or 0.0


def ex_mlperf_mixtral() -> list[Row]:
    """MLPerf Inference v4.1 Mixtral-8x7B on 8 × H100 SXM (TensorRT-LLM, FP8, eight one-GPU
    engines), held out: the TensorRT-LLM profile is fitted on other models and nothing here on
    these results. The published figures are the range over the six 8-GPU closed-division
    systems (shared/validation/mlperf_v4.1_mixtral_h100.csv)."""
    why = ("hold-out within 10 %: input lengths are assumed (the scenario file states them), "
           "and the figure moves about 20 % per 25 % change in them")
    gpus = 8
    return [
        Row("Offline: output tokens/s, 8 × H100", gpus * mlperf_offline_tokens_per_gpu_s(),
            (50_970.6, 52_817.7), "tok/s", 0.10, why),
        Row("Server: largest rate under p99 TTFT ≤ 2 s, TPOT ≤ 200 ms, 8 × H100",
            gpus * mlperf_server_rate_per_gpu(), (341.6, 349.6), "samples/s", 0.10, why),
    ]


EXAMPLES_SERVING: tuple[Example, ...] = (
    Example("3-1", "two-class load: demand per window, decode capacity, fluid backlog and drain",
            "chapter 3, Example 3-1", ex_3_1),
    Example("3-2", "30 s burst on 2 and 3 cards; state held by tool waits",
            "chapter 3, Exercise 3-2", ex_3_2),
    Example("§3.1.2", "nearest-rank p95; state held over time", "chapter 3, §3.1.2", ex_3_1_2),
    Example("sim-3-1", "the chapter's scenario simulated in both arrival orders",
            "examples/chapter-3-1-{uniform,shifted}.yaml", ex_scenarios),
    Example("mlperf-mixtral", "MLPerf v4.1 Mixtral-8x7B Offline and Server on 8 × H100",
            "MLPerf Inference v4.1 results; examples/mlperf-mixtral-h100.yaml",
            ex_mlperf_mixtral),
)
