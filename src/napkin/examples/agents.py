"""Worked examples of chapter 3.2 (agents, multi-turn context) and question 46.

The trajectories are the shipped files ``examples/agent-dag.yaml`` and
``examples/agent-code-fix-reasoning.yaml``; every figure is computed from them by the library.
"""

from napkin.accounting import Precision
from napkin.agents.analysis import analyze
from napkin.agents.context import (
    Edit,
    Round,
    agent_input_tokens,
    agent_rounds,
    apply_edit,
    round_costs,
)
from napkin.agents.timeline import amdahl_speedup, speed_up, step_durations
from napkin.agents.trajectory import load_trajectory
from napkin.catalog import load_model, scenario_file
from napkin.examples.row import Example, Row, rounded
from napkin.units import TFLOP

DAG = "agent-dag.yaml"
CODE_FIX = "agent-code-fix-reasoning.yaml"
OFF = "agent-code-fix-no-reasoning.yaml"


def ex_3_2_1() -> list[Row]:
    """§3.2.1: append 100 tokens vs change token 501 of 2,000; the four-round prefill."""
    append = apply_edit(2000, Edit("append", 100))
    change = apply_edit(2000, Edit("replace", 1, position=501, removed_tokens=1))
    traj = load_trajectory(scenario_file(CODE_FIX))
    rounds = [Round(s.input_tokens, s.cached_tokens) for s in traj.model_steps]
    costs = round_costs(load_model(traj.model or ""), rounds, Precision.of())
    split = ("rounds 1, 3, 4: one of 1,230 splits meeting the published totals and prefix "
             "chains (the file's header)")
    return [
        Row("append 100: new rows to prefill", append.prefill_tokens, 100, "tokens"),
        Row("change token 501 of 2,000: reusable prefix", change.reusable_tokens, 500, "tokens"),
        Row("change token 501: rows to prefill again", change.prefill_tokens, None, "tokens"),
        rounded("four rounds, Qwen3-8B: prefill without cache",
                sum(c.flops_uncached for c in costs) / TFLOP, 76.196, 3, "TFLOP", note=split),
        rounded("four rounds: prefill with the prefix cache",
                sum(c.flops_cached for c in costs) / TFLOP, 11.976, 3, "TFLOP", note=split),
        Row("inputs over the four rounds", sum(r.input_tokens for r in rounds), 5297, "tokens"),
        Row("of them cached", sum(r.cached_tokens for r in rounds), 4480, "tokens"),
    ]


def ex_3_2_amdahl() -> list[Row]:
    """Example 3-2: halve round 1's 36.375 s of the 76.510 s task."""
    traj = load_trajectory(scenario_file(CODE_FIX))
    sp = speed_up(traj, step_durations(traj), [("round1", 2.0)])
    return [
        rounded("task time after", sp.after.makespan_s, 58.323, 3, "s"),
        rounded("whole-task speedup", sp.speedup, 1.31, 2, "×"),
        rounded("Amdahl 1/((1−f)+f/s)", amdahl_speedup(sp.share, 2.0), 1.31, 2, "×"),
        rounded("round 1 share f", 100 * sp.share, 47.5, 1, "%"),
        rounded("time saved", 100 * sp.saved_share, 23.8, 1, "%"),
        rounded("the other stages", sp.before.makespan_s - sp.sped_up_s, 40.1, 1, "s"),
    ]


def ex_reasoning_off_vs_on() -> list[Row]:
    """§3.2.4's table: the same fix with reasoning off (12 rounds) and on (4 rounds)."""
    off = analyze(load_trajectory(scenario_file(OFF)))
    on = analyze(load_trajectory(scenario_file(CODE_FIX)))
    rows = []
    for name, a, rounds, outs, model_s, tool_s in (("off", off, 12, 765, 13.156, 0.476),
                                                   ("on", on, 4, 2733, 76.294, 0.078)):
        t, kinds = a.trajectory, a.dag.by_kind_s()
        calls = t.model_steps
        rows += [
            Row(f"reasoning {name}: model rounds", len(calls), rounds, "rounds"),
            Row(f"reasoning {name}: output tokens", sum(s.output_tokens for s in calls), outs,
                "tokens"),
            rounded(f"reasoning {name}: model time", kinds["model"], model_s, 3, "s"),
            rounded(f"reasoning {name}: tool time", kinds["tool"], tool_s, 3, "s"),
            Row(f"reasoning {name}: task passed its checks",
                float(bool(t.check and t.check.passed)), 1.0 if name == "on" else 0.0, "bool"),
        ]
    share = off.tokens.prefix_hit_frac
    assert share is not None  # the file logs input tokens
    rows.append(rounded("reasoning off: input tokens hitting the cache", 100 * share, 83.4, 1,
                        "%", note="per-round split assumed (the file's header); `napkin agent` "
                                  "prints it per run (prefix hits)"))
    return rows


def ex_3_2_4() -> list[Row]:
    """§3.2.4: model 2 s → tools 6 s and 10 s → model 3 s, one after another vs side by side."""
    a = analyze(load_trajectory(scenario_file(DAG)))
    return [
        Row("tools one after another", a.serial.makespan_s, 21, "s"),
        Row("tools side by side (critical path)", a.dag.makespan_s, 15, "s"),
        Row("saved by parallel tools", a.parallel_saving_s, 6, "s"),
        Row("tool work either way", a.dag.by_kind_s()["tool"], 16, "s"),
    ]


def ex_3_4() -> list[Row]:
    """Exercise 3-4: GiB·s held through tool waits; 4× round 1 and 2× tools on the real task."""
    a = analyze(load_trajectory(scenario_file(DAG)))
    traj = load_trajectory(scenario_file(CODE_FIX))
    durations = step_durations(traj)
    first = speed_up(traj, durations, [("round1", 4.0)])
    tools = speed_up(traj, durations, [("kind:tool", 2.0)])
    return [
        Row("serial tools: 1 GiB held", a.serial_state.gib_seconds, None, "GiB·s",
            note="hand: 1 GiB × (6 + 10) s"),
        Row("parallel tools: 1 GiB held", a.dag_state.gib_seconds, None, "GiB·s",
            note="hand: 1 GiB × max(6, 10) s (one task's state, held once)"),
        Row("4× round 1: task time", first.after.makespan_s, None, "s",
            note="hand: 76.510 − 36.375 × 3/4"),
        Row("4× round 1: saved", first.saved_s, None, "s"),
        Row("2× all tools: task time", tools.after.makespan_s, None, "s",
            note="hand: 76.510 − 0.078/2"),
        Row("2× all tools: saved", tools.saved_s, None, "s"),
    ]


def ex_q46() -> list[Row]:
    """Question 46: an agent resending its history, S = 1,000, d = 300, n = 10."""
    rounds = agent_rounds(1000, 300, 10)
    return [
        Row("input tokens n·S + d·n(n−1)/2", agent_input_tokens(1000, 300, 10), 23_500,
            "tokens"),
        Row("prefilled with a prefix cache", sum(r.new_tokens for r in rounds), None, "tokens",
            note="hand: S + d·(n − 1) = 3,700"),
    ]


EXAMPLES_AGENTS: tuple[Example, ...] = (
    Example("§3.2.1", "appending vs editing a context; four-round prefix reuse",
            "chapter 3, §3.2.1", ex_3_2_1),
    Example("3-2-amdahl", "halving round 1 of the 76.510 s coding task",
            "chapter 3, Example 3-2", ex_3_2_amdahl),
    Example("§3.2.4", "tools in series vs in parallel", "chapter 3, §3.2.4", ex_3_2_4),
    Example("§3.2.4-reasoning", "the fix with reasoning off (12 rounds) vs on (4 rounds)",
            "chapter 3, §3.2.4", ex_reasoning_off_vs_on),
    Example("3-4", "state held during tool waits; local speedups on the whole task",
            "chapter 3, Exercise 3-4", ex_3_4),
    Example("q46", "agent input-token growth", "question bank, q46", ex_q46),
)
