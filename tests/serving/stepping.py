"""An engine stepped unit by unit through the one scheduler (for tests that look between units).

:class:`Stepper` drives :func:`napkin.serving.scheduler.process` by hand, with the engine's
state written back at every pause: after :meth:`Stepper.add` and after each :meth:`Stepper.step`
(which commits the unit in flight, if any, and plans the next one, its blocks taken)."""

from napkin.serving.engine import Engine
from napkin.serving.request import Request
from napkin.serving.scheduler import ARRIVED, DUE, process


class _Finished:
    def __init__(self) -> None:
        self.count = 0
        self.requests: list[Request] = []

    def add(self, r: Request, engine: int) -> bool:
        self.count += 1
        self.requests.append(r)
        return False


class Stepper:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sink = _Finished()
        self.gen = process(engine, None, False, 0, self.sink, None, sync=True)
        self.due = next(self.gen)

    def add(self, req: Request, t: float) -> None:
        """``req`` reaches the engine at ``t``."""
        self.engine.arriving = (t, req)
        self.due = self.gen.send(ARRIVED)

    @property
    def idle(self) -> bool:
        return self.due == float("inf")

    def step(self) -> list[Request]:
        """Commit the unit in flight and plan the next; the requests that finished."""
        done = len(self.sink.requests)
        self.due = self.gen.send(DUE)
        return self.sink.requests[done:]

    def run(self) -> list[Request]:
        """Step until idle; every request that finished."""
        done = len(self.sink.requests)
        while not self.idle:
            self.step()
        return self.sink.requests[done:]

    def close(self) -> None:
        self.gen.close()
