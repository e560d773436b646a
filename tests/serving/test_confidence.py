"""P(SLO met) under a profile's error bands, against hand derivations.

A band (0.8, 1.25) is log-normal with μ = (ln 0.8 + ln 1.25)/2 = 0 and
σ = ln 1.25 / z₀.₉ = 0.223144 / 1.281552 = 0.174120, so P(r ≤ x) = Φ(ln x / 0.174120).
"""

import math
from statistics import NormalDist

import numpy as np
import pytest

from napkin.calibration.profile import Band
from napkin.serving.confidence import QUADRATURE, LogNormalRatio, p_slo_met
from napkin.serving.metrics import SLO, RequestLatencies

SIGMA = math.log(1.25) / 1.2815516
PHI = NormalDist().cdf
WIDE = LogNormalRatio.of(Band(0.8, 1.25, 0.1, 10))
EXACT = LogNormalRatio.of(None)


def _lat(ttft: list[float], tpot: list[float], e2e: list[float] | None = None
         ) -> RequestLatencies:
    t, o = np.array(ttft), np.array(tpot)
    return RequestLatencies(t, o, np.array(e2e) if e2e else t + 9 * o)


def test_band_is_the_10th_and_90th_percentile():
    assert WIDE.mu == pytest.approx(0.0, abs=1e-12)
    assert WIDE.sigma == pytest.approx(SIGMA, rel=1e-6)
    assert WIDE.cdf(np.array([0.8, 1.0, 1.25])) == pytest.approx([0.1, 0.5, 0.9], abs=1e-6)
    skewed = LogNormalRatio.of(Band(0.9063, 1.4417, 0.09, 181))  # vllm's shipped TTFT band
    assert math.exp(skewed.mu) == pytest.approx(math.sqrt(0.9063 * 1.4417))  # median 1.143
    assert EXACT.cdf(np.array([0.999, 1.0])) == pytest.approx([0.0, 1.0])


def test_ttft_probability_is_the_cdf_at_the_mth_largest_headroom():
    """4 requests, share 0.75 → 3 must meet TTFT ≤ 1 s. Headroom T/ttft = 5, 2, 1.25, 0.5:
    the run meets it while r_t ≤ 1.25, the 3rd largest, so P = Φ(ln 1.25/σ) = 0.9."""
    lat = _lat([0.2, 0.5, 0.8, 2.0], [0.01] * 4)
    slo = SLO(ttft_s=1.0, tpot_s=1.0, share=0.75)
    assert p_slo_met(lat, slo, WIDE, EXACT) == pytest.approx(0.9, abs=1e-6)
    # share 1.0: the 4th largest headroom, 0.5 → Φ(ln 0.5/σ) ≈ 3.5e-5
    assert p_slo_met(lat, SLO(1.0, 1.0, 1.0), WIDE, EXACT) == pytest.approx(
        PHI(math.log(0.5) / SIGMA), abs=1e-6)


def test_tpot_probability_is_the_quadrature_share_below_the_headroom():
    """Every TPOT 40 ms under a 50 ms bound: met while r_o ≤ 1.25, the band's 90th
    percentile; the mid-point quadrature counts the quantiles (j + ½)/256 ≤ 0.9: 230 of 256."""
    lat = _lat([0.1] * 3, [0.04] * 3)
    p = p_slo_met(lat, SLO(1.0, 0.05, 1.0), EXACT, WIDE)
    assert p == pytest.approx(230 / QUADRATURE, abs=1e-9)
    assert abs(p - 0.9) < 1 / QUADRATURE


def test_independent_ratios_multiply():
    """Each bound met at exactly its 90th-percentile ratio: P = 0.9 × 0.9 (independent)."""
    lat = _lat([0.8] * 5, [0.04] * 5)
    assert p_slo_met(lat, SLO(1.0, 0.05, 0.8), WIDE, WIDE) == pytest.approx(0.81, abs=4e-3)


def test_end_to_end_bound_scales_decode_with_tpot():
    """TTFT 1 s, decode 2 s (e2e 3 s) under a 3.5 s end-to-end bound, TPOT exact: met while
    1·r_t + 2 ≤ 3.5, r_t ≤ 1.5 → P = Φ(ln 1.5/σ)."""
    lat = _lat([1.0], [2.0 / 9], [3.0])
    slo = SLO(ttft_s=10.0, tpot_s=1.0, share=1.0, e2e_s=3.5)
    assert p_slo_met(lat, slo, WIDE, EXACT) == pytest.approx(PHI(math.log(1.5) / SIGMA),
                                                             abs=1e-6)


def test_a_run_that_misses_at_the_predicted_times_is_below_one_half_and_no_band_is_certain():
    lat = _lat([1.1] * 4, [0.01] * 4)
    slo = SLO(1.0, 1.0, 0.5)
    assert p_slo_met(lat, slo, WIDE, EXACT) == pytest.approx(PHI(math.log(1 / 1.1) / SIGMA))
    assert p_slo_met(lat, slo, EXACT, EXACT) == 0.0
    assert p_slo_met(_lat([0.9] * 4, [0.01] * 4), slo, EXACT, EXACT) == 1.0


def _by_definition(lat: RequestLatencies, slo: SLO, ttft: LogNormalRatio,
                   tpot: LogNormalRatio) -> float:
    """The module docstring's P(SLO met) written out: every request's c_i at every quantile of
    r_o (−∞ where its TPOT misses), the m-th largest of each row, F_t of it, averaged."""
    n = len(lat.ttft_s)
    need = math.ceil(slo.share * n - 1e-9)
    if need <= 0:
        return 1.0
    kth = []
    for r in tpot.quantiles(QUADRATURE if tpot.sigma > 0 else 1).tolist():
        c = sorted((slo.ttft_s / max(t, 1e-300) if o * r <= slo.tpot_s else -math.inf)
                   for t, o in zip(lat.ttft_s.tolist(), lat.tpot_s.tolist(), strict=True))
        kth.append(c[n - need])
    return float(ttft.cdf(np.array(kth)).mean())  # (numpy's mean: its summation order)


def test_the_selection_by_tpot_order_is_the_definition():
    """Without an end-to-end bound the requests that meet TPOT at a quantile are those of
    smallest TPOT, and quantiles with as many of them are selected once: the same
    probability, float for float, as each quantile's row of c_i sorted whole — runs far
    inside the TPOT bound (one count), straddling it (many), with tied TPOTs and shares
    from none to all."""
    rng = np.random.default_rng(7)
    bands = (EXACT, WIDE, LogNormalRatio.of(Band(0.5, 3.0, 0.1, 10)))
    for trial in range(150):
        n = int(rng.integers(1, 40))
        ttft = rng.exponential(0.5, n)
        tpot = (rng.choice([0.02, 0.04, 0.05, 0.06], n) if trial % 3 == 0
                else np.full(n, 0.04) if trial % 3 == 1 else rng.exponential(0.04, n))
        lat = RequestLatencies(ttft, tpot, ttft + 20 * tpot)
        slo = SLO(float(rng.choice([0.5, 1.0, 2.0])), float(rng.choice([0.03, 0.05, 0.08])),
                  float(rng.choice([0.0, 0.5, 0.9, 0.95, 1.0])))
        ratio_t, ratio_o = bands[trial % 3], bands[(trial // 3) % 3]
        assert p_slo_met(lat, slo, ratio_t, ratio_o) == _by_definition(lat, slo, ratio_t,
                                                                       ratio_o)
