"""Load sweeps of a scenario and its maximum sustainable load under the SLO.

A sweep runs the scenario at several offered loads (:func:`napkin.serving.load.scale_load`: the
same workload shape, the load scaled) and seeds. A load is **sustainable** when, in every seed,
at least ``slo.share`` of the counted requests meet both SLO bounds (TTFT ≤ ``slo.ttft_s`` and
TPOT ≤ ``slo.tpot_s``: the SLO attainment of DistServe; goodput counts them per second). The
maximum sustainable load is found by bracketing (doubling or halving from the scenario's own
load) and then bisecting geometrically until the bracket is within ``rel_tol`` (integers for a
closed loop's clients). Attainment is not strictly monotone in load under noise; the answer is
a sustainable load whose bracket's upper end was not.

A load the search tries only to decide (not one asked for, nor the curve's extra points) stops
as soon as it is decided unsustainable: once more than (1 − share) of a seed's counted requests
have missed the SLO (:func:`slo_miss_stop`), the rest of that seed and the remaining seeds are
not run, and the point says so (``stopped``; its figures cover the requests finished by then).

A finite run of an overloaded deployment can still meet the SLO: its queue has not had time to
build. So a load is sustainable only in steady state, on two more tests:

- **capacity**: an open-loop load is at most the deployment's all-at-once throughput
  (:attr:`SweepResult.capacity`: the requests/s of the scenario's own requests, every one
  queued at t = 0 — what the engines serve with a queue that never empties); a higher offered
  rate grows the queue without bound, however long its run;
- **trend**: the mean wait to first schedule of the last quarter of arrivals exceeds the second
  quarter's by at most :data:`~napkin.serving.metrics.TREND_SHARE` of the SLO's TTFT bound in
  every seed (:attr:`~napkin.serving.metrics.SimSummary.wait_trend_s`): past the start from an
  empty engine, a sustainable load's waits are stationary, while an overload's grow with the
  run.

With both, the answer no longer rests on how long the run is: under a lenient SLO (5 s TTFT) a
30 s Poisson run accepted 12.7 requests/s where a 120 s run accepted 10.5; with them, 10.40
and 10.28 (``tests/serving/test_sweep.py``), and the MLPerf Mixtral Server scenario reads
43.6 samples/s a GPU at its 120 s and at 480 s.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from napkin.accounting.energy import DEFAULT_POWER, Energy, PowerModel
from napkin.errors import NapkinError, require
from napkin.serving.arrivals import OpenLoop
from napkin.serving.confidence import confidence
from napkin.serving.load import base_load, is_closed_loop, scale_load
from napkin.serving.metrics import RequestLatencies, SimSummary, counted, summarize
from napkin.serving.scenario import Built, Scenario, build
from napkin.serving.slo_stop import SLOMissStop
from napkin.serving.work import run_energy
from napkin.serving.workload import MAX_REQUESTS, Workload, expected_requests, load_workload

CAPACITY_FILLS = 8
"""The all-at-once run behind :attr:`SweepResult.capacity` queues at least this many times the
engines' sequence slots, so that they stay full for several request lives."""
@dataclass(frozen=True)
class SweepPoint:
    """One offered load, over the seeds."""

    load: float
    """Offered requests/s (sessions/s for sessions; clients for a closed loop)."""
    summaries: tuple[SimSummary, ...]
    """One per seed run, in seed order."""
    stopped: bool = False
    """The last seed's run stopped once more than (1 − share) of its counted requests had
    missed the SLO (:func:`slo_miss_stop`): unsustainable, its summary covers the requests
    finished by then, and later seeds were not run."""
    over_capacity: bool = False
    """The offered rate is above the deployment's all-at-once throughput
    (:attr:`SweepResult.capacity`): unsustainable in steady state, whatever the run shows."""
    p_slo_met: float | None = None
    """P(SLO met) under the calibration profile's bands (:mod:`napkin.serving.confidence`),
    mean over the seeds, of a point run in full; 0 when over capacity or its queue grows (no
    ratio makes a growing queue sustainable); None: stopped early, or no band."""
    energy: Energy | None = None
    """The seeds' runs' energy together (:func:`napkin.serving.work.run_energy`); None for a
    point stopped early, a closed loop, disaggregated pools or a GPU without a board power."""

    @property
    def worst_slo_met_frac(self) -> float:
        return min(s.slo_met_frac for s in self.summaries)

    @property
    def growing(self) -> bool:
        """Some seed's queue was still growing at the end of its run
        (:attr:`~napkin.serving.metrics.SimSummary.queue_growing`)."""
        return any(s.queue_growing for s in self.summaries)

    def sustainable(self, share: float) -> bool:
        return (not self.stopped and not self.over_capacity and not self.growing
                and self.worst_slo_met_frac >= share)


@dataclass(frozen=True)
class SweepResult:
    """The evaluated loads (sorted), the maximum sustainable one and how it was found."""

    scenario: str
    unit: str
    """``requests/s``, ``sessions/s`` or ``clients``."""
    base_load: float
    share: float
    seeds: tuple[int, ...]
    points: tuple[SweepPoint, ...]
    max_sustainable: float | None
    """None: not even the lowest load tried was sustainable."""
    bracket: tuple[float, float | None]
    """(highest sustainable, lowest unsustainable above it; None if none was found)."""
    capacity: float | None = None
    """The deployment's all-at-once throughput in the load's unit (open loops: requests/s of
    the scenario's requests, every one queued at t = 0; None for closed loops and sessions,
    whose load waits for its answers), an upper bound on :attr:`max_sustainable`."""
    confidence: float = 0.9
    """``slo.confidence``: the probability :attr:`sure` asks for."""

    @property
    def sure(self) -> float | None:
        """The highest load run in full that is sustainable with P(SLO met) ≥ ``confidence``
        under the profile's bands, at the simulated throughput (None: none, or no band)."""
        ok = [p.load for p in self.points if p.p_slo_met is not None
              and p.sustainable(self.share) and p.p_slo_met >= self.confidence]
        return max(ok) if ok else None

    step_band: tuple[float, float] | None = None
    """The profile's measured/predicted TPOT ratio interval (10th, 90th percentile): how far a
    real engine's step times may sit from the simulated ones (None: no band)."""

    @property
    def band(self) -> tuple[float, float] | None:
        """An 80 % interval of the maximum sustainable load: it divided by the 90th and the
        10th percentile step-time ratio (a deployment whose steps take r× the simulated time
        carries 1/r× the load, where its throughput binds; where a latency bound binds,
        latencies scale with the steps too), at most the load that saturates a frontend queue
        (faster steps do not speed the frontend: its busy share grows with the load, so it is
        full at the maximum over its busy share there). None without a band or a maximum."""
        top, b = self.max_sustainable, self.step_band
        if top is None or b is None:
            return None
        busy = max((s.frontend_busy_frac for p in self.points if p.load == top
                    for s in p.summaries), default=0.0)
        ceiling = top / busy if busy > 0 else float("inf")
        return min(top / b[1], ceiling), min(top / b[0], ceiling)


def _resolved(scenario: Scenario, base_dir: Path) -> tuple[Workload, Path]:
    if isinstance(scenario.workload, str):
        return load_workload(base_dir / scenario.workload)
    return scenario.workload, base_dir


class _Runner:
    """Runs the scenario at a load over the seeds, remembering every point."""

    def __init__(self, scenario: Scenario, base_dir: Path, seeds: Sequence[int],
                 power: PowerModel = DEFAULT_POWER) -> None:
        self.scenario = scenario
        self.power = power
        self.workload, self.dir = _resolved(scenario, base_dir)
        first = build(scenario.model_copy(update={"workload": self.workload}), self.dir)
        self.base = base_load(self.workload, first.source)
        require(self.base > 0, "workload: a sweep needs at least two arrivals (an offered rate)")
        self.closed = is_closed_loop(self.workload)
        self.seeds = tuple(seeds)
        self.points: dict[float, SweepPoint] = {}
        self.capacity = self._capacity(first)
        self.profile = first.profile

    def _capacity(self, built: Built) -> float | None:
        """The requests/s ``built``'s engines serve while a queue of its own requests never
        empties (open loops; None otherwise): its requests, repeated to at least
        :data:`CAPACITY_FILLS` times the engines' sequence slots, all queued at t = 0, and the
        completions counted between the first finish and the last admission (the engines full
        throughout: no start from empty, no drain)."""
        src = built.source
        if not isinstance(src, OpenLoop) or len(src.requests) == 0:
            return None
        req = src.requests
        slots = sum(e.spec.max_num_seqs for e in built.engines())
        tiles = -(-CAPACITY_FILLS * slots // len(req))
        burst = replace(src, requests=replace(
            req, arrival_s=np.zeros(len(req) * tiles),
            input_tokens=np.tile(req.input_tokens, tiles),
            output_tokens=np.tile(req.output_tokens, tiles),
            label=np.tile(req.label, tiles) if len(req.label) else req.label,
            prefix_hashes=None if req.prefix_hashes is None else req.prefix_hashes * tiles))
        r = replace(built, source=burst).simulate().records
        first, last = float(r.finish_s.min()), float(r.first_scheduled_s.max())
        if last > first:
            return int(((r.finish_s > first) & (r.finish_s <= last)).sum()) / (last - first)
        return len(r.rid) / max(float(r.finish_s.max()), 1e-12)

    def unit(self) -> str:
        if self.closed:
            return "clients"
        return "sessions/s" if self.workload.arrivals.kind == "sessions" else "requests/s"

    def snap(self, load: float) -> float:
        return float(max(1, round(load))) if self.closed else load

    def requests_at(self, load: float) -> float | None:
        """Requests the workload draws at ``load`` (None where it cannot say in advance)."""
        factor = self.snap(load) / self.base
        if not 0 < factor < float("inf"):
            return 0.0 if factor == 0 else float("inf")
        return expected_requests(scale_load(self.workload, factor).arrivals)

    def refusal(self, load: float) -> str | None:
        """Why ``load`` cannot be simulated (None: it can): the workload scaled to it is
        refused as a user's would be, or it draws no request or more than
        :data:`MAX_REQUESTS` (where known)."""
        try:
            n = self.requests_at(load)
        except NapkinError as e:
            return str(e)
        if n is not None and not 1 <= n <= MAX_REQUESTS:
            return (f"it draws about {n:.3g} requests from this workload; between 1 and "
                    f"{MAX_REQUESTS:,} can be simulated")
        return None

    def runnable(self, load: float) -> bool:
        return self.refusal(load) is None

    def run(self, load: float, decide: bool = False) -> SweepPoint:
        """The point at ``load`` over the seeds; ``decide``: only whether it is sustainable,
        so a seed's run stops once too many requests missed the SLO and the remaining seeds
        are skipped (a point stopped so is run again in full when asked without ``decide``)."""
        load = self.snap(load)
        known = self.points.get(load)
        over = self.capacity is not None and load > self.capacity
        if decide and over and known is None:  # decided without running
            return SweepPoint(load, (), over_capacity=True)
        if known is None or (known.stopped and not decide) or not known.summaries:
            wl = scale_load(self.workload, load / self.base)
            share = self.scenario.slo.share
            out: list[SimSummary] = []
            latencies: list[RequestLatencies] = []
            stopped = False
            for seed in self.seeds:
                built = build(self.scenario.model_copy(update={"workload": wl}), self.dir, seed)
                run = built.simulate(stop=slo_miss_stop(built, share) if decide else None)
                out.append(summarize(run, built.slo, built.warmup))
                latencies.append(RequestLatencies.of(counted(run.records, built.warmup)))
                stopped = run.stopped
                if decide and (stopped or out[-1].slo_met_frac < share):
                    break
            full = not stopped and len(out) == len(self.seeds)
            sure = confidence(latencies, built.slo, built.profile) if full else None
            p = None if sure is None else (
                0.0 if over or any(s.queue_growing for s in out) else sure)
            used = run_energy(built, out, built.gpus, self.power) if full else None
            self.points[load] = SweepPoint(load, tuple(out), stopped, over, p, used)
        return self.points[load]


def slo_miss_stop(built: Built, share: float) -> SLOMissStop | None:
    """The :class:`~napkin.serving.slo_stop.SLOMissStop` of ``built``'s SLO at ``share`` past
    its warm-up; None where the total is not known in advance (closed loops, sessions)."""
    src = built.source
    if not isinstance(src, OpenLoop):
        return None
    counted = len(src.requests) - built.warmup
    if counted <= 0:
        return None
    return SLOMissStop(built.slo, built.warmup, counted, share)


def max_sustainable(ok: Callable[[float], bool], start: float, rel_tol: float = 0.03,
                    integer: bool = False, max_steps: int = 12
                    ) -> tuple[float | None, float | None]:
    """The bracket (highest sustainable, lowest unsustainable) of a load ``ok`` accepts, from
    ``start`` by doubling or halving (at most ``max_steps`` times), then geometric bisection
    to ``hi/lo ≤ 1 + rel_tol`` (``hi − lo ≤ 1`` for integer loads)."""
    def snap(x: float) -> float:
        return float(max(1, round(x))) if integer else x

    lo: float | None = None
    hi: float | None = None
    x = snap(start)
    if ok(x):
        lo = x
        for _ in range(max_steps):
            x = snap(lo * 2)
            if not ok(x):
                hi = x
                break
            lo = x
        else:
            return lo, None
    else:
        hi = x
        for _ in range(max_steps):
            x = snap(hi / 2)
            if x >= hi:  # integer loads bottom out at 1
                return None, hi
            if ok(x):
                lo = x
                break
            hi = x
        else:
            return None, hi
    while (hi - lo > 1) if integer else (hi / lo > 1 + rel_tol):
        mid = snap(math.sqrt(lo * hi))
        if mid in (lo, hi):
            mid = snap((lo + hi) / 2)
            if mid in (lo, hi):
                break
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


AUTO_FRACTIONS = (0.25, 0.5, 0.75, 1.25, 1.5)
"""``loads=None``: besides the bisection's own points, these multiples of the maximum
sustainable load are run, so the curve shows the knee from both sides."""


def sweep(scenario: Scenario, base_dir: Path, loads: Sequence[float] | None = None,
          seeds: Sequence[int] = (0,), rel_tol: float = 0.03,
          extra_points: bool = True, power: PowerModel = DEFAULT_POWER) -> SweepResult:
    """Run ``scenario`` at ``loads`` (None: around its maximum sustainable load, with the
    :data:`AUTO_FRACTIONS` points unless ``extra_points`` is False) over ``seeds`` and find the
    maximum sustainable load (see the module docstring); every point run in full carries its
    P(SLO met) under the profile's bands and its energy under ``power``."""
    require(len(seeds) >= 1, "seeds: need at least one")
    require(0 < rel_tol < 1, f"rel_tol: must be in (0, 1), got {rel_tol}")
    if loads is not None:
        require(len(loads) >= 1 and all(0 < x < float("inf") for x in loads),
                "rates: every value must be a finite number > 0")
    r = _Runner(scenario, base_dir, seeds, power)
    share = scenario.slo.share
    for x in loads or ():
        if (why := r.refusal(x)) is not None:
            raise NapkinError(f"rates: a load of {x:g} {r.unit()} cannot be simulated: {why}")
    for x in loads or ():
        r.run(x)
    start = r.base
    if loads:
        good = [x for x in loads if r.run(x).sustainable(share)]
        start = max(good) if good else min(loads)
    # a load outside what can be simulated counts as not sustainable
    lo, hi = max_sustainable(lambda x: r.runnable(x) and r.run(x, decide=True).sustainable(share),
                             start, rel_tol, r.closed)
    if loads is None and lo is not None and extra_points:
        for f in AUTO_FRACTIONS:
            r.run(lo * f)
    points = tuple(sorted(r.points.values(), key=lambda p: p.load))
    band = r.profile.bands.get("tpot") if r.profile is not None else None
    return SweepResult(scenario.name, r.unit(), r.base, share, r.seeds, points, lo,
                       (lo if lo is not None else 0.0, hi), r.capacity,
                       scenario.slo.confidence,
                       (band.ratio_low, band.ratio_high) if band else None)

