"""Scaling laws: ``napkin pretrain``, ``napkin scaling fit | optimum``, ``napkin lifecycle``.

A law is ``L(N, D) = E + A/N^α + B/D^β`` (loss in nats/token, N parameters, D training tokens;
Hoffmann et al. 2022). Where a function takes ``law`` it accepts ``chinchilla`` (Hoffmann
Approach 3), ``epoch`` (Besiroglu et al. 2024), ``c4`` (napkin's fit of six datablations C4
runs, Example 3-5), a law file written by :func:`fit_scaling` (``out=``), ``"E,A,B,alpha,beta"``
or a :class:`~napkin.scaling.law.ScalingLaw`. Predictions outside a fitted law's data range
come with warnings.
"""

import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import GpuRef, load_gpu
from napkin.errors import NapkinError, require

if TYPE_CHECKING:
    from napkin.scaling.law import ScalingLaw
    from napkin.scaling.lawfile import NamedLaw


def _law(law: "str | ScalingLaw") -> tuple["NamedLaw", str]:
    """``law`` → its :class:`~napkin.scaling.lawfile.NamedLaw` (NapkinError naming ``law``)
    and the label the output echoes: the text as given, or a law's five numbers."""
    from napkin.scaling.lawfile import LAW_FIELDS, NamedLaw, resolve

    if isinstance(law, str):
        return resolve(law, {"c4": _c4_law}), law
    label = ",".join(repr(float(getattr(law, k))) for k in LAW_FIELDS)
    return NamedLaw(law, label), label


def _c4_law() -> "NamedLaw":
    from napkin.examples.scaling import example_3_5_law

    return example_3_5_law()


def _law_notes(named: "NamedLaw") -> list[str]:
    """What a reconstructed preset is and how to refit it (``c4``); nothing for the others."""
    if named.name != "c4":
        return []
    from napkin.examples.scaling import c4_law_note

    return [c4_law_note()]


def _g(x: float) -> str:
    return f"{x:,.4g}"


@checked
def pretrain(*, gpu: GpuRef = "rtx-4080", count: int = 4, days: float = 30.0, mfu: float = 0.4,
             law: "str | ScalingLaw" = "chinchilla", alt: Sequence[float] = (),
             gpu_mem_gb: float | None = None, gpu_bw_gbs: float | None = None,
             gpu_tflops: float | None = None) -> Result:
    """A pretraining budget in GPUs and days → model sizes, their tokens, loss and state.

    Budget ``C = count · peak · mfu · days · 86,400 s`` FLOPs (dense BF16 peak of ``gpu``);
    each size N trains on ``D = C/(6N)`` tokens. Options: the Chinchilla rule
    (``N = √(C/120)``, ``D = 20N``), the law's compute optimum and each size in ``alt``
    (parameters), with the law's loss (nats/token), the tokens/s the run must sustain
    (``D / (days · 86,400)``), inference cost relative to the rule's size (∝ 2N per token), and
    the per-GPU state of AdamW mixed precision (16 B/param) replicated (DDP) or sharded over
    the ``count`` GPUs (FSDP) against the card's memory before activations (question bank
    task 4). ``value``: :class:`~napkin.scaling.pretrain.PretrainPlan`.
    """
    from napkin.report.econ_views import table_doc
    from napkin.scaling.pretrain import plan_pretrain
    from napkin.units import GB

    acc = load_gpu(gpu, gpu_mem_gb=gpu_mem_gb, gpu_bw_gbs=gpu_bw_gbs, gpu_tflops=gpu_tflops)
    named, label = _law(law)
    plan = plan_pretrain(acc, count, days, mfu, named, list(alt))

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
    doc = table_doc(f"Pretraining on {count} × {acc.name} for {days:g} days", "options",
                    ["", "params N", "tokens D", "D/N", "loss", "inference cost vs rule",
                     "tokens/s needed", "state per GPU, DDP", f"FSDP over {count}"], rows, data,
                    {"gpu": acc.id, "count": count, "days": days},
                    {"mfu": mfu, "law": label, "budget_flops": c},
                    [f"C = {count} × peak × {mfu:g} × {days:g} days = {c:.3g} FLOPs; "
                     "D = C/(6N); inference cost ∝ 2N per token",
                     f"state: AdamW mixed precision, 16 B/param, replicated (DDP) or sharded "
                     f"(FSDP); ✗ = more than the {acc.memory_bytes / GB:,.0f} GB per GPU before "
                     "activations",
                     *_law_notes(named), *[f"warning: {w}" for w in plan.warnings]])
    return Result(doc, plan)


@checked
def fit_scaling(path: str | Path, *, n_col: str = "params", d_col: str = "tokens",
                loss_col: str = "loss", holdout_min_n: float | None = None,
                grid: str = "coarse", out: str | Path | None = None,
                fix_E: float | None = None) -> Result:
    """Fit ``L = E + A/N^α + B/D^β`` to the runs of a CSV file, optionally holding the largest
    models out.

    The file has a header row; ``n_col``, ``d_col`` and ``loss_col`` name the columns holding
    N (parameters), D (tokens) and the final loss (nats/token). The fit is Hoffmann et al.'s
    method (Huber loss, δ = 10⁻³, on log residuals, from every start of the ``grid``: ``full``,
    4,500 starts, or ``coarse``). With ``holdout_min_n``, runs with ``N >= holdout_min_n`` are
    held out and predicted (hold-out RMSE, nats/token). ``out`` writes the law and its data
    range as JSON, usable as ``law=`` elsewhere. ``fix_E`` (nats/token) holds the
    irreducible loss E at that value and fits A, B, α, β alone: Hoffmann's E = 1.69 on the
    eight runs of Example 3-5 (six fitted, two with N ≥ 2e9 held out), ``grid="full"``, is
    napkin's ``c4`` law. ``.plot(path)``: predicted vs observed loss.
    ``value``: :class:`~napkin.scaling.law.FitResult`, or
    :class:`~napkin.scaling.law.HoldoutResult` with ``holdout_min_n``.
    """
    import numpy as np

    from napkin.report.econ_views import table_doc
    from napkin.scaling.law import (
        COARSE_GRID,
        HOFFMANN_GRID,
        FitResult,
        HoldoutResult,
        fit,
        holdout,
        read_observations,
    )
    from napkin.scaling.lawfile import data_range_of, write_law

    path = Path(path)
    if grid not in ("full", "coarse"):
        raise NapkinError(f"grid: must be full or coarse, got {grid!r}")
    starts = HOFFMANN_GRID if grid == "full" else COARSE_GRID
    require(fix_E is None or (math.isfinite(fix_E) and fix_E >= 0),
            f"fix-E: the irreducible loss E must be a finite number >= 0 nats/token, "
            f"got {fix_E}")
    runs = read_observations(path, n_col, d_col, loss_col)
    result: FitResult | HoldoutResult
    fitted_runs = [o for o in runs if holdout_min_n is None or holdout_min_n > o.N]
    if fix_E is not None and fitted_runs:
        lowest = min(o.loss for o in fitted_runs)
        require(fix_E < lowest, f"fix-E: E = {fix_E:g} must lie below the lowest fitted loss "
                                f"{lowest:g} nats/token (the law never goes under E)")
    if holdout_min_n is not None:
        test = [i for i, o in enumerate(runs) if holdout_min_n <= o.N]
        train = [i for i, o in enumerate(runs) if holdout_min_n > o.N]
        result = held = holdout(runs, train, test, grid=starts, fixed_E=fix_E)
        fitted = held.fit
    else:
        result = fitted = fit(runs, grid=starts, fixed_E=fix_E)
    law = fitted.law
    rows = [["E (held fixed)" if fix_E is not None else "E", _g(law.E)], ["A", _g(law.A)],
            ["B", _g(law.B)], ["α", _g(law.alpha)],
            ["β", _g(law.beta)], ["fitted points", str(fitted.num_points)]]
    data: dict[str, Any] = {"law": law, "fitted_points": fitted.num_points}
    if isinstance(result, HoldoutResult):
        rows += [[f"held out: N = {_g(o.N)}, D = {_g(o.D)}",
                  f"observed {o.loss:.4f}, predicted {p:.4f}"]
                 for o, p in zip(result.test, result.predicted, strict=True)]
        rows.append(["hold-out RMSE", f"{result.rmse:.4f}"])
        data.update(predicted=result.predicted.tolist(), observed=result.observed.tolist(),
                    errors=result.errors.tolist(), rmse=result.rmse)
    data["fitted_median_abs_error"] = float(np.median(np.abs(fitted.residuals)))
    rows.append(["median |error| on the fitted runs",
                 f"{data['fitted_median_abs_error']:.4f} (fit error, not hold-out error)"])
    span = data_range_of(fitted, str(path))
    rows.append(["data range", f"N {_g(span.n_min)}–{_g(span.n_max)}, "
                               f"D {_g(span.d_min)}–{_g(span.d_max)}"])
    data["data_range"] = span
    notes = []
    if out is not None:
        write_law(out, law, span, {"method": "Huber on log residuals, Hoffmann et al. 2022 "
                                             "Approach 3", "delta": fitted.delta,
                                   "grid": grid, "objective": fitted.objective,
                                   "holdout_min_n": holdout_min_n, "fix_E": fix_E})
        notes.append(f"law written to {out} (use --law {out})")

    def plotter(target: Path) -> None:
        from napkin.report.scaling_plots import plot_fit

        plot_fit(result, target)

    return Result(table_doc(f"Scaling-law fit of {path.name}", "L = E + A/N^α + B/D^β",
                            ["", ""], rows, data, {"file": str(path)},
                            {"grid": grid, "fix_E": fix_E}, notes),
                  result, plotter)


@checked
def scaling_optimum(*, flops: float, law: "str | ScalingLaw" = "chinchilla") -> Result:
    """The compute-optimal model size and tokens for a training budget of ``flops`` FLOPs.

    Minimizing the law's loss under ``C = 6ND``:
    ``N_opt = (αA/(βB))^(1/(α+β)) · (C/6)^(β/(α+β))`` parameters, ``D_opt = C/(6·N_opt)``
    tokens, beside the 20-tokens-per-parameter rule ``N = √(C/120)``, ``D = 20N``; the loss of
    each (nats/token) and the allocation exponents ``N_opt ∝ C^(β/(α+β))``,
    ``D_opt ∝ C^(α/(α+β))``. ``law="kaplan"``: Kaplan et al. 2020's fitted allocation
    ``N = 1.3e9·(C / 1 PF-day)^0.73`` (non-embedding parameters, 1 PF-day = 8.64e19 FLOPs),
    ``D = C/(6N)`` ∝ C^0.27, beside Chinchilla's optimum (``chinchilla_params``,
    ``chinchilla_tokens``). ``.plot(path)``: N and D of each allocation against budgets
    from 10⁻³× to 10³× ``flops``, log-log. ``value``: dict with ``params``, ``tokens``,
    ``rule_params``, ``rule_tokens`` and ``exponents``
    (:class:`~napkin.scaling.law.AllocationExponents`).
    """
    from napkin.report.econ_views import table_doc
    from napkin.scaling.lawfile import range_warnings
    from napkin.scaling.optimum import allocation_exponents, chinchilla_rule, d_opt, n_opt

    if isinstance(law, str) and law.strip() == "kaplan":
        return _kaplan_optimum(flops)
    named, label = _law(law)
    fitted = named.law
    n, d = n_opt(fitted, flops), d_opt(fitted, flops)
    rn, rd = chinchilla_rule(flops)
    exps = allocation_exponents(fitted)
    warnings = range_warnings(named, [("law optimum", n, d), ("20 tokens per parameter", rn, rd)])
    rows = [["law optimum", _g(n), _g(d), f"{float(fitted.loss(n, d)):.3f}"],
            ["20 tokens per parameter", _g(rn), _g(rd), f"{float(fitted.loss(rn, rd)):.3f}"]]
    doc = table_doc(f"Compute-optimal size for {flops:.3g} FLOPs", label,
                    ["", "params N", "tokens D", "loss"], rows,
                    {"params": n, "tokens": d, "rule_params": rn, "rule_tokens": rd,
                     "n_exponent": exps.n_exponent, "d_exponent": exps.d_exponent,
                     "warnings": warnings},
                    {"flops": flops}, {"law": label},
                    [f"N_opt ∝ C^{exps.n_exponent:.3f}, D_opt ∝ C^{exps.d_exponent:.3f}",
                     *_law_notes(named), *[f"warning: {w}" for w in warnings]])
    plotter = _allocation_plotter(flops, {
        f"{label} law optimum": lambda c: (n_opt(fitted, c), d_opt(fitted, c)),
        "20 tokens per parameter": chinchilla_rule})
    return Result(doc, {"params": n, "tokens": d, "rule_params": rn, "rule_tokens": rd,
                        "exponents": exps}, plotter)


def _allocation_plotter(flops: float,
                        allocations: dict[str, Callable[[float], tuple[float, float]]]
                        ) -> Callable[[Path], None]:
    """``.plot`` of ``scaling_optimum``: each allocation's (N, D) over budgets from 10⁻³× to
    10³× ``flops`` (inside the accepted range)."""
    def plotter(target: Path) -> None:
        from napkin.report.scaling_plots import plot_allocation
        from napkin.scaling.optimum import COMPUTE_FLOPS_RANGE

        lo, hi = COMPUTE_FLOPS_RANGE
        budgets = [c for c in (flops * 10 ** (k / 10) for k in range(-30, 31)) if lo <= c <= hi]
        curves = {}
        for label, allocate in allocations.items():
            points = [allocate(c) for c in budgets]
            curves[label] = (budgets, [p[0] for p in points], [p[1] for p in points])
        plot_allocation(flops, curves, target)

    return plotter


def _kaplan_optimum(flops: float) -> Result:
    """``scaling_optimum(law="kaplan")``: Kaplan et al. 2020's fitted allocation beside
    Chinchilla's law optimum and the 20-tokens rule."""
    from napkin.report.econ_views import table_doc
    from napkin.scaling.law import CHINCHILLA_APPROACH3, KAPLAN_2020_ALLOCATION, PF_DAY_FLOPS
    from napkin.scaling.optimum import chinchilla_rule, d_opt, fitted_allocation, n_opt

    alloc = KAPLAN_2020_ALLOCATION
    n, d = fitted_allocation(alloc, flops)
    cn, cd = n_opt(CHINCHILLA_APPROACH3, flops), d_opt(CHINCHILLA_APPROACH3, flops)
    rn, rd = chinchilla_rule(flops)
    exps = alloc.exponents
    rows = [["Kaplan et al. 2020 allocation", _g(n), _g(d), f"{d / n:,.1f}",
             f"{float(CHINCHILLA_APPROACH3.loss(n, d)):.3f}"],
            ["chinchilla law optimum", _g(cn), _g(cd), f"{cd / cn:,.1f}",
             f"{float(CHINCHILLA_APPROACH3.loss(cn, cd)):.3f}"],
            ["20 tokens per parameter", _g(rn), _g(rd), f"{rd / rn:,.1f}",
             f"{float(CHINCHILLA_APPROACH3.loss(rn, rd)):.3f}"]]
    data = {"params": n, "tokens": d, "chinchilla_params": cn, "chinchilla_tokens": cd,
            "rule_params": rn, "rule_tokens": rd, "n_exponent": exps.n_exponent,
            "d_exponent": exps.d_exponent, "warnings": []}
    doc = table_doc(f"Compute-optimal size for {flops:.3g} FLOPs", "kaplan",
                    ["", "params N", "tokens D", "D/N", "loss (chinchilla law)"], rows, data,
                    {"flops": flops}, {"law": "kaplan"},
                    [f"Kaplan et al. 2020, eq. (6.1) and Table 6: N_opt = "
                     f"{alloc.n_ref:.2g}·(C / 1 PF-day)^{exps.n_exponent:g} non-embedding "
                     f"parameters, 1 PF-day = {PF_DAY_FLOPS:.3g} FLOPs; D = C/(6N), so "
                     f"D ∝ C^{exps.d_exponent:g} (their own D = 2e10·C^0.27 counts C at the "
                     "critical batch size and does not multiply out to C = 6ND)",
                     "Kaplan grows N faster with the budget than Chinchilla (N ∝ C^0.73 "
                     "against ≈ C^0.5); every loss is Hoffmann's Approach 3 law at that N and D "
                     "(Kaplan's own loss has another form)"])
    plotter = _allocation_plotter(flops, {
        "Kaplan et al. 2020, N ∝ C^0.73": lambda c: fitted_allocation(alloc, c),
        "chinchilla law optimum": lambda c: (n_opt(CHINCHILLA_APPROACH3, c),
                                             d_opt(CHINCHILLA_APPROACH3, c)),
        "20 tokens per parameter": chinchilla_rule})
    return Result(doc, {"params": n, "tokens": d, "chinchilla_params": cn,
                        "chinchilla_tokens": cd, "rule_params": rn, "rule_tokens": rd,
                        "exponents": exps}, plotter)


def _task_mix(mix: Sequence[tuple[int, int, float]]) -> tuple[tuple[int, int, float], ...]:
    """Request kinds ``(P, G, share)`` with the shares normalized to 1."""
    kinds = [tuple(kind) for kind in mix]
    require(bool(kinds), "mix: give at least one (P, G, share)")
    for kind in kinds:
        require(len(kind) == 3 and all(isinstance(v, int) and v >= 1 for v in kind[:2])
                and isinstance(kind[2], int | float) and math.isfinite(kind[2])
                and kind[2] > 0,
                f"mix: {kind!r} needs P >= 1, G >= 1 and a finite share > 0")
    total = sum(kind[2] for kind in kinds)
    return tuple((p, g, share / total) for p, g, share in kinds)


@checked
def lifecycle(*, target_loss: float, sizes: Sequence[float], prompt: int = 512, gen: int = 128,
              gpu: GpuRef = "h100-sxm", mfu: float = 0.4,
              law: "str | ScalingLaw" = "chinchilla",
              mix: Sequence[tuple[int, int, float]] | None = None) -> Result:
    """Training and serving GPU time of each model size at a target loss, and the calls after
    which a smaller model (trained longer) pays back.

    Each size N (parameters) trains on the tokens that reach ``target_loss`` (nats/token),
    ``D = (B/(L − E − A/N^α))^(1/β)``, for ``6ND / (peak · mfu)`` GPU-seconds (dense BF16
    peak of ``gpu``); a call of ``prompt`` input and ``gen`` output tokens costs
    ``2N·[P + (G − 1)]`` FLOPs, or the share-weighted mean over ``mix`` (``(P, G, share)``
    kinds; shares normalized to 1). Break-even between neighbouring sizes:
    ``Q* = ΔC₀/Δc`` calls (training GPU-seconds over per-call GPU-seconds), none when the
    smaller model is also cheaper to train. ``.plot(path)``: cumulative GPU-hours against
    calls (Fig. 3-29), sizes outside a fitted law's data range dashed, each break-even a
    vertical line. ``value``: dict with ``sizes`` (tuple of
    :class:`~napkin.scaling.lifecycle.SizeCost`) and ``break_even_calls`` (one per
    neighbouring pair, None where there is none).
    """
    from napkin.report.econ_views import table_doc
    from napkin.scaling.lawfile import range_warnings
    from napkin.scaling.lifecycle import break_even_calls, size_costs

    named, label = _law(law)
    kinds = _task_mix(mix) if mix is not None else None
    acc = load_gpu(gpu)
    costs = size_costs(named.law, target_loss, list(sizes), prompt, gen, acc, mfu, mix=kinds)
    per_size = [range_warnings(named, [(f"{_g(c.params)} params at loss {target_loss:g}",
                                        c.params, c.tokens)]) for c in costs]
    warnings = [w for lines in per_size for w in lines]
    rows = [[_g(c.params), _g(c.tokens), f"{c.train_gpu_hours:,.1f}", f"{c.call_gpu_s:.6f}"]
            for c in costs]
    notes, breaks, pairs = [], [], []
    for small, large in itertools.pairwise(costs):
        lo, hi = sorted((small, large), key=lambda c: c.params)
        q = break_even_calls(lo, hi)
        breaks.append(q)
        pairs.append({"small_params": lo.params, "large_params": hi.params,
                      "extra_train_gpu_hours": lo.train_gpu_hours - hi.train_gpu_hours,
                      "call_saving_gpu_s": hi.call_gpu_s - lo.call_gpu_s,
                      "break_even_calls": q})
        notes.append(f"{_g(small.params)} vs {_g(large.params)}: " + (
            f"break-even after {q:,.4g} calls" if q is not None else
            "the smaller model is cheaper to train and to run: no break-even"))

    def plotter(target: Path) -> None:
        from napkin.report.scaling_plots import plot_lifecycle

        plot_lifecycle(costs, target, extrapolated=[bool(lines) for lines in per_size],
                       break_even_calls=breaks)

    doc = table_doc(f"Lifecycle at loss {target_loss:g}", "per model size",
                    ["params", "tokens to target", "training GPU-h", "GPU-s per call"], rows,
                    {"sizes": [{"params": c.params, "tokens": c.tokens,
                                "train_gpu_hours": c.train_gpu_hours, "call_gpu_s": c.call_gpu_s,
                                "flops_per_gpu_s": c.flops_per_gpu_s, "call_flops": c.call_flops}
                               for c in costs],
                     "pairs": pairs, "break_even_calls": breaks,
                     "law_notes": _law_notes(named), "warnings": warnings},
                    {"target_loss": target_loss, "prompt_tokens": prompt, "gen_tokens": gen,
                     "mix": [list(k) for k in kinds] if kinds else None},
                    {"gpu": gpu if isinstance(gpu, str) else acc.id, "mfu": mfu,
                     "law": label},
                    notes + _law_notes(named) + [f"warning: {w}" for w in warnings])
    return Result(doc, {"sizes": costs, "break_even_calls": breaks}, plotter)
