"""Serving: ``napkin serve demand | fluid | simulate | sweep | metrics | little``.

A workload is a file path, a mapping (what a workload YAML holds) or a loaded
:class:`~napkin.serving.workload.Workload`; a scenario is a file path, a mapping (what a scenario
YAML holds) or a loaded :class:`~napkin.serving.scenario.Scenario`. Relative paths inside a file
(a scenario's ``workload``, a trace's ``path``) resolve against the file's folder; inside a
mapping or a loaded object, against the current folder.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import deployment
from napkin.errors import NapkinError, require

MAX_SEEDS = 32
"""Most seeds a sweep runs each load over (``seeds``; the CLI's ``--seeds`` takes the same)."""

if TYPE_CHECKING:
    from typing import Annotated

    from pydantic import Field

    from napkin.api.specs import GpuRef, ModelRef
    from napkin.serving.requests import RequestSet
    from napkin.serving.scenario import Scenario
    from napkin.serving.workload import Workload

    WorkloadRef = str | Path | Mapping[str, Any] | Workload
    """A workload file, its mapping, or a loaded :class:`~napkin.serving.workload.Workload`."""
    ScenarioRef = str | Path | Mapping[str, Any] | Scenario
    """A scenario file, its mapping, or a loaded :class:`~napkin.serving.scenario.Scenario`."""


def _workload(workload: WorkloadRef) -> tuple[Workload, Path, str]:
    """The workload, the folder its relative paths resolve against, and its name in errors."""
    from napkin.serving.workload import Workload, load_workload, parse_workload

    if isinstance(workload, str | Path):
        loaded, base = load_workload(workload)
        return loaded, base, str(workload)
    if isinstance(workload, Workload):
        return workload, Path.cwd(), "workload"
    return parse_workload(dict(workload)), Path.cwd(), "workload"


def _open_requests(workload: WorkloadRef) -> tuple[Workload, RequestSet]:
    """The workload and its requests, drawn in advance (open-loop arrivals only)."""
    from napkin.serving.arrivals import OpenLoop, generate

    loaded, base, source = _workload(workload)
    drawn = generate(loaded, base)
    if not isinstance(drawn, OpenLoop):
        raise NapkinError(f"{source}: {loaded.arrivals.kind} arrivals depend on completions; "
                          "use napkin serve simulate")
    return loaded, drawn.requests


@checked
def demand(workload: WorkloadRef, *, window_s: float | None = None) -> Result:
    """New input tokens/s, decode steps/s and mean decode context of a workload, per window.

    Windows are the workload's own (``kind: windows``) unless ``window_s`` (seconds) is given,
    else 60 s from 0 past the last arrival. Per window of length Δt: input tokens/s = ΣP/Δt;
    decode steps/s = Σ(G − 1)/Δt (the prefill yields the first of G output tokens); mean decode
    context (tokens) = Σ(G−1)(P + (G−2)/2) / Σ(G−1), weighted by steps. Open-loop arrivals only
    (a closed loop's arrivals depend on completions: :func:`simulate` it). The figure
    (``Result.plot``) draws each window's requests by class and its input tokens/s and decode
    steps/s (the chapter's Figures 3-4 and 3-5).
    ``value``: dict with ``windows`` (tuple of WindowDemand) and ``overall`` (one WindowDemand).
    """
    from napkin.report.serve_views import demand_doc
    from napkin.serving.demand import class_counts, total, window_edges
    from napkin.serving.demand import demand as window_demand

    loaded, reqs = _open_requests(workload)
    edges = window_edges(loaded.arrivals, reqs, window_s)
    windows, overall = window_demand(reqs, edges), total(reqs, edges[-1])

    def plotter(path: Path) -> None:
        from napkin.report.plots import plot_demand

        counts = class_counts(reqs, edges) + class_counts(reqs, [-math.inf, math.inf])
        plot_demand(loaded.name, windows, overall, counts, path)

    return Result(demand_doc(loaded.name, windows, overall),
                  {"windows": windows, "overall": overall}, plotter)


def _capacity(model: ModelRef, gpu: GpuRef, count: int, batch: int, context: int | None,
              weights: str, mbu: float, mean_context: float) -> tuple[float, dict[str, Any]]:
    """Steps/s of ``count`` devices decoding ``batch`` sequences at ``context``."""
    from napkin.inference.decode import decode_row

    require(count >= 1, f"count: must be >= 1, got {count}")
    ctx = context if context is not None else round(mean_context)
    dep = deployment(model, gpu, weights=weights, mbu=mbu)
    row = decode_row(dep, batch, ctx)
    mu = count * row.tokens_per_s
    return mu, {"model": model if isinstance(model, str) else dep.model.name,
                "gpu": gpu if isinstance(gpu, str) else dep.acc.name, "count": count,
                "batch": batch, "context_tokens": ctx, "mbu": mbu, "step_s": row.step_s,
                "capacity_steps_per_s": mu}


@checked
def fluid(workload: WorkloadRef, *, capacity_steps_s: float | None = None,
          gpu: GpuRef | None = None, count: int = 1, model: ModelRef = "qwen3-8b",
          batch: int = 64, context: int | None = None, weights: str = "bf16", mbu: float = 1.0,
          window_s: float | None = None) -> Result:
    """Backlog of decode steps per window, its peak and its drain time (chapter Example 3-1).

    The fluid recursion over the windows of :func:`demand`: Q_{k+1} = max(0, Q_k + A_k − μ·Δt)
    with A_k the window's decode steps (counted at arrival) and μ the service's capacity in
    decode steps/s: ``capacity_steps_s``, or derived from ``gpu`` as ``count`` replicas each
    decoding ``batch`` sequences at ``context`` tokens (default: the workload's step-weighted
    mean context) with ``model`` in ``weights`` at bandwidth share ``mbu``:
    μ = count · batch / step_s (roofline step time). Give one of the two.
    ``value``: the FluidResult (windows, peak and final backlog in steps, drain time in s).
    """
    from napkin.report.serve_views import fluid_doc
    from napkin.serving.demand import demand as window_demand
    from napkin.serving.demand import total, window_edges
    from napkin.serving.fluid import fluid as run_fluid

    loaded, reqs = _open_requests(workload)
    edges = window_edges(loaded.arrivals, reqs, window_s)
    windows = window_demand(reqs, edges)
    info: dict[str, Any]
    if capacity_steps_s is not None:
        require(gpu is None, "gpu: give --capacity-steps-s or --gpu, not both")
        require(capacity_steps_s > 0, "capacity-steps-s: must be > 0 decode steps per second, "
                f"got {capacity_steps_s:g}")
        mu, info = capacity_steps_s, {"capacity_steps_per_s": capacity_steps_s}
    elif gpu is not None:
        mu, info = _capacity(model, gpu, count, batch, context, weights, mbu,
                             total(reqs, edges[-1]).mean_decode_context)
    else:
        raise NapkinError("capacity: give --capacity-steps-s or --gpu (with --count, --model)")
    result = run_fluid([w.decode_steps for w in windows], [w.duration_s for w in windows], mu)

    def plotter(path: Path) -> None:
        from napkin.report.plots import plot_fluid

        plot_fluid(result, f"{loaded.name}: {mu:,.2f} steps/s", path)

    return Result(fluid_doc(loaded.name, result, info), result, plotter)


@checked
def serve_metrics(log: str | Path, *,
                  percentiles: Sequence[float] = (50.0, 90.0, 95.0, 99.0)) -> Result:
    """TTFT, TPOT and end-to-end latency of logged requests: means and nearest-rank percentiles.

    Per request, with t_a its arrival, t_1 its first output token and t_G its last of G
    (seconds): TTFT = t_1 − t_a; TPOT = (t_G − t_1)/(G − 1), over requests with G > 1;
    e2e = t_G − t_a. The p-th percentile of n values is the ⌈p/100·n⌉-th smallest (chapter
    3.1.2). ``log``: a CSV with columns ``arrival_s, first_token_s, last_token_s,
    output_tokens``, JSON lines with those keys, or a ``vllm bench serve --save-detailed``
    result (its ``ttfts``, ``itls``, ``output_lens`` arrays; times relative to each send).
    ``percentiles``: each in (0, 100].
    ``value``: (ttft, tpot, e2e) MetricStats (seconds).
    """
    from napkin.report.serve_log_views import log_metrics_doc
    from napkin.serving.request_log import latency_stats, read_request_log

    ps = tuple(float(p) for p in percentiles)
    times = read_request_log(log)
    metrics = latency_stats(times, ps)
    return Result(log_metrics_doc(str(log), times, metrics), metrics)


@checked
def serve_little(*, rate_per_s: float, wait_s: float, state_gib: float | None = None,
                 model: ModelRef | None = None, context: int | None = None,
                 kv_dtype: str = "bf16") -> Result:
    """State held by tasks waiting on tools, by Little's law (chapter 3.1.2, Exercise 3-2).

    Tasks enter a wait at λ = ``rate_per_s`` per second, each waits τ = ``wait_s`` seconds
    holding M₀ bytes: on average λ·τ tasks wait and λ·M₀·τ bytes are held; one task's held
    area is M₀·τ byte-seconds. M₀ is ``state_gib`` (GiB = 2^30 bytes), or the KV of
    ``context`` tokens of ``model`` in ``kv_dtype``: context × KV bytes per token.
    ``value``: dict with ``state_bytes``, ``waiting_tasks``, ``held_bytes``,
    ``task_byte_seconds``.
    """
    from napkin.accounting.forward import Precision
    from napkin.api.specs import load_model
    from napkin.report.serve_log_views import little_doc
    from napkin.serving.fluid import state_byte_seconds, waiting_state_bytes, waiting_tasks
    from napkin.units import GiB

    require(rate_per_s > 0, f"rate-per-s: must be > 0 tasks per second, got {rate_per_s:g}")
    require(wait_s > 0, f"wait-s: must be > 0 s, got {wait_s:g}")
    inputs: dict[str, Any] = {"rate_per_s": rate_per_s, "wait_s": wait_s}
    if state_gib is not None:
        require(model is None and context is None,
                "state-gib: give --state-gib or --model with --context, not both")
        require(state_gib > 0, f"state-gib: must be > 0 GiB, got {state_gib:g}")
        state = state_gib * GiB
        inputs["state_gib"] = state_gib
    else:
        if model is None or context is None:
            raise NapkinError("state-gib: give --state-gib, or --model with --context (the KV "
                              "it holds)")
        require(context >= 1, f"context: must be >= 1 token, got {context}")
        spec = load_model(model)
        per_token = spec.kv_bytes_per_token(Precision.of("bf16", kv_dtype).kv.bytes_per_element)
        state = per_token * context
        inputs |= {"model": model if isinstance(model, str) else spec.name,
                   "context_tokens": context, "kv_dtype": kv_dtype,
                   "kv_bytes_per_token": per_token}
    value = {"state_bytes": state, "waiting_tasks": waiting_tasks(rate_per_s, wait_s),
             "held_bytes": waiting_state_bytes(rate_per_s, state, wait_s),
             "task_byte_seconds": state_byte_seconds(state, wait_s)}
    require(all(math.isfinite(v) for v in value.values()),
            "rate-per-s: λ·M₀·τ overflows a float; give a smaller rate, wait or state")
    return Result(little_doc(inputs, state, value["waiting_tasks"], value["held_bytes"],
                             value["task_byte_seconds"]), value)


def _scenario(scenario: ScenarioRef, overrides: Sequence[str]) -> tuple[Scenario, Path]:
    """The scenario with ``overrides`` applied, and the folder its relative paths resolve
    against."""
    from pydantic import ValidationError

    from napkin.serving.scenario import Scenario, apply_overrides, load_scenario
    from napkin.specs.files import validation_message

    if isinstance(scenario, str | Path):
        return load_scenario(scenario, list(overrides))
    if isinstance(scenario, Scenario):
        if not overrides:
            return scenario, Path.cwd()
        scenario = scenario.model_dump(mode="json")
    if not isinstance(scenario, Mapping):
        raise NapkinError(f"scenario: must be a file path, a mapping or a Scenario, got "
                          f"{type(scenario).__name__}")
    data = apply_overrides(dict(scenario), list(overrides))
    try:
        return Scenario.model_validate(data), Path.cwd()
    except ValidationError as e:
        raise NapkinError(f"scenario: {validation_message(e, data)}") from None


def _scenarios(scenarios: ScenarioRef | Sequence[ScenarioRef]) -> list[ScenarioRef]:
    from napkin.serving.scenario import Scenario

    if isinstance(scenarios, str | Path | Mapping | Scenario):
        return [scenarios]
    listed = list(scenarios)
    require(len(listed) >= 1, "scenarios: give at least one")
    return listed


@checked
def simulate(scenarios: ScenarioRef | Sequence[ScenarioRef], *,
             overrides: Sequence[str] = (), mode: str | None = None, seed: int | None = None,
             export: str | Path | None = None, parquet: bool = False,
             progress: Callable[[float, int], None] | None = None,
             on_scenario: Callable[[str, int | None], None] | None = None) -> Result:
    """Run one or more scenarios through the discrete-event serving simulator and compare them.

    Each scenario's workload is served by its engine replicas (continuous batching, a paged KV
    pool of ``block_size``-token blocks, chunked prefill, preemption), every step timed by the
    scenario's calibration profile (or the roofline at its MFU/MBU). Reported per scenario:
    TTFT, TPOT and end-to-end latency percentiles (s), throughput (tokens/s), KV pool use,
    preemptions, SLO attainment (share of counted requests with TTFT ≤ ``slo.ttft_s`` and
    TPOT ≤ ``slo.tpot_s``) and, when the load exceeds what the deployment carries, the
    overload factor (offered / served requests/s).

    ``overrides``: ``"field.path=value"`` settings applied to every scenario (the CLI's
    ``--set``: ``"engine.max_num_seqs=128"``, ``"mfu=0.5"``); ``mode``: ``fast`` or ``exact``
    (``engine.mode``); ``seed``: the workloads' seed. ``export``: a folder for each scenario's
    ``<name>.requests.csv`` and ``<name>.timeseries.csv`` (Parquet with ``parquet``), written
    only once every run has succeeded. ``progress(t_s, finished)`` is called as the simulated
    clock advances (simulated seconds, requests finished); ``on_scenario(name, requests)``
    before each scenario runs (requests: how many it sends, None when arrivals depend on
    completions). Every scenario is loaded and checked before the first runs.
    ``value``: dict with ``reports`` (tuple of SimReport: name, built scenario, SimSummary,
    wall seconds) and ``runs`` (tuple of (name, SimRun)).
    """
    from napkin.report.export import export_paths, request_columns, timeseries_columns, write_table
    from napkin.report.serve_views import SimReport, sim_doc
    from napkin.serving.arrivals import OpenLoop
    from napkin.serving.metrics import summarize
    from napkin.serving.scenario import build
    from napkin.specs.files import check_folder

    if export is not None:
        check_folder(export, "export")
    settings = list(overrides)
    if mode is not None:
        settings.append(f"engine.mode={mode}")
    loaded = [_scenario(s, settings) for s in _scenarios(scenarios)]  # all, before any work
    files = export_paths([s.name for s, _ in loaded], Path(export), parquet) if export else {}
    reports, runs = [], []
    for scenario, base in loaded:
        built = build(scenario, base, seed)
        if on_scenario is not None:
            src = built.source
            on_scenario(scenario.name,
                        len(src.requests) if isinstance(src, OpenLoop) else None)
        start = time.perf_counter()
        run = built.simulate(progress)
        wall = time.perf_counter() - start
        reports.append(SimReport(scenario.name, built, summarize(run, built.slo, built.warmup),
                                 wall))
        runs.append((scenario.name, run))
    for name, run in runs:  # outputs only once every run has succeeded
        if name in files:
            write_table(request_columns(run), files[name][0])
            write_table(timeseries_columns(run), files[name][1])

    def plotter(path: Path) -> None:
        from napkin.report.plots import plot_runs

        plot_runs(runs, path)

    return Result(sim_doc(reports), {"reports": tuple(reports), "runs": tuple(runs)}, plotter)


@checked
def sweep(scenario: ScenarioRef, *, rates: Sequence[float] | None = None,
          seeds: Annotated[int, Field(ge=1, le=MAX_SEEDS)] = 1,
          overrides: Sequence[str] = ()) -> Result:
    """Offered load vs latency percentiles, throughput and goodput, and the maximum load the
    scenario sustains under its SLO.

    The scenario runs at each offered load of ``rates`` (requests/s; clients for a closed loop;
    sessions/s for sessions: the same workload shape, the load scaled) over seeds
    0 … ``seeds`` − 1. A load is sustainable when in every seed at least ``slo.share`` of the
    counted requests meet TTFT ≤ ``slo.ttft_s`` and TPOT ≤ ``slo.tpot_s``. The maximum
    sustainable load is bracketed (doubling or halving from the best sustainable load given,
    else the scenario's own) and bisected geometrically to within 3 %; with ``rates`` None the
    sweep also runs 0.25, 0.5, 0.75, 1.25 and 1.5 × that maximum. ``overrides`` as in
    :func:`simulate` (``"slo.share=0.95"``).
    ``value``: the SweepResult (points, max_sustainable, bracket, unit).
    """
    from napkin.report.serve_views import sweep_doc
    from napkin.serving.scenario import build
    from napkin.serving.sweep import sweep as run_sweep

    if rates is not None:
        for x in rates:
            require(0 < x < float("inf"),
                    f"rates: every load must be a finite number > 0, got {x:g}")
    require(seeds >= 1, f"seeds: must be >= 1, got {seeds}")
    loaded, base = _scenario(scenario, overrides)
    built = build(loaded, base)
    result = run_sweep(loaded, base, None if rates is None else list(rates),
                       tuple(range(seeds)))

    def plotter(path: Path) -> None:
        from napkin.report.plots import plot_sweep

        plot_sweep(result, path)

    return Result(sweep_doc(result, built), result, plotter)
