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
from napkin.specs.limits import MAX_CLIENTS


class RequestClass(InputModel):
    """Input and output lengths of one kind of request."""

    input_tokens: Length
    """Prompt length in tokens, shared prefix included: a fixed count or a distribution drawn per
    request."""
    output_tokens: Length
    """Tokens generated per request (the prefill yields the first): a fixed count or a distribution
    drawn per request."""
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
    """Length of the window, seconds; windows follow one another from t = 0."""
    requests: int | None = Field(default=None, ge=0)
    """Requests arriving in the window; give this or ``rate_per_s``."""
    rate_per_s: RateOrZero | None = None
    """Arrival rate, requests/s: the window holds round(rate_per_s × duration_s) requests; give this
    or ``requests``."""
    mix: Mix | None = None
    """Relative class weights ``{class: weight}`` (normalized by their sum; classes left out get
    none). The window's count is split by largest-remainder rounding (9:1 of 240 is 216 and 24).
    None: every class equally."""

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
    """The windows, back to back from t = 0, each with its own count and mix."""
    spacing: Literal["even", "random"] = "even"
    """``even``: the i-th of a window's n arrivals at (i + ½)·duration_s/n from its start, classes
    interleaved evenly; ``random``: uniformly random times inside the window, classes in random
    order."""


class _Bounded(InputModel):
    duration_s: Seconds | None = None
    """Stop at this time, seconds from the start: no request arrives (or, in a closed loop, is sent)
    at or after it. None: ``num_requests`` alone bounds the run."""
    num_requests: int | None = Field(default=None, ge=1)
    """Stop after this many requests in total, warm-up included. None: ``duration_s`` alone bounds
    the run; with both, whichever comes first."""
    mix: Mix | None = None
    """Relative class weights ``{class: weight}`` (normalized by their sum; classes left out get
    none), each request's class drawn with them. None: the enclosing client's mix (inside
    ``clients``), else every class equally."""
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
    """Mean arrival rate, requests/s (exponential inter-arrival times of mean 1/rate_per_s)."""


class GammaArrivals(_Bounded):
    """Renewal process with gamma inter-arrival times: mean 1/rate, coefficient of variation cv
    (cv = 1 is Poisson; cv > 1 is burstier)."""

    kind: Literal["gamma"]
    rate_per_s: Rate
    """Mean arrival rate, requests/s: inter-arrival times average 1/rate_per_s."""
    cv: CV
    """Coefficient of variation of the inter-arrival times (standard deviation / mean; gamma shape
    1/cv²): 1 is Poisson, above 1 burstier, below 1 more regular."""


class Segment(InputModel):
    duration_s: Seconds
    """Length of the segment, seconds; segments follow one another from t = 0."""
    rate_per_s: RateOrZero
    """Mean arrival rate in this segment, requests/s; 0 is an idle gap."""
    mix: Mix | None = None
    """Class weights in this segment (as the schedule's ``mix``); None: the schedule's."""


class ScheduleArrivals(InputModel):
    """A time-varying rate: Poisson (or gamma with ``cv``) arrivals at each segment's rate."""

    kind: Literal["schedule"]
    segments: list[Segment] = Field(min_length=1)
    """The segments, back to back from t = 0, each with its own rate."""
    cv: CV = 1.0
    """Coefficient of variation of the inter-arrival times in every segment (gamma renewal); 1 is
    Poisson."""
    mix: Mix | None = None
    """Relative class weights ``{class: weight}`` (normalized by their sum; classes left out get
    none) for segments without their own. None: the enclosing client's mix (inside ``clients``),
    else every class equally."""


Process = tagged("kind", PoissonArrivals, GammaArrivals, ScheduleArrivals)


class Client(InputModel):
    name: str
    """The client's name: its requests are labelled ``name/class`` in the results."""
    mix: Mix | None = None
    """The client's class weights, used where its process gives none. None: every class equally."""
    arrivals: Process
    """The client's own open-loop process (``poisson``, ``gamma`` or ``schedule``); the clients'
    arrivals are merged."""


class ClientsArrivals(InputModel):
    """Several clients with their own class mix and arrival process (ServeGen-style)."""

    kind: Literal["clients"]
    clients: list[Client] = Field(min_length=1)
    """The clients, each drawing its own arrivals with its own class mix."""


class ClosedLoopArrivals(_Bounded):
    """``clients`` concurrent clients; each sends its next request when its last one finished
    plus ``think_time_s``. Stops after ``num_requests`` in total or at ``duration_s``."""

    kind: Literal["closed_loop"]
    clients: int = Field(ge=1, le=MAX_CLIENTS)
    """Concurrent clients, at most 100,000 (each holds a request in flight)."""
    think_time_s: Duration = 0.0
    """Pause between a client's request finishing and its next one being sent, seconds: fixed, or a
    distribution drawn per request."""
    ramp_s: float = Field(default=0.0, ge=0)
    """Clients start at uniformly random times in [0, ramp_s] (real harnesses never fire
    exactly together); 0 starts them all at once."""


class SessionsArrivals(InputModel):
    """Multi-turn sessions: first rounds arrive as a Poisson process (or evenly); each later
    round arrives ``think_time_s`` after the previous answer, with the whole history as its
    prefix (prompt = earlier prompts + answers + ``turn_input_tokens``)."""

    kind: Literal["sessions"]
    num_sessions: int = Field(ge=1)
    """Sessions to run; each sends ``rounds`` requests, one after another."""
    rate_per_s: Rate
    """Rate at which sessions start (their first rounds arrive), sessions/s."""
    spacing: Literal["poisson", "even"] = "poisson"
    """``poisson``: session starts form a Poisson process at ``rate_per_s``; ``even``: session i
    starts at (i + ½)/rate_per_s."""
    rounds: Length
    """Rounds (requests) per session: fixed, or drawn once per session."""
    first_input_tokens: Length
    """Input tokens of a session's first round, its whole first prompt; drawn per session."""
    turn_input_tokens: Length
    """New input tokens of each later round, drawn per round: its prompt is the history (earlier
    prompts and answers) plus these."""
    output_tokens: Length
    """Output tokens of each round, drawn per round."""
    think_time_s: Duration = 0.0
    """Pause between a round's answer finishing and the next round's arrival, seconds: fixed, or a
    distribution drawn per round."""


class TraceArrivals(InputModel):
    """A public trace (see :mod:`napkin.serving.traces`), scaled and sliced."""

    kind: Literal["trace"]
    format: Literal["azure", "burstgpt", "mooncake", "csv", "parquet"]
    """How the file is laid out: ``azure``, ``burstgpt`` and ``mooncake`` as those datasets publish
    them, or any ``csv`` / ``parquet`` table with named columns (see Trace files)."""
    path: str
    """The trace file; a relative path is read from the workload file's folder (from the scenario's
    or plan's folder for an inline workload)."""
    arrival_column: str | None = None
    """``csv``/``parquet`` only, required there: the column of arrival times (see ``time_unit``).
    Refused for the named formats."""
    input_column: str | None = None
    """``csv``/``parquet`` only, required there: the column of input (prompt) token counts."""
    output_column: str | None = None
    """``csv``/``parquet`` only, required there: the column of output token counts."""
    time_unit: Literal["s", "ms", "us", "datetime"] = "s"
    """``csv``/``parquet`` only: what the arrival column holds: ``s``, ``ms`` or ``us`` numbers, or
    ``datetime`` (ISO 8601 strings, zone-less read as UTC; in parquet also a timestamp column). The
    named formats fix their own."""
    model: str | None = None
    """``burstgpt`` only: keep the rows whose ``Model`` equals this (``ChatGPT`` or ``GPT-4``).
    None: every row."""
    max_rows: int | None = Field(default=None, ge=1)
    """Read at most this many data rows of the file (counted before filtering and dropping). None:
    the whole file."""
    time_scale: float = Field(default=1.0, gt=0)
    """Factor multiplying every arrival time (after rebasing the first to 0 s): 0.5 replays the
    trace twice as fast, 2 at half speed. Lengths are kept."""
    start_s: float = Field(default=0.0, ge=0)
    """Keep requests arriving at or after this time, seconds on the scaled clock (after
    ``time_scale``); kept times are shifted so ``start_s`` becomes 0."""
    end_s: float | None = Field(default=None, gt=0)
    """Keep requests arriving before this time, seconds on the scaled clock. None: to the end of the
    trace."""


Arrivals = tagged("kind", WindowsArrivals, PoissonArrivals, GammaArrivals, ScheduleArrivals,
                  ClientsArrivals, ClosedLoopArrivals, SessionsArrivals, TraceArrivals)


class Workload(InputModel):
    """A workload file."""

    name: str = "workload"
    """Label of the workload in reports (``napkin serve demand``, ``fluid``)."""
    seed: int = 0
    """Seed of the random generator behind every draw (arrival times, classes, lengths, think
    times): the same seed gives the same requests. ``--seed`` overrides it."""
    classes: dict[str, RequestClass] = Field(default={})  # (copied per instance by pydantic;
    # a ``default_factory=dict`` costs a first run ~4 ms: pydantic reads the builtin's
    # signature, which ``inspect`` tokenizes)
    """Request classes by name, the names mixes refer to. Required for every arrival kind but
    ``sessions`` and ``trace``, which bring their own lengths."""
    arrivals: Arrivals
    """The arrival process, selected by its ``kind``."""

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
