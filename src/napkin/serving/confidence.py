"""How sure a simulated run is to meet its SLO: P(SLO met) from the profile's error bands.

A calibration profile's band of a metric (:class:`~napkin.calibration.profile.Band`) is the
10th–90th percentile of measured/predicted over its hold-out rows. A real engine's latencies
are read as the simulated ones times an unknown ratio per metric, ``r_t`` for TTFT and ``r_o``
for TPOT, each log-normal with the band as its 10th and 90th percentiles::

    ln r ~ N(μ, σ),  μ = (ln low + ln high) / 2,  σ = (ln high − ln low) / (2 · z₀.₉),
    z₀.₉ = 1.28155

(its median is √(low · high): a profile that reads short on average moves it above 1), the two
independent (a joint miss is then no likelier than its parts multiply to: conservative against
the fully correlated reading). A request meets the SLO under (r_t, r_o) when

    ttft · r_t ≤ T,  tpot · r_o ≤ P,  and, with an end-to-end bound,
    ttft · r_t + (e2e − ttft) · r_o ≤ E

(its decode time scales with TPOT). The run meets the SLO when at least ``m = ⌈share · n⌉`` of
its n counted requests do. For a given r_o, request i meets it for r_t ≤ c_i with
``c_i = min(T, E − (e2e_i − ttft_i) · r_o) / ttft_i`` (−∞ where its TPOT misses), so the run
does for r_t ≤ c₍m₎, the m-th largest c_i, and

    P(SLO met) = E_{r_o}[ F_t(c₍m₎(r_o)) ]

with F_t the CDF of r_t: exact in r_t, a mid-point quadrature over :data:`QUADRATURE` quantiles
of r_o. Over seeds, the mean of each seed's probability (a seed is one draw of the arrivals).
At r_t = r_o = 1 the run meets the SLO exactly when the simulation says it does; σ = 0 (a band
of one ratio) makes the probability 0 or 1.

What this leaves out: the ratios scale finished latencies, so a slower engine's longer queue
(the feedback near saturation) is not simulated; the bands were measured on mean TTFT and TPOT.
"""

import math
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist

import numpy as np

from napkin.calibration.profile import Band, Profile
from napkin.serving.metrics import SLO, RequestLatencies

Z90 = NormalDist().inv_cdf(0.9)
"""The standard normal's 90th percentile: a band's high end is μ + z₀.₉·σ."""

QUADRATURE = 256
"""Quantiles of the TPOT ratio the probability averages over."""


@dataclass(frozen=True)
class LogNormalRatio:
    """A measured/predicted ratio with ``ln r ~ N(mu, sigma)``."""

    mu: float
    sigma: float

    @classmethod
    def of(cls, band: Band | None) -> "LogNormalRatio":
        """The ratio whose 10th and 90th percentiles are the band's (exactly 1 without one)."""
        if band is None:
            return cls(0.0, 0.0)
        lo, hi = math.log(band.ratio_low), math.log(band.ratio_high)
        return cls((lo + hi) / 2, max(hi - lo, 0.0) / (2 * Z90))

    def cdf(self, r: np.ndarray) -> np.ndarray:
        """P(ratio ≤ r) for each r (r ≤ 0: 0)."""
        r = np.asarray(r, dtype=float)
        with np.errstate(divide="ignore"):
            log_r = np.log(np.where(r > 0, r, 0.0))
        if self.sigma == 0:
            return (log_r >= self.mu).astype(float)
        z = (log_r - self.mu) / self.sigma
        return np.array([NormalDist().cdf(v) for v in z.ravel()]).reshape(z.shape)

    def quantiles(self, k: int) -> np.ndarray:
        """The ratio at the mid-points (j + ½)/k, j = 0 … k − 1."""
        return np.exp(self.mu + self.sigma * _normal_midpoints(k))


@cache
def _normal_midpoints(k: int) -> np.ndarray:
    dist = NormalDist()
    return np.array([dist.inv_cdf((j + 0.5) / k) for j in range(k)])


def ratios(profile: Profile | None) -> tuple[LogNormalRatio, LogNormalRatio] | None:
    """The TTFT and TPOT ratios of ``profile``'s bands; None without a band (the roofline, a
    profile held out on throughput only): nothing to be unsure by."""
    bands = profile.bands if profile is not None else {}
    if "ttft" not in bands and "tpot" not in bands:
        return None
    return LogNormalRatio.of(bands.get("ttft")), LogNormalRatio.of(bands.get("tpot"))


def p_slo_met(latencies: RequestLatencies, slo: SLO, ttft: LogNormalRatio,
              tpot: LogNormalRatio) -> float:
    """P(at least ``slo.share`` of the requests meet ``slo``) for one run (module docstring)."""
    n = len(latencies.ttft_s)
    need = math.ceil(slo.share * n - 1e-9)
    if need <= 0:
        return 1.0
    r_o = tpot.quantiles(QUADRATURE if tpot.sigma > 0 else 1)[:, None]
    t = np.maximum(latencies.ttft_s, 1e-300)[None, :]
    meets_tpot = latencies.tpot_s[None, :] * r_o <= slo.tpot_s
    if slo.e2e_s is None:
        kth = _kth_headroom(slo.ttft_s / t[0], meets_tpot, need)
    else:
        bound = np.minimum(slo.ttft_s,
                           slo.e2e_s - (latencies.e2e_s - latencies.ttft_s)[None, :] * r_o)
        c = np.where(meets_tpot, bound / t, -np.inf)
        kth = np.partition(c, n - need, axis=1)[:, n - need]
    return float(ttft.cdf(kth).mean())


def _kth_headroom(headroom: np.ndarray, meets_tpot: np.ndarray, need: int) -> np.ndarray:
    """c₍m₎ for each quantile of r_o without an end-to-end bound: the ``need``-th largest
    ``headroom`` (T / ttft) among the requests that meet TPOT at that r_o, −∞ where fewer
    do. Those requests are the ones of smallest TPOT (the product with r_o keeps their order),
    so quantiles with as many of them share one set: each count is selected once (a run far
    inside or outside its TPOT bound has one count for all of them)."""
    counts = meets_tpot.sum(axis=1)
    kth = np.full(len(counts), -np.inf)
    for k in np.unique(counts):
        if k < need:
            continue
        rows = counts == k
        pool = headroom[meets_tpot[int(np.argmax(rows))]]
        kth[rows] = np.partition(pool, k - need)[k - need]
    return kth


def confidence(runs: list[RequestLatencies], slo: SLO, profile: Profile | None
               ) -> float | None:
    """Mean P(SLO met) over the seeds' runs under ``profile``'s bands (None: no band)."""
    r = ratios(profile)
    if r is None or not runs:
        return None
    return float(np.mean([p_slo_met(x, slo, *r) for x in runs]))
