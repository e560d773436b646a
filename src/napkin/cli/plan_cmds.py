"""``napkin plan``."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from napkin.cli.common import Format, FormatOpt, PlotOption, emit
from napkin.errors import NapkinError


def plan(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN.yaml", help="Plan file.")],
    jobs: Annotated[int, typer.Option("--jobs", min=0, max=256,
                                      help="Worker processes (0: one per core).")] = 0,
    top: Annotated[int, typer.Option("--top", min=1, max=10_000,
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
    from napkin.planning.search import run_plan
    from napkin.planning.spec import load_plan
    from napkin.report.plan_views import evaluation_columns, plan_doc
    from napkin.specs.files import check_output

    if export is not None:
        check_output(export, (".csv", ".parquet", ".json"), "export")
    spec, base = load_plan(plan_path)
    progress = None
    if fmt != Format.json and sys.stderr.isatty():
        def progress(done: int, total: int) -> None:
            print(f"\r  {done}/{total} configuration groups", end="", file=sys.stderr)
    if executor not in ("process", "ray"):
        raise NapkinError(f"executor: must be process or ray, got {executor!r}")
    if ray_address is not None and executor != "ray":
        raise NapkinError("ray-address: applies with --executor ray only")
    result = run_plan(spec, base, jobs, progress, executor, ray_address)
    if progress is not None:
        print(file=sys.stderr)
    doc = plan_doc(result, top)
    if export is not None:
        if export.suffix == ".json":
            import json

            from napkin.report.document import jsonable

            export.write_text(json.dumps(jsonable(doc.data["evaluations"]), indent=1))
        else:
            from napkin.report.export import write_table

            write_table(evaluation_columns(result), export)
    if plot is not None:
        from napkin.report.plots import plot_pareto

        plot_pareto(result, plot)
    emit(doc, fmt)
