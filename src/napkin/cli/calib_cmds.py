"""``napkin calibrate`` and ``napkin validate``."""

import sys
from pathlib import Path
from typing import Annotated

import typer

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


def _say(fmt: Format):
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
                          "warmup_per_client, range_ratio, range_style).")] = "steady",
    terms: Annotated[str, typer.Option(
        "--terms", help="Basis terms the fit may use: all, or a comma-separated subset of "
                        "step, layer, token, dense, attention, weights, kv, allreduce, "
                        "allreduce_bytes (the rest stay 0).")] = "all",
    jobs: JobsOpt = 0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Fit a step-time profile to measurements, cross-validated by (GPU, model, TP) group."""
    from napkin.calibration.basis import parse_terms
    from napkin.calibration.measurements import read_measurements
    from napkin.calibration.protocol import parse_protocol
    from napkin.report.calib_views import calibrate_doc
    from napkin.specs.files import check_output
    from napkin.validation.calibrate import calibrate as fit_profile

    check_output(out, (".yaml", ".yml"), "out")
    protocol = parse_protocol(harness)
    fitted_terms = parse_terms(terms)
    rows = read_measurements([str(f) for f in files], gpu=gpu, model=model,
                             tensor_parallel=tp, weights=weights, backend=None)
    cal = fit_profile(rows, backend, out.stem, rounds=rounds, protocol=protocol,
                      progress=_say(fmt), jobs=jobs, terms=fitted_terms)
    cal.profile.save(out)
    emit(calibrate_doc(cal.profile, cal.holdout, str(out)), fmt)


def validate(
    sets: Annotated[list[str] | None, typer.Argument(
        metavar="[SET|FILE...]", help="Shipped sets (h100) or measurement files; "
                                      "default: every shipped set.")] = None,
    calibration: Annotated[str | None, typer.Option(
        "--calibration", help="Profile name or file to score as is (no refit); default: "
                              "cross-validated refits of each backend's shipped profile.")] = None,
    gpu: GpuOpt = None, model: ModelOpt = None, tp: TpOpt = None, weights: WeightsOpt = None,
    plot: Annotated[Path | None, PlotOption(
        help="Predicted-vs-measured figure (PNG, SVG or PDF).")] = None,
    jobs: JobsOpt = 0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Replay measurements through the simulator and report the errors."""
    from napkin.calibration.measurements import read_measurements
    from napkin.calibration.profile import load_profile
    from napkin.report.calib_views import validate_doc
    from napkin.validation.calibrate import holdout
    from napkin.validation.calibrate import validate as score
    from napkin.validation.sets import FITTED, SETS, load_set

    results = []
    for name in sets or list(SETS):
        if name in SETS:
            rows = load_set(name)
        else:
            rows = read_measurements([name], gpu=gpu, model=model, tensor_parallel=tp,
                                     weights=weights)
        if calibration is not None:  # one profile: its backend's rows if there are any
            profile = load_profile(calibration)
            mine = [m for m in rows if m.backend == profile.backend] or rows
            results.append((f"{name} · {profile.backend}", f"profile {calibration}, as fitted",
                            score(mine, profile)))
            continue
        for backend in sorted({m.backend for m in rows}):
            mine = [m for m in rows if m.backend == backend]
            if name in SETS and name not in FITTED:  # no profile saw it: score as fitted
                rep = score(mine, load_profile(backend))
                how = f"profile {backend} as fitted (not fitted on this set)"
            else:
                rep = holdout(mine, load_profile(backend), progress=_say(fmt), jobs=jobs)
                how = f"leave-one-group-out refits of profile {backend}"
            results.append((f"{name} · {backend}", how, rep))
    if plot is not None:
        from napkin.report.calib_plots import plot_validation

        plot_validation(results, plot)
    emit(validate_doc(results), fmt)
