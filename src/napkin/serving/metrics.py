"""Summary of a simulation: latencies with nearest-rank percentiles, throughput, goodput under
an SLO, preemptions, KV occupancy and the state held over time.

Definitions (instants are absolute, durations relative to the request's arrival):
TTFT = first token − arrival; TPOT = (finish − first token)/(output − 1), requests with more than
one output token; end-to-end = finish − arrival; queue wait = time spent in the waiting queue
(including after preemptions); first-schedule wait = first scheduled − arrival. Makespan runs
from the first arrival to the last finish. Goodput counts requests meeting both SLO bounds per
second of makespan. KV state held is ``∫ Σ_running computed_tokens dt × KV bytes per token``.
"""

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np

from napkin.serving.engine import Engine
from napkin.serving.load import offered_rate
from napkin.serving.simulate import SimRecords, SimRun
from napkin.stats import summary
from napkin.units import GiB, fmt_seconds

if TYPE_CHECKING:
    from napkin.calibration.profile import Profile


@dataclass(frozen=True)
class SLO:
    ttft_s: float = 2.0
    tpot_s: float = 0.05
    share: float = 0.9
    """Share of requests meeting every bound that makes a load sustainable."""
    e2e_s: float | None = None
    """End-to-end bound (None: none)."""

    def met(self, ttft_s: np.ndarray, tpot_s: np.ndarray, e2e_s: np.ndarray) -> np.ndarray:
        """Which requests meet every bound (arrays, or floats)."""
        ok = (ttft_s <= self.ttft_s) & (tpot_s <= self.tpot_s)
        return ok if self.e2e_s is None else ok & (e2e_s <= self.e2e_s)

    def describe(self) -> str:
        text = f"TTFT ≤ {fmt_seconds(self.ttft_s)} and TPOT ≤ {fmt_seconds(self.tpot_s)}"
        return text + (f" and end-to-end ≤ {fmt_seconds(self.e2e_s)}" if self.e2e_s else "")


TREND_SHARE = 0.5
"""A run's queue is still growing when its last quarter of arrivals waits longer for its first
schedule than its second quarter by more than this share of the SLO's TTFT bound (1 s under a
2 s bound), a growth an overload reaches within its run, (1 − capacity/load) × the half-run
between the quarters. Near capacity a stationary queue's quarter means differ by chance: at
0.1 the sweep of a 60 s run read 5–7 % below a 4× longer run's answer on a Poisson
workload, at 0.5 within 1–5 %."""


@dataclass(frozen=True)
class Latency:
    mean_s: float
    p50_s: float
    p90_s: float
    p95_s: float
    p99_s: float

    @classmethod
    def of(cls, values: np.ndarray) -> "Latency":
        s = summary(values)
        return cls(s["mean"], s["p50"], s["p90"], s["p95"], s["p99"])


@dataclass(frozen=True)
class PoolSummary:
    """Engines of one pool (``engine`` aggregated; ``prefill`` and ``decode`` disaggregated)."""

    name: str
    replicas: int
    steps: int
    busy_frac: float
    """Mean over the pool's replicas of busy time / makespan."""
    peak_kv_frac: float
    """Highest replica's peak KV blocks in use over its pool."""


def pool_summaries(run: SimRun, span_s: float) -> tuple[PoolSummary, ...]:
    """Per pool (engines named ``<pool>-<i>``, a pipeline's virtual engines ``<pool>-<i>:<k>``):
    replicas, steps, busy share (of an engine), peak KV."""
    pools: dict[str, list] = {}
    for e in run.engines:
        pools.setdefault(e.name.split(":")[0].rsplit("-", 1)[0], []).append(e)
    return tuple(PoolSummary(name, len({e.name.split(":")[0] for e in es}),
                             sum(e.num_steps for e in es),
                             sum(e.busy_s for e in es) / (len(es) * max(span_s, 1e-12)),
                             max(e.peak_blocks / max(e.spec.num_blocks, 1) for e in es))
                 for name, es in pools.items())


@dataclass(frozen=True)
class SimSummary:
    requests: int
    makespan_s: float
    last_finish_s: float
    requests_per_s: float
    output_tokens_per_s: float
    input_tokens_per_s: float
    ttft: Latency
    tpot: Latency
    e2e: Latency
    queue_wait: Latency
    first_schedule_wait: Latency
    slo: SLO
    slo_met_frac: float
    goodput_requests_per_s: float
    preemptions: int
    preempted_requests: int
    peak_kv_blocks: int
    kv_blocks: int
    peak_kv_frac: float
    mean_kv_tokens: float
    kv_state_gib_s: float
    prefix_hit_frac: float
    """Share of the input tokens whose KV came from the prefix cache (the GPU's or, with a host
    tier, loaded from host memory)."""
    steps: int
    sim_units: int
    offered_requests_per_s: float
    """(n − 1)/(last arrival − first arrival) of the counted requests."""
    drain_s: float
    """Last finish − last arrival: how long the backlog outlives the arrivals."""

    pools: tuple[PoolSummary, ...]
    wait_growth_s: float
    """Mean wait to first schedule of the last quarter of arrivals minus the first quarter's:
    a queue that keeps growing while requests arrive."""
    host_kv_loaded_tokens: int = 0
    """Tokens of KV loaded back from the host tier (``engine.kv_offload``)."""
    host_kv_load_s: float = 0.0
    """Engine time spent loading them (summed over replicas)."""
    frontend_busy_frac: float = 0.0
    """Frontend work over the span, averaged over the replicas with a frontend queue
    (``engine.frontend``; 0 without one): near 1, the frontend caps the deployment."""
    wait_trend_s: float = 0.0
    """Mean wait to first schedule of the last quarter of arrivals minus the second quarter's:
    the growth once the run is past its start from an empty engine (a sustainable load's waits
    are stationary there; an overload's grow with the run)."""
    slot_use_frac: float = 0.0
    """Mean share of the batch slots (``max_num_seqs``) computing per step: Σ over steps of
    the sequences each step decodes or prefills, over ``max_num_seqs`` × steps (every
    replica's)."""

    @property
    def queue_growing(self) -> bool:
        """The queue was still growing at the end of the run: :attr:`wait_trend_s` above
        :data:`TREND_SHARE` of the SLO's TTFT bound."""
        return self.wait_trend_s > TREND_SHARE * self.slo.ttft_s

    @property
    def overload_factor(self) -> float | None:
        """Offered over served requests/s when the deployment cannot keep up: offered load
        above 1.05 × served and a wait to first schedule that grew by more than 1 s from the
        first quarter of arrivals to the last; None otherwise (closed loops never are: their
        clients wait for answers)."""
        if (self.offered_requests_per_s > 1.05 * self.requests_per_s
                and self.wait_growth_s > 1.0):
            return self.offered_requests_per_s / self.requests_per_s
        return None


@dataclass(frozen=True)
class RequestLatencies:
    """Each counted request's TTFT (first token − arrival), TPOT ((finish − first token) /
    (output tokens − 1); 0 for a one-token answer, which has none) and end-to-end time
    (finish − arrival), seconds."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray

    @classmethod
    def of(cls, r: SimRecords) -> "RequestLatencies":
        return cls.of_times(r.arrival_s, r.first_token_s, r.finish_s, r.output_tokens)

    @classmethod
    def of_times(cls, arrival_s: np.ndarray, first_token_s: np.ndarray,
                 last_token_s: np.ndarray, output_tokens: np.ndarray) -> "RequestLatencies":
        """From each request's arrival, first and last token (s) and output tokens G:
        TTFT = t_1 − t_a, TPOT = (t_G − t_1)/(G − 1) (0 when G = 1), e2e = t_G − t_a."""
        multi = output_tokens > 1
        tpot = np.zeros(len(arrival_s))
        tpot[multi] = ((last_token_s[multi] - first_token_s[multi])
                       / (output_tokens[multi] - 1))
        return cls(first_token_s - arrival_s, tpot, last_token_s - arrival_s)


def counted(records: SimRecords, warmup: int) -> SimRecords:
    """The records of requests after the first ``warmup`` sent (request ids are in send
    order)."""
    if warmup <= 0:
        return records
    keep = records.rid >= warmup
    return replace(records, **{f.name: getattr(records, f.name)[keep]
                               for f in fields(records) if getattr(records, f.name) is not None})


def summarize(run: SimRun, slo: SLO = SLO(), warmup: int = 0) -> SimSummary:
    """Headline figures of ``run`` (see the module docstring for definitions), over the
    requests after the first ``warmup`` (engine-wide figures — KV, steps — cover the whole
    run)."""
    r = counted(run.records, warmup)
    n = len(r.rid)
    start = float(r.arrival_s.min()) if n else 0.0
    last = float(r.finish_s.max()) if n else 0.0
    span = max(last - start, 1e-12)
    lat = RequestLatencies.of(r)
    ttft = lat.ttft_s
    tpot = lat.tpot_s[r.output_tokens > 1]
    met = slo.met(ttft, lat.tpot_s, lat.e2e_s)
    engines = run.engines
    kv_token_s = sum(e.kv_token_seconds for e in engines)
    kv_bytes = engines[0].kv_bytes_per_token if engines else 0.0
    blocks = sum(e.spec.num_blocks for e in engines)
    peak = max((e.peak_blocks for e in engines), default=0)
    return SimSummary(
        requests=n,
        makespan_s=span if n else 0.0,
        last_finish_s=last,
        requests_per_s=n / span,
        output_tokens_per_s=float(r.output_tokens.sum()) / span,
        input_tokens_per_s=float(r.input_tokens.sum()) / span,
        ttft=Latency.of(ttft),
        tpot=Latency.of(tpot),
        e2e=Latency.of(lat.e2e_s),
        queue_wait=Latency.of(r.queue_wait_s),
        first_schedule_wait=Latency.of(r.first_scheduled_s - r.arrival_s),
        slo=slo,
        slo_met_frac=float(met.mean()) if n else 0.0,
        goodput_requests_per_s=float(met.sum()) / span,
        preemptions=int(r.preemptions.sum()),
        preempted_requests=int((r.preemptions > 0).sum()),
        peak_kv_blocks=peak,
        kv_blocks=blocks,
        peak_kv_frac=peak / max(min(e.spec.num_blocks for e in engines), 1) if engines else 0,
        mean_kv_tokens=kv_token_s / span,
        kv_state_gib_s=kv_token_s * kv_bytes / GiB,
        prefix_hit_frac=float(r.cached_tokens.sum()) / max(float(r.input_tokens.sum()), 1.0),
        steps=sum(e.num_steps for e in engines),
        sim_units=sum(e.num_units for e in engines),
        offered_requests_per_s=offered_rate(r.arrival_s),
        drain_s=last - float(r.arrival_s.max()) if n else 0.0,
        pools=pool_summaries(run, span if n else 0.0),
        wait_growth_s=_wait_growth(r.arrival_s, r.first_scheduled_s - r.arrival_s),
        wait_trend_s=_wait_growth(r.arrival_s, r.first_scheduled_s - r.arrival_s, 1),
        host_kv_loaded_tokens=sum(e.host_loaded_blocks * e.bs for e in engines),
        host_kv_load_s=sum(e.host_load_s for e in engines),
        frontend_busy_frac=_frontend_busy(engines, span if n else 0.0),
        slot_use_frac=slot_use(engines),
    )


def _frontend_busy(engines: Sequence[Engine], span: float) -> float:
    """Σ frontend work / (span × replicas with a frontend queue); 0 without any."""
    fronted = [e for e in engines if e.frontend is not None]
    if not fronted or span <= 0:
        return 0.0
    return sum(e.frontend_busy_s for e in fronted) / (span * len(fronted))


def slot_use(engines: Sequence[Engine]) -> float:
    """Σ slot-steps / Σ (max_num_seqs × steps) over ``engines`` (0 when none stepped)."""
    slots = sum(e.spec.max_num_seqs * e.num_steps for e in engines)
    return sum(e.slot_steps for e in engines) / slots if slots else 0.0


def _wait_growth(arrival_s: np.ndarray, wait_s: np.ndarray, since: int = 0) -> float:
    """Mean wait of the last quarter of arrivals minus that of quarter ``since`` (0: the first,
    1: the second; 0 under 8 requests)."""
    n = len(arrival_s)
    if n < 8:
        return 0.0
    w = wait_s[np.argsort(arrival_s, kind="stable")]
    q = n // 4
    return float(w[-q:].mean() - w[since * q:(since + 1) * q].mean())


def latency_bands(s: SimSummary, profile: "Profile | None") -> dict[str, float]:
    """Error bands of the simulated latencies from the profile's hold-out residuals:
    ``{metric}_{stat}_low_s`` / ``_high_s`` for TTFT and TPOT (their own bands) and end-to-end
    (the wider of the two), for the mean and every percentile. The bands were measured on mean
    TTFT/TPOT; applying them to percentiles assumes the error is a common scale factor.
    Empty for the roofline (no hold-out residuals)."""
    wide = [b for k, b in (profile.bands.items() if profile else ()) if k in ("ttft", "tpot")]
    if profile is None or not wide:  # the roofline, or a profile held out on throughput only
        return {}
    out: dict[str, float] = {}
    e2e = (min(b.ratio_low for b in wide), max(b.ratio_high for b in wide))
    for metric, lat in (("ttft", s.ttft), ("tpot", s.tpot), ("e2e", s.e2e)):
        band = profile.bands.get(metric)
        lo, hi = (band.ratio_low, band.ratio_high) if band else e2e
        for stat in ("mean", "p50", "p90", "p95", "p99"):
            value = getattr(lat, f"{stat}_s")
            out[f"{metric}_{stat}_low_s"] = value * lo
            out[f"{metric}_{stat}_high_s"] = value * hi
    return out
