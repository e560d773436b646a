"""Everything ``napkin agent`` reports about one trajectory, computed once."""

from dataclasses import dataclass

from napkin.agents.state import StateCurve, state_bytes, state_curve
from napkin.agents.success import TaskCost, task_cost
from napkin.agents.timeline import (
    Schedule,
    Speedup,
    reuse_intervals_s,
    schedule,
    speed_up,
    step_durations,
)
from napkin.agents.trajectory import Trajectory
from napkin.catalog import load_model
from napkin.specs.model import ModelSpec
from napkin.timing.roofline import Deployment


@dataclass(frozen=True)
class TokenTotals:
    """A task's model calls summed: rounds (calls), input tokens I (cache hits included),
    prefix-cache hits K, output tokens O."""

    rounds: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int

    @property
    def prefix_hit_frac(self) -> float | None:
        """``ΣK / ΣI``: the share of input tokens served from the prefix cache (None without
        input tokens)."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else None

    def __add__(self, other: "TokenTotals") -> "TokenTotals":
        return TokenTotals(self.rounds + other.rounds, self.input_tokens + other.input_tokens,
                           self.cached_tokens + other.cached_tokens,
                           self.output_tokens + other.output_tokens)


@dataclass(frozen=True)
class TaskAnalysis:
    """A trajectory as drawn (its DAG) and with every step run one after another."""

    trajectory: Trajectory
    durations: dict[str, float]
    dag: Schedule
    serial: Schedule
    dag_state: StateCurve
    serial_state: StateCurve
    reuse_intervals_s: dict[str, float]
    cost: TaskCost
    speedup: Speedup | None

    @property
    def parallel_saving_s(self) -> float:
        """Serial sum minus critical path: what running independent steps together saves."""
        return self.serial.makespan_s - self.dag.makespan_s

    @property
    def shares(self) -> dict[str, float]:
        """Each step kind's summed time over the summed time of all steps."""
        busy = self.dag.busy_s
        return {k: v / busy if busy else 0.0 for k, v in self.dag.by_kind_s().items()}

    @property
    def tokens(self) -> TokenTotals:
        """Rounds and token counts over the task's model calls."""
        calls = self.trajectory.model_steps
        return TokenTotals(len(calls), sum(s.input_tokens for s in calls),
                           sum(s.cached_tokens for s in calls),
                           sum(s.output_tokens for s in calls))

    @property
    def output_tokens(self) -> tuple[int, int]:
        """(reasoning, other) output tokens over the task's model calls."""
        calls = self.trajectory.model_steps
        reasoning = sum(s.reasoning_tokens for s in calls)
        return reasoning, sum(s.output_tokens for s in calls) - reasoning


def analyze(traj: Trajectory, model: ModelSpec | None = None, dep: Deployment | None = None,
            speedups: list[tuple[str, float]] | None = None) -> TaskAnalysis:
    """Schedule ``traj`` both ways, integrate the state it holds, cost it, apply speedups.
    ``model`` (default: the trajectory's own) sizes KV states given in tokens; ``dep``
    computes missing model durations."""
    if model is None and traj.model:
        model = load_model(traj.model)
    durations = step_durations(traj, dep)
    dag, serial = schedule(traj, durations), schedule(traj, durations, serial=True)
    sizes = state_bytes(traj, model)
    return TaskAnalysis(
        traj, durations, dag, serial, state_curve(traj, dag, sizes),
        state_curve(traj, serial, sizes), reuse_intervals_s(traj, dag),
        task_cost(traj, durations),
        speed_up(traj, durations, speedups) if speedups else None,
    )
