"""Agent trajectories and multi-turn context: ``napkin agent`` and ``napkin context rounds |
edit | growth``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from napkin.api.boundary import checked
from napkin.api.result import Result
from napkin.api.specs import GpuRef, ModelRef, deployment, load_gpu, load_model
from napkin.errors import NapkinError, refuse_unused, require

if TYPE_CHECKING:  # the agents layer loads on first use, not with the CLI
    from napkin.agents.context import Edit, Round
    from napkin.agents.trajectory import Trajectory

TrajectoryRef: TypeAlias = "str | Path | Mapping[str, Any] | Trajectory"
"""A trajectory YAML/JSON file, a mapping with that file's fields, or a loaded
:class:`~napkin.agents.trajectory.Trajectory`."""
SpeedupRef: TypeAlias = Mapping[str, float] | Sequence[str]
"""``{selector: factor}`` or the CLI's ``"STEP=FACTOR"`` strings; a selector is a step id, a
glob over ids (``round*``) or ``kind:model|tool|encode|control``; later selectors win."""
EditRef: TypeAlias = "str | Edit"
"""``"append:N"``, ``"replace:POS:REMOVED:ADDED"``, ``"summarize:POS:REMOVED:SUMMARY"``
(1-based POS), or an :class:`~napkin.agents.context.Edit`."""


def _trajectory(ref: TrajectoryRef, label: str) -> Trajectory:
    from napkin.agents.trajectory import Trajectory, load_trajectory, parse_trajectory

    if isinstance(ref, Trajectory):
        return ref
    if isinstance(ref, str | Path):
        return load_trajectory(ref)
    return parse_trajectory(dict(ref) if isinstance(ref, Mapping) else ref, label)


def _speedups(speedup: SpeedupRef) -> list[tuple[str, float]]:
    from napkin.agents.timeline import parse_speedups

    if isinstance(speedup, str):
        speedup = [speedup]
    if isinstance(speedup, Mapping):
        speedup = [f"{sel}={factor}" for sel, factor in speedup.items()]
    return parse_speedups(list(speedup))


@checked
def analyze_trajectory(trajectories: TrajectoryRef | Sequence[TrajectoryRef], *,
                       speedup: SpeedupRef = (), model: ModelRef | None = None,
                       gpu: GpuRef | None = None, weights: str | None = None,
                       kv_dtype: str | None = None, mfu: float | None = None,
                       mbu: float | None = None) -> Result:
    """What an agent task's time, state and cost are: one trajectory, or cost per success over a
    logged set (several).

    One trajectory: every step scheduled as drawn (start = latest end of the steps it waits
    for; the critical path is the chain that ends last, s) and one after another (serial sum,
    s); each kind's share of step time; the state held ``∫M(t)dt`` (GiB·s, a shared prefix
    counted once); reuse intervals of cached prefixes (s); the cost (GPU + tokens + tools +
    task, $); with ``speedup``, the task rescheduled with the matched steps' durations divided
    by their factors, and Amdahl's ``1/((1 − f) + f/s)`` for one common factor; with
    ``realtime.arrivals_s``, the blocks played through the trajectory's buffer.

    Several trajectories: each task's rounds (model calls), input, cached and output tokens,
    prefix-cache hit rate ``ΣK/ΣI``, critical path and cost, their sums, and the cost per
    success ``Σ cost / tasks passed`` ($; a task without a ``check`` counts as failed).

    ``model`` overrides the trajectory's model (KV states given in tokens; computed
    durations). ``gpu`` computes the durations of model steps without ``duration_s`` at the
    roofline on that model, with ``weights``/``kv_dtype`` (default bf16) and ``mfu``/``mbu``
    (default 1.0), which are refused without ``gpu``.

    ``value``: one trajectory, ``{"analysis": TaskAnalysis, "playback": Timeline | None}``;
    several, ``{"analyses": tuple[TaskAnalysis, ...], "outcome": LoggedOutcome}``. The result
    of one trajectory has a figure (the timeline as drawn and serial, and M(t)).
    """
    from napkin.agents.analysis import TaskAnalysis, analyze
    from napkin.agents.success import logged_outcome
    from napkin.agents.trajectory import Trajectory
    from napkin.media.playback import timeline_from_arrivals
    from napkin.report.agent_views import agent_doc, logged_doc

    one = str | Path | Mapping | Trajectory
    if not isinstance(trajectories, one) and not (
            isinstance(trajectories, list | tuple) and all(isinstance(t, one)
                                                           for t in trajectories)):
        raise NapkinError("trajectories: must be a file path, a mapping, a Trajectory or a "
                          f"list of them, got {type(trajectories).__name__}")
    refs = [trajectories] if isinstance(trajectories, one) else list(trajectories)
    require(len(refs) >= 1, "trajectory: give at least one file")
    if gpu is None:
        refuse_unused({"mfu": mfu, "mbu": mbu, "weights": weights, "kv-dtype": kv_dtype},
                      "--gpu")
    weights, kv_dtype = weights or "bf16", kv_dtype or "bf16"
    mfu, mbu = 1.0 if mfu is None else mfu, 1.0 if mbu is None else mbu
    factors = _speedups(speedup)
    acc = None if gpu is None else load_gpu(gpu)
    labels = [str(r) if isinstance(r, str | Path) else
              "trajectory" if len(refs) == 1 else f"trajectory {i}"
              for i, r in enumerate(refs, 1)]
    analyses: list[TaskAnalysis] = []
    for ref, label in zip(refs, labels, strict=True):
        traj = _trajectory(ref, label)
        spec_ref = model or traj.model
        spec = load_model(spec_ref) if spec_ref else None
        dep = None
        if acc is not None:
            require(spec is not None, "model: computing durations needs a model (--model or "
                                      "the trajectory's model field)")
            assert spec is not None
            dep = deployment(spec, acc, weights=weights, kv_dtype=kv_dtype, mfu=mfu, mbu=mbu)
        analyses.append(analyze(traj, spec, dep, factors))
    assumptions = ({"mfu": mfu, "mbu": mbu, "weights": weights, "kv_dtype": kv_dtype}
                   if acc is not None else {})
    inputs = {"files": labels, "speedup": [list(f) for f in factors],
              "gpu": gpu if gpu is None or isinstance(gpu, str) else gpu.id}
    if len(refs) > 1:
        outcome = logged_outcome([a.trajectory for a in analyses],
                                 [a.cost.total_usd for a in analyses])
        return Result(logged_doc(labels, analyses, outcome, inputs),
                      {"analyses": tuple(analyses), "outcome": outcome})
    analysis, playback = analyses[0], None
    rt = analysis.trajectory.realtime
    if rt is not None and rt.arrivals_s:
        require(rt.block_s is not None, "realtime: arrivals_s needs block_s (playback length "
                                        "of one block)")
        assert rt.block_s is not None
        playback = timeline_from_arrivals(rt.arrivals_s, rt.block_s, rt.buffer_s)

    def plotter(path: Path) -> None:
        from napkin.report.agent_plots import plot_trajectory

        plot_trajectory(analysis, path)

    return Result(agent_doc(analysis, inputs, assumptions, playback),
                  {"analysis": analysis, "playback": playback}, plotter)


def _model_name(model: ModelRef | None) -> str | None:
    return model if model is None or isinstance(model, str) else model.name


@checked
def context_rounds(model: ModelRef, *, rounds: Sequence[tuple[int, int] | Round],
                   weights: str = "bf16", kv_dtype: str = "bf16") -> Result:
    """How much prefill a prefix cache saves over the rounds of a multi-turn conversation.

    Each round sends ``I`` input tokens of which ``K`` hit the cache, so it prefills
    ``P = I − K`` new tokens (a fully cached input still prefills its last token); prefill FLOPs
    with the cache (P tokens on K cached ones: projections and MLP see P, attention still reads
    all I) and from scratch (all I), and the cached KV read (bytes). ``rounds``: ``(I, K)``
    pairs, tokens. ``value``: ``list[RoundCost]``, one per round.
    """
    from napkin.accounting import Precision
    from napkin.agents.context import Round, round_costs
    from napkin.report.agent_views import rounds_doc

    spec = load_model(model)
    rs = [r if isinstance(r, Round) else Round(*r) for r in rounds]
    require(bool(rs), "rounds: give at least one INPUT:CACHED round")
    costs = round_costs(spec, rs, Precision.of(weights, kv_dtype))
    return Result(rounds_doc(costs, {"model": _model_name(model),
                                     "rounds": [[r.input_tokens, r.cached_tokens] for r in rs]},
                             {"weights": weights, "kv_dtype": kv_dtype}), costs)


def _edit(edit: EditRef) -> Edit:
    from napkin.agents.context import Edit

    if isinstance(edit, Edit):
        return edit
    kind, *nums = edit.split(":")
    try:
        values = [int(v) for v in nums]
    except ValueError:
        values = []
    forms = {"append": 1, "replace": 3, "summarize": 3}
    require(kind in forms and len(values) == forms[kind],
            f"edit: {edit!r} must be append:N, replace:POSITION:REMOVED:ADDED or "
            "summarize:POSITION:REMOVED:SUMMARY")
    if kind == "append":
        return Edit("append", values[0])
    return Edit(kind, values[2], values[0], values[1])


def _label(e: Edit) -> str:
    if e.kind == "append":
        return f"append:{e.added_tokens}"
    return f"{e.kind}:{e.position}:{e.removed_tokens}:{e.added_tokens}"


@checked
def context_edit(*, context: int, edits: Sequence[EditRef]) -> Result:
    """What an edit of a ``context``-token context leaves reusable in the prefix cache.

    Only tokens before the first changed position keep valid K/V: ``append:N`` keeps all L
    tokens and adds N; ``replace``/``summarize`` at 1-based position ``p`` removing R tokens
    and adding A keeps ``p − 1`` and leaves ``L − R + A`` tokens. Rows to prefill = length
    after − reusable prefix (tokens). Each edit is applied to the original context.
    ``value``: ``tuple[EditEffect, ...]``, one per edit.
    """
    from napkin.agents.context import EditEffect, apply_edit
    from napkin.report.agent_views import edits_doc

    parsed = [_edit(e) for e in edits]
    require(bool(parsed), "edit: give at least one edit")
    effects: list[tuple[str, EditEffect]] = [(_label(e), apply_edit(context, e))
                                             for e in parsed]
    labels = [label for label, _ in effects]
    return Result(edits_doc(context, effects, {"context": context, "edits": labels}),
                  tuple(e for _, e in effects))


@checked
def context_growth(*, system: int, step: int, steps: int, model: ModelRef | None = None,
                   usd_per_m_input: float = 0.0, usd_per_m_cached: float = 0.0) -> Result:
    """How an agent's input grows when step i resends everything before it, and what a prefix
    cache leaves to prefill.

    Step i sends ``S + d·(i − 1)`` tokens, so n steps send ``n·S + d·n(n − 1)/2`` input
    tokens; with a prefix cache each step reuses the previous input and prefills
    ``S + d·(n − 1)`` in all (tokens). Cost at ``usd_per_m_input`` per million uncached and
    ``usd_per_m_cached`` per million cached input tokens ($); with ``model``, the prefill
    FLOPs with and without the cache. ``value``: the payload's numbers (dict: ``input_tokens``,
    ``prefill_tokens_with_cache``, ``cached_tokens``, ``usd_without_cache``,
    ``usd_with_cache``, and ``flops_uncached``/``flops_cached`` with a model).
    """
    from napkin.accounting import Precision
    from napkin.agents.context import agent_input_tokens, agent_rounds, round_costs
    from napkin.report.econ_views import table_doc
    from napkin.units import TFLOP

    require(usd_per_m_input >= 0 and usd_per_m_cached >= 0,
            "price: $ per million tokens must be >= 0")
    total = agent_input_tokens(system, step, steps)
    rs = agent_rounds(system, step, steps)
    new = sum(r.new_tokens for r in rs)
    data: dict[str, Any] = {
        "input_tokens": total, "prefill_tokens_with_cache": new, "cached_tokens": total - new,
        "usd_without_cache": total * usd_per_m_input / 1e6,
        "usd_with_cache": (new * usd_per_m_input + (total - new) * usd_per_m_cached) / 1e6}
    rows = [["input tokens n·S + d·n(n−1)/2", f"{total:,}"],
            ["prefilled with a prefix cache S + d·(n−1)", f"{new:,}"],
            ["served from the cache", f"{total - new:,}"]]
    if usd_per_m_input or usd_per_m_cached:
        rows += [["$ without cache", f"{data['usd_without_cache']:.6f}"],
                 ["$ with cache", f"{data['usd_with_cache']:.6f}"]]
    if model:
        costs = round_costs(load_model(model), rs, Precision.of())
        data["flops_uncached"] = sum(c.flops_uncached for c in costs)
        data["flops_cached"] = sum(c.flops_cached for c in costs)
        rows += [["prefill TFLOPs without cache", f"{data['flops_uncached'] / TFLOP:,.3f}"],
                 ["prefill TFLOPs with cache", f"{data['flops_cached'] / TFLOP:,.3f}"]]
    doc = table_doc("Agent input growth", f"S = {system}, d = {step}, n = {steps}", ["", ""],
                    rows, data, {"system": system, "step": step, "steps": steps,
                                 "model": _model_name(model)},
                    {"usd_per_m_input": usd_per_m_input, "usd_per_m_cached": usd_per_m_cached},
                    ["step i resends everything before it: S + d·(i − 1) tokens"])
    return Result(doc, dict(data))
