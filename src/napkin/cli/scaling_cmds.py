"""``napkin pretrain``, ``napkin scaling fit | optimum``, ``napkin lifecycle``."""

import itertools
from pathlib import Path
from typing import Annotated

import typer

from napkin.cli.common import (
    BwOpt,
    FiniteOption,
    Format,
    FormatOpt,
    MemOpt,
    PlotOption,
    TflopsOpt,
    accelerator,
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


def _c4_law():
    from napkin.examples.scaling import example_3_5_law

    return example_3_5_law()


def _law(name: str):
    """``--law`` → :class:`napkin.scaling.lawfile.NamedLaw` (NapkinError naming ``law``)."""
    from napkin.scaling.lawfile import resolve

    return resolve(name, {"c4": _c4_law})


def _range_notes(named, points: list[tuple[str, float, float]]) -> list[str]:
    """Warnings for predictions outside a fitted law's data range."""
    from napkin.scaling.lawfile import range_warnings

    return range_warnings(named, points)


def _sizes(text: str, field: str) -> list[float]:
    """Comma-separated parameter counts (their range is the library's to check)."""
    try:
        values = [finite(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise NapkinError(f"{field}: {text!r} must be comma-separated finite parameter "
                          "counts") from None
    require(bool(values), f"{field}: give at least one parameter count")
    return values


def _g(x: float) -> str:
    return f"{x:,.4g}"


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
    from napkin.report.econ_views import table_doc
    from napkin.scaling.pretrain import plan_pretrain
    from napkin.units import GB

    acc = accelerator(gpu, gpu_mem_gb, gpu_bw_gbs, gpu_tflops)
    plan = plan_pretrain(acc, count, days, mfu, _law(law), _sizes(alt, "alt") if alt else [])

    def fits(b: float) -> str:
        return f"{b / GB:,.1f} GB" + ("" if b <= acc.memory_bytes else " ✗")

    rows = [[o.name, _g(o.params), _g(o.tokens), f"{o.tokens / o.params:,.0f}",
             f"{o.loss:.3f}", f"{o.inference_cost_vs_rule:.2f}", f"{o.tokens_per_s:,.0f}",
             fits(o.ddp_state_bytes), fits(o.fsdp_state_bytes)] for o in plan.options]
    data = {"budget_flops": plan.budget_flops,
            "options": [{"name": o.name, "params": o.params, "tokens": o.tokens, "loss": o.loss,
                         "tokens_per_s": o.tokens_per_s,
                         "ddp_state_bytes": o.ddp_state_bytes,
                         "fsdp_state_bytes": o.fsdp_state_bytes, "ddp_fits": o.ddp_fits,
                         "fsdp_fits": o.fsdp_fits} for o in plan.options],
            "warnings": list(plan.warnings)}
    c = plan.budget_flops
    emit(table_doc(f"Pretraining on {count} × {acc.name} for {days:g} days", "options",
                   ["", "params N", "tokens D", "D/N", "loss", "inference cost vs rule",
                    "tokens/s needed", "state per GPU, DDP", f"FSDP over {count}"], rows, data,
                   {"gpu": acc.id, "count": count, "days": days},
                   {"mfu": mfu, "law": law, "budget_flops": c},
                   [f"C = {count} × peak × {mfu:g} × {days:g} days = {c:.3g} FLOPs; "
                    "D = C/(6N); inference cost ∝ 2N per token",
                    f"state: AdamW mixed precision, 16 B/param, replicated (DDP) or sharded "
                    f"(FSDP); ✗ = more than the {acc.memory_bytes / GB:,.0f} GB per GPU before "
                    "activations",
                    *[f"warning: {w}" for w in plan.warnings]]), fmt)


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
    fmt: FormatOpt = Format.table,
) -> None:
    """Fit L = E + A/N^α + B/D^β (Hoffmann et al. method), optionally holding rows out."""
    from napkin.report.econ_views import table_doc
    from napkin.scaling.law import COARSE_GRID, HOFFMANN_GRID, fit, holdout, read_observations
    from napkin.scaling.lawfile import data_range_of, write_law

    if grid not in ("full", "coarse"):
        raise NapkinError(f"grid: must be full or coarse, got {grid!r}")
    starts = HOFFMANN_GRID if grid == "full" else COARSE_GRID
    runs = read_observations(path, n_col, d_col, loss_col)
    if holdout_min_n is not None:
        test = [i for i, o in enumerate(runs) if holdout_min_n <= o.N]
        train = [i for i, o in enumerate(runs) if holdout_min_n > o.N]
        result = holdout(runs, train, test, grid=starts)
        fitted, law = result.fit, result.fit.law
    else:
        result = fitted = fit(runs, grid=starts)
        law = fitted.law
    rows = [["E", _g(law.E)], ["A", _g(law.A)], ["B", _g(law.B)], ["α", _g(law.alpha)],
            ["β", _g(law.beta)], ["fitted points", str(fitted.num_points)]]
    data: dict[str, object] = {"law": law, "fitted_points": fitted.num_points}
    if holdout_min_n is not None:
        rows += [[f"held out: N = {_g(o.N)}, D = {_g(o.D)}",
                  f"observed {o.loss:.4f}, predicted {p:.4f}"]
                 for o, p in zip(result.test, result.predicted, strict=True)]
        rows.append(["hold-out RMSE", f"{result.rmse:.4f}"])
        data.update(predicted=result.predicted, observed=result.observed, rmse=result.rmse)
    span = data_range_of(fitted, str(path))
    rows.append(["data range", f"N {_g(span.n_min)}–{_g(span.n_max)}, "
                               f"D {_g(span.d_min)}–{_g(span.d_max)}"])
    data["data_range"] = span
    notes = []
    if plot is not None:
        from napkin.report.scaling_plots import plot_fit

        plot_fit(result, plot)
    if out is not None:
        write_law(out, law, span, {"method": "Huber on log residuals, Hoffmann et al. 2022 "
                                             "Approach 3", "delta": fitted.delta,
                                   "grid": grid, "objective": fitted.objective,
                                   "holdout_min_n": holdout_min_n})
        notes.append(f"law written to {out} (use --law {out})")
    emit(table_doc(f"Scaling-law fit of {path.name}", "L = E + A/N^α + B/D^β",
                   ["", ""], rows, data, {"file": str(path)}, {"grid": grid}, notes), fmt)


@app.command()
def optimum(
    flops: Annotated[float, FiniteOption("--flops", help="Training budget C, FLOPs.")],
    law: LawOpt = "chinchilla",
    fmt: FormatOpt = Format.table,
) -> None:
    """Compute-optimal N and D for C FLOPs under a law, beside the 20-tokens rule."""
    from napkin.report.econ_views import table_doc
    from napkin.scaling.optimum import allocation_exponents, chinchilla_rule, d_opt, n_opt

    named = _law(law)
    fitted = named.law
    n, d = n_opt(fitted, flops), d_opt(fitted, flops)
    rn, rd = chinchilla_rule(flops)
    exps = allocation_exponents(fitted)
    warnings = _range_notes(named, [("law optimum", n, d), ("20 tokens per parameter", rn, rd)])
    rows = [["law optimum", _g(n), _g(d), f"{float(fitted.loss(n, d)):.3f}"],
            ["20 tokens per parameter", _g(rn), _g(rd), f"{float(fitted.loss(rn, rd)):.3f}"]]
    emit(table_doc(f"Compute-optimal size for {flops:.3g} FLOPs", law,
                   ["", "params N", "tokens D", "loss"], rows,
                   {"params": n, "tokens": d, "rule_params": rn, "rule_tokens": rd,
                    "n_exponent": exps.n_exponent, "d_exponent": exps.d_exponent,
                    "warnings": warnings},
                   {"flops": flops}, {"law": law},
                   [f"N_opt ∝ C^{exps.n_exponent:.3f}, D_opt ∝ C^{exps.d_exponent:.3f}",
                    *[f"warning: {w}" for w in warnings]]), fmt)


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
    from napkin.catalog import load_accelerator
    from napkin.report.econ_views import table_doc
    from napkin.scaling.lifecycle import break_even_calls, parse_mix, size_costs

    named = _law(law)
    kinds = parse_mix(mix) if mix is not None else None
    costs = size_costs(named.law, target_loss, _sizes(sizes, "sizes"), prompt, gen,
                       load_accelerator(gpu), mfu, mix=kinds)
    warnings = _range_notes(named, [(f"{_g(c.params)} params at loss {target_loss:g}",
                                     c.params, c.tokens) for c in costs])
    rows = [[_g(c.params), _g(c.tokens), f"{c.train_gpu_hours:,.1f}", f"{c.call_gpu_s:.6f}"]
            for c in costs]
    notes = []
    for small, large in itertools.pairwise(costs):
        q = break_even_calls(*sorted((small, large), key=lambda c: c.params))
        notes.append(f"{_g(small.params)} vs {_g(large.params)}: " + (
            f"break-even after {q:,.4g} calls" if q is not None else
            "the smaller model is cheaper to train and to run: no break-even"))
    if plot is not None:
        from napkin.report.scaling_plots import plot_lifecycle

        plot_lifecycle(costs, plot)
    emit(table_doc(f"Lifecycle at loss {target_loss:g}", "per model size",
                   ["params", "tokens to target", "training GPU-h", "GPU-s per call"], rows,
                   {"sizes": costs, "warnings": warnings},
                   {"target_loss": target_loss, "prompt_tokens": prompt, "gen_tokens": gen,
                    "mix": [list(k) for k in kinds] if kinds else None},
                   {"gpu": gpu, "mfu": mfu, "law": law},
                   notes + [f"warning: {w}" for w in warnings]), fmt)
