"""Scaling a workload's offered load, keeping its shape (class mix, burstiness, time profile).

``scale_load(workload, f)`` multiplies the load by ``f`` over the same span of time:

- ``poisson``, ``gamma``: rate × f (and ``num_requests`` × f, so the span stays);
- ``windows``: each window's count or rate × f; ``schedule``: each segment's rate × f;
  ``clients``: each client's process so;
- ``trace``: time compressed by f (``time_scale``, ``start_s`` and ``end_s`` ÷ f: the same slice
  of the trace, replayed f times as fast);
- ``sessions``: session rate and count × f;
- ``closed_loop``: clients × f (and ``num_requests`` × f): a concurrency sweep.

Counts are rounded to integers (at least 1 where the original had any).
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from napkin.errors import NapkinError, require
from napkin.serving.arrivals import OpenLoop
from napkin.serving.workload import (
    ClientsArrivals,
    ClosedLoopArrivals,
    GammaArrivals,
    PoissonArrivals,
    ScheduleArrivals,
    SessionsArrivals,
    TraceArrivals,
    WindowsArrivals,
    Workload,
)


def _count(n: int | None, f: float) -> int | None:
    return None if n is None else max(1, round(n * f)) if n > 0 else 0


def _process(arr: Any, f: float) -> Any:
    if isinstance(arr, PoissonArrivals | GammaArrivals):
        return arr.model_copy(update={"rate_per_s": arr.rate_per_s * f,
                                      "num_requests": _count(arr.num_requests, f)})
    if isinstance(arr, ScheduleArrivals):
        return arr.model_copy(update={"segments": [
            s.model_copy(update={"rate_per_s": s.rate_per_s * f}) for s in arr.segments]})
    raise AssertionError(arr)  # the Process union has no other member


def scale_load(workload: Workload, factor: float) -> Workload:
    """``workload`` offering ``factor`` times its load (see the module docstring)."""
    require(factor > 0 and factor < float("inf"), f"load factor: must be > 0, got {factor}")
    arr, f = workload.arrivals, factor
    if isinstance(arr, WindowsArrivals):
        new: Any = arr.model_copy(update={"windows": [
            w.model_copy(update={"requests": _count(w.requests, f),
                                 "rate_per_s": None if w.rate_per_s is None else w.rate_per_s * f})
            for w in arr.windows]})
    elif isinstance(arr, PoissonArrivals | GammaArrivals | ScheduleArrivals):
        new = _process(arr, f)
    elif isinstance(arr, ClientsArrivals):
        new = arr.model_copy(update={"clients": [
            c.model_copy(update={"arrivals": _process(c.arrivals, f)}) for c in arr.clients]})
    elif isinstance(arr, TraceArrivals):
        new = arr.model_copy(update={"time_scale": arr.time_scale / f, "start_s": arr.start_s / f,
                                     "end_s": None if arr.end_s is None else arr.end_s / f})
    elif isinstance(arr, SessionsArrivals):
        new = arr.model_copy(update={"rate_per_s": arr.rate_per_s * f,
                                     "num_sessions": _count(arr.num_sessions, f)})
    else:
        assert isinstance(arr, ClosedLoopArrivals)
        new = arr.model_copy(update={"clients": _count(arr.clients, f),
                                     "num_requests": _count(arr.num_requests, f)})
    return _validated(workload.model_copy(update={"arrivals": new}), factor)


def _validated(workload: Workload, factor: float) -> Workload:
    """A scaled workload checked as a user's would be (``model_copy`` does not validate): a
    rate scaled below the workload file's minimum or above its maximum is refused, naming the
    field and the factor."""
    from pydantic import ValidationError

    from napkin.specs.files import validation_message

    data = workload.model_dump()
    try:
        return Workload.model_validate(data)
    except ValidationError as e:
        raise NapkinError(f"load factor {factor:.6g}: the scaled workload is refused: "
                          f"{validation_message(e, data)}") from None


def is_closed_loop(workload: Workload) -> bool:
    return isinstance(workload.arrivals, ClosedLoopArrivals)


def base_load(workload: Workload, source: Any) -> float:
    """The load a sweep scales: offered requests/s of an open loop (requests over the span of
    their arrivals), the session rate of sessions, the client count of a closed loop."""
    arr = workload.arrivals
    if isinstance(arr, ClosedLoopArrivals):
        return float(arr.clients)
    if isinstance(arr, SessionsArrivals):
        return arr.rate_per_s
    assert isinstance(source, OpenLoop)
    return offered_rate(source.requests.arrival_s)


def offered_rate(arrival_s: Sequence[float] | np.ndarray) -> float:
    """Requests per second over the arrival span: (n − 1)/(last − first) for n ≥ 2 arrivals
    (the rate of the process that drew them), 0 for fewer."""
    n = len(arrival_s)
    if n < 2:
        return 0.0
    span = float(max(arrival_s)) - float(min(arrival_s))
    return (n - 1) / span if span > 0 else float("inf")
