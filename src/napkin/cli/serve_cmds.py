"""``napkin serve demand | fluid | simulate | sweep | metrics | little`` (over
:mod:`napkin.api.serving`)."""

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from napkin.api import serving as api
from napkin.api.text import parse_loads, parse_numbers
from napkin.cli.common import FiniteOption, Format, FormatOpt, KvOpt, PlotOption, emit

app = typer.Typer(help="Serving: workload demand, the fluid queue, the serving simulator, "
                       "latency from logs.",
                  no_args_is_help=True)

WorkloadArg = Annotated[Path, typer.Argument(metavar="WORKLOAD.yaml", help="Workload file.")]
WindowOpt = Annotated[float | None, FiniteOption(
    "--window-s", help="Window length, s (default: the workload's windows, else 60).")]


@app.command()
def demand(workload_path: WorkloadArg, window_s: WindowOpt = None,
           plot: Annotated[Path | None, PlotOption(
               help="Write requests by class and demand per window (Figures 3-4, 3-5).")] = None,
           fmt: FormatOpt = Format.table) -> None:
    """New input tokens/s, decode steps/s and mean decode context per window."""
    result = api.demand(workload_path, window_s=window_s)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


@app.command()
def fluid(
    workload_path: WorkloadArg,
    capacity_steps_s: Annotated[float | None, FiniteOption(
        "--capacity-steps-s", help="Decode steps per second the service completes.")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Derive capacity: accelerator.")] = None,
    count: Annotated[int, typer.Option("--count", help="Accelerators (one replica each).")] = 1,
    model: Annotated[str, typer.Option("--model", help="Model for a derived capacity.")] =
    "qwen3-8b",
    batch: Annotated[int, typer.Option("--batch", help="Sequences per decode step.")] = 64,
    context: Annotated[int | None, typer.Option(
        "--context", help="Decode context (default: the workload's step-weighted mean).")] = None,
    weights: Annotated[str, typer.Option("--weights")] = "bf16",
    mbu: Annotated[float, FiniteOption("--mbu")] = 1.0,
    window_s: WindowOpt = None,
    plot: Annotated[Path | None, PlotOption(help="Write the backlog curve.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Backlog of decode steps per window, its peak and drain time (chapter Example 3-1)."""
    result = api.fluid(workload_path, capacity_steps_s=capacity_steps_s, gpu=gpu, count=count,
                       model=model, batch=batch, context=context, weights=weights, mbu=mbu,
                       window_s=window_s)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


@app.command()
def simulate(
    scenarios: Annotated[list[Path], typer.Argument(metavar="SCENARIO.yaml...",
                                                    help="One or more scenario files.")],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a field: engine.max_num_seqs=128, mfu=0.5 (repeatable).")] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="fast or exact.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Workload seed override.")] = None,
    plot: Annotated[Path | None, PlotOption(help="Write figures (PNG).")] = None,
    export: Annotated[Path | None, typer.Option(
        "--export", help="Folder for <name>.requests.csv and <name>.timeseries.csv.")] = None,
    parquet: Annotated[bool, typer.Option("--parquet", help="Export Parquet, not CSV.")] = False,
    fmt: FormatOpt = Format.table,
) -> None:
    """Run scenario files through the discrete-event serving simulator and compare them."""
    bar = _ProgressBar() if fmt != Format.json and sys.stderr.isatty() else None
    try:
        result = api.simulate(scenarios, overrides=set_ or [], mode=mode, seed=seed,
                              export=export, parquet=parquet,
                              progress=bar.update if bar else None,
                              on_scenario=bar.start if bar else None)
    finally:
        if bar is not None:
            bar.stop()
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


@app.command()
def sweep(
    scenario_path: Annotated[Path, typer.Argument(metavar="SCENARIO.yaml",
                                                  help="Scenario file.")],
    rates: Annotated[str, typer.Option(
        "--rates", help="Offered loads, comma-separated (requests/s; clients for a closed "
                        "loop; sessions/s for sessions), or auto: around the maximum "
                        "sustainable load.")] = "auto",
    seeds: Annotated[int, typer.Option("--seeds", min=1, max=api.MAX_SEEDS,
                                       help="Seeds per load; a load is sustainable only "
                                            "when every seed meets the SLO.")] = 1,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a field: slo.share=0.95, engine.replicas=2 (repeatable).")] = None,
    plot: Annotated[Path | None, PlotOption(help="Write the sweep figure.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Offered load vs latency percentiles, throughput and goodput; the maximum sustainable load
    under the scenario's SLO (bisection)."""
    result = api.sweep(scenario_path, rates=parse_loads(rates), seeds=seeds, overrides=set_ or [])
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


@app.command()
def metrics(
    log: Annotated[Path, typer.Argument(
        metavar="LOG", help="Request log: CSV or JSON lines with arrival_s, first_token_s, "
                            "last_token_s, output_tokens; or a vllm bench serve "
                            "--save-detailed JSON.")],
    percentiles: Annotated[str, typer.Option(
        "--percentiles", help="Nearest-rank percentiles, comma-separated, each in (0, 100]."
    )] = "50,90,95,99",
    fmt: FormatOpt = Format.table,
) -> None:
    """TTFT, TPOT and end-to-end latency from logged request times: means and nearest-rank
    percentiles."""
    emit(api.serve_metrics(log, percentiles=parse_numbers(percentiles, "percentiles")), fmt)


@app.command()
def little(
    rate_per_s: Annotated[float, FiniteOption(
        "--rate-per-s", help="Tasks entering the wait per second, λ.")],
    wait_s: Annotated[float, FiniteOption("--wait-s", help="Mean wait per task τ, s.")],
    state_gib: Annotated[float | None, FiniteOption(
        "--state-gib", help="State each waiting task holds M₀, GiB (2^30 bytes).")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Or: M₀ = the KV of --context tokens of this model.")] = None,
    context: Annotated[int | None, typer.Option(
        "--context", help="Tokens of context a waiting task keeps (with --model).")] = None,
    kv_dtype: KvOpt = "bf16",
    fmt: FormatOpt = Format.table,
) -> None:
    """State held by tasks waiting on tools (Little's law): λ·τ tasks and λ·M₀·τ bytes."""
    emit(api.serve_little(rate_per_s=rate_per_s, wait_s=wait_s, state_gib=state_gib,
                          model=model, context=context, kv_dtype=kv_dtype), fmt)


class _ProgressBar:
    """A rich progress bar on stderr, one task per scenario (shown on a terminal only)."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.task: Any = None
        self.last = 0.0

    def start(self, name: str, total: int | None) -> None:
        if self.bar is None:
            from rich.progress import Progress

            self.bar = Progress(transient=True)
            self.bar.start()
        if self.task is not None:
            self.bar.remove_task(self.task)
        from rich.markup import escape  # (the bar reads its description as markup)

        self.task = self.bar.add_task(f"simulating {escape(name)}", total=total)
        self.last = 0.0

    def update(self, _t: float, finished: int) -> None:
        now = time.perf_counter()
        if now - self.last > 0.1:
            self.last = now
            self.bar.update(self.task, completed=finished)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
