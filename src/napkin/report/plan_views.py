"""``napkin plan`` output: the cheapest feasible configuration with its launch commands, the
ranked feasible table, the cheapest per GPU type, and what the search did."""

from collections import Counter
from typing import Any

import numpy as np

from napkin.planning.compare import GpuPoint
from napkin.planning.evaluate import Evaluation
from napkin.planning.launch import launch_commands
from napkin.planning.prices import price_of
from napkin.planning.search import PlanResult
from napkin.report.document import Document, Section
from napkin.serving.metrics import SLO
from napkin.units import fmt_seconds


def _num(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _row(rank: int | str, e: Evaluation, rate: float | None) -> list[str]:
    c = e.candidate
    return [str(rank), f"{c.layout} {c.gpu} {c.parallel_label}", c.backend,
            f"{c.weights}/{c.kv_dtype}", f"{c.max_num_seqs}/{c.max_num_batched_tokens}",
            str(e.gpus), f"{e.usd_per_hour:,.2f}", _num(e.usd_per_m_output_tokens, ",.3f"),
            _num(e.energy.kwh_per_m_output_tokens if e.energy else None, ",.3f"),
            _num(e.tokens_per_s_per_gpu, ",.0f"), _num(e.tokens_per_s_per_user, ",.1f"),
            _num(rate, ",.3g"), _share(e), _num(e.p_slo_met, ".2f"),
            fmt_seconds(e.p95_ttft_s, 3) if e.p95_ttft_s is not None else "–",
            fmt_seconds(e.p95_tpot_s, 3) if e.p95_tpot_s is not None else "–",
            e.profile or "–", str(len(e.warnings))]


def _share(e: Evaluation) -> str:
    """Worst seed's SLO share, and the best's when they differ (the spread over seeds)."""
    lo, hi = e.slo_met_frac, e.slo_met_best
    if lo is None:
        return "–"
    return f"{lo:.1%}" if hi is None or hi - lo < 5e-4 else f"{lo:.1%}–{hi:.1%}"


HEADER = ["#", "configuration", "engine", "weights/KV", "seqs/budget", "GPUs", "$/hour",
          "$/M out", "kWh/M out", "out tok/s/GPU", "tok/s/user", "max req/s", "SLO met",
          "P(SLO met)", "p95 TTFT", "p95 TPOT", "profile", "warnings"]
DROP = ("seqs/budget", "weights/KV", "max req/s", "kWh/M out", "tok/s/user", "$/M out",
        "warnings",
        "profile", "out tok/s/GPU", "SLO met", "engine")
"""The plan tables' columns a narrow terminal leaves out first."""


COMPARE = ["GPU", "best settings", "engine", "weights/KV", "seqs/budget", "$/GPU-hour",
           "req/s per GPU", "out tok/s/GPU", "tok/s/user", "$/M out", "kWh/M out"]


def _compare_row(gpu: str, pt: GpuPoint) -> list[str]:
    c = pt.candidate
    return [gpu, f"{c.gpu} {c.parallel_label}", c.backend, f"{c.weights}/{c.kv_dtype}",
            f"{c.max_num_seqs}/{c.max_num_batched_tokens}",
            f"{pt.usd_per_hour / pt.gpus:,.2f}", _num(pt.requests_per_s_per_gpu, ",.3g"),
            _num(pt.tokens_per_s_per_gpu, ",.0f"), _num(pt.tokens_per_s_per_user, ",.1f"),
            _num(pt.usd_per_m_output_tokens, ",.3f"),
            _num(pt.energy.kwh_per_m_output_tokens if pt.energy else None, ",.3f")]


def gpu_point_record(pt: GpuPoint) -> dict[str, Any]:
    """One swept replica as a flat record (base units)."""
    c = pt.candidate
    return {"gpu": c.gpu, "parallel": c.parallel_label, "backend": c.backend,
            "weights": c.weights, "kv_dtype": c.kv_dtype, "max_num_seqs": c.max_num_seqs,
            "max_num_batched_tokens": c.max_num_batched_tokens, "gpus": pt.gpus,
            "max_requests_per_s": pt.requests_per_s,
            "requests_per_s_per_gpu": pt.requests_per_s_per_gpu,
            "output_tokens_per_s_per_gpu": pt.tokens_per_s_per_gpu,
            "tokens_per_s_per_user": pt.tokens_per_s_per_user,
            "usd_per_hour": pt.usd_per_hour,
            "usd_per_m_output_tokens": pt.usd_per_m_output_tokens,
            "energy_kwh_per_m_output_tokens":
                pt.energy.kwh_per_m_output_tokens if pt.energy else None}


def e_tdp(e: Evaluation) -> float:
    """The candidate GPU's board power, W (catalog ``tdp_w``; 0 where unpublished)."""
    from napkin.catalog import load_accelerator

    return load_accelerator(e.candidate.gpu).tdp_watts or 0.0


def _confidence_notes(rows: list[tuple[int | str, Evaluation]], confidence: float) -> list[str]:
    """Each profile's bands once, then each distinct warning with the rows it applies to."""
    notes: list[str] = []
    profiles: dict[str, Evaluation] = {}
    for _, e in rows:
        profiles.setdefault(e.profile, e)
    for name, e in profiles.items():
        if not name or name == "roofline":
            notes.append("profile roofline: no hold-out residuals, no band; P(SLO met) not "
                         "computed (meeting the SLO at the predicted times is feasible)")
            continue
        bands = ", ".join(f"{k} ×{b[0]:.2f}–{b[1]:.2f}" for k, b in
                          (("TTFT", e.ttft_band), ("TPOT", e.tpot_band)) if b is not None)
        notes.append(f"profile {name}: measured/predicted {bands} on 80 % of its held-out runs; "
                     f"P(SLO met) reads the simulated latencies under those ratios (log-normal, "
                     f"independent) over the seeds; feasible needs P ≥ {confidence:.2f}")
    where: dict[str, list[str]] = {}
    for rank, e in rows:
        for w in e.warnings:
            where.setdefault(w, []).append(str(rank))
    notes += [f"{', '.join(ranks)}: {w}" for w, ranks in where.items()]
    return notes


def evaluation_record(e: Evaluation) -> dict[str, Any]:
    """One evaluated candidate as a flat record (base units; None where not measured)."""
    c, en = e.candidate, e.energy
    return {"gpu": c.gpu, "tensor_parallel": c.tensor_parallel, "replicas": c.replicas,
            "prefill_replicas": c.prefill_replicas,
            "gpus": e.gpus, "weights": c.weights, "kv_dtype": c.kv_dtype,
            "max_num_seqs": c.max_num_seqs, "max_num_batched_tokens": c.max_num_batched_tokens,
            "backend": c.backend, "expert_parallel": c.expert_parallel,
            "data_parallel": c.data_parallel, "two_batch_overlap": c.two_batch_overlap,
            "prefill_parallel": c.prefill_pool().parallel.label() if c.prefill_replicas
            else "",
            "parallel": c.parallel_label, "pipeline_parallel": c.pipeline_parallel,
            "draft_tokens": c.speculative[0] if c.speculative else 0,
            "status": e.status,
            "reason": e.reason,
            "usd_per_hour": e.usd_per_hour, "usd_per_m_output_tokens": e.usd_per_m_output_tokens,
            "capacity_utilization": e.capacity_utilization, "seeds_run": e.seeds_run,
            "stopped_early": e.stopped_early, "slo_met_frac": e.slo_met_frac,
            "slo_met_best": e.slo_met_best,
            "p95_ttft_s": e.p95_ttft_s, "p95_tpot_s": e.p95_tpot_s,
            "output_tokens_per_s": e.output_tokens_per_s,
            "output_tokens_per_s_per_gpu": e.tokens_per_s_per_gpu,
            "tokens_per_s_per_user": e.tokens_per_s_per_user,
            "p_slo_met": e.p_slo_met, "profile": e.profile,
            "ttft_band_low": e.ttft_band[0] if e.ttft_band else None,
            "ttft_band_high": e.ttft_band[1] if e.ttft_band else None,
            "tpot_band_low": e.tpot_band[0] if e.tpot_band else None,
            "tpot_band_high": e.tpot_band[1] if e.tpot_band else None,
            "warnings": "; ".join(e.warnings),
            "mean_power_w": en.mean_power_w if en else None,
            "energy_kwh_per_m_output_tokens": en.kwh_per_m_output_tokens if en else None,
            "energy_usd_per_m_output_tokens": en.usd_per_m_output_tokens if en else None,
            "energy_usd_per_hour": en.usd_per_hour if en else None}


def evaluation_columns(result: PlanResult) -> dict[str, np.ndarray]:
    """Every evaluated candidate, as columns for CSV or Parquet (missing figures as NaN)."""
    records = [evaluation_record(e) for e in result.evaluations]
    cols: dict[str, np.ndarray] = {}
    for key in records[0]:
        values = [r[key] for r in records]
        if all(isinstance(v, str) for v in values):
            cols[key] = np.array(values, dtype=object)
        else:
            cols[key] = np.array([np.nan if v is None else v for v in values], dtype=float)
    return cols


def plan_doc(result: PlanResult, top: int = 15) -> Document:
    plan = result.plan
    share = plan.slo.share
    confidence = plan.slo.confidence
    slo = SLO(plan.slo.ttft_s, plan.slo.tpot_s, share, plan.slo.e2e_s)
    rates = result.max_rates
    feasible = result.feasible
    best = result.cheapest
    sections = []
    if best is not None:
        c = best.candidate
        cmds = launch_commands(c, plan.model)
        notes = [f"{engine}: {cmd}" + ("   ← planned on" if engine == c.backend else "")
                 for engine, cmd in cmds.items()]
        same = c.prefill_pool().parallel == c.parallel
        if c.prefill_replicas and not same:
            notes += [f"prefill replicas, {engine}: {cmd}" for engine, cmd in
                      launch_commands(c.prefill_pool(), plan.model).items()]
        notes.append(f"one command per replica ({c.replicas}), behind a load balancer "
                     f"({plan.router})" if not c.prefill_replicas else
                     f"{c.prefill_replicas} prefill and {c.replicas} decode replicas of "
                     + ("this command" if same else "the decode command and the prefill one")
                     + " with the engine's KV connector for disaggregated serving "
                     "(vLLM --kv-transfer-config, SGLang --disaggregation-mode)")
        if (en := best.energy) is not None:
            m = en.model
            notes.append(
                f"energy: {en.mean_power_w / best.gpus:,.0f} W per GPU on average "
                f"({best.gpus} × {e_tdp(best):,.0f} W board power; prefill "
                f"{m.prefill_power_frac:g}×, decode {m.decode_power_frac:g}×, idle "
                f"{m.idle_power_frac:g}× of it, PUE {m.pue:g}): "
                f"{en.kwh_per_m_output_tokens or 0:,.3g} kWh per million output tokens"
                + ("" if en.usd_per_hour is None else
                   f"; $/hour = GPU rent ${best.usd_per_hour:,.2f} + energy "
                   f"${en.usd_per_hour:,.2f} at ${m.usd_per_kwh:g}/kWh "
                   f"(${en.usd_per_m_output_tokens:,.3g} per million output tokens)"))
        cheaper = [e for e in result.knife_edge if e.usd_per_hour < best.usd_per_hour]
        if cheaper:
            notes.append(f"{len(cheaper)} cheaper configuration(s) meet the SLO at the "
                         f"predicted times but not surely (P(SLO met) < {confidence:.2f}): "
                         "see 'knife-edge' below")
        sections.append(Section(
            "cheapest configuration that carries the load", HEADER,
            [_row(1, best, rates.get(c))], notes + _confidence_notes([(1, best)], confidence),
            DROP))
    shown = list(enumerate(feasible[:top], 1))
    sections.append(Section(
        f"feasible configurations, cheapest first ({min(top, len(feasible))} of "
        f"{len(feasible)})", HEADER,
        [_row(i, e, rates.get(e.candidate)) for i, e in shown],
        [f"feasible: at least {share:.0%} of requests meet {slo.describe()} in every "
         f"one of {plan.seeds} seeds, with P(SLO met) ≥ {confidence:.2f}; SLO met, "
         "percentiles and tokens/s are the worst seed's; tok/s/user = 1/median TPOT; max "
         "req/s: the highest offered rate still feasible (one seed, within 10 %), for the "
         "cheapest of each GPU type; warnings: how many ways the configuration lies outside "
         "its profile's fitted domain (listed below by row)",
         *_confidence_notes(shown, confidence)], DROP))
    edge = result.knife_edge[:top]
    if edge:
        sections.append(Section(
            f"knife-edge: meet the SLO at the predicted times, P(SLO met) < {confidence:.2f} "
            f"({len(edge)} of {len(result.knife_edge)}, cheapest first)", HEADER,
            [_row(f"k{i}", e, None) for i, e in enumerate(edge, 1)],
            ["not ranked: a real engine as far off as the profile's held-out runs would miss "
             "the SLO too often; more replicas of the same configuration were tried next",
             *_confidence_notes([(f"k{i}", e) for i, e in enumerate(edge, 1)], confidence)],
            DROP))
    by_gpu = result.cheapest_by_gpu()
    if by_gpu:
        sections.append(Section(
            "cheapest per GPU type", HEADER,
            [_row(gpu, e, rates.get(e.candidate)) for gpu, e in by_gpu.items()], [], DROP))
    best_gpu = result.gpu_best()
    if best_gpu:
        sections.append(Section(
            "GPUs side by side: one replica of each GPU type's best settings at its maximum "
            "sustainable rate", COMPARE,
            [_compare_row(gpu, pt) for gpu, pt in best_gpu.items()],
            ["every configuration that met the SLO, run as one replica at its maximum "
             "sustainable offered rate (one seed, within 10 %); per GPU type the settings with "
             "the most requests/s per GPU; $/M out = $/GPU-hour / (output tokens/s per GPU · "
             f"3600) · 10⁶; {len(result.gpu_points)} configurations swept"], ("kWh/M out",
                                                                              "tok/s/user")))
    reasons = Counter(e.reason.split(":")[0] for e in result.evaluations
                      if e.status == "pruned")
    n = len(result.evaluations)
    simulated = n - result.count("pruned")
    prices = sorted({e.candidate.gpu for e in result.evaluations})
    summary = [
        ["candidates", f"{n:,}"],
        *[[f"pruned: {k}", f"{v:,}"] for k, v in sorted(reasons.items())],
        ["simulated configurations", f"{simulated:,} ({result.count('feasible')} feasible, "
                                      f"{result.count('knife-edge')} knife-edge, "
                                      f"{result.count('infeasible')} not)"],
        ["simulations (configuration × seed)", f"{result.simulations:,}"],
        ["workers", f"{result.jobs}"],
    ]
    price_notes = []
    for gpu in prices:
        p = price_of(gpu, plan.prices)
        price_notes.append(f"{gpu}: ${p.usd_per_gpu_hour:,.2f}/GPU-hour — {p.source}"
                           + (f" ({p.date})" if p.date else ""))
    sections.append(Section("search", ["", ""], summary,
                            ["pruned before simulating: weights or the longest request do not "
                             "fit, the analytic capacity bound is below the offered load, or "
                             "fewer replicas of the same configuration already meet the SLO",
                             *price_notes]))
    if best is None:
        sections.insert(0, Section("no feasible configuration", ["", ""], [], [
            "no candidate meets the SLO: widen the search (more GPUs, replicas, TP), relax the "
            "SLO, or lower the load"]))
    data = {"cheapest": evaluation_record(best) if best else None,
            "launch": launch_commands(best.candidate, plan.model) if best else None,
            "max_sustainable_rate": [{**evaluation_record(e),
                                      "max_requests_per_s": rates.get(e.candidate)}
                                     for e in by_gpu.values()],
            "evaluations": [evaluation_record(e) for e in result.evaluations],
            "pareto": [result.evaluations.index(e) for e in result.pareto],
            "knife_edge": [result.evaluations.index(e) for e in result.knife_edge],
            "pareto_by_gpu": {gpu: [result.evaluations.index(e) for e in front]
                              for gpu, front in result.pareto_by_gpu().items()},
            "gpus_side_by_side": {gpu: gpu_point_record(pt) for gpu, pt in best_gpu.items()},
            "gpu_points": [gpu_point_record(pt) for pt in result.gpu_points],
            "search": {"candidates": n, "simulations": result.simulations,
                       "jobs": result.jobs}}
    timing = {"wall_s": result.wall_s,
              "configurations_per_s": n / max(result.wall_s, 1e-9),
              "simulations_per_s": result.simulations / max(result.wall_s, 1e-9)}
    return Document("Plan", {"plan": plan.name, "model": plan.model},
                    {"slo_ttft_s": plan.slo.ttft_s, "slo_tpot_s": plan.slo.tpot_s,
                     "slo_e2e_s": plan.slo.e2e_s,
                     "slo_share": share, "slo_confidence": confidence, "seeds": plan.seeds,
                     "calibration": plan.calibration,
                     "usd_per_kwh": plan.energy.usd_per_kwh, "pue": plan.energy.pue,
                     "prefill_power_frac": plan.energy.prefill_power_frac,
                     "decode_power_frac": plan.energy.decode_power_frac,
                     "idle_power_frac": plan.energy.idle_power_frac,
                     "router": plan.router}, sections, data,
                    timing)
