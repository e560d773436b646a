"""What a task costs and what each success costs, from attempt figures or logged trajectories.

A task's cost is everything it consumed (chapter 3.2.2): model GPU time (the calls' durations ×
$/GPU-hour) or tokens at list prices, tools by the second, and a per-task environment or
verification charge. Over a logged set, the cost per success is every trajectory's cost over the
trajectories whose check passed; a set with no success reports its cost and the failure reasons,
never a division by zero.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from napkin.agents.trajectory import Trajectory
from napkin.economics import SuccessCost, batch_cost
from napkin.errors import require
from napkin.units import HOUR_S

PER_MILLION = 1e-6


@dataclass(frozen=True)
class TaskCost:
    """One trajectory's cost by component, in dollars."""

    gpu_usd: float
    token_usd: float
    tool_usd: float
    task_usd: float

    @property
    def total_usd(self) -> float:
        return self.gpu_usd + self.token_usd + self.tool_usd + self.task_usd


def task_cost(traj: Trajectory, durations: Mapping[str, float]) -> TaskCost:
    """GPU: Σ model-call seconds × $/GPU-hour / 3600 (a call holding one GPU alone; batching
    shares it). Tokens: (I − K)·input + K·cached + O·output prices per million. Tools: seconds
    × $/s. Plus the per-task charge."""
    p = traj.prices
    models = traj.model_steps
    gpu_s = sum(durations[s.id] for s in models)
    tokens = sum(s.new_tokens * p.usd_per_m_input + s.cached_tokens * p.usd_per_m_cached
                 + s.output_tokens * p.usd_per_m_output for s in models) * PER_MILLION
    tool_s = sum(durations[s.id] for s in traj.steps if s.kind == "tool")
    return TaskCost(gpu_s * p.usd_per_gpu_hour / HOUR_S, tokens, tool_s * p.usd_per_tool_s,
                    p.usd_per_task)


def attempt_cost(generation: float, verification: float = 0.0, tools: float = 0.0,
                 environment: float = 0.0) -> float:
    """``c`` of one attempt: generation + verification + tools + environment (all >= 0)."""
    parts = {"generation": generation, "verification": verification, "tools": tools,
             "environment": environment}
    for name, value in parts.items():
        require(value >= 0, f"{name}: cost must be >= 0, got {value}")
    return sum(parts.values())


@dataclass(frozen=True)
class LoggedOutcome:
    """A set of logged tasks: cost, successes, and why the others failed."""

    cost: SuccessCost
    failures: tuple[tuple[str, int], ...]
    """(reason, count) for failed or unchecked tasks, most common first."""


def logged_outcome(trajs: Sequence[Trajectory], costs: Sequence[float]) -> LoggedOutcome:
    """Cost per success over logged trajectories (a task without a ``check`` counts as failed,
    reason "no check recorded")."""
    require(len(trajs) > 0, "trajectories: give at least one")
    passed = [t.check is not None and t.check.passed for t in trajs]
    reasons = Counter(
        (t.check.reason or "check failed") if t.check else "no check recorded"
        for t, ok in zip(trajs, passed, strict=True) if not ok
    )
    return LoggedOutcome(batch_cost(list(costs), passed), tuple(reasons.most_common()))

