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
    """The step's name, unique in the trajectory: what ``after`` lists and ``--speedup`` selects (by
    id or glob)."""
    after: tuple[str, ...] = ()
    """Steps that must finish before this one starts."""
    duration_s: NonNeg | None = None
    """The call's duration as logged, seconds. None: computed on ``--gpu`` (needs a model) as the
    prefill of the new input tokens on the cached ones, then the decode of ``output_tokens``."""
    holds: tuple[str, ...] = ()
    """States (names in ``states``) held while this step runs."""
    note: str = ""
    """Free text kept with the step; no analysis reads it."""


class ModelStep(_Step):
    """One model call: ``input_tokens`` of which ``cached_tokens`` hit the prefix cache."""

    kind: Literal["model"]
    input_tokens: Count = 0
    """The call's whole prompt, tokens (I), cached ones included."""
    cached_tokens: Count = 0
    """Of ``input_tokens``, those that hit the prefix cache (K ≤ I); the call prefills P = I − K.
    Priced at ``usd_per_m_cached``."""
    output_tokens: Count = 0
    """Tokens the call generates (O), reasoning tokens included."""
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
    """Where the tool runs (``cpu``, ``sandbox``, ``gpu``, ``network``, ``human``); recorded only:
    tools are never queued or priced by it."""
    duration_s: NonNeg
    """The tool's wall time, seconds; priced at ``prices.usd_per_tool_s``."""


class EncodeStep(_Step):
    """An encoder stage (E of E → P → D): raw input in, encoder-cache (EC) features out."""

    kind: Literal["encode"]
    duration_s: NonNeg
    """The encoder stage's time, seconds."""
    raw_bytes: NonNeg = 0
    """Size of the raw input the encoder reads (image, audio), bytes; summed in the report."""
    visual_tokens: Count = 0
    """Tokens the encoder produces for the model; summed in the report."""
    ec_bytes: NonNeg = 0
    """Size of the encoder-cache (EC) features it writes, bytes; summed in the report."""


class ControlStep(_Step):
    """Orchestration, transfer or queueing time that is neither model nor tool."""

    kind: Literal["control"]
    duration_s: NonNeg
    """The orchestration, transfer or queueing time, seconds."""


Step = tagged("kind", ModelStep, ToolStep, EncodeStep, ControlStep)


class State(InputModel):
    """Memory held while a step that names it runs: ``gib``, ``bytes`` or KV ``tokens``."""

    gib: NonNeg | None = None
    """Size in GiB (2^30 bytes); give exactly one of ``gib``, ``bytes``, ``tokens``."""
    bytes: NonNeg | None = None
    """Size in bytes."""
    tokens: Count | None = None
    """Size as KV-cache tokens: × the model's KV bytes per token in the trajectory's ``kv_dtype``
    (needs a model)."""
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
    """Whether the task passed its check; over a logged set, the cost per success divides by the
    trajectories that passed."""
    checks: dict[str, str | int | float] = Field(default_factory=dict)
    """Named check results as recorded (name → result), shown in the report."""
    reason: str = ""
    """Why it failed (a failed batch reports these instead of a cost per success)."""


class Prices(InputModel):
    """What a task costs: GPU time of model steps, or tokens; tools by the second."""

    usd_per_gpu_hour: NonNeg = 0
    """$ per GPU-hour, charged for the model steps' seconds (each call holding one GPU alone)."""
    usd_per_m_input: NonNeg = 0
    """$ per million new (uncached) input tokens, I − K."""
    usd_per_m_cached: NonNeg = 0
    """$ per million cached input tokens, K."""
    usd_per_m_output: NonNeg = 0
    """$ per million output tokens (reasoning included)."""
    usd_per_tool_s: NonNeg = 0
    """$ per second of tool steps."""
    usd_per_task: NonNeg = 0
    """Environment or verification cost per task (sandbox start-up, graders)."""


class Realtime(InputModel):
    """Timing requirements and arrivals of a real-time task (seconds from the task's start)."""

    first_response_s: NonNeg | None = None
    """Deadline for the first response (first audio block played, first token shown)."""
    finish_s: NonNeg | None = None
    """Deadline for the task's end (its last step, or its last audio block when ``arrivals_s`` is
    given), seconds from its start."""
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
    """What the task is; titles the report."""
    model: str | None = None
    """The model: a catalog id or a ``config.json`` path, for states given in ``tokens`` and
    computed durations. ``--model`` overrides it; None: only ``--model`` gives one."""
    model_version: str = ""
    """The model's version as logged; echoed in the JSON output."""
    kv_dtype: str = "bf16"
    """KV-cache format that sizes states given in ``tokens`` (computed durations use
    ``--kv-dtype``)."""
    arrival_s: NonNeg = 0
    """When the task arrived, seconds; a logged set's combined state curve shifts the task's
    held state by it (tasks waiting at the same time add up)."""
    check: Check | None = None
    """The task's check. None: the task counts as failed ("no check recorded") in a logged set."""
    states: dict[str, State] = Field(default_factory=dict)
    """What steps hold while they run, by name (the names ``holds`` lists)."""
    steps: tuple[Step, ...] = Field(min_length=1)
    """The steps, a DAG through ``after``; each starts when the steps it waits for have finished."""
    prices: Prices = Prices()
    """What the task's resources cost; every price defaults to 0."""
    realtime: Realtime | None = None
    """Timing requirements and block arrivals of a real-time task. None: no requirements."""

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
