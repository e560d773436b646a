"""Workload files: request classes and how they arrive (YAML, validated with clear errors).

A workload names request ``classes`` (input and output lengths: fixed or distributions, and an
optional shared prefix for prefix caching) and one ``arrivals`` process:

- ``windows``: fixed counts (or rates) per window with a class mix per window, evenly spaced or
  uniformly random inside the window (the chapter's 9:1 then 1:9 minutes);
- ``poisson``, ``gamma`` (bursty, coefficient of variation ``cv``), ``schedule`` (a rate per
  segment: time-varying);
- ``closed_loop``: N clients, each sending its next request when the last one finished plus a
  think time (how benchmark harnesses such as the ones in ``shared/validation`` measure);
- ``clients``: several clients, each with its own class mix and arrival process (ServeGen-style);
- ``sessions``: multi-turn sessions, each round's prompt = all earlier rounds + new input;
- ``trace``: a public trace file (Azure, BurstGPT, Mooncake, CSV, Parquet), time-scaled and sliced.

``seed`` makes every draw reproducible.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from napkin.errors import NapkinError
from napkin.serving.distributions import Duration, Length, sample_durations, sample_lengths
from napkin.serving.request import Request
from napkin.serving.requests import RequestSet


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RequestClass(_Model):
    """Input and output lengths of one kind of request."""

    input_tokens: Length
    output_tokens: Length
    shared_prefix_tokens: int = Field(default=0, ge=0)
    """Leading input tokens every request of this class shares (a system prompt)."""


Mix = dict[str, Annotated[float, Field(ge=0)]]


class Window(_Model):
    duration_s: float = Field(gt=0)
    requests: int | None = Field(default=None, ge=0)
    rate_per_s: float | None = Field(default=None, ge=0)
    mix: Mix | None = None

    @model_validator(mode="after")
    def _count_or_rate(self) -> "Window":
        if (self.requests is None) == (self.rate_per_s is None):
            raise ValueError("give exactly one of requests or rate_per_s")
        return self

    @property
    def count(self) -> int:
        return self.requests if self.requests is not None else round(
            (self.rate_per_s or 0) * self.duration_s)


class WindowsArrivals(_Model):
    """Uniform arrivals inside consecutive windows, each with its own count and class mix."""

    kind: Literal["windows"]
    windows: list[Window] = Field(min_length=1)
    spacing: Literal["even", "random"] = "even"


class _Bounded(_Model):
    duration_s: float | None = Field(default=None, gt=0)
    num_requests: int | None = Field(default=None, ge=1)
    mix: Mix | None = None

    @model_validator(mode="after")
    def _bounded(self) -> "_Bounded":
        if self.duration_s is None and self.num_requests is None:
            raise ValueError("give duration_s or num_requests (or both)")
        return self


class PoissonArrivals(_Bounded):
    kind: Literal["poisson"]
    rate_per_s: float = Field(gt=0)


class GammaArrivals(_Bounded):
    """Renewal process with gamma inter-arrival times: mean 1/rate, coefficient of variation cv
    (cv = 1 is Poisson; cv > 1 is burstier)."""

    kind: Literal["gamma"]
    rate_per_s: float = Field(gt=0)
    cv: float = Field(gt=0)


class Segment(_Model):
    duration_s: float = Field(gt=0)
    rate_per_s: float = Field(ge=0)
    mix: Mix | None = None


class ScheduleArrivals(_Model):
    """A time-varying rate: Poisson (or gamma with ``cv``) arrivals at each segment's rate."""

    kind: Literal["schedule"]
    segments: list[Segment] = Field(min_length=1)
    cv: float = Field(default=1.0, gt=0)
    mix: Mix | None = None


Process = Annotated[PoissonArrivals | GammaArrivals | ScheduleArrivals,
                    Field(discriminator="kind")]


class Client(_Model):
    name: str
    mix: Mix | None = None
    arrivals: Process


class ClientsArrivals(_Model):
    """Several clients with their own class mix and arrival process (ServeGen-style)."""

    kind: Literal["clients"]
    clients: list[Client] = Field(min_length=1)


class ClosedLoopArrivals(_Bounded):
    """``clients`` concurrent clients; each sends its next request when its last one finished
    plus ``think_time_s``. Stops after ``num_requests`` in total or at ``duration_s``."""

    kind: Literal["closed_loop"]
    clients: int = Field(ge=1)
    think_time_s: Duration = 0.0
    ramp_s: float = Field(default=0.0, ge=0)
    """Clients start at uniformly random times in [0, ramp_s] (real harnesses never fire
    exactly together); 0 starts them all at once."""


class SessionsArrivals(_Model):
    """Multi-turn sessions: first rounds arrive as a Poisson process (or evenly); each later
    round arrives ``think_time_s`` after the previous answer, with the whole history as its
    prefix (prompt = earlier prompts + answers + ``turn_input_tokens``)."""

    kind: Literal["sessions"]
    num_sessions: int = Field(ge=1)
    rate_per_s: float = Field(gt=0)
    spacing: Literal["poisson", "even"] = "poisson"
    rounds: Length
    first_input_tokens: Length
    turn_input_tokens: Length
    output_tokens: Length
    think_time_s: Duration = 0.0


class TraceArrivals(_Model):
    """A public trace (see :mod:`napkin.serving.traces`), scaled and sliced."""

    kind: Literal["trace"]
    format: Literal["azure", "burstgpt", "mooncake", "csv", "parquet"]
    path: str
    arrival_column: str | None = None
    input_column: str | None = None
    output_column: str | None = None
    time_unit: Literal["s", "ms", "us", "datetime"] = "s"
    model: str | None = None
    max_rows: int | None = Field(default=None, ge=1)
    time_scale: float = Field(default=1.0, gt=0)
    start_s: float = Field(default=0.0, ge=0)
    end_s: float | None = Field(default=None, gt=0)


Arrivals = Annotated[
    WindowsArrivals | PoissonArrivals | GammaArrivals | ScheduleArrivals | ClientsArrivals
    | ClosedLoopArrivals | SessionsArrivals | TraceArrivals,
    Field(discriminator="kind"),
]


class Workload(_Model):
    """A workload file."""

    name: str = "workload"
    seed: int = 0
    classes: dict[str, RequestClass] = Field(default_factory=dict)
    arrivals: Arrivals

    @model_validator(mode="after")
    def _classes_known(self) -> "Workload":
        needs_classes = not isinstance(self.arrivals, SessionsArrivals | TraceArrivals)
        if needs_classes and not self.classes:
            raise ValueError("classes: define at least one request class")
        for mix in _mixes(self.arrivals):
            unknown = set(mix) - set(self.classes)
            if unknown:
                raise ValueError(f"mix names unknown classes {sorted(unknown)}; "
                                 f"defined: {sorted(self.classes)}")
            if sum(mix.values()) <= 0:
                raise ValueError("a mix needs a positive weight")
        return self


def _mixes(arrivals: Any) -> list[Mix]:
    found = [getattr(arrivals, "mix", None)]
    for part in (getattr(arrivals, "windows", None) or []) + (
            getattr(arrivals, "segments", None) or []):
        found.append(part.mix)
    if isinstance(arrivals, ClientsArrivals):
        for client in arrivals.clients:
            found += [client.mix, *_mixes(client.arrivals)]
    return [m for m in found if m]


def load_workload(path: str | Path) -> tuple[Workload, Path]:
    """Parse and validate a workload YAML file; returns it and the folder it lives in."""
    return parse_workload(_read_yaml(path), str(path)), Path(path).resolve().parent


def parse_workload(data: Any, source: str = "workload") -> Workload:
    try:
        return Workload.model_validate(data)
    except ValidationError as e:
        raise NapkinError(f"{source}: {validation_message(e)}") from None


def validation_message(e: ValidationError) -> str:
    """One line: the first error's field path (``arrivals.windows.0.duration_s``) and message."""
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith(("function-", "tagged")))
    value = err.get("input")
    shown = f" (got {value!r})" if isinstance(value, int | float | str) else ""
    return f"field {loc or '(root)'}: {err['msg']}{shown}"


def _read_yaml(path: str | Path) -> Any:
    try:
        return yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise NapkinError(f"no such file {str(path)!r}") from None
    except yaml.YAMLError as e:
        raise NapkinError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None


# ------------------------------------------------------------------ generation

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
    """Class sequence spreading each class evenly (smooth weighted round robin)."""
    n = int(counts.sum())
    out = np.empty(n, dtype=np.int32)
    credit = np.zeros(len(counts))
    for i in range(n):
        credit += counts
        k = int(np.argmax(credit))
        credit[k] -= n
        out[i] = k
    return out


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
        return OpenLoop(reqs, (0,) * len(reqs.labels))
    times, labels = _arrivals(arr, rng, names)
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
