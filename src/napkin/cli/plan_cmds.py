"""``napkin plan`` (over :mod:`napkin.api.planning`)."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from napkin.api import planning as api
from napkin.cli.common import Format, FormatOpt, PlotOption, emit


def plan(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN.yaml", help="Plan file.")],
    jobs: Annotated[int, typer.Option("--jobs", min=0, max=api.MAX_JOBS,
                                      help="Worker processes (0: one per core).")] = 0,
    top: Annotated[int, typer.Option("--top", min=1, max=api.MAX_TOP,
                                     help="Feasible configurations listed.")] = 15,
    plot: Annotated[Path | None, PlotOption(
        help="Pareto figure: output tokens/s per GPU vs tokens/s per user.")] = None,
    export: Annotated[Path | None, typer.Option(
        "--export", help="Every evaluated configuration: .csv, .parquet or .json.")] = None,
    executor: Annotated[str, typer.Option(
        "--executor", help="process (a local process pool) or ray (Ray tasks; pip install "
                           "'napkin[ray]').")] = "process",
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Ray cluster to run on (default: a local Ray).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """The cheapest deployment that meets an SLO: search GPUs, TP, replicas, engine settings."""
    shown = fmt != Format.json and sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        print(f"\r  {done}/{total} configuration groups", end="", file=sys.stderr)

    result = api.plan(plan_path, jobs=jobs, top=top, export=export, executor=executor,
                      ray_address=ray_address, progress=progress if shown else None)
    if shown:
        print(file=sys.stderr)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)
