"""The fluid queue of chapter 3.1.3: work as a continuous flow through a fixed-rate server.

Over windows k of length Δt_k with arriving work A_k and capacity μ_k (units/s):
``Q_{k+1} = max(0, Q_k + A_k − μ_k·Δt_k)``; after the last window the backlog drains in
``Q/μ``. A burst at rate λ above capacity μ for τ seconds leaves ``(λ − μ)·τ`` and drains in
``(λ − μ)·τ/μ``. Waiting work holds state: tasks arriving at λ per second, each holding M₀ for
τ seconds, hold ``λ·τ`` tasks and ``λ·M₀·τ`` bytes on average (Little's law); a task holding
M₀ for τ occupies ``M₀·τ`` byte-seconds.
"""

from dataclasses import dataclass

from napkin.errors import require


@dataclass(frozen=True)
class FluidWindow:
    start_s: float
    duration_s: float
    arrivals: float
    capacity_per_s: float
    backlog_start: float

    @property
    def arrival_rate_per_s(self) -> float:
        return self.arrivals / self.duration_s

    @property
    def backlog_end(self) -> float:
        """``max(0, Q + A − μ·Δt)``."""
        return max(0.0, self.backlog_start + self.arrivals - self.capacity_per_s * self.duration_s)

    def backlog_at(self, t_s: float) -> float:
        """Backlog ``t_s`` seconds into the window (arrivals uniform inside it)."""
        return max(0.0, self.backlog_start + (self.arrival_rate_per_s - self.capacity_per_s) * t_s)


@dataclass(frozen=True)
class FluidResult:
    windows: tuple[FluidWindow, ...]

    @property
    def final_backlog(self) -> float:
        return self.windows[-1].backlog_end if self.windows else 0.0

    @property
    def peak_backlog(self) -> float:
        """Largest backlog (it peaks at a window end: backlog is piecewise linear)."""
        return max((w.backlog_end for w in self.windows), default=0.0)

    @property
    def drain_s(self) -> float:
        """Time to empty the final backlog after arrivals stop, at the last window's capacity."""
        if not self.windows or self.final_backlog == 0:
            return 0.0
        return self.final_backlog / self.windows[-1].capacity_per_s

    @property
    def peak_end_s(self) -> float:
        """End of the window where the backlog peaks (0 without a backlog)."""
        peak = self.peak_backlog
        return next((w.start_s + w.duration_s for w in self.windows
                     if peak > 0 and w.backlog_end == peak), 0.0)

    @property
    def emptied_at_s(self) -> float | None:
        """When a backlog built in earlier windows empties inside a later one: the first
        window after the peak with ``Q_start > 0`` and ``Q_end = 0`` empties at
        ``start + Q_start/(μ − λ)``. None when there was no backlog or it outlives the windows
        (then :attr:`drain_s` applies)."""
        if self.peak_backlog == 0 or self.final_backlog > 0:
            return None
        for w in self.windows:
            if w.start_s >= self.peak_end_s and w.backlog_start > 0 and w.backlog_end == 0:
                return w.start_s + w.backlog_start / (w.capacity_per_s - w.arrival_rate_per_s)
        return None

    @property
    def total_steps(self) -> float:
        """Decode steps that arrived over all windows: ``Σ A_k`` (A_k: window k's steps)."""
        return sum(w.arrivals for w in self.windows)

    @property
    def end_s(self) -> float:
        """End of the last window."""
        return self.windows[-1].start_s + self.windows[-1].duration_s if self.windows else 0.0

    @property
    def empty_at_s(self) -> float:
        """When the queue is empty for good: inside the windows (:attr:`emptied_at_s`), at the
        last window's end plus the drain ``Q/μ`` when a backlog outlives them, or 0 when none
        ever builds."""
        if self.peak_backlog == 0:
            return 0.0
        if self.final_backlog > 0:
            return self.end_s + self.drain_s
        return self.emptied_at_s or 0.0

    def describe_drain(self) -> str:
        """One line: no backlog, emptied inside the windows, or drained after the last."""
        if self.peak_backlog == 0:
            return "capacity covers every window: no backlog"
        head = f"peak backlog {self.peak_backlog:,.0f} steps at t = {self.peak_end_s:,.0f} s"
        if self.final_backlog > 0:
            return (f"{head}; after arrivals stop it drains in {self.drain_s:,.2f} s (Q/μ): "
                    f"the queue is empty at t = {self.empty_at_s:,.2f} s")
        at = self.emptied_at_s
        assert at is not None
        return (f"{head}; it empties inside the windows at t = {at:,.2f} s "
                f"({at - self.peak_end_s:,.2f} s after the peak); nothing left at the end")

    def curve(self, points_per_window: int = 60) -> tuple[list[float], list[float]]:
        """(times, backlog) sampled inside each window and through the drain (for plots)."""
        ts, qs = [], []
        for w in self.windows:
            for i in range(points_per_window + 1):
                dt = w.duration_s * i / points_per_window
                ts.append(w.start_s + dt)
                qs.append(w.backlog_at(dt))
        if self.drain_s:
            end = self.windows[-1].start_s + self.windows[-1].duration_s
            for i in range(1, points_per_window + 1):
                dt = self.drain_s * i / points_per_window
                ts.append(end + dt)
                qs.append(self.final_backlog - self.windows[-1].capacity_per_s * dt)
        return ts, qs


def fluid(arrivals: list[float], durations_s: list[float],
          capacity_per_s: float | list[float]) -> FluidResult:
    """Run the recursion over windows of ``durations_s`` with ``arrivals`` work in each."""
    require(len(arrivals) == len(durations_s) and arrivals, "fluid: one arrival per window")
    caps = capacity_per_s if isinstance(capacity_per_s, list) else [capacity_per_s] * len(arrivals)
    require(all(c > 0 for c in caps), "capacity: must be > 0 per second")
    require(all(d > 0 for d in durations_s), "windows: durations must be > 0 s")
    windows, q, start = [], 0.0, 0.0
    for a, d, c in zip(arrivals, durations_s, caps, strict=True):
        w = FluidWindow(start, d, a, c, q)
        windows.append(w)
        q = w.backlog_end
        start += d
    return FluidResult(tuple(windows))


def burst_backlog(rate_per_s: float, capacity_per_s: float, duration_s: float) -> float:
    """Work left by a burst above capacity: ``max(0, (λ − μ)·τ)``."""
    return max(0.0, (rate_per_s - capacity_per_s) * duration_s)


def burst_drain_s(rate_per_s: float, capacity_per_s: float, duration_s: float) -> float:
    """Time to drain that backlog once the burst ends: ``(λ − μ)·τ/μ``."""
    require(capacity_per_s > 0, "capacity: must be > 0")
    return burst_backlog(rate_per_s, capacity_per_s, duration_s) / capacity_per_s


def waiting_tasks(rate_per_s: float, wait_s: float) -> float:
    """Little's law: mean number of tasks waiting, ``λ·τ``."""
    return rate_per_s * wait_s


def waiting_state_bytes(rate_per_s: float, state_bytes: float, wait_s: float) -> float:
    """Mean state held by waiting tasks, ``λ·M₀·τ``."""
    return waiting_tasks(rate_per_s, wait_s) * state_bytes


def state_byte_seconds(state_bytes: float, held_s: float) -> float:
    """Area under a task's held state: ``M₀·τ`` byte-seconds (1 GiB × 10 s = 10 GiB·s)."""
    return state_bytes * held_s
