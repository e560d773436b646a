"""``napkin calibrate`` and ``napkin validate`` (over :mod:`napkin.api.calibration`)."""

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from napkin.api import calibration as api
from napkin.cli.common import Format, FormatOpt, PlotOption, emit

FilesArg = Annotated[list[Path], typer.Argument(
    metavar="FILE...", help="Measurements: aiconfigurator CSV, vllm bench serve JSON, "
                            "guidellm JSON, or napkin's plain CSV.")]
GpuOpt = Annotated[str | None, typer.Option(
    "--gpu", help="GPU of JSON results (they do not say).")]
ModelOpt = Annotated[str | None, typer.Option("--model", help="Model of JSON results.")]
TpOpt = Annotated[int | None, typer.Option("--tp", help="Tensor-parallel size of JSON results.")]
WeightsOpt = Annotated[str | None, typer.Option("--weights", help="Weights of JSON results.")]
JobsOpt = Annotated[int, typer.Option("--jobs", min=0, max=256,
                                      help="Processes for the cross-validation folds "
                                           "(0: one per core).")]


def _say(fmt: Format) -> Callable[[str], None] | None:
    """Progress lines on stderr on a terminal (none in JSON mode or when piped)."""
    if fmt == Format.json or not sys.stderr.isatty():
        return None
    return lambda s: print(f"  {s}", file=sys.stderr)


def calibrate(
    files: FilesArg,
    backend: Annotated[str, typer.Option("--backend", help="vllm, trtllm or sglang.")],
    out: Annotated[Path, typer.Option("--out", help="Profile YAML to write.")],
    gpu: GpuOpt = None, model: ModelOpt = None, tp: TpOpt = None, weights: WeightsOpt = None,
    rounds: Annotated[int, typer.Option("--rounds", min=1, max=20,
                                        help="Replay-and-solve rounds.")] = 4,
    harness: Annotated[str, typer.Option(
        "--harness", help="How closed loops whose file does not say ran: steady, burst, "
                          "inferencemax, or key=value,… (ramp_cycles, requests_per_client, "
                          "warmup_per_client, range_ratio, range_style, "
                          "dispatch_intervals, latency_s).")] = "steady",
    terms: Annotated[str, typer.Option(
        "--terms", help="Basis terms the fit may use: all, or a comma-separated subset of "
                        "step, layer, moe_layer, token, norms, elementwise, dense, "
                        "dense_low, dense_w4a16, attention, weights, kv, allreduce, "
                        "allreduce_bytes, alltoall, alltoall_bytes, expert_pair, expert, "
                        "expert_low, expert_w4a16, expert_weights, expert_weights_w4a16, "
                        "eager_layer, request_token "
                        "(seconds per prompt token outside the engine; the rest stay 0, or "
                        "tied to the matching term).")] = "all",
    campaign: Annotated[list[str] | None, typer.Option(
        "--campaign", help="Rows that ran under another harness: "
                           "MODEL[@VERSION][/GPU]:key=value,… over --harness (repeatable); "
                           "latency_s=fit fits the campaign's harness latency.")
    ] = None,
    jobs: JobsOpt = 0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Fit a step-time profile to measurements, cross-validated by (GPU, model, TP) group."""
    emit(api.calibrate(files, backend=backend, out=out, gpu=gpu, model=model, tp=tp,
                       weights=weights, rounds=rounds, harness=harness, terms=terms,
                       campaign=campaign or (), jobs=jobs, progress=_say(fmt)), fmt)


def validate(
    sets: Annotated[list[str] | None, typer.Argument(
        metavar="[SET|FILE...]", help="Shipped sets (h100, h100-moe, h100-trtllm-moe, "
                                      "h100-trtllm-gptoss, splitwise, trtllm-v0.17, "
                                      "trtllm-perf-overview, h100-minimax) or "
                                      "measurement files; "
                                      "default: every shipped set.")] = None,
    calibration: Annotated[str | None, typer.Option(
        "--calibration", help="Profile name or file to score as is (no refit); default: "
                              "cross-validated refits of each backend's shipped profile.")] = None,
    gpu: GpuOpt = None, model: ModelOpt = None, tp: TpOpt = None, weights: WeightsOpt = None,
    plot: Annotated[Path | None, PlotOption(
        help="Predicted-vs-measured figure (PNG, SVG or PDF).")] = None,
    jobs: JobsOpt = 0,
    by: Annotated[str, typer.Option(
        "--by", help="Group the errors, and hold out the refits' folds, by: group (GPU, model "
                     "and TP), gpu, engine, version, tp or model.")] = "group",
    fmt: FormatOpt = Format.table,
) -> None:
    """Replay measurements through the simulator and report the errors."""
    result = api.validate(sets or None, calibration=calibration, gpu=gpu, model=model, tp=tp,
                          weights=weights, jobs=jobs, progress=_say(fmt), by=by)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)
