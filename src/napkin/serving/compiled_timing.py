"""The step times of :mod:`napkin.serving.compiled_core`, compiled with numba: the closed-form
sums of a decode run (:class:`~napkin.timing.series.StepSeries`' methods, over its five numbers
and side as a tuple; its :func:`~napkin.timing.series._line_sum` and ``_product_sum`` compiled
as they are), a step's parts from the aggregates (:class:`~napkin.accounting.linear.LinearCost`'s
``decode_parts`` and ``step_parts``, at the rates the cost holds) and the roofline's and a
fitted profile's time of them (:class:`~napkin.timing.steps.RooflineTimer`,
:class:`~napkin.calibration.basis.FittedTimer`). Each function names the method it follows;
``tests/serving/test_compiled.py`` checks the sums against the methods bit for bit, and whole
runs against the scheduler.
"""

import math

import numpy as np
from numba import njit

from napkin.accounting.batch import causal_pairs
from napkin.timing.series import _line_sum, _product_sum

line_sum = njit(cache=True)(_line_sum)
product_sum = njit(cache=True)(_product_sum)
pairs_of = njit(cache=True)(causal_pairs)  # (full attention: no window)


@njit(cache=True)
def _side(c0: float, dc: float, m0: float, dm: float) -> int:
    """:attr:`StepSeries.side`."""
    d0, dd = c0 - m0, dc - dm
    if d0 >= 0 and dd >= 0:
        return 1
    if d0 < 0 and dd <= 0:
        return -1
    return 0


@njit(cache=True)
def _compute_bound(c0: float, dc: float, m0: float, dm: float, n: int) -> tuple[int, int]:
    """:meth:`StepSeries._compute_bound`."""
    d0, dd = c0 - m0, dc - dm
    if dd == 0:
        return (0, n) if d0 >= 0 else (0, 0)
    cross = min(max(-d0 / dd, -1.0), n + 1.0)
    if dd > 0:
        return min(max(math.ceil(cross), 0), n), n
    return 0, min(max(math.floor(cross) + 1, 0), n)


@njit(cache=True)
def series_time(s: tuple, n: int) -> float:
    """:meth:`StepSeries.time` (``s``: c0, dc, m0, dm, overhead, side, line)."""
    c0, dc, m0, dm, oh, side, line = s
    if n == 1:
        if line:
            return c0 + oh
        return (m0 if m0 > c0 else c0) + oh
    if side != 0 and n > 1:
        if side > 0:
            return line_sum(c0, dc, 0, n) + n * oh
        return line_sum(m0, dm, 0, n) + n * oh
    a, b = _compute_bound(c0, dc, m0, dm, n)
    return (line_sum(c0, dc, a, b) + line_sum(m0, dm, 0, a) + line_sum(m0, dm, b, n)
            + n * oh)


@njit(cache=True)
def series_weighted(s: tuple, n: int, w0: int, dw: int) -> float:
    """:meth:`StepSeries.weighted`."""
    c0, dc, m0, dm, oh, side, line = s
    if n == 1:
        if line:
            return w0 * (c0 + oh)
        return w0 * ((m0 if m0 > c0 else c0) + oh)
    overhead = product_sum(w0, dw, oh, 0.0, 0, n) if oh else 0.0
    if side != 0 and n > 1:
        if side > 0:
            return overhead + product_sum(w0, dw, c0, dc, 0, n)
        return overhead + product_sum(w0, dw, m0, dm, 0, n)
    a, b = _compute_bound(c0, dc, m0, dm, n)
    return (overhead + product_sum(w0, dw, c0, dc, a, b) + product_sum(w0, dw, m0, dm, 0, a)
            + product_sum(w0, dw, m0, dm, b, n))


@njit(cache=True)
def steps_until(s: tuple, elapsed_s: float, n: int) -> int:
    """:meth:`StepSeries.steps_until` (not strict)."""
    c0, dc, m0, dm, oh, _, _ = s
    lo, hi = 0, n
    if n > 4 and dc >= 0 and dm >= 0:
        first = (m0 if m0 > c0 else c0) + oh
        c1, m1 = c0 + (n - 1) * dc, m0 + (n - 1) * dm
        last = (m1 if m1 > c1 else c1) + oh
        if first > 0 and elapsed_s >= 0:
            most, least = elapsed_s / first, elapsed_s / last
            hi = n if most >= n - 2 else int(most) + 2
            lo = (n if least >= n else int(least)) - 2
            lo = hi if lo > hi else 0 if lo < 0 else lo
    while lo < hi:
        mid = (lo + hi) // 2
        if series_time(s, mid) >= elapsed_s:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _context(token: tuple, pairs: int, decode_pairs: int, cached: int, window: np.ndarray
             ) -> tuple:
    """:meth:`LinearCost._with_uniform_context` (``window``: flops per pair, per decode pair,
    KV read per cached token)."""
    dense, attention, weights, kv, sixteen = token
    attention += window[0] * pairs
    if window[1]:
        attention += window[1] * decode_pairs
    return dense, attention, weights, kv + window[2] * cached, sixteen


@njit(cache=True)
def decode_parts(n_dec: int, ctx: int, tokens: np.ndarray, window: np.ndarray) -> tuple:
    """:meth:`LinearCost.decode_parts` (``tokens``: its cached token parts by sequence
    count)."""
    t = tokens[n_dec]
    pairs = ctx + n_dec
    return _context((t[0], t[1], t[2], t[3], t[4]), pairs, pairs, ctx, window)


@njit(cache=True)
def step_parts(n_dec: int, sum_ctx: int, cs: np.ndarray, ns: np.ndarray, os_: np.ndarray,
                count: int, rates: np.ndarray, window: np.ndarray, w_readout: np.ndarray,
                w_none: np.ndarray) -> tuple:
    """:meth:`LinearCost.step_parts` of a model without 16-bit parts or linear-attention
    state (``rates``: flops per token, per read-out, per cached prefill token, attention
    flops per token, KV written per token; weight bytes by tokens, with and without
    read-outs)."""
    tokens = readout = n_dec
    pairs = decode_pairs = sum_ctx + n_dec
    cached, prefill_cached = sum_ctx, 0
    for j in range(count):
        c, n, o = cs[j], ns[j], os_[j]
        tokens += n
        readout += o
        p = pairs_of(c, n)
        pairs += p
        cached += c
        if n == 1:
            decode_pairs += p
        else:
            prefill_cached += c
    if tokens == 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    dense = rates[0] * tokens + rates[1] * readout + rates[2] * prefill_cached
    weights = w_readout[tokens] if readout > 0 else w_none[tokens]
    token = (dense - 0.0, rates[3] * tokens, weights, rates[4] * tokens, 0.0)
    return _context(token, pairs, decode_pairs, cached, window)


@njit(cache=True)
def _roofline_work(parts: tuple, timer: np.ndarray) -> tuple[float, float]:
    """:meth:`RooflineTimer._work` without 16-bit parts (``timer``: peak, bandwidth, tp, KV
    devices, overhead, all-reduce fixed, all-reduce per token, tp > 1)."""
    return (parts[0] + parts[1]) / timer[2], parts[2] / timer[2] + parts[3] / timer[3]


@njit(cache=True)
def _roofline_overhead(tokens: int, timer: np.ndarray) -> float:
    """:meth:`RooflineTimer._overhead_s`."""
    if timer[7]:
        return timer[4] + (timer[5] + timer[6] * tokens)
    return timer[4]


@njit(cache=True)
def _fitted_step_s(parts: tuple, tokens: int, prefill: bool, timer: np.ndarray,
                   routed: np.ndarray) -> float:
    """:meth:`FittedTimer.step_s` (``timer``: its rates, the floor, whether routed experts add
    time; ``routed``: that time by tokens)."""
    if tokens == 0:
        return 0.0
    dense, attention, weights, kv, sixteen = parts
    t = (timer[0] + timer[1] * tokens + timer[2] * dense + timer[3] * attention
         + timer[4] * weights + timer[5] * kv + timer[6] * sixteen + 0.0)
    if timer[8]:
        t += routed[tokens]
    return timer[7] if prefill and timer[7] > t else t


@njit(cache=True)
def step_s(parts: tuple, tokens: int, prefill: bool, fitted: bool, timer: np.ndarray,
            routed: np.ndarray) -> float:
    """The timer's ``step_s``."""
    if fitted:
        return _fitted_step_s(parts, tokens, prefill, timer, routed)
    flops, nbytes = _roofline_work(parts, timer)
    compute_s, memory_s = flops / timer[0], nbytes / timer[1]
    return ((memory_s if memory_s > compute_s else compute_s) + _roofline_overhead(tokens, timer)
            + 0.0)


@njit(cache=True)
def decode_series(parts0: tuple, parts1: tuple, tokens: int, fitted: bool, timer: np.ndarray,
            routed: np.ndarray) -> tuple:
    """The timer's ``series`` of a decode run (a :class:`StepSeries` as a tuple)."""
    if fitted:
        a = _fitted_step_s(parts0, tokens, False, timer, routed)
        d = _fitted_step_s(parts1, tokens, False, timer, routed) - a
        return (a, d if d > 0.0 else 0.0, 0.0, 0.0, 0.0, 1, True)
    peak, bw = timer[0], timer[1]
    flops0, bytes0 = _roofline_work(parts0, timer)
    flops1, bytes1 = _roofline_work(parts1, timer)
    dflops, dbytes = flops1 - flops0, bytes1 - bytes0
    c0, dc, m0, dm = flops0 / peak, dflops / peak, bytes0 / bw, dbytes / bw
    return (c0, dc, m0, dm, _roofline_overhead(tokens, timer) + 0.0, _side(c0, dc, m0, dm),
            False)
