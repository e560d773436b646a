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

``seed`` makes every draw reproducible; :mod:`napkin.serving.arrivals` draws it.
"""

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from napkin.errors import NapkinError
from napkin.serving.distributions import Duration, Length
from napkin.specs.files import InputModel, read_yaml, tagged, validation_message


class RequestClass(InputModel):
    """Input and output lengths of one kind of request."""

    input_tokens: Length
    output_tokens: Length
    shared_prefix_tokens: int = Field(default=0, ge=0)
    """Leading input tokens every request of this class shares (a system prompt)."""


Mix = dict[str, Annotated[float, Field(ge=0)]]

MAX_DURATION_S = 1e9
"""Longest window, segment or run a workload may ask for (about 32 years)."""
MIN_RATE_PER_S, MAX_RATE_PER_S = 1e-9, 1e12
"""Positive arrival rates accepted (one request per 32 years to a trillion per second)."""
CV_RANGE = (1e-3, 1e3)
"""Coefficients of variation of gamma inter-arrival times accepted (shape 1/cv² stays a
float; 1e-3 is a metronome, 1e3 a handful of bursts)."""

Seconds = Annotated[float, Field(gt=0, le=MAX_DURATION_S)]
Rate = Annotated[float, Field(ge=MIN_RATE_PER_S, le=MAX_RATE_PER_S)]
RateOrZero = Annotated[float, Field(ge=0, le=MAX_RATE_PER_S)]
CV = Annotated[float, Field(ge=CV_RANGE[0], le=CV_RANGE[1])]


class Window(InputModel):
    duration_s: Seconds
    requests: int | None = Field(default=None, ge=0)
    rate_per_s: RateOrZero | None = None
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


class WindowsArrivals(InputModel):
    """Uniform arrivals inside consecutive windows, each with its own count and class mix."""

    kind: Literal["windows"]
    windows: list[Window] = Field(min_length=1)
    spacing: Literal["even", "random"] = "even"


class _Bounded(InputModel):
    duration_s: Seconds | None = None
    num_requests: int | None = Field(default=None, ge=1)
    mix: Mix | None = None
    warmup_requests: int = Field(default=0, ge=0)
    """The first requests sent (in send order) are warm-up: simulated, left out of the
    metrics (as benchmark harnesses do)."""

    @model_validator(mode="after")
    def _bounded(self) -> "_Bounded":
        if self.duration_s is None and self.num_requests is None:
            raise ValueError("give duration_s or num_requests (or both)")
        return self


class PoissonArrivals(_Bounded):
    kind: Literal["poisson"]
    rate_per_s: Rate


class GammaArrivals(_Bounded):
    """Renewal process with gamma inter-arrival times: mean 1/rate, coefficient of variation cv
    (cv = 1 is Poisson; cv > 1 is burstier)."""

    kind: Literal["gamma"]
    rate_per_s: Rate
    cv: CV


class Segment(InputModel):
    duration_s: Seconds
    rate_per_s: RateOrZero
    mix: Mix | None = None


class ScheduleArrivals(InputModel):
    """A time-varying rate: Poisson (or gamma with ``cv``) arrivals at each segment's rate."""

    kind: Literal["schedule"]
    segments: list[Segment] = Field(min_length=1)
    cv: CV = 1.0
    mix: Mix | None = None


Process = tagged("kind", PoissonArrivals, GammaArrivals, ScheduleArrivals)


class Client(InputModel):
    name: str
    mix: Mix | None = None
    arrivals: Process


class ClientsArrivals(InputModel):
    """Several clients with their own class mix and arrival process (ServeGen-style)."""

    kind: Literal["clients"]
    clients: list[Client] = Field(min_length=1)


class ClosedLoopArrivals(_Bounded):
    """``clients`` concurrent clients; each sends its next request when its last one finished
    plus ``think_time_s``. Stops after ``num_requests`` in total or at ``duration_s``."""

    kind: Literal["closed_loop"]
    clients: int = Field(ge=1, le=100_000)
    """Concurrent clients, at most 100,000 (each holds a request in flight)."""
    think_time_s: Duration = 0.0
    ramp_s: float = Field(default=0.0, ge=0)
    """Clients start at uniformly random times in [0, ramp_s] (real harnesses never fire
    exactly together); 0 starts them all at once."""


class SessionsArrivals(InputModel):
    """Multi-turn sessions: first rounds arrive as a Poisson process (or evenly); each later
    round arrives ``think_time_s`` after the previous answer, with the whole history as its
    prefix (prompt = earlier prompts + answers + ``turn_input_tokens``)."""

    kind: Literal["sessions"]
    num_sessions: int = Field(ge=1)
    rate_per_s: Rate
    spacing: Literal["poisson", "even"] = "poisson"
    rounds: Length
    first_input_tokens: Length
    turn_input_tokens: Length
    output_tokens: Length
    think_time_s: Duration = 0.0


class TraceArrivals(InputModel):
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


Arrivals = tagged("kind", WindowsArrivals, PoissonArrivals, GammaArrivals, ScheduleArrivals,
                  ClientsArrivals, ClosedLoopArrivals, SessionsArrivals, TraceArrivals)


class Workload(InputModel):
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

    @field_validator("arrivals")
    @classmethod
    def _bounded_count(cls, arrivals: Any) -> Any:
        n = expected_requests(arrivals)
        if n is not None and n > MAX_REQUESTS:
            raise ValueError(f"would draw about {n:.3g} requests; at most {MAX_REQUESTS:,} "
                             "per run (shorten it or lower the rate)")
        return arrivals


MAX_REQUESTS = 10_000_000
"""Most requests one simulated run may draw (memory: a few hundred bytes each)."""


def _process_requests(arr: Any) -> float | None:
    if isinstance(arr, PoissonArrivals | GammaArrivals):
        by_time = arr.rate_per_s * arr.duration_s if arr.duration_s is not None else None
        counts = [x for x in (by_time, arr.num_requests) if x is not None]
        return min(counts) if counts else None
    if isinstance(arr, ScheduleArrivals):
        return sum(seg.rate_per_s * seg.duration_s for seg in arr.segments)
    return None


def expected_requests(arr: Any) -> float | None:
    """Requests an arrival process is expected to draw, where it says in advance (None for
    traces and duration-bounded closed loops)."""
    if isinstance(arr, WindowsArrivals):
        return float(sum(w.count for w in arr.windows))
    if isinstance(arr, ClientsArrivals):
        parts = [_process_requests(c.arrivals) for c in arr.clients]
        return None if any(p is None for p in parts) else float(sum(parts))  # type: ignore
    if isinstance(arr, ClosedLoopArrivals):
        return None if arr.num_requests is None else float(arr.num_requests)
    if isinstance(arr, SessionsArrivals):
        return float(arr.num_sessions)
    return _process_requests(arr)


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
    return parse_workload(read_yaml(path), str(path)), Path(path).resolve().parent


def parse_workload(data: Any, source: str = "workload") -> Workload:
    try:
        return Workload.model_validate(data)
    except ValidationError as e:
        raise NapkinError(f"{source}: {validation_message(e, data)}") from None
