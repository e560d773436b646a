"""Per-window demand of a workload (chapter 3.1.3, Example 3-1).

In each window: new input tokens per second (prefill work) and decode steps per second (each
request's G − 1 steps after its first token, which the prefill produces), counted at the
request's arrival; and the decode context weighted by steps, ``Σ (G−1)·c̄ / Σ (G−1)`` with
``c̄ = P + (G − 2)/2`` the mean context of one request's steps.
"""

import itertools
from dataclasses import dataclass

import numpy as np

from napkin.errors import require
from napkin.inference.chain import mean_decode_context
from napkin.serving.requests import RequestSet


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


def demand(reqs: RequestSet, edges_s: list[float]) -> tuple[WindowDemand, ...]:
    """Demand in windows ``[edges[i], edges[i+1])``; arrivals outside are ignored."""
    require(len(edges_s) >= 2 and all(b > a for a, b in itertools.pairwise(edges_s)),
            "windows: edges must increase")
    out = []
    for a, b in itertools.pairwise(edges_s):
        idx = np.nonzero((reqs.arrival_s >= a) & (reqs.arrival_s < b))[0]
        out.append(_window(reqs, idx, a, b - a))
    return tuple(out)


def total(reqs: RequestSet, duration_s: float) -> WindowDemand:
    """All requests as one window of ``duration_s``."""
    return _window(reqs, np.arange(len(reqs)), 0.0, duration_s)
