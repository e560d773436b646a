"""The trajectory file: one agent task as a DAG of steps, hand-written or logged (YAML/JSON).

A trajectory records what the chapter's closing table asks a workload log to keep, so a real
run's log can be analysed, not only a hand-written example:

- the task and its check (``check``: passed or not, the named checks, a failure reason), the
  model and its version, the task's arrival time;
- ``steps``: model calls (input tokens, cache hits, output and reasoning tokens, measured
  ``duration_s`` or none to compute it on a deployment), tool calls (duration, where they run),
  encoder stages (raw bytes, visual tokens, EC bytes) and control/transfer time, each with the
  steps it waits for (``after``: tool dependencies and branches);
- ``states``: what is held while steps run (1 GiB of context, a KV prefix of N tokens), with a
  ``parent`` for a branch that extends a shared prefix (the prefix is counted once);
- ``prices``: $ per GPU-hour or per million tokens, tools per second, environment per task;
- ``realtime``: first-response and continuity requirements, frame or block arrival times.

Reuse intervals (how long a cached prefix must survive between calls) are computed, not logged.
"""

from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from napkin.errors import NapkinError
from napkin.specs.files import InputModel, read_yaml, tagged, validation_message

NonNeg = Annotated[float, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]


class _Step(InputModel):
    id: str = Field(min_length=1)
    after: tuple[str, ...] = ()
    """Steps that must finish before this one starts."""
    duration_s: NonNeg | None = None
    holds: tuple[str, ...] = ()
    """States (names in ``states``) held while this step runs."""
    note: str = ""


class ModelStep(_Step):
    """One model call: ``input_tokens`` of which ``cached_tokens`` hit the prefix cache."""

    kind: Literal["model"]
    input_tokens: Count = 0
    cached_tokens: Count = 0
    output_tokens: Count = 0
    reasoning_tokens: Count = 0
    """Of ``output_tokens``, those before the end-of-reasoning marker."""

    @model_validator(mode="after")
    def _counts(self) -> "ModelStep":
        if self.cached_tokens > self.input_tokens:
            raise ValueError(f"cached_tokens ({self.cached_tokens}) must be <= input_tokens "
                             f"({self.input_tokens})")
        if self.reasoning_tokens > self.output_tokens:
            raise ValueError("reasoning_tokens must be <= output_tokens")
        return self

    @property
    def new_tokens(self) -> int:
        """``P = I − K``: input tokens the call prefills."""
        return self.input_tokens - self.cached_tokens


class ToolStep(_Step):
    kind: Literal["tool"]
    runs_on: Literal["cpu", "sandbox", "gpu", "network", "human"] = "cpu"
    duration_s: NonNeg


class EncodeStep(_Step):
    """An encoder stage (E of E → P → D): raw input in, encoder-cache (EC) features out."""

    kind: Literal["encode"]
    duration_s: NonNeg
    raw_bytes: NonNeg = 0
    visual_tokens: Count = 0
    ec_bytes: NonNeg = 0


class ControlStep(_Step):
    """Orchestration, transfer or queueing time that is neither model nor tool."""

    kind: Literal["control"]
    duration_s: NonNeg


Step = tagged("kind", ModelStep, ToolStep, EncodeStep, ControlStep)


class State(InputModel):
    """Memory held while a step that names it runs: ``gib``, ``bytes`` or KV ``tokens``."""

    gib: NonNeg | None = None
    bytes: NonNeg | None = None
    tokens: Count | None = None
    parent: str | None = None
    """A shared prefix this state extends (held with it, counted once)."""

    @model_validator(mode="after")
    def _one_size(self) -> "State":
        if sum(v is not None for v in (self.gib, self.bytes, self.tokens)) != 1:
            raise ValueError("give exactly one of gib, bytes or tokens")
        return self


class Check(InputModel):
    """The task's check: did it pass, the named checks (``{"return value": "1013/1013"}``)."""

    passed: bool
    checks: dict[str, str | int | float] = Field(default_factory=dict)
    reason: str = ""
    """Why it failed (a failed batch reports these instead of a cost per success)."""


class Prices(InputModel):
    """What a task costs: GPU time of model steps, or tokens; tools by the second."""

    usd_per_gpu_hour: NonNeg = 0
    usd_per_m_input: NonNeg = 0
    usd_per_m_cached: NonNeg = 0
    usd_per_m_output: NonNeg = 0
    usd_per_tool_s: NonNeg = 0
    usd_per_task: NonNeg = 0
    """Environment or verification cost per task (sandbox start-up, graders)."""


class Realtime(InputModel):
    """Timing requirements and arrivals of a real-time task (seconds from the task's start)."""

    first_response_s: NonNeg | None = None
    """Deadline for the first response (first audio block played, first token shown)."""
    finish_s: NonNeg | None = None
    block_s: Annotated[float, Field(gt=0)] | None = None
    """Playback length of one block or frame (continuity requirement)."""
    arrivals_s: tuple[NonNeg, ...] = ()
    """Arrival time of each frame or block, in playback order."""
    buffer_s: NonNeg = 0
    """The player's start-up (jitter) buffer."""


class Trajectory(InputModel):
    """One agent task. ``model`` is a catalog id or config.json path (for KV ``tokens`` and
    computed durations); ``model_version`` is recorded as logged."""

    task: str = ""
    model: str | None = None
    model_version: str = ""
    kv_dtype: str = "bf16"
    arrival_s: NonNeg = 0
    check: Check | None = None
    states: dict[str, State] = Field(default_factory=dict)
    steps: tuple[Step, ...] = Field(min_length=1)
    prices: Prices = Prices()
    realtime: Realtime | None = None

    @model_validator(mode="after")
    def _graph(self) -> "Trajectory":
        ids = Counter(s.id for s in self.steps)
        dup = sorted(i for i, n in ids.items() if n > 1)
        if dup:
            raise ValueError(f"step ids must be unique, repeated: {', '.join(dup)}")
        known = set(ids)
        for s in self.steps:
            missing = [a for a in s.after if a not in known]
            if missing:
                raise ValueError(f"step {s.id!r}: after names unknown steps {missing}")
            unknown = [h for h in s.holds if h not in self.states]
            if unknown:
                raise ValueError(f"step {s.id!r}: holds unknown states {unknown}")
        for name, st in self.states.items():
            if st.parent is not None and st.parent not in self.states:
                raise ValueError(f"state {name!r}: unknown parent {st.parent!r}")
        _topological(self.steps)
        for name in self.states:
            _state_chain(self.states, name)
        return self

    @cached_property
    def _by_id(self) -> dict[str, Step]:
        return {s.id: s for s in self.steps}

    def step(self, step_id: str) -> Step:
        try:
            return self._by_id[step_id]
        except KeyError:
            raise NapkinError(f"step: no step {step_id!r}; steps are "
                              f"{[s.id for s in self.steps]}") from None

    @property
    def model_steps(self) -> tuple[ModelStep, ...]:
        return tuple(s for s in self.steps if isinstance(s, ModelStep))

    @cached_property
    def _order(self) -> tuple[Step, ...]:
        return _topological(self.steps)

    def order(self) -> tuple[Step, ...]:
        """Steps in a dependency-respecting order (file order where the DAG allows)."""
        return self._order


def _topological(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """Kahn's algorithm, taking ready steps in file order."""
    waiting = {s.id: len(set(s.after)) for s in steps}
    users: dict[str, list[Step]] = {s.id: [] for s in steps}
    for s in steps:
        for a in set(s.after):
            users[a].append(s)
    ready = [s for s in steps if not waiting[s.id]]
    out: list[Step] = []
    while ready:
        s = ready.pop(0)
        out.append(s)
        for u in users[s.id]:
            waiting[u.id] -= 1
            if not waiting[u.id]:
                ready.append(u)
    if len(out) < len(steps):
        done = {s.id for s in out}
        raise ValueError(f"steps form a cycle: {sorted(s.id for s in steps if s.id not in done)}")
    return tuple(out)


def _state_chain(states: dict[str, State], name: str) -> list[str]:
    """``name`` and its parents up to the root."""
    chain = [name]
    while (parent := states[chain[-1]].parent) is not None:
        if parent in chain:
            raise ValueError(f"state {name!r}: parents form a cycle")
        chain.append(parent)
    return chain


def state_closure(traj: Trajectory, names: tuple[str, ...]) -> set[str]:
    """The states held when ``names`` are: each with its chain of shared prefixes."""
    return {s for n in names for s in _state_chain(traj.states, n)}


def parse_trajectory(data: Any, source: str = "trajectory") -> Trajectory:
    """Validate a trajectory mapping; one-line :class:`NapkinError` naming the field."""
    if not isinstance(data, dict):
        raise NapkinError(f"{source}: a trajectory must be a mapping with a 'steps' list")
    try:
        return Trajectory.model_validate(data)
    except ValidationError as e:
        raise NapkinError(f"{source}: {validation_message(e, data)}") from None


def load_trajectory(path: str | Path) -> Trajectory:
    """Read a YAML or JSON trajectory file (JSON is YAML)."""
    return parse_trajectory(read_yaml(path, "trajectory"), str(path))
