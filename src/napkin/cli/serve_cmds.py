"""``napkin serve demand | fluid | simulate | sweep``."""

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from napkin.cli.common import FiniteOption, Format, FormatOpt, PlotOption, emit
from napkin.errors import NapkinError, require

app = typer.Typer(help="Serving: workload demand, the fluid queue, the serving simulator.",
                  no_args_is_help=True)

WorkloadArg = Annotated[Path, typer.Argument(metavar="WORKLOAD.yaml", help="Workload file.")]
WindowOpt = Annotated[float | None, FiniteOption(
    "--window-s", help="Window length, s (default: the workload's windows, else 60).")]


def _open_requests(path: Path):
    from napkin.serving.arrivals import OpenLoop, generate
    from napkin.serving.workload import load_workload

    workload, base = load_workload(path)
    source = generate(workload, base)
    if not isinstance(source, OpenLoop):
        raise NapkinError(f"{path}: {workload.arrivals.kind} arrivals depend on completions; "
                          "use napkin serve simulate")
    return workload, source.requests


@app.command()
def demand(workload_path: WorkloadArg, window_s: WindowOpt = None,
           fmt: FormatOpt = Format.table) -> None:
    """New input tokens/s, decode steps/s and mean decode context per window."""
    from napkin.report.serve_views import demand_doc
    from napkin.serving.demand import demand as window_demand
    from napkin.serving.demand import total, window_edges

    workload, reqs = _open_requests(workload_path)
    edges = window_edges(workload.arrivals, reqs, window_s)
    emit(demand_doc(workload.name, window_demand(reqs, edges), total(reqs, edges[-1])), fmt)


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
    from napkin.report.serve_views import fluid_doc
    from napkin.serving.demand import demand as window_demand
    from napkin.serving.demand import total, window_edges
    from napkin.serving.fluid import fluid as run_fluid

    workload, reqs = _open_requests(workload_path)
    edges = window_edges(workload.arrivals, reqs, window_s)
    windows = window_demand(reqs, edges)
    info: dict[str, object]
    if capacity_steps_s is not None:
        require(gpu is None, "gpu: give --capacity-steps-s or --gpu, not both")
        mu, info = capacity_steps_s, {"capacity_steps_per_s": capacity_steps_s}
    elif gpu is not None:
        mu, info = _capacity(model, gpu, count, batch, context, weights, mbu,
                             total(reqs, edges[-1]).mean_decode_context)
    else:
        raise NapkinError("capacity: give --capacity-steps-s or --gpu (with --count, --model)")
    result = run_fluid([w.decode_steps for w in windows], [w.duration_s for w in windows], mu)
    if plot is not None:
        from napkin.report.plots import plot_fluid

        plot_fluid(result, f"{workload.name}: {mu:,.2f} steps/s", plot)
    emit(fluid_doc(workload.name, result, info), fmt)


def _capacity(model: str, gpu: str, count: int, batch: int, context: int | None, weights: str,
              mbu: float, mean_context: float) -> tuple[float, dict[str, object]]:
    """Steps/s of ``count`` devices decoding ``batch`` sequences at ``context``."""
    from napkin.accounting.forward import Precision
    from napkin.catalog import load_accelerator, load_model
    from napkin.inference.decode import decode_row
    from napkin.timing import Deployment, Efficiency

    require(count >= 1, f"count: must be >= 1, got {count}")
    ctx = context if context is not None else round(mean_context)
    dep = Deployment(load_model(model), load_accelerator(gpu), Precision.of(weights),
                     Efficiency(mbu=mbu))
    row = decode_row(dep, batch, ctx)
    mu = count * row.tokens_per_s
    return mu, {"model": model, "gpu": gpu, "count": count, "batch": batch,
                "context_tokens": ctx, "mbu": mbu, "step_s": row.step_s,
                "capacity_steps_per_s": mu}


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
    from napkin.report.export import export_paths, request_columns, timeseries_columns, write_table
    from napkin.report.serve_views import SimReport, sim_doc
    from napkin.serving.metrics import summarize
    from napkin.serving.scenario import build, load_scenario
    from napkin.specs.files import check_folder

    if export is not None:
        check_folder(export, "export")
    overrides = list(set_ or [])
    if mode is not None:
        overrides.append(f"engine.mode={mode}")
    loaded = [load_scenario(path, overrides) for path in scenarios]  # every file, before work
    files = export_paths([s.name for s, _ in loaded], export, parquet) if export else {}
    reports, runs = [], []
    for scenario, base in loaded:
        built = build(scenario, base, seed)
        start = time.perf_counter()
        with _progress(scenario.name, built, fmt) as progress:
            run = built.simulate(progress)
        wall = time.perf_counter() - start
        summary = summarize(run, built.slo, built.warmup)
        reports.append(SimReport(scenario.name, built, summary, wall))
        runs.append((scenario.name, run))
    for name, run in runs:  # outputs only once every run has succeeded
        if name in files:
            write_table(request_columns(run), files[name][0])
            write_table(timeseries_columns(run), files[name][1])
    if plot is not None:
        from napkin.report.plots import plot_runs

        plot_runs(runs, plot)
    emit(sim_doc(reports), fmt)


def _loads(text: str) -> list[float] | None:
    """``auto`` → None; else comma-separated positive numbers."""
    if text.strip() == "auto":
        return None
    values = []
    for part in text.split(","):
        try:
            x = float(part)
        except ValueError:
            raise NapkinError(f"rates: {part.strip()!r} is not a number; give auto or "
                              "comma-separated loads such as 1,2,4") from None
        require(0 < x < float("inf"), f"rates: every load must be a finite number > 0, "
                                      f"got {part.strip()}")
        values.append(x)
    return values


@app.command()
def sweep(
    scenario_path: Annotated[Path, typer.Argument(metavar="SCENARIO.yaml",
                                                  help="Scenario file.")],
    rates: Annotated[str, typer.Option(
        "--rates", help="Offered loads, comma-separated (requests/s; clients for a closed "
                        "loop; sessions/s for sessions), or auto: around the maximum "
                        "sustainable load.")] = "auto",
    seeds: Annotated[int, typer.Option("--seeds", min=1, max=32,
                                       help="Seeds per load; a load is sustainable only "
                                            "when every seed meets the SLO.")] = 1,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a field: slo.share=0.95, engine.replicas=2 (repeatable).")] = None,
    plot: Annotated[Path | None, PlotOption(help="Write the sweep figure.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Offered load vs latency percentiles, throughput and goodput; the maximum sustainable load
    under the scenario's SLO (bisection)."""
    from napkin.report.serve_views import sweep_doc
    from napkin.serving.scenario import build, load_scenario
    from napkin.serving.sweep import sweep as run_sweep

    loads = _loads(rates)
    scenario, base = load_scenario(scenario_path, list(set_ or []))
    built = build(scenario, base)
    result = run_sweep(scenario, base, loads, tuple(range(seeds)))
    if plot is not None:
        from napkin.report.plots import plot_sweep

        plot_sweep(result, plot)
    emit(sweep_doc(result, built), fmt)


class _progress:
    """A rich progress bar on a terminal (stderr), none in JSON mode or when piped."""

    def __init__(self, name: str, built, fmt: Format) -> None:
        self.enabled = fmt != Format.json and sys.stderr.isatty()
        from napkin.serving.arrivals import OpenLoop

        src = built.source
        self.total = len(src.requests) if isinstance(src, OpenLoop) else None
        self.name = name
        self.last = 0.0

    def __enter__(self):
        if not self.enabled:
            return None
        from rich.progress import Progress

        self.bar = Progress(transient=True)
        self.bar.start()
        self.task = self.bar.add_task(f"simulating {self.name}", total=self.total)
        return self.update

    def update(self, _t: float, finished: int) -> None:
        now = time.perf_counter()
        if now - self.last > 0.1:
            self.last = now
            self.bar.update(self.task, completed=finished)

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.bar.stop()
