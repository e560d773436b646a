"""State held while a task runs: M(t) and its integral, in bytes and GiB·s.

A step holds the states it names while it runs (the context a model needs after a tool
returns, held for the tool's duration). A state that extends a shared prefix (``parent``) holds
the prefix too, counted once however many branches hold it: branches of ``h_i`` tokens on a
prefix of ``H₀`` hold ``c_KV·(H₀ + Σ h_i)`` (chapter 3.2.4, Figure 3-13). The integral of M(t)
is the capacity-time a task takes from others (Exercise 3-4: 1 GiB held through tool waits of
6 s and 10 s is 16 GiB·s when they run one after the other, 10 GiB·s side by side).
"""

from dataclasses import dataclass

from napkin.agents.timeline import Schedule
from napkin.agents.trajectory import Trajectory, state_closure
from napkin.errors import require
from napkin.specs.dtypes import kv_format
from napkin.specs.model import ModelSpec
from napkin.units import GiB


@dataclass(frozen=True)
class StateCurve:
    """M(t) as a step function: ``bytes_[i]`` held over ``[times_s[i], times_s[i + 1])``."""

    times_s: tuple[float, ...]
    bytes_: tuple[float, ...]

    @property
    def peak_bytes(self) -> float:
        return max(self.bytes_, default=0.0)

    @property
    def byte_seconds(self) -> float:
        """∫ M(t) dt in byte·s."""
        return sum(b * (t1 - t0) for b, t0, t1 in zip(self.bytes_, self.times_s,
                                                      self.times_s[1:], strict=False))

    @property
    def gib_seconds(self) -> float:
        return self.byte_seconds / GiB


def state_bytes(traj: Trajectory, model: ModelSpec | None) -> dict[str, float]:
    """Each state's own size in bytes; KV ``tokens`` × the model's KV bytes per token, plus,
    for a model with linear-attention layers (Qwen3-Next), the fixed recurrent state that
    resuming from this point needs (``ModelSpec.state_bytes_per_sequence``, one per state)."""
    out = {}
    for name, st in traj.states.items():
        if st.tokens is not None:
            require(model is not None, f"state {name!r}: sized in tokens; the trajectory needs "
                                       "a model (catalog id or config.json)")
            assert model is not None
            kvb = kv_format(traj.kv_dtype).bytes_per_element
            out[name] = st.tokens * model.kv_bytes_per_token(kvb)
            if st.tokens:
                out[name] += model.state_bytes_per_sequence(kvb)
        else:
            out[name] = st.bytes if st.bytes is not None else (st.gib or 0.0) * GiB
    return out


def state_curve(traj: Trajectory, sched: Schedule, sizes: dict[str, float]) -> StateCurve:
    """M(t): the distinct states (with their prefixes) held by the steps running at t. A sweep
    over start/end events with a reference count per state (a state counts while any running
    step holds it)."""
    holds = {s.id: state_closure(traj, s.holds) for s in traj.steps}
    events: dict[float, list[tuple[int, str]]] = {}
    for sp in sched.spans:
        if sp.end_s > sp.start_s:
            events.setdefault(sp.start_s, []).append((1, sp.id))
            events.setdefault(sp.end_s, []).append((-1, sp.id))
    refs: dict[str, int] = dict.fromkeys(sizes, 0)
    total, times, held = 0.0, [], []
    for t in sorted(events):
        for sign, sid in events[t]:
            for name in holds[sid]:
                before = refs[name]
                refs[name] += sign
                if (before == 0) != (refs[name] == 0):
                    total += sign * sizes[name]
        times.append(t)
        held.append(total)
    return StateCurve(tuple(times), tuple(held[:-1]))


def combined_curve(curves: list[tuple[float, StateCurve]]) -> StateCurve:
    """M(t) of several tasks together, each curve shifted by its task's arrival time: state of
    tasks waiting at the same time adds up (chapter 3.2.4)."""
    deltas: dict[float, float] = {}
    for offset, c in curves:
        prev = 0.0
        for t, b in zip(c.times_s, (*c.bytes_, 0.0), strict=True):
            deltas[offset + t] = deltas.get(offset + t, 0.0) + b - prev
            prev = b
    times = sorted(deltas)
    held, total = [], 0.0
    for t in times:
        total += deltas[t]
        held.append(total)
    return StateCurve(tuple(times), tuple(held[:-1]))
