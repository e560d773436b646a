"""A mean request's engine work per phase, and a run's energy from it.

The capacity bound of a plan (:mod:`napkin.planning.evaluate`) and the energy of plans and
sweeps (:mod:`napkin.accounting.energy`) read a workload's mean request at an engine's
cheapest steps: its prompt at the per-token time of a full-budget prefill step of the mean
prompt, its other tokens at the per-token time of a decode step of the largest batch the KV
pool and ``max_num_seqs`` allow, at the mean context.
"""

from dataclasses import dataclass

from napkin.accounting.energy import Energy, PowerModel, energy
from napkin.serving.arrivals import OpenLoop
from napkin.serving.load import offered_rate
from napkin.serving.metrics import SimSummary
from napkin.serving.scenario import Built
from napkin.serving.step import StepShape


@dataclass(frozen=True)
class PhaseWork:
    """A mean request's cheapest engine time per phase (module docstring, point 2)."""

    offered_per_s: float
    prefill_s: float
    """mean input · t_prefill."""
    decode_s: float
    """(mean output − 1) · t_decode."""

    @property
    def prefill_share(self) -> float:
        """Share of a request's engine time spent prefilling."""
        total = self.prefill_s + self.decode_s
        return self.prefill_s / total if total > 0 else 0.0


def phase_work(built: Built) -> PhaseWork | None:
    """The per-phase work of the module docstring's capacity bound for an aggregated open-loop
    workload (None for closed loops and disaggregated pools)."""
    src = built.source
    if not isinstance(src, OpenLoop) or len(src.requests) < 2 or built.disagg is not None:
        return None
    reqs = src.requests
    lam = offered_rate(reqs.arrival_s)
    isl = float(reqs.input_tokens.mean())
    osl = float(reqs.output_tokens.mean())
    engine = built.engines()[0]
    timer, cost, spec = engine.timer, engine.cost, engine.spec
    prompt = max(1, round(isl))
    k = max(1, spec.max_num_batched_tokens // prompt)
    t_pf = timer.series(cost.parts(StepShape(0, 0, [(0, prompt, 1)] * k)), None,
                        k * prompt, True).time(1) / (k * prompt)
    seq_tokens = isl + osl / 2
    batch = max(1, min(spec.max_num_seqs,
                       int(spec.num_blocks * spec.block_size // max(seq_tokens, 1))))
    ctx = int(batch * seq_tokens)
    t_dec = timer.series(cost.parts(StepShape(batch, ctx, [])), None, batch).time(1) / batch
    return PhaseWork(lam, isl * t_pf, max(osl - 1, 0) * t_dec)


def run_energy(built: Built, summaries: list[SimSummary], gpus: int, power: PowerModel
               ) -> Energy | None:
    """Energy of the seeds' runs together (:mod:`napkin.accounting.energy`): each GPU busy its
    engine's busy share of the makespan, split between prefill and decode by the mean
    request's :class:`PhaseWork` shares, idle the rest. None without a board power, or for
    closed loops and disaggregated pools."""
    w = phase_work(built)
    acc = built.acc
    if w is None or acc.tdp_watts is None or not summaries:
        return None
    parts = []
    for s in summaries:
        busy = max((p.busy_frac for p in s.pools), default=0.0) * s.makespan_s
        parts.append(energy(acc, gpus, busy * w.prefill_share, busy * (1 - w.prefill_share),
                            s.makespan_s, s.output_tokens_per_s * s.makespan_s, power))
    return Energy(sum(e.joules for e in parts), sum(e.output_tokens for e in parts),
                  sum(e.span_s for e in parts), gpus, power)
