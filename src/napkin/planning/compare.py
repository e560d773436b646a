"""GPUs side by side: each GPU type at its own best engine settings.

A plan's cheapest configuration per GPU type answers "what carries this load for least", which
sizes each GPU's deployment to the load and so says little about the GPU: two types can both
need "about 19 req/s of headroom". Here every configuration (but for its replica count) that met
the SLO is run as **one replica** at its maximum sustainable offered rate (one seed, the
sweep's bisection within 10 %: :func:`napkin.serving.sweep.sweep`); per GPU type the settings
with the most requests/s per GPU win. At that rate:

- requests/s and output tokens/s per GPU (served output tokens over the makespan / GPUs),
- tokens/s per user = 1 / median TPOT,
- $ per million output tokens = $/GPU-hour / (output tokens/s per GPU · 3600) · 10⁶,
- energy per million output tokens (:func:`napkin.serving.work.run_energy`).
"""

from dataclasses import dataclass, replace
from pathlib import Path

from napkin.accounting.energy import Energy
from napkin.inference.decision import usd_per_million
from napkin.planning.evaluate import Evaluation
from napkin.planning.prices import price_of
from napkin.planning.spec import Candidate, PlanFile
from napkin.serving.metrics import SimSummary
from napkin.serving.scenario import build
from napkin.serving.work import run_energy
from napkin.serving.workload import Workload


@dataclass(frozen=True)
class GpuPoint:
    """One replica of a configuration at its maximum sustainable offered rate."""

    candidate: Candidate
    """The configuration with one replica."""
    requests_per_s: float | None
    """Its maximum sustainable offered rate (None: not even the lowest load tried)."""
    output_tokens_per_s: float | None
    tokens_per_s_per_user: float | None
    usd_per_hour: float
    energy: Energy | None = None

    @property
    def gpus(self) -> int:
        return self.candidate.gpus

    @property
    def requests_per_s_per_gpu(self) -> float | None:
        r = self.requests_per_s
        return None if r is None else r / self.gpus

    @property
    def tokens_per_s_per_gpu(self) -> float | None:
        t = self.output_tokens_per_s
        return None if t is None else t / self.gpus

    @property
    def usd_per_m_output_tokens(self) -> float | None:
        t = self.output_tokens_per_s
        return None if not t else usd_per_million(1.0, t, self.usd_per_hour)


def single_replicas(evaluations: tuple[Evaluation, ...]) -> list[Candidate]:
    """One replica of every aggregated configuration that met the SLO (feasible or
    knife-edge), in search order, each once."""
    out: list[Candidate] = []
    for e in evaluations:
        c = e.candidate
        if e.status in ("feasible", "knife-edge") and not c.prefill_replicas:
            one = replace(c, replicas=1)
            if one not in out:
                out.append(one)
    return out


def gpu_point(args: tuple[Candidate, PlanFile, Workload, Path]) -> GpuPoint:
    """Sweep one replica of a configuration (module docstring)."""
    from napkin.serving.sweep import sweep

    c, plan, workload, base_dir = args
    scenario = c.scenario(plan, workload)
    usd = price_of(c.gpu, plan.prices).usd_per_gpu_hour * c.gpus
    result = sweep(scenario, base_dir, loads=None, seeds=(0,), rel_tol=0.1, extra_points=False)
    top = result.max_sustainable
    point = next((p for p in result.points if p.load == top), None)
    if top is None or point is None or not point.summaries:
        return GpuPoint(c, top, None, None, usd)
    s: SimSummary = point.summaries[0]
    tpot = s.tpot.p50_s
    scaled = scenario.model_copy(update={"workload": _scaled(workload, top, result.base_load)})
    built = build(scaled, base_dir, 0)
    return GpuPoint(c, top, s.output_tokens_per_s, 1 / tpot if tpot > 0 else None, usd,
                    run_energy(built, [s], c.gpus, plan.energy.model()))


def _scaled(workload: Workload, load: float, base: float) -> Workload:
    from napkin.serving.load import scale_load

    return scale_load(workload, load / base)


def best_per_gpu(points: list[GpuPoint]) -> dict[str, GpuPoint]:
    """Per GPU type (in first-seen order) the point with the most requests/s per GPU (ties:
    the cheaper per million tokens, then the label)."""
    out: dict[str, GpuPoint] = {}
    for p in points:
        if p.requests_per_s_per_gpu is None:
            continue
        best = out.get(p.candidate.gpu)
        key = (p.requests_per_s_per_gpu, -(p.usd_per_m_output_tokens or 0.0))
        if best is None or key > (best.requests_per_s_per_gpu or 0.0,
                                  -(best.usd_per_m_output_tokens or 0.0)):
            out[p.candidate.gpu] = p
    return out
