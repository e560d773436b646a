"""When each step of a trajectory runs: serial sum, critical path, shares, Amdahl speedups.

Steps start as soon as the steps they wait for (``after``) have finished (unlimited tools and
model slots): a step's end is ``max(end of its dependencies) + duration``; the task takes the
longest chain, the critical path (chapter 3.2.4: model 2 s → tools 6 s ‖ 10 s → model 3 s is
15 s, against ``2 + 6 + 10 + 3 = 21 s`` run one after another). Speeding up steps by factors
and rescheduling gives the whole task's gain; for one factor ``s`` on a share ``f`` of a serial
chain it is Amdahl's law ``1 / ((1 − f) + f/s)`` (Example 3-2: 36.375 s of 76.510 s halved →
58.323 s, ×1.31).
"""

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass

from napkin.agents.trajectory import ModelStep, Step, Trajectory
from napkin.errors import NapkinError, require
from napkin.inference.chain import request_chain
from napkin.timing.roofline import Deployment


@dataclass(frozen=True)
class Span:
    """One step placed in time (seconds from the task's start)."""

    id: str
    kind: str
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class Schedule:
    """Every step's span; the critical path is the chain that ends last."""

    spans: tuple[Span, ...]
    critical_path: tuple[str, ...]

    @property
    def makespan_s(self) -> float:
        return max((s.end_s for s in self.spans), default=0.0)

    @property
    def busy_s(self) -> float:
        """Sum of all step durations (the time if every step ran one after another)."""
        return sum(s.duration_s for s in self.spans)

    def by_kind_s(self) -> dict[str, float]:
        """Summed duration per step kind (model, tool, encode, control)."""
        out: dict[str, float] = {}
        for s in self.spans:
            out[s.kind] = out.get(s.kind, 0.0) + s.duration_s
        return out


def step_durations(traj: Trajectory, dep: Deployment | None = None) -> dict[str, float]:
    """Each step's duration: as logged, or for a model call without one, its prefill + decode
    chain on ``dep`` (``P = I − K`` new tokens on ``K`` cached, then ``output_tokens``; a fully
    cached prompt still prefills its last token)."""
    out = {}
    for s in traj.steps:
        if s.duration_s is not None:
            out[s.id] = s.duration_s
            continue
        assert isinstance(s, ModelStep)  # other kinds require duration_s
        require(dep is not None, f"step {s.id!r}: no duration_s; give a model and --gpu to "
                                 "compute it")
        require(s.input_tokens >= 1 and s.output_tokens >= 1,
                f"step {s.id!r}: computing a duration needs input_tokens and output_tokens >= 1")
        cached = min(s.cached_tokens, s.input_tokens - 1)
        out[s.id] = request_chain(dep, s.input_tokens - cached, s.output_tokens, cached).e2e_s
    return out


def schedule(traj: Trajectory, durations: Mapping[str, float], serial: bool = False) -> Schedule:
    """Earliest start of every step given its dependencies; ``serial`` runs the steps one after
    another in a dependency order instead (no two at once)."""
    ends: dict[str, float] = {}
    parent: dict[str, str | None] = {}
    spans = []
    clock = 0.0
    for s in traj.order():
        if serial:
            start, parent[s.id] = clock, spans[-1].id if spans else None
        else:
            start, parent[s.id] = 0.0, None
            for a in s.after:
                if ends[a] > start or parent[s.id] is None:
                    start, parent[s.id] = max(start, ends[a]), a
        ends[s.id] = clock = start + durations[s.id]
        spans.append(Span(s.id, s.kind, start, ends[s.id]))
    last: str | None = max(spans, key=lambda sp: sp.end_s).id
    path = []
    while last is not None:
        path.append(last)
        last = parent[last]
    return Schedule(tuple(spans), tuple(reversed(path)))


def matching_steps(traj: Trajectory, selector: str) -> list[Step]:
    """Steps a selector names: an id, a glob over ids (``round*``), or ``kind:tool``."""
    if selector.startswith("kind:"):
        found = [s for s in traj.steps if s.kind == selector.removeprefix("kind:")]
    else:
        found = [s for s in traj.steps if fnmatch.fnmatchcase(s.id, selector)]
    if not found:
        raise NapkinError(f"speedup: {selector!r} matches no step; use an id, a glob or "
                          f"kind:model|tool|encode|control (ids: {[s.id for s in traj.steps]})")
    return found


def parse_speedups(items: list[str]) -> list[tuple[str, float]]:
    """``["round1=2", "kind:tool=2"]`` → selectors with factors > 0."""
    out = []
    for item in items:
        sel, sep, raw = item.rpartition("=")
        try:
            factor = float(raw)
        except ValueError:
            factor = -1.0
        require(bool(sep) and bool(sel) and factor > 0,
                f"speedup: {item!r} must be STEP=FACTOR with FACTOR > 0, e.g. round1=2")
        out.append((sel, factor))
    return out


@dataclass(frozen=True)
class Speedup:
    """The task before and after speeding up some steps."""

    before: Schedule
    after: Schedule
    factors: dict[str, float]
    """Step id → its speedup factor."""
    sped_up_s: float
    """Summed duration of the sped-up steps, before."""
    critical_sped_up_s: float
    """Summed duration, before, of the sped-up steps on the critical path."""

    @property
    def saved_s(self) -> float:
        return self.before.makespan_s - self.after.makespan_s

    @property
    def speedup(self) -> float:
        return self.before.makespan_s / self.after.makespan_s

    @property
    def saved_share(self) -> float:
        return self.saved_s / self.before.makespan_s

    @property
    def share(self) -> float:
        """``f``: the time the sped-up steps take on the critical path over the task's time,
        before (steps off the path, running beside it, do not count: the task does not wait
        for them)."""
        return self.critical_sped_up_s / self.before.makespan_s

    @property
    def amdahl(self) -> float | None:
        """``1 / ((1 − f) + f/s)`` when every sped-up step has the same factor ``s``: the
        speedup if the critical path stayed the same. It equals :attr:`speedup` on a serial
        chain and bounds it from above on a graph, where a parallel branch can become the new
        critical path."""
        factors = set(self.factors.values())
        if len(factors) != 1:
            return None
        s = factors.pop()
        return amdahl_speedup(self.share, s)


def amdahl_speedup(share: float, factor: float) -> float:
    """Amdahl's law: a share ``f`` of the time sped up ``s``× speeds the whole ``1/((1−f)+f/s)``."""
    require(0 <= share <= 1, f"share: must be in [0, 1], got {share}")
    require(factor > 0, f"factor: must be > 0, got {factor}")
    return 1.0 / ((1.0 - share) + share / factor)


def speed_up(traj: Trajectory, durations: Mapping[str, float],
             speedups: list[tuple[str, float]]) -> Speedup:
    """Reschedule with matched steps' durations divided by their factors (later selectors win)."""
    factors: dict[str, float] = {}
    for sel, factor in speedups:
        for s in matching_steps(traj, sel):
            factors[s.id] = factor
    faster = {k: v / factors.get(k, 1.0) for k, v in durations.items()}
    before = schedule(traj, durations)
    on_path = set(before.critical_path)
    return Speedup(before, schedule(traj, faster), factors,
                   sum(durations[k] for k in factors),
                   sum(durations[k] for k in factors if k in on_path))


def reuse_intervals_s(traj: Trajectory, sched: Schedule) -> dict[str, float]:
    """For each model call that hits the cache: time since the latest earlier model call on
    its dependency chain ended — how long the prefix had to stay cached."""
    ends = {sp.id: sp.end_s for sp in sched.spans}
    starts = {sp.id: sp.start_s for sp in sched.spans}
    last_model: dict[str, float | None] = {}  # latest end of a model call among ancestors
    out = {}
    for s in traj.order():
        found = [ends[a] if traj.step(a).kind == "model" else last_model[a] for a in s.after]
        found = [e for e in found if e is not None]
        last_model[s.id] = max(found) if found else None
        if isinstance(s, ModelStep) and s.cached_tokens and found:
            out[s.id] = starts[s.id] - max(found)
    return out
