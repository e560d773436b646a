"""``napkin pretrain``, ``napkin scaling fit | optimum``, ``napkin lifecycle`` (over
:mod:`napkin.api.scaling`)."""

from pathlib import Path
from typing import Annotated

import typer

from napkin.api import scaling as api
from napkin.cli.common import (
    BwOpt,
    FiniteOption,
    Format,
    FormatOpt,
    MemOpt,
    PlotOption,
    TflopsOpt,
    emit,
    finite,
)
from napkin.errors import NapkinError, require

app = typer.Typer(help="Scaling laws: fit observations, compute-optimal sizes.",
                  no_args_is_help=True)

LawOpt = Annotated[str, typer.Option(
    "--law", help="chinchilla (Hoffmann Approach 3), epoch (Besiroglu et al. 2024), c4 "
                  "(napkin's fit of six datablations C4 runs, Example 3-5), a law file written "
                  "by 'napkin scaling fit --out' (PATH.json), or E,A,B,alpha,beta.")]

OptimumLawOpt = Annotated[str, typer.Option(
    "--law", help="chinchilla, epoch, c4, PATH.json or E,A,B,alpha,beta as for the other "
                  "commands, or kaplan (Kaplan et al. 2020: N = 1.3e9·(C/PF-day)^0.73, beside "
                  "Chinchilla).")]


def _sizes(text: str, field: str) -> list[float]:
    """Comma-separated parameter counts (their range is the library's to check)."""
    try:
        values = [finite(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise NapkinError(f"{field}: {text!r} must be comma-separated finite parameter "
                          "counts") from None
    require(bool(values), f"{field}: give at least one parameter count")
    return values


def pretrain(
    gpu: Annotated[str, typer.Option("--gpu", help="Accelerator id.")] = "rtx-4080",
    count: Annotated[int, typer.Option("--count", help="Accelerators.")] = 4,
    days: Annotated[float, FiniteOption("--days", help="Wall-clock days.")] = 30.0,
    mfu: Annotated[float, FiniteOption("--mfu", help="Share of dense BF16 peak.")] = 0.4,
    law: LawOpt = "chinchilla",
    alt: Annotated[str | None, typer.Option("--alt", help="Other sizes to compare (params).")] =
    None,
    gpu_mem_gb: MemOpt = None, gpu_bw_gbs: BwOpt = None, gpu_tflops: TflopsOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Pretraining budget → Chinchilla N and D, the law's optimum, alternatives and their loss."""
    emit(api.pretrain(gpu=gpu, count=count, days=days, mfu=mfu, law=law,
                      alt=_sizes(alt, "alt") if alt else (), gpu_mem_gb=gpu_mem_gb,
                      gpu_bw_gbs=gpu_bw_gbs, gpu_tflops=gpu_tflops), fmt)


@app.command("fit")
def fit_cmd(
    path: Annotated[Path, typer.Argument(metavar="FILE.csv", help="Observations.")],
    n_col: Annotated[str, typer.Option("--n-col", help="Parameters column.")] = "params",
    d_col: Annotated[str, typer.Option("--d-col", help="Tokens column.")] = "tokens",
    loss_col: Annotated[str, typer.Option("--loss-col", help="Loss column.")] = "loss",
    holdout_min_n: Annotated[float | None, FiniteOption(
        "--holdout-min-n", help="Hold out rows with at least this many parameters.")] = None,
    grid: Annotated[str, typer.Option("--grid", help="full (4,500 starts) or coarse.")] =
    "coarse",
    plot: Annotated[Path | None, PlotOption(help="Predicted vs observed.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write the fitted law and its data range as JSON (for --law).")] = None,
    fix_e: Annotated[float | None, FiniteOption(
        "--fix-E", help="Hold the irreducible loss E at this value (nats/token; Hoffmann's "
                        "1.69) and fit A, B, alpha, beta alone.")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Fit L = E + A/N^α + B/D^β (Hoffmann et al. method), optionally holding rows out or
    holding E fixed."""
    result = api.fit_scaling(path, n_col=n_col, d_col=d_col, loss_col=loss_col,
                             holdout_min_n=holdout_min_n, grid=grid, out=out, fix_E=fix_e)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


@app.command()
def optimum(
    flops: Annotated[float, FiniteOption("--flops", help="Training budget C, FLOPs.")],
    law: OptimumLawOpt = "chinchilla",
    plot: Annotated[Path | None, PlotOption(
        help="N and D against the budget, log-log (PNG).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Compute-optimal N and D for C FLOPs under a law, beside the 20-tokens rule."""
    result = api.scaling_optimum(flops=flops, law=law)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)


def lifecycle(
    target_loss: Annotated[float, FiniteOption("--target-loss", help="Loss to reach.")],
    sizes: Annotated[str, typer.Option("--sizes", help="Model sizes (params), comma-sep.")],
    prompt: Annotated[int, typer.Option("--prompt", help="Input tokens per call.")] = 512,
    gen: Annotated[int, typer.Option("--gen", help="Output tokens per call.")] = 128,
    gpu: Annotated[str, typer.Option("--gpu", help="Accelerator for GPU-hours.")] = "h100-sxm",
    mfu: Annotated[float, FiniteOption("--mfu", help="Share of dense BF16 peak.")] = 0.4,
    law: LawOpt = "chinchilla",
    mix: Annotated[str | None, typer.Option(
        "--mix", help="A task mix instead of --prompt/--gen: P:G:share,… "
                      "(e.g. 512:128:0.7,4096:512:0.3).")] = None,
    plot: Annotated[Path | None, PlotOption(help="Cost vs calls (PNG).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Training and serving GPU time of each size at a target loss, and break-even calls;
    a call is one --prompt/--gen request or the mean over a --mix of them."""
    from napkin.scaling.lifecycle import parse_mix

    result = api.lifecycle(target_loss=target_loss, sizes=_sizes(sizes, "sizes"), prompt=prompt,
                           gen=gen, gpu=gpu, mfu=mfu, law=law,
                           mix=parse_mix(mix) if mix is not None else None)
    if plot is not None:
        result.plot(plot)
    emit(result, fmt)
