"""An engine's step times by the roofline: the slower of a step's compute and memory time on
the tensor-parallel group, plus the overhead and the all-reduces (the serving simulator's timer
without a fitted profile)."""

from dataclasses import dataclass
from functools import cached_property

from napkin.accounting.collectives import parallel_collectives
from napkin.specs.hardware import Accelerator
from napkin.specs.model import ModelSpec
from napkin.timing.efficiency import Efficiency
from napkin.timing.frontend import Frontend
from napkin.timing.roofline import at_compute_rate
from napkin.timing.series import StepSeries


@dataclass(frozen=True)
class RooflineTimer:
    """Step times of one engine by the roofline: ``max(FLOPs/(tp·peak·MFU),
    (weight bytes/tp + KV bytes/d)/(BW·MBU)) + overhead + all-reduces``, where d is the
    number of devices the KV cache is split over (``ModelSpec.kv_devices``: fewer than tp when
    KV heads are replicated) and tensor parallelism adds two ring all-reduces of the step's
    ``tokens × hidden`` 16-bit activations per layer, each ``2(t−1)/t·volume / link +
    latency``. ``request_s`` and ``request_token_s`` (outside the engine) are 0 unless given."""

    acc: Accelerator
    compute: str
    eff: Efficiency
    tensor_parallel: int = 1
    allreduce_s_per_token: float = 0.0
    allreduce_fixed_s: float = 0.0
    request_s: float = 0.0
    request_token_s: float = 0.0
    frontend: Frontend | None = None
    """A frontend that queues (:mod:`napkin.timing.frontend`); None: none."""
    kv_devices: float = 1.0

    @classmethod
    def of(cls, model: ModelSpec, acc: Accelerator, compute: str, eff: Efficiency,
           tensor_parallel: int = 1, link_bytes_per_s: float = 64e9,
           latency_s: float = 10e-6) -> "RooflineTimer":
        tp = tensor_parallel
        if tp == 1:
            return cls(acc, compute, eff)
        count, per_token = parallel_collectives(model, tp)
        return cls(acc, compute, eff, tp, per_token / link_bytes_per_s, count * latency_s,
                   kv_devices=model.kv_devices(tp))

    @cached_property
    def _constants(self) -> tuple[float, float, float, float]:
        """(peak·MFU, bandwidth·MBU, tp, devices the KV is split over), looked up once."""
        acc, eff = self.acc, self.eff
        return (acc.peak_flops_per_s(self.compute) * eff.mfu, acc.mem_bytes_per_s * eff.mbu,
                float(self.tensor_parallel), self.kv_devices)

    def _work(self, parts: tuple[float, ...]) -> tuple[float, float]:
        """A step's (FLOPs at the compute format's rate, bytes) per device from its (dense
        FLOPs, attention FLOPs, weight bytes, KV bytes, 16-bit dense FLOPs) on the whole
        group: weights split over tp devices, KV over d, the 16-bit FLOPs scaled as
        :func:`at_compute_rate` does."""
        _, _, tp, d = self._constants
        flops = parts[0] + parts[1]
        if parts[4]:
            flops = at_compute_rate(flops, parts[4], self.acc, self.compute)
        return flops / tp, parts[2] / tp + parts[3] / d

    def _overhead_s(self, tokens: int) -> float:
        """Per-step time besides compute and memory: the overhead, plus the all-reduces of
        ``tokens`` tokens' activations under tensor parallelism."""
        if self.tensor_parallel > 1:
            return self.eff.overhead_s + (self.allreduce_fixed_s
                                          + self.allreduce_s_per_token * tokens)
        return self.eff.overhead_s

    def series(self, parts0: tuple[float, ...], parts1: tuple[float, ...] | None, tokens: int,
               prefill: bool = False, extra_s: float = 0.0) -> StepSeries:
        """Steps j = 0, 1, … whose (dense FLOPs, attention FLOPs, weight bytes, KV bytes,
        16-bit dense FLOPs) on the whole group grow by ``parts1 − parts0`` per step
        (``prefill``, whether the step carries a prefill chunk, does not change a roofline
        time), each ``extra_s`` longer (a layout's communication); see :meth:`_work`."""
        peak, bw, _, _ = self._constants
        flops0, bytes0 = self._work(parts0)
        dflops = dbytes = 0.0
        if parts1 is not None:
            flops1, bytes1 = self._work(parts1)
            dflops, dbytes = flops1 - flops0, bytes1 - bytes0
        return StepSeries(flops0 / peak, dflops / peak, bytes0 / bw, dbytes / bw,
                          self._overhead_s(tokens) + extra_s)

    def step_s(self, parts: tuple[float, ...], tokens: int, prefill: bool = False,
               extra_s: float = 0.0) -> float:
        """One step's time, ``series(parts, None, tokens).time(1)`` without the series:
        ``max(FLOPs/peak, bytes/bandwidth) + overhead + extra_s`` (``prefill`` does not change
        it)."""
        peak, bw, _, _ = self._constants
        flops, nbytes = self._work(parts)
        compute_s, memory_s = flops / peak, nbytes / bw
        return ((memory_s if memory_s > compute_s else compute_s) + self._overhead_s(tokens)
                + extra_s)

    def effective(self, terms: tuple[float, ...]) -> tuple[float, ...]:
        """A basis vector as this timer counts it: unchanged (the roofline has no floor)."""
        return terms
