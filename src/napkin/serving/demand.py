"""Per-window demand of a workload (chapter 3.1.3, Example 3-1).

In each window: new input tokens per second (prefill work) and decode steps per second (each
request's G − 1 steps after its first token, which the prefill produces), counted at the
request's arrival; and the decode context weighted by steps, ``Σ (G−1)·c̄ / Σ (G−1)`` with
``c̄ = P + (G − 2)/2`` the mean context of one request's steps.

Windows are the workload's own (``windows`` arrivals) or ``window_s`` long from 0 to the last
arrival, at most :data:`MAX_WINDOWS` of them: the work grows with windows + requests, never
with the span of a trace alone.
"""

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from napkin.errors import require
from napkin.inference.chain import mean_decode_context
from napkin.serving.requests import RequestSet
from napkin.serving.workload import WindowsArrivals

DEFAULT_WINDOW_S = 60.0
"""Window length when neither the workload nor the caller gives one."""
MAX_WINDOWS = 100_000
"""Most windows one demand or fluid table has (a day in one-second windows)."""


@dataclass(frozen=True)
class WindowDemand:
    start_s: float
    duration_s: float
    requests: int
    input_tokens: int
    decode_steps: int
    mean_decode_context: float

    @property
    def input_tokens_per_s(self) -> float:
        return self.input_tokens / self.duration_s

    @property
    def decode_steps_per_s(self) -> float:
        return self.decode_steps / self.duration_s


def _window(reqs: RequestSet, idx: np.ndarray, start: float, duration: float) -> WindowDemand:
    steps = reqs.output_tokens[idx] - 1
    ctx = mean_decode_context(reqs.input_tokens[idx], reqs.output_tokens[idx])
    total = int(steps.sum())
    mean = float((steps * ctx).sum() / total) if total else 0.0
    return WindowDemand(start, duration, len(idx), int(reqs.input_tokens[idx].sum()), total, mean)


def window_edges(arrivals: Any, reqs: RequestSet, window_s: float | None) -> list[float]:
    """Window edges in seconds: the workload's windows when ``window_s`` is None and it has
    them, else ``window_s`` (default :data:`DEFAULT_WINDOW_S`) long from 0 past the last
    arrival; ``window-s`` must be > 0 and give at most :data:`MAX_WINDOWS` windows."""
    if window_s is None and isinstance(arrivals, WindowsArrivals):
        edges = [0.0]
        for w in arrivals.windows:
            edges.append(edges[-1] + w.duration_s)
        return edges
    step = DEFAULT_WINDOW_S if window_s is None else window_s
    require(math.isfinite(step) and step > 0, f"window-s: must be > 0 s, got {step}")
    end = float(reqs.arrival_s[-1]) if len(reqs) else 0.0
    n = end / step
    require(n < MAX_WINDOWS,
            f"window-s: the workload's arrivals: span {end:.4g} s, {n:.3g} windows of {step:g} s;"
            f" at most {MAX_WINDOWS:,} (give --window-s >= {end / (MAX_WINDOWS - 1):.4g}, or "
            "arrivals that end sooner)")
    return [i * step for i in range(int(n) + 2)]


def demand(reqs: RequestSet, edges_s: list[float]) -> tuple[WindowDemand, ...]:
    """Demand in windows ``[edges[i], edges[i+1])``; arrivals outside are ignored. Arrivals are
    sorted, so each window is one slice (linear in windows + requests)."""
    require(len(edges_s) >= 2 and all(b > a for a, b in itertools.pairwise(edges_s)),
            "windows: edges must increase")
    cuts = np.searchsorted(reqs.arrival_s, edges_s, side="left")
    return tuple(_window(reqs, np.arange(lo, hi), a, b - a)
                 for (a, b), (lo, hi) in zip(itertools.pairwise(edges_s),
                                             itertools.pairwise(cuts), strict=True))


def total(reqs: RequestSet, duration_s: float) -> WindowDemand:
    """All requests as one window of ``duration_s``."""
    return _window(reqs, np.arange(len(reqs)), 0.0, duration_s)


def class_counts(reqs: RequestSet, edges_s: list[float]) -> tuple[dict[str, int], ...]:
    """Requests of each class (the workload's class names) in windows ``[edges[i], edges[i+1])``
    (the composition the chapter's Figure 3-4 draws)."""
    cuts = np.searchsorted(reqs.arrival_s, edges_s, side="left")
    return tuple({name: int((reqs.label[lo:hi] == k).sum()) for k, name in enumerate(reqs.labels)}
                 for lo, hi in itertools.pairwise(cuts))
