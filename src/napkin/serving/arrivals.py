"""Drawing a workload: arrival times and lengths (open loop), or client drivers (closed loop).

Open-loop processes are drawn up front with the workload's seed; ``closed_loop`` and
``sessions`` are drivers the simulator calls as requests finish. Window counts are split across
classes by largest-remainder rounding and interleaved evenly (9:1 of 240 is 216 and 24, one in
every ten); Poisson and gamma processes are renewal processes with the given rate and
coefficient of variation.
"""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from napkin.errors import NapkinError, require
from napkin.serving.distributions import sample_durations, sample_lengths
from napkin.serving.request import Request
from napkin.serving.requests import RequestSet
from napkin.serving.workload import (
    ClientsArrivals,
    ClosedLoopArrivals,
    GammaArrivals,
    Mix,
    PoissonArrivals,
    RequestClass,
    ScheduleArrivals,
    SessionsArrivals,
    TraceArrivals,
    WindowsArrivals,
    Workload,
)


def _weights(classes: list[str], mix: Mix | None) -> np.ndarray:
    w = np.array([(mix or {}).get(c, 0.0) if mix else 1.0 for c in classes], dtype=np.float64)
    return w / w.sum()


def _exact_counts(n: int, weights: np.ndarray) -> np.ndarray:
    """Largest-remainder rounding: counts summing to n in the weights' proportions."""
    raw = n * weights
    counts = np.floor(raw).astype(np.int64)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: n - counts.sum()]] += 1
    return counts


def _interleave(counts: np.ndarray) -> np.ndarray:
    """Class sequence spreading each class evenly (smooth weighted round robin). The credits
    return to zero after every ``sum(counts / g)`` picks (g = their gcd), so one period is
    computed and tiled; one class needs no loop at all."""
    g = math.gcd(*(int(c) for c in counts)) or 1
    weights = [int(c) // g for c in counts]
    if sum(1 for w in weights if w) <= 1:
        return np.repeat(np.arange(len(weights), dtype=np.int32), counts)
    n = sum(weights)
    period = np.empty(n, dtype=np.int32)
    credit = [0] * len(weights)
    for i in range(n):
        for j, w in enumerate(weights):
            credit[j] += w
        k = max(range(len(credit)), key=credit.__getitem__)  # first maximum, as argmax
        credit[k] -= n
        period[i] = k
    return np.tile(period, g)


def _renewal(rng: np.random.Generator, rate: float, cv: float, start: float,
             duration: float | None, limit: int | None) -> np.ndarray:
    """Arrival times of a gamma renewal process (cv = 1: Poisson) from ``start``."""
    shape = 1.0 / cv**2
    scale = 1.0 / (rate * shape)
    times: list[np.ndarray] = []
    t, total = start, 0
    end = start + duration if duration is not None else np.inf
    cap = limit if limit is not None else np.inf
    batch = int(min(max(16, (duration or 0) * rate * 1.2 + 16), 1_000_000))
    while t < end and total < cap:
        gaps = rng.gamma(shape, scale, batch)
        chunk = t + np.cumsum(gaps)
        t = float(chunk[-1])
        chunk = chunk[chunk < end]
        times.append(chunk)
        total += len(chunk)
    out = np.concatenate(times) if times else np.zeros(0)
    return out[: int(cap)] if np.isfinite(cap) else out


@dataclass
class OpenLoop:
    """Arrivals fixed in advance (every kind but closed_loop and sessions)."""

    requests: RequestSet
    shared_prefix: tuple[int, ...]  # shared prefix tokens by label


def generate(workload: Workload,
             base_dir: Path | None = None) -> "OpenLoop | ClosedLoop | Sessions":
    """Draw the workload's requests (open loop) or build its client driver (closed loop)."""
    rng = np.random.default_rng(workload.seed)
    arr = workload.arrivals
    names = list(workload.classes)
    if isinstance(arr, ClosedLoopArrivals):
        return ClosedLoop(arr, workload.classes, rng)
    if isinstance(arr, SessionsArrivals):
        return Sessions(arr, rng)
    if isinstance(arr, TraceArrivals):
        from napkin.serving.traces import read_trace

        path = Path(arr.path)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        trace = read_trace(path, arr.format, arrival_column=arr.arrival_column,
                           input_column=arr.input_column, output_column=arr.output_column,
                           time_unit=arr.time_unit, model=arr.model, max_rows=arr.max_rows)
        reqs = trace.requests.scaled(arr.time_scale).sliced(arr.start_s, arr.end_s)
        require(len(reqs) > 0, f"arrivals.end_s: no request of the trace arrives in "
                               f"[start_s, end_s) = [{arr.start_s:g}, {arr.end_s}) s")
        return OpenLoop(reqs, (0,) * len(reqs.labels))
    times, labels = _arrivals(arr, rng, names)
    require(len(times) > 0, f"arrivals: the {arr.kind} arrivals draw no request; give a "
                            "positive requests, rate_per_s or duration_s")
    if isinstance(arr, ClientsArrivals):
        names = [f"{c.name}/{k}" for c in arr.clients for k in workload.classes]
    return _open_loop(workload, rng, times, labels, names)


def _arrivals(arr: Any, rng: np.random.Generator, names: list[str],
              mix: Mix | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times and class indexes of an open-loop process."""
    if isinstance(arr, WindowsArrivals):
        times, labels, start = [], [], 0.0
        for w in arr.windows:
            counts = _exact_counts(w.count, _weights(names, w.mix or mix))
            n = int(counts.sum())
            if arr.spacing == "even":
                times.append(start + (np.arange(n) + 0.5) * w.duration_s / max(n, 1))
                labels.append(_interleave(counts))
            else:
                times.append(np.sort(start + rng.uniform(0, w.duration_s, n)))
                labels.append(rng.permutation(np.repeat(np.arange(len(names)), counts)))
            start += w.duration_s
        return np.concatenate(times), np.concatenate(labels).astype(np.int32)
    if isinstance(arr, PoissonArrivals | GammaArrivals):
        cv = arr.cv if isinstance(arr, GammaArrivals) else 1.0
        t = _renewal(rng, arr.rate_per_s, cv, 0.0, arr.duration_s, arr.num_requests)
        return t, rng.choice(len(names), len(t), p=_weights(names, arr.mix or mix)).astype(
            np.int32)
    if isinstance(arr, ScheduleArrivals):
        times, labels, start = [], [], 0.0
        for seg in arr.segments:
            t = (_renewal(rng, seg.rate_per_s, arr.cv, start, seg.duration_s, None)
                 if seg.rate_per_s > 0 else np.zeros(0))
            times.append(t)
            labels.append(rng.choice(len(names), len(t),
                                     p=_weights(names, seg.mix or arr.mix or mix)))
            start += seg.duration_s
        return np.concatenate(times), np.concatenate(labels).astype(np.int32)
    if isinstance(arr, ClientsArrivals):
        times, labels = [], []
        for i, client in enumerate(arr.clients):
            t, lab = _arrivals(client.arrivals, rng, names, client.mix)
            times.append(t)
            labels.append(lab + i * len(names))
        return np.concatenate(times), np.concatenate(labels).astype(np.int32)
    raise NapkinError(f"arrivals: kind {arr.kind!r} has no fixed arrivals")


def _open_loop(workload: Workload, rng: np.random.Generator, times: np.ndarray,
               labels: np.ndarray, names: list[str]) -> OpenLoop:
    classes = list(workload.classes.values())
    n_classes = len(classes)
    inp = np.empty(len(times), dtype=np.int64)
    out = np.empty(len(times), dtype=np.int64)
    for k in range(len(names)):
        idx = np.nonzero(labels == k)[0]
        cls = classes[k % n_classes]
        inp[idx] = sample_lengths(cls.input_tokens, rng, len(idx))
        out[idx] = sample_lengths(cls.output_tokens, rng, len(idx))
    shared = tuple(classes[k % n_classes].shared_prefix_tokens for k in range(len(names)))
    return OpenLoop(RequestSet.build(times, inp, out, labels, tuple(names)), shared)


class ClosedLoop:
    """N clients in a loop: each request's finish (plus think time) triggers the next."""

    def __init__(self, arr: ClosedLoopArrivals, classes: dict[str, RequestClass],
                 rng: np.random.Generator) -> None:
        self.arr, self.rng = arr, rng
        self.names = list(classes)
        self.classes = list(classes.values())
        self.weights = _weights(self.names, arr.mix)
        self.sent = 0

    def _make(self, rid: int, t: float, client: int) -> Request | None:
        arr = self.arr
        if (arr.num_requests is not None and self.sent >= arr.num_requests) or (
                arr.duration_s is not None and t >= arr.duration_s):
            return None
        k = int(self.rng.choice(len(self.names), p=self.weights))
        cls = self.classes[k]
        self.sent += 1
        key = ("shared", self.names[k], cls.shared_prefix_tokens) if cls.shared_prefix_tokens \
            else None
        return Request(rid, t, int(sample_lengths(cls.input_tokens, self.rng, 1)[0]),
                       int(sample_lengths(cls.output_tokens, self.rng, 1)[0]), k, key, client)

    def start(self, next_rid: int) -> list[Request]:
        offsets = np.sort(self.rng.uniform(0, self.arr.ramp_s, self.arr.clients)) \
            if self.arr.ramp_s else np.zeros(self.arr.clients)
        reqs = [self._make(next_rid + c, float(offsets[c]), c) for c in range(self.arr.clients)]
        return [r for r in reqs if r is not None]

    def on_finish(self, req: Request, t: float, rid: int) -> Request | None:
        think = float(sample_durations(self.arr.think_time_s, self.rng, 1)[0])
        return self._make(rid, t + think, req.client)


class Sessions:
    """Multi-turn sessions; a round's prompt is the whole history plus new input."""

    def __init__(self, arr: SessionsArrivals, rng: np.random.Generator) -> None:
        self.arr, self.rng = arr, rng
        self.names = ["session"]
        n = arr.num_sessions
        if arr.spacing == "even":
            self.starts = (np.arange(n) + 0.5) / arr.rate_per_s
        else:
            self.starts = _renewal(rng, arr.rate_per_s, 1.0, 0.0, None, n)
        self.rounds = sample_lengths(arr.rounds, rng, n)
        self.done = np.zeros(n, dtype=np.int64)
        self.history = np.zeros(n, dtype=np.int64)

    def _make(self, rid: int, t: float, sid: int) -> Request:
        arr = self.arr
        fresh = arr.first_input_tokens if self.done[sid] == 0 else arr.turn_input_tokens
        prompt = int(self.history[sid] + sample_lengths(fresh, self.rng, 1)[0])
        out = int(sample_lengths(arr.output_tokens, self.rng, 1)[0])
        self.history[sid] = prompt + out
        self.done[sid] += 1
        return Request(rid, t, prompt, out, 0, ("session", sid), sid)

    def start(self, next_rid: int) -> list[Request]:
        return [self._make(next_rid + s, float(t), s) for s, t in enumerate(self.starts)]

    def on_finish(self, req: Request, t: float, rid: int) -> Request | None:
        sid = req.client
        if self.done[sid] >= self.rounds[sid]:
            return None
        think = float(sample_durations(self.arr.think_time_s, self.rng, 1)[0])
        return self._make(rid, t + think, sid)
