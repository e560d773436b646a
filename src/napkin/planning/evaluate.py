"""Evaluating one candidate deployment: prune it analytically, else simulate it over seeds.

1. **Fit**: the weights, the activation peak and the reserve must leave KV memory on every
   device (the scenario's own KV-pool derivation), TP must divide the attention heads, and one
   replica's pool must hold the longest request drawn.
2. **Capacity bound**: per replica, offered work per second must be below 1 s of engine time.
   A request costs at least ``input · t_prefill + output · t_decode`` with t_prefill the
   per-token time of a full-budget prefill step of the mean prompt and t_decode the per-token
   time of a decode step of the largest batch the KV pool and ``max_num_seqs`` allow, at the
   mean context (the cheapest steps the engine can run, by its own step-time model). With
   offered rate λ over R replicas, ``ρ = (λ/R) · (mean input · t_prefill + mean output ·
   t_decode)``; ρ ≥ 1 cannot keep up. A frontend queue (``frontend``) is bound the same way:
   ``(λ/R) · its work for the mean request`` ≥ 1 cannot keep up either.
3. **Simulation** over the plan's seeds, stopped as soon as more than ``(1 − share)`` of the
   requests have missed the SLO; it meets the SLO only when every seed does.
4. **Confidence**: a configuration that meets it is feasible when, under its calibration
   profile's error bands, P(SLO met) ≥ ``slo.confidence``
   (:mod:`napkin.serving.confidence`); below that it is *knife-edge*: met at the predicted
   times, not surely by a real engine. Without a band (the roofline) meeting it is feasible.
"""

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from napkin.accounting.energy import Energy
from napkin.errors import NapkinError
from napkin.inference.decision import usd_per_million
from napkin.planning.prices import price_of
from napkin.planning.spec import Candidate, PlanFile
from napkin.serving.arrivals import OpenLoop
from napkin.serving.confidence import confidence
from napkin.serving.load import offered_rate
from napkin.serving.metrics import RequestLatencies, SimSummary, counted, summarize
from napkin.serving.scenario import Built, build
from napkin.serving.sweep import slo_miss_stop
from napkin.serving.work import phase_work, run_energy
from napkin.serving.workload import Workload

Status = Literal["feasible", "knife-edge", "infeasible", "pruned"]


@dataclass(frozen=True)
class Evaluation:
    """What one candidate came to."""

    candidate: Candidate
    status: Status
    reason: str
    usd_per_hour: float
    capacity_utilization: float | None = None
    """The analytic bound ρ (see the module docstring); None where it was not computed."""
    seeds_run: int = 0
    stopped_early: bool = False
    slo_met_frac: float | None = None
    """Worst seed's share of requests meeting both bounds (of those finished if stopped)."""
    p95_ttft_s: float | None = None
    p95_tpot_s: float | None = None
    output_tokens_per_s: float | None = None
    """Worst seed's served output tokens/s over the makespan."""
    tokens_per_s_per_user: float | None = None
    """1 / median TPOT of the worst seed."""
    sim_s: float = 0.0
    slo_met_best: float | None = None
    """Best seed's share: with ``slo_met_frac``, the spread over seeds."""
    profile: str = ""
    """The calibration profile timing the steps (``roofline``: none); empty where the
    candidate was not built."""
    warnings: tuple[str, ...] = ()
    """Where the candidate lies outside the profile's fitted domain."""
    ttft_band: tuple[float, float] | None = None
    """The profile's measured/predicted TTFT ratio interval (10th, 90th percentile)."""
    tpot_band: tuple[float, float] | None = None
    p_slo_met: float | None = None
    """P(SLO met) under the profile's bands, mean over seeds (None: not computed — no band,
    or the simulation did not meet the SLO)."""
    energy: Energy | None = None
    """The seeds' runs' energy together (None: not simulated in full, no board power, a
    closed loop or disaggregated pools)."""

    @property
    def gpus(self) -> int:
        return self.candidate.gpus

    @property
    def tokens_per_s_per_gpu(self) -> float | None:
        t = self.output_tokens_per_s
        return None if t is None else t / self.gpus

    @property
    def usd_per_m_output_tokens(self) -> float | None:
        t = self.output_tokens_per_s
        return None if not t else usd_per_million(1.0, t, self.usd_per_hour)


def capacity_utilization(built: Built) -> float | None:
    """ρ of the module docstring for an open-loop workload (None for closed loops)."""
    w = phase_work(built)
    if w is None:
        return None
    return w.offered_per_s / built.scenario.engine.replicas * (w.prefill_s + w.decode_s)


def frontend_utilization(built: Built) -> float | None:
    """The frontend's share of the module docstring's bound: offered requests/s per replica
    over what its frontend queue serves of the mean request (None: no frontend, or a closed
    loop or disaggregated pools)."""
    f, src = built.frontend, built.source
    if (f is None or not f.active or not isinstance(src, OpenLoop) or len(src.requests) < 2
            or built.disagg is not None):
        return None
    reqs = src.requests
    per_replica = offered_rate(reqs.arrival_s) / built.scenario.engine.replicas
    return per_replica / f.requests_per_s(float(reqs.input_tokens.mean()),
                                          float(reqs.output_tokens.mean()))


def _fits(built: Built) -> str | None:
    """Why one replica cannot hold the longest request drawn (None: it can)."""
    src = built.source
    if isinstance(src, OpenLoop) and len(src.requests):
        longest = int((src.requests.input_tokens + src.requests.output_tokens).max())
        blocks = math.ceil(longest / built.spec.block_size)
        if blocks > built.spec.num_blocks:
            return (f"KV pool of {built.spec.num_blocks * built.spec.block_size:,} tokens per "
                    f"replica is below the longest request ({longest:,} tokens)")
    return None


def evaluate(candidate: Candidate, plan: PlanFile, workload: Workload, base_dir: Path
             ) -> Evaluation:
    """Prune, else simulate, ``candidate`` (see the module docstring)."""
    usd = price_of(candidate.gpu, plan.prices).usd_per_gpu_hour * candidate.gpus
    scenario = candidate.scenario(plan, workload)
    try:
        built = build(scenario, base_dir, 0)
    except NapkinError as e:
        return Evaluation(candidate, "pruned", f"does not fit: {e}", usd)
    bands = {k: (b.ratio_low, b.ratio_high)
             for k, b in (built.profile.bands.items() if built.profile else ())}
    known = {"profile": built.calibration, "warnings": built.warnings,
             "ttft_band": bands.get("ttft"), "tpot_band": bands.get("tpot")}
    if (why := _fits(built)) is not None:
        return Evaluation(candidate, "pruned", f"does not fit: {why}", usd, **known)
    rho = capacity_utilization(built)
    if rho is not None and rho >= 1:
        return Evaluation(candidate, "pruned", f"capacity bound: offered work is {rho:.2f}× "
                          "what the replicas can run", usd, rho, **known)
    frontend_load = frontend_utilization(built)
    if frontend_load is not None and frontend_load >= 1:
        return Evaluation(candidate, "pruned", f"frontend bound: offered requests are "
                          f"{frontend_load:.2f}× what the replicas' frontends serve", usd, rho,
                          **known)
    start = time.perf_counter()
    summaries: list[SimSummary] = []
    latencies: list[RequestLatencies] = []
    stopped = False
    for seed in range(plan.seeds):
        b = built if seed == 0 else build(scenario, base_dir, seed)
        run = b.simulate(stop=slo_miss_stop(b, plan.slo.share))
        summaries.append(summarize(run, b.slo, b.warmup))
        latencies.append(RequestLatencies.of(counted(run.records, b.warmup)))
        if run.stopped or summaries[-1].slo_met_frac < plan.slo.share:
            stopped = run.stopped
            break
    worst = min(summaries, key=lambda s: s.slo_met_frac)
    met = not stopped and len(summaries) == plan.seeds and all(
        s.slo_met_frac >= plan.slo.share for s in summaries)
    p = confidence(latencies, built.slo, built.profile) if met else None
    status: Status = ("infeasible" if not met else
                      "knife-edge" if p is not None and p < plan.slo.confidence else "feasible")
    reason = (f"seed {len(summaries) - 1}: {'stopped once ' if stopped else ''}"
              f"{1 - worst.slo_met_frac:.1%} of requests missed the SLO"
              + (" (of those finished)" if stopped else "") if not met else
              f"every seed meets the SLO ({worst.slo_met_frac:.1%} ≥ {plan.slo.share:.0%})"
              + ("" if p is None else
                 f", P(SLO met) {p:.2f} {'<' if status == 'knife-edge' else '≥'} "
                 f"{plan.slo.confidence:.2f} under profile {built.calibration!r}'s bands"))
    tpot_p50 = max(s.tpot.p50_s for s in summaries)
    return Evaluation(
        candidate, status, reason, usd, rho, len(summaries),
        stopped, worst.slo_met_frac, max(s.ttft.p95_s for s in summaries),
        max(s.tpot.p95_s for s in summaries),
        None if stopped else min(s.output_tokens_per_s for s in summaries),
        1 / tpot_p50 if tpot_p50 > 0 and np.isfinite(tpot_p50) else None,
        time.perf_counter() - start, max(s.slo_met_frac for s in summaries),
        p_slo_met=p, energy=run_energy(built, summaries, candidate.gpus, plan.energy.model())
        if met else None, **known)
