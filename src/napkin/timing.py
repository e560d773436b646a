"""Roofline timing: the time of a call is the slower of its compute and its memory traffic.

``time = max(FLOPs / (peak·MFU), bytes / (bandwidth·MBU)) + overhead``. Peak is the dense
tensor-core rate of the weight format's compute precision. MFU and MBU default to 1: the result
is then the roofline *ceiling* (the chapter's "physical limit"); real engines reach roughly
0.4–0.6 MFU in prefill and 0.5–0.85 MBU in decode (question bank, task 2).
"""

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from napkin.accounting.batch import BatchShape
from napkin.accounting.collectives import parallel_collectives
from napkin.accounting.forward import Precision, forward
from napkin.accounting.ops import CallCost
from napkin.accounting.overlap import (
    ATTENTION_CORE,
    ATTENTION_PREPARE,
    SHARED_EXPERTS,
    STAGGERED,
    schedule_of,
)
from napkin.accounting.ranks import ROUTED_EXPERTS, Parts, RankCost
from napkin.accounting.series import AffineRun
from napkin.errors import require
from napkin.specs.hardware import Accelerator
from napkin.specs.layout import ParallelLayout
from napkin.specs.model import ModelSpec

DEFAULT_MFU = 1.0
DEFAULT_MBU = 1.0


MIN_EFFICIENCY = 1e-3
"""Smallest MFU/MBU accepted: below a tenth of a percent of peak, times overflow (``5e-324``
makes every step infinite) and no real deployment runs there."""


def check_efficiency(value: float, field: str) -> None:
    """Refuse an achieved share of peak (MFU, MBU) outside ``[MIN_EFFICIENCY, 1]``, naming
    ``field`` (the user's option): more than the peak is a unit mistake, not a deployment."""
    require(MIN_EFFICIENCY <= value <= 1,
            f"{field}: must be in [{MIN_EFFICIENCY:g}, 1], got {value}")


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of peak compute (``mfu``) and bandwidth (``mbu``), and a fixed
    per-call overhead in seconds (kernel launches, scheduling)."""

    mfu: float = DEFAULT_MFU
    mbu: float = DEFAULT_MBU
    overhead_s: float = 0.0

    def __post_init__(self) -> None:
        check_efficiency(self.mfu, "mfu")
        check_efficiency(self.mbu, "mbu")
        require(self.overhead_s >= 0,
                f"overhead-ms: must be >= 0 ms, got {self.overhead_s * 1e3:g}")


@dataclass(frozen=True)
class RooflineTime:
    """Compute time, memory time, and their max plus overhead."""

    compute_s: float
    memory_s: float
    overhead_s: float

    @property
    def time_s(self) -> float:
        return max(self.compute_s, self.memory_s) + self.overhead_s

    @property
    def bound(self) -> str:
        """``compute`` or ``memory``: which side sets the time."""
        return "compute" if self.compute_s >= self.memory_s else "memory"


def roofline(
    flops: float, bytes_moved: float, acc: Accelerator, compute: str, eff: Efficiency
) -> RooflineTime:
    """Time of ``flops`` and ``bytes_moved`` on ``acc`` at ``compute`` precision."""
    return RooflineTime(
        compute_s=flops / (acc.peak_flops_per_s(compute) * eff.mfu),
        memory_s=bytes_moved / (acc.mem_bytes_per_s * eff.mbu),
        overhead_s=eff.overhead_s,
    )


def at_compute_rate(flops: float, sixteen_bit_flops: float, acc: Accelerator,
                    compute: str) -> float:
    """FLOPs timed at ``compute``'s peak: ``flops`` (those at that rate) plus the 16-bit ones
    scaled by ``peak(compute) / peak(bf16)`` (an unquantized part of an FP8 or FP4 model runs
    at the BF16 rate: a quarter of B200's FP4 rate)."""
    if not sixteen_bit_flops:
        return flops
    return flops + sixteen_bit_flops * acc.peak_flops_per_s(compute) / acc.peak_flops_per_s("bf16")


def call_time(cost: CallCost, acc: Accelerator, compute: str, eff: Efficiency) -> RooflineTime:
    """Roofline time of one call (its op list taken as a whole, as the chapter does); matmuls of
    unquantized parts (``Op.sixteen_bit``) at the BF16 rate (:func:`at_compute_rate`)."""
    if not cost.ops:
        return RooflineTime(0.0, 0.0, 0.0)
    sixteen = cost.sixteen_bit_flops
    return roofline(at_compute_rate(cost.flops - sixteen, sixteen, acc, compute), cost.bytes,
                    acc, compute, eff)


class StepSeries:
    """Times of a run of steps whose compute and memory times grow linearly with the step index:
    step j (from 0) takes ``max(c0 + j·dc, m0 + j·dm) + overhead_s`` seconds.

    Two lines cross at most once, so sums over steps split into at most two arithmetic series;
    everything here is closed form, O(1) per query (O(log n) for searches). A plain slotted
    class, not a frozen dataclass: the simulator builds one per unit of work and a frozen
    dataclass takes four times as long to construct; nothing changes one after it is built.
    """

    __slots__ = ("c0", "dc", "dm", "m0", "overhead_s", "side")

    def __init__(self, c0: float, dc: float, m0: float, dm: float, overhead_s: float) -> None:
        self.c0, self.dc, self.m0, self.dm, self.overhead_s = c0, dc, m0, dm, overhead_s
        d0, dd = c0 - m0, dc - dm
        self.side = 1 if d0 >= 0 and dd >= 0 else -1 if d0 < 0 and dd <= 0 else 0
        """1: compute is the slower side at every step, −1: memory is, 0: the lines cross (the
        usual decode run is one-sided: its sums are then one arithmetic series)."""

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(c0={self.c0!r}, dc={self.dc!r}, m0={self.m0!r}, "
                f"dm={self.dm!r}, overhead_s={self.overhead_s!r})")

    def plus(self, extra_s: float) -> "StepSeries":
        """The same run with every step ``extra_s`` longer."""
        return type(self)(self.c0, self.dc, self.m0, self.dm, self.overhead_s + extra_s)

    @classmethod
    def of(cls, flops0: float, dflops: float, bytes0: float, dbytes: float, acc: Accelerator,
           compute: str, eff: Efficiency) -> "StepSeries":
        """From per-step FLOPs and bytes (first step and increment per step)."""
        peak, bw = acc.peak_flops_per_s(compute) * eff.mfu, acc.mem_bytes_per_s * eff.mbu
        return cls(flops0 / peak, dflops / peak, bytes0 / bw, dbytes / bw, eff.overhead_s)

    def _compute_bound(self, n: int) -> tuple[int, int]:
        """Steps ``a ≤ j < b`` (of the first n) where compute is the slower side."""
        d0, dd = self.c0 - self.m0, self.dc - self.dm  # compute minus memory at step j
        if dd == 0:
            return (0, n) if d0 >= 0 else (0, 0)
        cross = min(max(-d0 / dd, -1.0), n + 1.0)  # clamped: tiny slopes overflow
        if dd > 0:  # compute-bound from ceil(cross) on
            return min(max(math.ceil(cross), 0), n), n
        return 0, min(max(math.floor(cross) + 1, 0), n)  # compute-bound up to floor(cross)

    def time(self, n: int) -> float:
        """Total time of the first ``n`` steps."""
        if n == 1:  # the simulator's most frequent query: one step, the larger of two times
            c0, m0 = self.c0, self.m0
            return (m0 if m0 > c0 else c0) + self.overhead_s
        if self.side and n > 1:  # one line throughout: no crossing to look for
            x0, dx = (self.c0, self.dc) if self.side > 0 else (self.m0, self.dm)
            return _line_sum(x0, dx, 0, n) + n * self.overhead_s
        a, b = self._compute_bound(n)
        return (_line_sum(self.c0, self.dc, a, b) + _line_sum(self.m0, self.dm, 0, a)
                + _line_sum(self.m0, self.dm, b, n) + n * self.overhead_s)

    def weighted(self, n: int, w0: float, dw: float) -> float:
        """``Σ_j (w0 + j·dw)·t_j`` over the first ``n`` steps (e.g. KV bytes held × seconds)."""
        if n == 1:  # (w0 times the step's time, as a single step's caller computes it)
            c0, m0 = self.c0, self.m0
            return w0 * ((m0 if m0 > c0 else c0) + self.overhead_s)
        # (no overhead, as in every fitted model's series: its sum is 0.0, not computed)
        overhead = _product_sum(w0, dw, self.overhead_s, 0.0, 0, n) if self.overhead_s else 0.0
        if self.side and n > 1:  # one line throughout: no crossing to look for
            x0, dx = (self.c0, self.dc) if self.side > 0 else (self.m0, self.dm)
            return overhead + _product_sum(w0, dw, x0, dx, 0, n)
        a, b = self._compute_bound(n)
        return (overhead + _product_sum(w0, dw, self.c0, self.dc, a, b)
                + _product_sum(w0, dw, self.m0, self.dm, 0, a)
                + _product_sum(w0, dw, self.m0, self.dm, b, n))

    def steps_until(self, elapsed_s: float, n: int, strict: bool = False) -> int:
        """Fewest steps (≤ n) whose total time reaches ``elapsed_s`` (exceeds it if ``strict``);
        n when none do. Step times are positive, so totals increase with the step count; with
        non-negative slopes every step takes between the first's and the last's time, which
        brackets the answer to a few steps before the bisection."""
        lo, hi = 0, n
        if n > 4 and self.dc >= 0 and self.dm >= 0:
            c0, m0 = self.c0, self.m0
            first = (m0 if m0 > c0 else c0) + self.overhead_s
            c1, m1 = c0 + (n - 1) * self.dc, m0 + (n - 1) * self.dm
            last = (m1 if m1 > c1 else c1) + self.overhead_s
            if first > 0 and elapsed_s >= 0:  # (the quotients may overflow: tiny steps)
                most, least = elapsed_s / first, elapsed_s / last  # m steps take m·first to m·last
                hi = n if most >= n - 2 else int(most) + 2
                lo = (n if least >= n else int(least)) - 2
                lo = hi if lo > hi else 0 if lo < 0 else lo
        while lo < hi:
            mid = (lo + hi) // 2
            t = self.time(mid)
            if t > elapsed_s or (not strict and t >= elapsed_s):
                hi = mid
            else:
                lo = mid + 1
        return lo


class LineSeries(StepSeries):
    """A :class:`StepSeries` with no memory line (``m0 = dm = 0``, ``c0, dc ≥ 0``): step j
    takes ``c0 + j·dc + overhead_s`` — a fitted step-time model's runs. Its ``side`` is 1
    (the one line bounds every step), so its sums take the one-line shortcut."""

    __slots__ = ()

    def __init__(self, c0: float, dc: float, m0: float, dm: float, overhead_s: float) -> None:
        # (the simulator builds one per decode run: the side is known, not computed)
        self.c0, self.dc, self.m0, self.dm, self.overhead_s, self.side = c0, dc, m0, dm, \
            overhead_s, 1

    def time(self, n: int) -> float:
        """:meth:`StepSeries.time` along the one line (the same floats, fewer tests)."""
        if n == 1:
            return self.c0 + self.overhead_s
        return _line_sum(self.c0, self.dc, 0, n) + n * self.overhead_s

    def weighted(self, n: int, w0: float, dw: float) -> float:
        """:meth:`StepSeries.weighted` along the one line (the same floats, fewer tests)."""
        if n == 1:
            return w0 * (self.c0 + self.overhead_s)
        overhead = _product_sum(w0, dw, self.overhead_s, 0.0, 0, n) if self.overhead_s else 0.0
        return overhead + _product_sum(w0, dw, self.c0, self.dc, 0, n)


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


GPUS_PER_NODE = 8
"""GPUs that share a node's NVLink domain (an HGX/DGX H100, H200 or B200 board)."""
INTERNODE_BYTES_PER_S = 50e9
"""Per-GPU network bandwidth per direction between nodes: one 400 Gb/s NIC per GPU
(ConnectX-7 InfiniBand/RoCE on DGX H100/H200/B200), 50 GB/s."""


class DeviceTimer(Protocol):
    """A step-time model of one device (:class:`RooflineTimer` or a fitted profile's timer at
    tensor parallel 1), as :class:`LayoutTimer` asks it."""

    request_s: float
    request_token_s: float

    def series(self, parts0: Parts, parts1: Parts | None, tokens: int,
               prefill: bool = False, extra_s: float = 0.0) -> StepSeries:
        """As the engine's timer, every step ``extra_s`` longer (communication it adds to
        the step's work, inside any floor the model puts under a step)."""
        ...

    def step_s(self, parts: Parts, tokens: int, prefill: bool = False,
               extra_s: float = 0.0) -> float: ...

    def effective(self, terms: tuple[float, ...]) -> tuple[float, ...]: ...


@dataclass(frozen=True)
class LayoutComm:
    """The communication of a step in a :class:`~napkin.specs.layout.ParallelLayout`:

    - the attention group's all-reduces (tp_a > 1): ``count·latency + bytes/token·(T/dp_a)/link``
      (:func:`~napkin.accounting.collectives.parallel_collectives` over tp_a ranks);
    - the all-to-alls (data-parallel attention): per MoE layer a dispatch and a combine,
      ``max(B·s_in/link, B·s_out/nic) + 2·latency`` with B = :meth:`RankCost.alltoall_bytes`,
      s_in = (g − 1)/(N − 1) of the sends within a node of g = min(N, ``gpus_per_node``) GPUs and
      s_out = (N − g)/(N − 1) over the GPU's NIC (``internode_bytes_per_s``).

    ``latency_s`` is an all-reduce's fixed time, ``alltoall_latency_s`` a dispatch's or a
    combine's; ``alltoall_link_bytes_per_s`` the link the all-to-alls see within a node
    (``link_bytes_per_s``, the all-reduces', unless a fitted profile scales them apart).
    """

    cost: RankCost
    link_bytes_per_s: float
    internode_bytes_per_s: float
    gpus_per_node: int
    latency_s: float
    allreduces: int
    allreduce_bytes_per_token: float
    alltoall_latency_s: float
    alltoall_link_bytes_per_s: float
    _seconds: dict[float, tuple[float, float]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False)

    @classmethod
    def of(cls, model: ModelSpec, precision: Precision, layout: ParallelLayout,
           link_bytes_per_s: float = 64e9, latency_s: float = 10e-6,
           internode_bytes_per_s: float = INTERNODE_BYTES_PER_S,
           gpus_per_node: int = GPUS_PER_NODE, alltoall_latency_s: float | None = None,
           alltoall_link_bytes_per_s: float | None = None) -> "LayoutComm":
        """``alltoall_latency_s`` and ``alltoall_link_bytes_per_s``: None for the all-reduces'
        ``latency_s`` and ``link_bytes_per_s``."""
        count, per_token = parallel_collectives(model, layout.attention_tp)
        return cls(RankCost.of(model, precision, layout), link_bytes_per_s,
                   internode_bytes_per_s, gpus_per_node, latency_s, count, per_token,
                   latency_s if alltoall_latency_s is None else alltoall_latency_s,
                   link_bytes_per_s if alltoall_link_bytes_per_s is None
                   else alltoall_link_bytes_per_s)

    def alltoalls(self, tokens: float) -> int:
        """All-to-alls of a step: a dispatch and a combine per MoE layer when tokens cross
        ranks, else none."""
        cost = self.cost
        return 2 * cost.moe_layers if cost.alltoall_bytes(tokens) else 0

    def seconds(self, tokens: float) -> tuple[float, float]:
        """(all-reduce seconds, all-to-all seconds) of a step of ``tokens`` tokens."""
        hit = self._seconds.get(tokens)
        if hit is not None:
            return hit
        cost = self.cost
        allreduce = 0.0
        if self.allreduces:
            allreduce = (self.allreduces * self.latency_s + self.allreduce_bytes_per_token
                         * cost.rank_tokens(tokens) / self.link_bytes_per_s)
        dispatch, combine = self.layer_alltoall_s(tokens)
        out = self._seconds[tokens] = (allreduce, cost.moe_layers * (dispatch + combine))
        return out

    def layer_alltoall_s(self, tokens: float) -> tuple[float, float]:
        """(dispatch seconds, combine seconds) of one MoE layer of ``tokens`` tokens: the
        layer's link time ``max(B·s_in/link, B·s_out/nic)`` split by the two's bytes
        (:meth:`RankCost.dispatch_share`), each plus ``alltoall_latency_s``; (0, 0) when no
        token crosses ranks."""
        cost = self.cost
        per_layer = cost.alltoall_bytes(tokens)
        if not per_layer:
            return 0.0, 0.0
        n = cost.layout.ranks
        g = min(n, self.gpus_per_node)
        inside = per_layer * (g - 1) / (n - 1) / self.alltoall_link_bytes_per_s
        outside = per_layer * (n - g) / (n - 1) / self.internode_bytes_per_s
        link = outside if outside > inside else inside
        share = cost.dispatch_share()
        return (link * share + self.alltoall_latency_s,
                link * (1 - share) + self.alltoall_latency_s)


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
           routed_rates: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> "LayoutTimer":
        return cls(device, LayoutComm.of(model, precision, layout, link_bytes_per_s, latency_s,
                                         internode_bytes_per_s, gpus_per_node,
                                         alltoall_latency_s, alltoall_link_bytes_per_s),
                   engine, routed_rates)

    @property
    def request_s(self) -> float:
        return self.device.request_s

    @property
    def request_token_s(self) -> float:
        return self.device.request_token_s

    @property
    def cost(self) -> RankCost:
        return self.comm.cost

    def _exposed(self, parts: Parts, tokens: float, prefill: bool,
                 group: tuple[Parts, float] | None) -> float:
        """Time the step adds to the busiest rank's parts: its routed experts' beyond the
        device's timing (:meth:`routed_extra_s`) and the communication, all of it, or with
        two-batch overlap the all-reduces plus :meth:`overlap_exposed_s`."""
        allreduce, a2a = self.comm.seconds(tokens)
        tbo = bool(a2a) and self.comm.cost.layout.two_batch_overlap
        routed = self.routed_extra_s(tokens, 2 if tbo else 1)
        if tbo:
            return allreduce + routed + self.overlap_exposed_s(parts, tokens, prefill, group)
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


def run_time(run: AffineRun, acc: Accelerator, compute: str, eff: Efficiency) -> float:
    """Exact total time of an affine run of decode steps (see :class:`StepSeries`)."""
    return StepSeries.of(run.flops0, run.dflops, run.bytes0, run.dbytes, acc, compute,
                         eff).time(run.steps)


def _line_sum(x0: float, dx: float, a: int, b: int) -> float:
    """Σ_{j=a}^{b−1} (x0 + j·dx)."""
    if b <= a:
        return 0.0
    return (b - a) * x0 + dx * (a + b - 1) * (b - a) / 2


def _product_sum(w0: float, dw: float, x0: float, dx: float, a: int, b: int) -> float:
    """Σ_{j=a}^{b−1} (w0 + j·dw)(x0 + j·dx)."""
    if b <= a:
        return 0.0
    s0 = b - a
    s1 = (a + b - 1) * s0 / 2
    s2 = ((b - 1) * b * (2 * b - 1) - (a - 1) * a * (2 * a - 1)) / 6
    return w0 * x0 * s0 + (w0 * dx + dw * x0) * s1 + dw * dx * s2


@dataclass(frozen=True)
class Deployment:
    """A model on one accelerator, at a storage precision and an efficiency."""

    model: ModelSpec
    acc: Accelerator
    precision: Precision
    eff: Efficiency = Efficiency()

    @property
    def compute(self) -> str:
        """The tensor-core format matmuls run in (from the weight format)."""
        return self.precision.weights.compute

    def cost(self, batch: BatchShape) -> CallCost:
        """The forward op list of ``batch`` (see :func:`napkin.accounting.forward`)."""
        return forward(self.model, batch, self.precision)

    def time(self, cost: CallCost) -> RooflineTime:
        return call_time(cost, self.acc, self.compute, self.eff)

    def run_time(self, run: AffineRun) -> float:
        return run_time(run, self.acc, self.compute, self.eff)
