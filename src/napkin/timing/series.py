"""Closed-form sums over runs of steps whose compute and memory times grow linearly with the
step index (a decode run: one more KV token a step), and searches over their running totals."""

import math

from napkin.specs.hardware import Accelerator
from napkin.timing.efficiency import Efficiency


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
