"""Step times of a replica in a parallel layout: the busiest rank's work timed by one device's
timer, plus the communication it exposes (all of it, or with two-batch overlap what outlasts
the work run under it)."""

from dataclasses import dataclass
from typing import Protocol

from napkin.accounting.forward import Precision
from napkin.accounting.overlap import (
    ATTENTION_CORE,
    ATTENTION_PREPARE,
    SHARED_EXPERTS,
    STAGGERED,
    schedule_of,
)
from napkin.accounting.ranks import ROUTED_EXPERTS, Parts, RankCost
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec
from napkin.timing.comm import GPUS_PER_NODE, INTERNODE_BYTES_PER_S, LayoutComm
from napkin.timing.frontend import Frontend
from napkin.timing.series import StepSeries


class DeviceTimer(Protocol):
    """A step-time model of one device (:class:`~napkin.timing.steps.RooflineTimer` or a fitted
    profile's timer at tensor parallel 1), as :class:`LayoutTimer` asks it."""

    request_s: float
    request_token_s: float
    frontend: Frontend | None

    def series(self, parts0: Parts, parts1: Parts | None, tokens: int,
               prefill: bool = False, extra_s: float = 0.0) -> StepSeries:
        """As the engine's timer, every step ``extra_s`` longer (communication it adds to
        the step's work, inside any floor the model puts under a step)."""
        ...

    def step_s(self, parts: Parts, tokens: int, prefill: bool = False,
               extra_s: float = 0.0) -> float: ...

    def effective(self, terms: tuple[float, ...]) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class LayoutTimer:
    """Step times of a replica in a :class:`~napkin.specs.layout.ParallelLayout`: the busiest
    rank's work (:meth:`RankCost.rank_parts`: its attention share, its routed experts' load and
    weights) timed by ``device`` as one GPU, plus the step's communication
    (:class:`LayoutComm`).

    With ``two_batch_overlap`` a step runs as two micro-batches, each reading the rank's
    weights (:meth:`RankCost.run_parts`), and each all-to-all of one runs under a stage of the
    other's work (:mod:`napkin.accounting.overlap`; ``engine``'s schedule): a step takes the
    device time of both plus what of each all-to-all outlasts the work under it, plus the
    all-reduces (in a decode run the overlap is taken at the run's first step). A stage's time
    is what its work adds to a micro-batch's step on ``device`` (the step's time less the
    step's without it), per layer; a dispatch's or combine's is :meth:`LayoutComm.
    layer_alltoall_s` at a micro-batch's tokens. A memory-bound decode step can so be slower
    with the overlap than without: it pays the weights twice to hide part of the all-to-all.
    """

    device: DeviceTimer
    comm: LayoutComm
    engine: str | None = None
    """The serving engine whose overlap schedule applies (:func:`~napkin.accounting.overlap.
    schedule_of`)."""
    routed_rates: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Seconds the busiest rank's routed experts add beyond its device timing, per routed
    (token, expert) pair it permutes (:meth:`RankCost.rank_pairs`; a fitted profile's
    ``expert_pair`` time), per routed FLOP and per expert byte it reads
    (:meth:`RankCost.routed`; a fitted profile's ``expert*`` coefficients less its dense ones,
    :attr:`~napkin.calibration.basis.FittedTimer.routed_rates`); zeros for the roofline."""

    @classmethod
    def of(cls, model: ModelSpec, precision: Precision, layout: ParallelLayout,
           device: DeviceTimer, link_bytes_per_s: float = 64e9, latency_s: float = 10e-6,
           internode_bytes_per_s: float = INTERNODE_BYTES_PER_S,
           gpus_per_node: int = GPUS_PER_NODE, alltoall_latency_s: float | None = None,
           alltoall_link_bytes_per_s: float | None = None,
           engine: str | None = None,
           routed_rates: tuple[float, float, float] = (0.0, 0.0, 0.0),
           alltoall_step_s: float = 0.0) -> "LayoutTimer":
        return cls(device, LayoutComm.of(model, precision, layout, link_bytes_per_s, latency_s,
                                         internode_bytes_per_s, gpus_per_node,
                                         alltoall_latency_s, alltoall_link_bytes_per_s,
                                         alltoall_step_s),
                   engine, routed_rates)

    @property
    def request_s(self) -> float:
        return self.device.request_s

    @property
    def request_token_s(self) -> float:
        return self.device.request_token_s

    @property
    def frontend(self) -> Frontend | None:
        return self.device.frontend

    @property
    def cost(self) -> RankCost:
        return self.comm.cost

    def _exposed(self, parts: Parts, tokens: float, prefill: bool,
                 group: tuple[Parts, float] | None) -> float:
        """Time the step adds to the busiest rank's parts: its routed experts' beyond the
        device's timing (:meth:`routed_extra_s`) and the communication, all of it, or with
        two-batch overlap the all-reduces, :attr:`LayoutComm.alltoall_step_s` and
        :meth:`overlap_exposed_s`."""
        allreduce, a2a = self.comm.seconds(tokens)
        tbo = bool(a2a) and self.comm.cost.layout.two_batch_overlap
        routed = self.routed_extra_s(tokens, 2 if tbo else 1)
        if tbo:  # the step's own all-to-all time is not hidden under a micro-batch's work
            return (allreduce + routed + self.comm.alltoall_step_s
                    + self.overlap_exposed_s(parts, tokens, prefill, group))
        return allreduce + routed + a2a

    def routed_extra_s(self, tokens: float, reads: int = 1) -> float:
        """:attr:`routed_rates` of the busiest rank in a step of ``tokens`` tokens: its pairs, its
        routed FLOPs, its expert bytes read ``reads`` times (once per micro-batch)."""
        pair, per_flop, per_byte = self.routed_rates
        if not (pair or per_flop or per_byte) or not tokens:
            return 0.0
        cost = self.comm.cost
        _, _, flops, weight_bytes = cost.routed(tokens)
        pairs = pair * cost.rank_pairs(tokens) if pair else 0.0
        return pairs + per_flop * flops + per_byte * weight_bytes * reads

    def stage_s(self, parts: Parts, tokens: float, prefill: bool = False,
                group: tuple[Parts, float] | None = None) -> dict[str, float]:
        """Per-layer seconds of each stage of one micro-batch under two-batch overlap
        (:meth:`RankCost.micro_batch`): what the stage adds to the micro-batch's step on
        ``device``, over the layers that carry it (attention: every layer; experts: the MoE
        layers)."""
        cost = self.comm.cost
        whole, stages = cost.micro_batch(parts, tokens, group)
        n = cost.rank_tokens(tokens) / 2
        base = self.device.step_s(whole, n, prefill)
        assert cost.stages is not None  # (a MoE model: micro_batch checked it)
        layers = cost.stages.layers
        out = {}
        for name, stage in stages.items():
            rest = tuple(w - s if w > s else 0.0 for w, s in zip(whole, stage, strict=True))
            per = layers if name in (ATTENTION_PREPARE, ATTENTION_CORE) else cost.moe_layers
            out[name] = (base - self.device.step_s(rest, n, prefill)) / per
        # a micro-batch's routed extra: half of a step's whose two micro-batches read the weights
        extra = self.routed_extra_s(tokens, reads=2) / 2
        if extra:
            out[ROUTED_EXPERTS] = max(out[ROUTED_EXPERTS] + extra / cost.moe_layers, 0.0)
        return out

    def overlap_exposed_s(self, parts: Parts, tokens: float, prefill: bool = False,
                          group: tuple[Parts, float] | None = None) -> float:
        """All-to-all seconds a two-batch-overlap step shows: over the MoE layers and the two
        micro-batches, each dispatch's and combine's time (:meth:`LayoutComm.
        layer_alltoall_s` at half the tokens) less the stage time run under it
        (:meth:`stage_s`), where positive — ``staggered``: dispatch under the shared experts
        and the attention prepare, combine under the attention core; ``alternating``: dispatch
        under the whole attention side, combine under the routed experts."""
        t = self.stage_s(parts, tokens, prefill, group)
        dispatch, combine = self.comm.layer_alltoall_s(tokens / 2)
        if schedule_of(self.engine, prefill) == STAGGERED:
            hide_dispatch, hide_combine = t[SHARED_EXPERTS] + t[ATTENTION_PREPARE], \
                t[ATTENTION_CORE]
        else:
            hide_dispatch = t[ATTENTION_PREPARE] + t[ATTENTION_CORE] + t[SHARED_EXPERTS]
            hide_combine = t[ROUTED_EXPERTS]
        per_layer = ((dispatch - hide_dispatch if dispatch > hide_dispatch else 0.0)
                     + (combine - hide_combine if combine > hide_combine else 0.0))
        return 2 * self.comm.cost.moe_layers * per_layer

    def step_s(self, parts: Parts, tokens: int, prefill: bool = False,
               group: tuple[Parts, float] | None = None) -> float:
        """One step's time: the busiest rank's on ``device`` with the exposed communication;
        ``group``: the busiest data-parallel group's own work (:meth:`RankCost.rank_parts`)."""
        if tokens == 0:
            return 0.0
        cost = self.comm.cost
        rank = cost.run_parts(parts, tokens, group)
        return self.device.step_s(rank, cost.rank_tokens(tokens), prefill,
                                  self._exposed(parts, tokens, prefill, group))

    def series(self, parts0: Parts, parts1: Parts | None, tokens: int,
               prefill: bool = False, group: tuple[Parts, float] | None = None) -> StepSeries:
        """:meth:`DeviceTimer.series` of the busiest rank's parts, each step longer by the
        exposed communication (with two-batch overlap, as at the run's first step);
        ``group`` as in :meth:`step_s` (for the run's first step and the next alike)."""
        cost = self.comm.cost
        rank0 = cost.run_parts(parts0, tokens, group)
        return self.device.series(rank0,
                                  None if parts1 is None
                                  else cost.run_parts(parts1, tokens, group),
                                  cost.rank_tokens(tokens), prefill,
                                  self._exposed(parts0, tokens, prefill, group) if tokens
                                  else 0.0)

    def effective(self, terms: tuple[float, ...]) -> tuple[float, ...]:
        return self.device.effective(terms)
