"""Documents for ``napkin serve``: demand, fluid queue, simulation reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from napkin.report.document import Document, Section
from napkin.report.views import checkpoint_notes, energy_record, unquantized_input
from napkin.serving.metrics import TREND_SHARE, Latency, SimSummary, latency_bands
from napkin.serving.replica import nvlink_domain
from napkin.serving.scenario import Built
from napkin.timing.frontend import FRONTEND_FIELDS
from napkin.units import GiB, fmt_seconds

if TYPE_CHECKING:
    from napkin.calibration.profile import Profile
    from napkin.serving.demand import WindowDemand
    from napkin.serving.fluid import FluidResult
    from napkin.serving.sweep import SweepResult


def demand_doc(name: str, windows: tuple[WindowDemand, ...], overall: WindowDemand) -> Document:
    cols = ["window", "requests", "new input tokens/s", "decode steps/s", "mean decode context"]
    rows = [[f"{w.start_s:g}–{w.start_s + w.duration_s:g} s", f"{w.requests:,}",
             f"{w.input_tokens_per_s:,.1f}", f"{w.decode_steps_per_s:,.1f}",
             f"{w.mean_decode_context:,.1f}"] for w in (*windows, overall)]
    rows[-1][0] = f"all ({overall.duration_s:g} s)"
    notes = ["decode steps = output tokens − 1 per request (the prefill yields the first); "
             "mean decode context weighted by steps, Σ(G−1)(P + (G−2)/2) / Σ(G−1)"]
    return Document(f"{name}: demand per window", {"workload": name}, {},
                    [Section("demand", cols, rows, notes)],
                    {"windows": windows, "overall": overall})


def fluid_doc(name: str, result: FluidResult, capacity: dict[str, Any]) -> Document:
    cols = ["window", "arrivals (steps/s)", "capacity (steps/s)", "backlog at start",
            "backlog at end"]
    rows = [[f"{w.start_s:g}–{w.start_s + w.duration_s:g} s", f"{w.arrival_rate_per_s:,.2f}",
             f"{w.capacity_per_s:,.2f}", f"{w.backlog_start:,.0f}", f"{w.backlog_end:,.0f}"]
            for w in result.windows]
    notes = [result.describe_drain(),
             f"total decode steps {result.total_steps:,.0f} (Σ A_k over the windows)",
             "Q_{k+1} = max(0, Q_k + A_k − μ·Δt); decode steps counted at arrival"]
    data = {"windows": result.windows, "peak_backlog_steps": result.peak_backlog,
            "final_backlog_steps": result.final_backlog, "drain_s": result.drain_s,
            "emptied_at_s": result.emptied_at_s, "total_steps": result.total_steps,
            "empty_at_s": result.empty_at_s}
    return Document(f"{name}: fluid queue", {"workload": name}, capacity,
                    [Section("backlog", cols, rows, notes)], data)


@dataclass(frozen=True)
class SimReport:
    name: str
    built: Built
    summary: SimSummary
    wall_s: float


def _lat(lat: Latency) -> list[str]:
    return [fmt_seconds(v, 3) for v in (lat.mean_s, lat.p50_s, lat.p90_s, lat.p95_s, lat.p99_s)]


def scenario_inputs(b: Built) -> dict[str, Any]:
    s, e = b.scenario, b.scenario.engine
    return {
        "model": b.model.name, "gpu": b.acc.id, "weights": b.precision.weights.name,
        "kv_dtype": b.precision.kv.name, **unquantized_input(b.precision),
        "calibration": b.calibration,
        **({"mfu": b.eff.mfu, "mbu": b.eff.mbu, "step_overhead_s": b.eff.overhead_s}
           if b.profile is None else {"backend": e.backend}),
        "max_num_seqs": e.max_num_seqs,
        "max_num_batched_tokens": e.max_num_batched_tokens, "block_size": e.block_size,
        "kv_pool_bytes": b.kv_pool_bytes, "kv_blocks": b.spec.num_blocks,
        "prefix_caching": e.enable_prefix_caching, "tensor_parallel": e.tensor_parallel,
        **({"layout": b.layout.label(), "data_parallel": e.data_parallel,
            "expert_parallel": e.expert_parallel, "redundant_experts": e.redundant_experts,
            **({"expert_balancedness": e.expert_balancedness}
               if e.expert_balancedness is not None else {}),
            "two_batch_overlap": e.two_batch_overlap, "gpus_per_node": nvlink_domain(e, b.acc),
            "internode_bytes_per_s": e.internode_gbs * 1e9}
           if not b.layout.is_tensor_parallel else {}),
        **({"draft_tokens": b.spec.speculative.draft_tokens,
            "acceptance": list(b.spec.speculative.acceptance),
            "draft_cost": b.spec.speculative.draft_cost,
            "tokens_per_step": b.spec.speculative.tokens_per_step}
           if b.spec.speculative is not None else {}),
        **({"pipeline_parallel": e.pipeline_parallel} if e.pipeline_parallel > 1 else {}),
        **({"async_scheduling": True} if e.async_scheduling else {}),
        **({f"frontend_{k}": getattr(b.frontend, k) for k in FRONTEND_FIELDS}
           if b.frontend is not None and b.frontend.active else {}),
        "replicas": e.replicas, "router": e.router, "mode": e.mode, "batching": e.batching,
        "slo_ttft_s": s.slo.ttft_s, "slo_tpot_s": s.slo.tpot_s, "slo_e2e_s": s.slo.e2e_s,
        "slo_share": s.slo.share,
    }


def overload_line(name: str, s: SimSummary, factor: float) -> str:
    return (f"warning: {name}: overloaded — offered {s.offered_requests_per_s:,.3g} requests/s, "
            f"served {s.requests_per_s:,.3g} ({factor:.2f}× what this deployment carries); "
            f"the backlog drains {fmt_seconds(s.drain_s)} after the last arrival")


def sim_doc(reports: list[SimReport]) -> Document:
    """Side-by-side summary of one or more simulated scenarios."""
    names = [r.name for r in reports]
    lat_rows = []
    for label, attr in (("TTFT", "ttft"), ("TPOT", "tpot"), ("end-to-end", "e2e"),
                        ("queue wait", "queue_wait"), ("wait to first schedule",
                                                       "first_schedule_wait")):
        for r in reports:
            lat_rows.append([label if r is reports[0] else "", r.name,
                             *_lat(getattr(r.summary, attr))])
    notes = []
    for r in reports:
        bands = latency_bands(r.summary, r.built.profile)
        p = r.built.profile
        if p is not None:  # (the profile module: loaded for a profile's runs only)
            from napkin.calibration.profile import BAND_COVERAGE
        if p is not None and bands:
            lat_rows.append(["TTFT band", r.name, *[
                f"{fmt_seconds(bands[f'ttft_{k}_low_s'], 3)}–"
                f"{fmt_seconds(bands[f'ttft_{k}_high_s'], 3)}"
                for k in ("mean", "p50", "p90", "p95", "p99")]])
            lat_rows.append(["TPOT band", r.name, *[
                f"{fmt_seconds(bands[f'tpot_{k}_low_s'], 3)}–"
                f"{fmt_seconds(bands[f'tpot_{k}_high_s'], 3)}"
                for k in ("mean", "p50", "p90", "p95", "p99")]])
            t, o = p.bands.get("ttft"), p.bands.get("tpot")
            fitted = p.domain.versions
            releases = (f", release {fitted[0]}" if len(fitted) == 1 else
                        f", releases {fitted[0]}–{fitted[-1]}" if fitted else "")
            notes.append(f"{r.name}: calibration profile {p.name!r} ({p.backend}{releases}); "
                         "bands are "
                         f"the {BAND_COVERAGE:.0%} hold-out interval"
                         + (f", TTFT ×{t.ratio_low:.2f}–{t.ratio_high:.2f}" if t else "")
                         + (f", TPOT ×{o.ratio_low:.2f}–{o.ratio_high:.2f}" if o else "")
                         + _harness_note(p))
        elif p is not None:
            t = p.bands.get("throughput")
            notes.append(f"{r.name}: calibration profile {p.name!r} ({p.backend}); no TTFT or "
                         "TPOT band: fitted and held out on offline throughput only"
                         + (f" (median |error| {t.median_abs_error:.1%}, {BAND_COVERAGE:.0%} of "
                            f"measured/predicted ratios in ×{t.ratio_low:.2f}–{t.ratio_high:.2f})"
                            if t else ""))
        else:
            notes.append(f"{r.name}: calibration roofline (MFU {r.built.eff.mfu:g}, MBU "
                         f"{r.built.eff.mbu:g}, {r.built.eff.overhead_s * 1e3:g} ms per step); "
                         "no error band")
        notes += [f"warning: {r.name}: {w}" for w in r.built.warnings]
        notes += [f"{r.name}: {n}" for n in checkpoint_notes(r.built.model, r.built.precision)]
        if (f := r.summary.overload_factor) is not None:
            notes.append(overload_line(r.name, r.summary, f))
    lat = Section("latency (nearest-rank percentiles)",
                  ["metric", "scenario", "mean", "p50", "p90", "p95", "p99"], lat_rows, notes)

    def row(label: str, fmt) -> list[str]:
        return [label, *[fmt(r) for r in reports]]

    s = lambda r: r.summary  # noqa: E731
    totals = Section("throughput, KV and preemption", ["", *names], [
        row("requests", lambda r: f"{s(r).requests:,}"),
        row("makespan", lambda r: fmt_seconds(s(r).makespan_s)),
        row("last finish", lambda r: fmt_seconds(s(r).last_finish_s)),
        row("output tokens/s", lambda r: f"{s(r).output_tokens_per_s:,.1f}"),
        row("offered requests/s", lambda r: f"{s(r).offered_requests_per_s:,.3f}"),
        row("served requests/s", lambda r: f"{s(r).requests_per_s:,.3f}"),
        row("SLO met", lambda r: f"{s(r).slo_met_frac:.1%} ({s(r).slo.describe()})"),
        row("goodput, requests/s", lambda r: f"{s(r).goodput_requests_per_s:,.3f}"),
        row("preemptions", lambda r: f"{s(r).preemptions:,} ({s(r).preempted_requests:,} "
            "requests)"),
        row("KV pool", lambda r: f"{r.built.kv_pool_bytes / GiB:,.2f} GiB = "
            f"{s(r).kv_blocks:,} blocks"),
        row("peak KV use", lambda r: f"{s(r).peak_kv_frac:.1%}"),
        row("mean KV tokens held", lambda r: f"{s(r).mean_kv_tokens:,.0f}"),
        row("KV state held", lambda r: f"{s(r).kv_state_gib_s:,.1f} GiB·s"),
        row("prefix-cache hits", lambda r: f"{s(r).prefix_hit_frac:.1%} of input tokens"),
        *([row("host KV tier: loaded", lambda r: _host_tier(r))]
          if any(r.built.scenario.engine.kv_offload for r in reports) else []),
        *([row("frontend busy", lambda r: f"{s(r).frontend_busy_frac:.1%} of the span")]
          if any(r.built.frontend is not None for r in reports) else []),
        row("engine steps / simulated units", lambda r: f"{s(r).steps:,} / "
            f"{s(r).sim_units:,}"),
        row("slot use", lambda r: f"{s(r).slot_use_frac:.1%} "
            f"({r.built.scenario.engine.batching} batching)"),
        row("pools: replicas, busy, peak KV", lambda r: "; ".join(
            f"{p.name} {p.replicas}× busy {p.busy_frac:.0%} KV {p.peak_kv_frac:.0%}"
            for p in s(r).pools)),
    ], ["TTFT = first token − arrival; TPOT = (finish − first token)/(G − 1); slot use = "
        "sequences computed per step / max_num_seqs, averaged over steps; step times "
        "come from the calibration named above (a fitted profile, or the roofline at the "
        "MFU/MBU given plus the step overhead)"])
    inputs = {r.name: scenario_inputs(r.built) for r in reports}
    first = inputs[names[0]]
    shared = {k: v for k, v in first.items() if all(inputs[n].get(k) == v for n in names)}
    data = {"scenarios": [{"name": r.name, "inputs": scenario_inputs(r.built),
                           "pool_derivation": r.built.pool_derivation, "summary": r.summary,
                           "calibration": r.built.profile.to_dict() if r.built.profile
                           else {"name": "roofline"},
                           "bands": latency_bands(r.summary, r.built.profile),
                           "warnings": list(r.built.warnings)} for r in reports]}
    return Document("Serving simulation", {"scenarios": ", ".join(names)}, shared,
                    [lat, totals], data, {f"{r.name}: wall_s": r.wall_s for r in reports})

def _host_tier(r: SimReport) -> str:
    """A run's host KV tier: its size and what it loaded back (tokens, engine seconds)."""
    o, m = r.built.scenario.engine.kv_offload, r.summary
    if o is None:
        return "none"
    return (f"{o.host_gib:g} GiB; {m.host_kv_loaded_tokens:,} tokens in "
            f"{fmt_seconds(m.host_kv_load_s)}")


def sweep_doc(result: SweepResult, built: Built) -> Document:
    """The sweep table (worst seed per load) and the maximum sustainable load."""
    unit = result.unit
    rows = []
    for p in result.points:
        if p.stopped:  # decided, not measured: its figures would cover the early finishers
            rows.append([f"{p.load:,.4g}", f"< {result.share:.0%}", "—", *["—"] * 6, "no",
                         "stopped early"])
            continue
        worst = min(p.summaries, key=lambda s: s.slo_met_frac)
        met = [s.slo_met_frac for s in p.summaries]
        spread = f"{min(met):.1%}" if len(met) == 1 else f"{min(met):.1%}–{max(met):.1%}"
        flag = ("over capacity" if p.over_capacity else "queue growing" if p.growing
                else "overloaded" if worst.overload_factor is not None else "")
        rows.append([f"{p.load:,.4g}", spread,
                     "—" if p.p_slo_met is None else f"{p.p_slo_met:.2f}",
                     fmt_seconds(max(s.ttft.p95_s for s in p.summaries), 3),
                     fmt_seconds(max(s.tpot.p95_s for s in p.summaries), 3),
                     fmt_seconds(max(s.e2e.p95_s for s in p.summaries), 3),
                     f"{min(s.output_tokens_per_s for s in p.summaries):,.0f}",
                     f"{min(s.goodput_requests_per_s for s in p.summaries):,.3f}",
                     "—" if p.energy is None or p.energy.kwh_per_m_output_tokens is None
                     else f"{p.energy.kwh_per_m_output_tokens:,.3f}",
                     "yes" if p.sustainable(result.share) else "no", flag])
    lo, hi = result.bracket
    if result.max_sustainable is None:
        verdict = (f"no load tried down to {hi:,.4g} {unit} is sustainable: fewer than "
                   f"{result.share:.0%} of requests meet the SLO")
    elif hi is None:
        verdict = (f"maximum sustainable load ≥ {lo:,.4g} {unit} (every load tried was "
                   "sustainable)")
    else:
        verdict = (f"maximum sustainable load {lo:,.4g} {unit} ({hi:,.4g} is not): at least "
                   f"{result.share:.0%} of requests meet {built.slo.describe()} in every seed")
    if (band := result.band) is not None:
        lo_r, hi_r = result.step_band or (1.0, 1.0)
        sure = result.sure
        verdict += (f"; with profile {built.calibration!r}'s step-time band (TPOT "
                    f"×{lo_r:.2f}–{hi_r:.2f}), {band[0]:,.4g}–{band[1]:,.4g} {unit} (80 %); "
                    f"at the simulated speed, P(SLO met) ≥ {result.confidence:.2f} up to "
                    + ("no load run in full" if sure is None else f"{sure:,.4g} {unit}"))
    notes = [verdict, f"the scenario's own load is {result.base_load:,.4g} {unit}; seeds "
             f"{', '.join(map(str, result.seeds))}; percentiles and throughput are the worst "
             "seed's", f"step times: calibration {built.calibration}"]
    if result.capacity is not None:
        notes.append(f"capacity {result.capacity:,.4g} {unit} (the scenario's requests all "
                     "queued at once): no higher load is sustainable; a load whose last "
                     "quarter of arrivals waits longer for its first step than its second "
                     f"quarter by more than {TREND_SHARE:.0%} of the TTFT bound has a queue "
                     "still growing, and is not sustainable either")
    if any(p.stopped for p in result.points):
        notes.append("stopped early: a load the search only had to decide, stopped once more "
                     f"than {1 - result.share:.0%} of a seed's requests had missed the SLO (its "
                     "figures would cover only the requests finished by then: the JSON keeps "
                     "them, marked stopped)")
    notes += [f"warning: {w}" for w in built.warnings]
    section = Section(f"{result.scenario}: load sweep",
                      [f"load, {unit}", "SLO met", "P(SLO met)", "p95 TTFT", "p95 TPOT",
                       "p95 e2e", "output tokens/s", "goodput, req/s", "kWh/M out",
                       "sustainable", ""], rows, notes)
    data = {"unit": unit, "base_load": result.base_load, "share": result.share,
            "seeds": list(result.seeds), "max_sustainable": result.max_sustainable,
            "bracket": list(result.bracket), "capacity": result.capacity,
            "confidence": result.confidence, "sure": result.sure,
            "band": list(result.band) if result.band else None,
            "points": [{"load": p.load, "sustainable": p.sustainable(result.share),
                        "stopped": p.stopped, "over_capacity": p.over_capacity,
                        "queue_growing": p.growing, "p_slo_met": p.p_slo_met,
                        "energy": energy_record(p.energy) if p.energy else None,
                        "summaries": list(p.summaries)}
                       for p in result.points]}
    return Document("Load sweep", scenario_inputs(built),
                    {"slo_share": result.share, "calibration": built.calibration},
                    [section], data)


def _harness_note(p: Profile) -> str:
    """What a profile's TTFT leaves out: the harness latencies its campaigns carried."""
    lat = p.harness_latencies_s
    if not lat:
        return ""
    span = (f"{min(lat) * 1e3:.0f}" if len(lat) == 1 else
            f"{min(lat) * 1e3:.0f}–{max(lat) * 1e3:.0f}")
    frontend = f"{p.model.request_s * 1e3:.1f} ms" + (
        f" + {p.model.request_token_s * 1e6:.2f} µs a prompt token" if p.model.request_token_s
        else "")
    return (f"; TTFT counts {frontend} outside the engine (request_s), "
            f"not the {span} ms of harness latency its benchmark campaigns carried")
