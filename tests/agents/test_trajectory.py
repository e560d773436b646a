"""Trajectory files: validation, schedule, critical path, state held, speedups, cost.

Expected values are the chapter's printed figures (§3.2.4, Example 3-2, Exercise 3-4) or hand
derivations written here.
"""

import pytest

from napkin.accounting import Precision
from napkin.agents.analysis import analyze
from napkin.agents.state import state_bytes, state_curve
from napkin.agents.success import attempt_cost, logged_outcome, task_cost
from napkin.agents.timeline import (
    amdahl_speedup,
    matching_steps,
    parse_speedups,
    schedule,
    speed_up,
    step_durations,
)
from napkin.agents.trajectory import load_trajectory, parse_trajectory
from napkin.catalog import scenario_file
from napkin.errors import NapkinError
from napkin.inference.chain import request_chain
from napkin.timing.roofline import Deployment
from napkin.units import GiB, KiB

DAG = scenario_file("agent-dag.yaml")
CODE_FIX = scenario_file("agent-code-fix-reasoning.yaml")
BRANCHES = scenario_file("agent-branches.yaml")


def _traj(steps, **extra):
    return parse_trajectory({"steps": steps, **extra})


def test_chapter_dag_serial_21_parallel_15_and_tool_work_16():
    a = analyze(load_trajectory(DAG))
    assert a.serial.makespan_s == 2 + 6 + 10 + 3 == 21
    assert a.dag.makespan_s == 2 + max(6, 10) + 3 == 15
    assert a.dag.critical_path == ("plan", "tool_b", "finish")
    assert a.dag.by_kind_s() == {"model": 5, "tool": 16}
    assert a.parallel_saving_s == 6


def test_exercise_3_4_state_held_during_tool_waits():
    a = analyze(load_trajectory(DAG))
    # 1 GiB held while a tool runs; the same task's state counts once when both tools run.
    assert a.serial_state.gib_seconds == pytest.approx(1 * (6 + 10))
    assert a.dag_state.gib_seconds == pytest.approx(1 * 10)
    assert a.dag_state.peak_bytes == GiB


def test_branches_hold_the_shared_prefix_once(qwen3_8b):
    traj = load_trajectory(BRANCHES)
    sizes = state_bytes(traj, qwen3_8b)
    c_kv = 36 * 2 * 8 * 128 * 2  # layers × (K, V) × kv heads × head_dim × BF16 bytes
    assert c_kv == 144 * KiB
    assert sizes == {"prefix": 4000 * c_kv, "branch_a": 600 * c_kv, "branch_b": 900 * c_kv}
    durations = {s.id: 1.0 for s in traj.steps}  # read 0–1, drafts 1–2 side by side, tests 2–3
    curve = state_curve(traj, schedule(traj, durations), sizes)
    assert curve.peak_bytes == c_kv * (4000 + 600 + 900)
    assert curve.byte_seconds == pytest.approx(c_kv * (4000 + 2 * (4000 + 600 + 900)))


def test_branches_of_a_linear_attention_hybrid_each_keep_a_state():
    from napkin.catalog import load_model

    sizes = state_bytes(load_trajectory(BRANCHES), load_model("qwen3-next-80b-a3b"))
    c_kv = 12 * 2 * 2 * 256 * 2  # 12 attention layers × (K, V) × 2 kv heads × 256 × BF16
    state = 36 * (32 * 128 * 128 * 4 + 8192 * 3 * 2)  # 36 Gated DeltaNet layers: 73.7 MiB
    # resuming the prefix or either branch needs its own recurrent state
    assert sizes == {"prefix": 4000 * c_kv + state, "branch_a": 600 * c_kv + state,
                     "branch_b": 900 * c_kv + state}


def test_example_3_2_halving_round_one():
    traj = load_trajectory(CODE_FIX)
    d = step_durations(traj)
    assert sum(d.values()) == pytest.approx(76.510)
    assert sum(d[s.id] for s in traj.model_steps) == pytest.approx(76.294)
    sp = speed_up(traj, d, [("round1", 2)])
    assert sp.after.makespan_s == pytest.approx(76.510 - 36.375 / 2)  # 58.3225 → "58.323"
    f = 36.375 / 76.510
    assert sp.share == pytest.approx(f)
    assert sp.speedup == pytest.approx(1 / ((1 - f) + f / 2))
    assert sp.amdahl == pytest.approx(sp.speedup)
    assert round(100 * sp.saved_share, 1) == 23.8


def test_exercise_3_4_local_speedups_on_the_whole_task():
    traj = load_trajectory(CODE_FIX)
    d = step_durations(traj)
    first = speed_up(traj, d, parse_speedups(["round1=4"]))
    tools = speed_up(traj, d, parse_speedups(["kind:tool=2"]))
    assert first.saved_s == pytest.approx(36.375 * 3 / 4)
    assert tools.saved_s == pytest.approx(0.078 / 2)
    mixed = speed_up(traj, d, [("round1", 4), ("kind:tool", 2)])
    assert mixed.amdahl is None  # two factors: no single Amdahl figure
    assert mixed.saved_s == pytest.approx(36.375 * 3 / 4 + 0.078 / 2)


def test_amdahl_on_a_parallel_branch_is_not_the_task_gain():
    traj = load_trajectory(DAG)
    sp = speed_up(traj, step_durations(traj), [("tool_a", 2)])
    assert sp.saved_s == 0  # tool A is off the critical path
    assert sp.share == 0 and sp.amdahl == 1  # f counts only the critical path's time


def test_speedups_on_a_graph_count_the_critical_path():
    traj = load_trajectory(DAG)
    d = step_durations(traj)
    every = speed_up(traj, d, [("*", 2)])  # used to fail: "share: must be in [0, 1], got 1.4"
    assert every.sped_up_s == 21 and every.share == 1  # 2 + 10 + 3 of 15 on the path
    assert every.speedup == every.amdahl == 2
    tools = speed_up(traj, d, [("kind:tool", 2)])
    assert tools.after.makespan_s == 2 + max(6, 10) / 2 + 3  # tool B stays on the path
    assert tools.share == pytest.approx(10 / 15)
    assert tools.amdahl == pytest.approx(1 / (5 / 15 + 10 / 15 / 2)) == tools.speedup
    slow_b = speed_up(traj, d, [("tool_b", 5)])  # B: 10 → 2 s, A's 6 s takes over
    assert slow_b.after.makespan_s == 2 + 6 + 3
    assert slow_b.amdahl == pytest.approx(1 / (5 / 15 + 10 / 15 / 5))
    assert slow_b.speedup < slow_b.amdahl  # Amdahl bounds a graph from above


def test_amdahl_formula_and_validation():
    assert amdahl_speedup(0.5, 2) == pytest.approx(4 / 3)
    assert amdahl_speedup(1.0, 4) == pytest.approx(4)
    with pytest.raises(NapkinError, match="share"):
        amdahl_speedup(1.5, 2)


def test_reuse_intervals_are_gaps_between_model_calls():
    traj = load_trajectory(CODE_FIX)
    a = analyze(traj)
    assert a.reuse_intervals_s["round2"] == pytest.approx(0.030)
    assert a.reuse_intervals_s["round4"] == pytest.approx(0.074 + 0.072)
    assert a.output_tokens == (2553, 2733 - 2553)


def test_missing_model_durations_come_from_the_request_chain(qwen3_8b, h100):
    dep = Deployment(qwen3_8b, h100, Precision.of())
    traj = _traj([{"id": "m", "kind": "model", "input_tokens": 1000, "cached_tokens": 400,
                   "output_tokens": 50}], model="qwen3-8b")
    assert step_durations(traj, dep)["m"] == request_chain(dep, 600, 50, 400).e2e_s
    with pytest.raises(NapkinError, match="no duration_s"):
        step_durations(traj)


def test_task_cost_components():
    traj = load_trajectory(CODE_FIX)
    cost = task_cost(traj, step_durations(traj))
    assert cost.gpu_usd == pytest.approx(76.294 * 2.0 / 3600)
    priced = _traj([{"id": "m", "kind": "model", "duration_s": 1, "input_tokens": 1_000_000,
                     "cached_tokens": 600_000, "output_tokens": 100_000},
                    {"id": "t", "kind": "tool", "duration_s": 30, "after": ["m"]}],
                   prices={"usd_per_m_input": 1, "usd_per_m_cached": 0.1,
                           "usd_per_m_output": 4, "usd_per_tool_s": 0.001, "usd_per_task": 0.5})
    c = task_cost(priced, step_durations(priced))
    assert c.token_usd == pytest.approx(0.4 * 1 + 0.6 * 0.1 + 0.1 * 4)
    assert c.tool_usd == pytest.approx(0.03)
    assert c.total_usd == pytest.approx(0.86 + 0.03 + 0.5)


def test_logged_set_without_success_reports_cost_and_reasons():
    fail = [_traj([{"id": "m", "kind": "model", "duration_s": 1}],
                  check={"passed": False, "reason": reason}) for reason in ("timeout", "timeout",
                                                                           "wrong answer")]
    out = logged_outcome(fail, [1.0, 2.0, 3.0])
    assert out.cost.total_cost == 6 and out.cost.successes == 0
    assert out.cost.per_success is None
    assert out.failures == (("timeout", 2), ("wrong answer", 1))
    ok = _traj([{"id": "m", "kind": "model", "duration_s": 1}], check={"passed": True})
    assert logged_outcome([*fail, ok], [1, 2, 3, 4]).cost.per_success == 10


def test_attempt_cost_sums_components():
    assert attempt_cost(1.0, 0.2, 0.3, 0.5) == pytest.approx(2.0)
    with pytest.raises(NapkinError, match="verification"):
        attempt_cost(1.0, -0.1)


def test_speedup_selectors():
    traj = load_trajectory(CODE_FIX)
    assert [s.id for s in matching_steps(traj, "round*")] == ["round1", "round2", "round3",
                                                              "round4"]
    assert [s.id for s in matching_steps(traj, "kind:tool")] == ["write_file", "run_tests"]
    with pytest.raises(NapkinError, match="matches no step"):
        matching_steps(traj, "nope")
    for bad in ("round1", "round1=0", "=2", "round1=x"):
        with pytest.raises(NapkinError, match="STEP=FACTOR"):
            parse_speedups([bad])


@pytest.mark.parametrize(("data", "match"), [
    ({"steps": []}, "steps"),
    ({"steps": [{"id": "a", "kind": "model"}, {"id": "a", "kind": "model"}]}, "unique"),
    ({"steps": [{"id": "a", "kind": "model", "after": ["b"]}]}, "unknown steps"),
    ({"steps": [{"id": "a", "kind": "tool", "duration_s": 1, "after": ["b"]},
                {"id": "b", "kind": "tool", "duration_s": 1, "after": ["a"]}]}, "cycle"),
    ({"steps": [{"id": "a", "kind": "tool", "duration_s": 1, "holds": ["x"]}]}, "unknown states"),
    ({"steps": [{"id": "a", "kind": "tool"}]}, "duration_s"),
    ({"steps": [{"id": "a", "kind": "robot", "duration_s": 1}]}, "kind"),
    ({"steps": [{"id": "a", "kind": "tool", "duration_s": -1}]}, "duration_s"),
    ({"steps": [{"id": "a", "kind": "model", "input_tokens": 5, "cached_tokens": 9}]},
     "cached_tokens"),
    ({"states": {"x": {"gib": 1, "tokens": 5}}, "steps": [{"id": "a", "kind": "model"}]},
     "exactly one"),
    ({"states": {"x": {"gib": 1, "parent": "y"}}, "steps": [{"id": "a", "kind": "model"}]},
     "unknown parent"),
    ({"steps": [{"id": "a", "kind": "model", "colour": "red"}]}, "colour"),
    ([1, 2], "mapping"),
])
def test_bad_trajectories_give_one_line_naming_the_field(data, match):
    with pytest.raises(NapkinError, match=match) as info:
        parse_trajectory(data, "t.yaml")
    assert "\n" not in str(info.value)


def test_token_states_need_a_model():
    traj = load_trajectory(BRANCHES)
    with pytest.raises(NapkinError, match="needs a model"):
        state_bytes(traj, None)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(NapkinError, match="no such file"):
        load_trajectory(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: [unclosed")
    with pytest.raises(NapkinError, match="not valid YAML"):
        load_trajectory(bad)


def test_waiting_tasks_add_their_state():
    from napkin.agents.state import combined_curve

    a = analyze(load_trajectory(DAG))  # 1 GiB over [2, 12)
    together = combined_curve([(0.0, a.dag_state), (5.0, a.dag_state)])  # second: [7, 17)
    assert together.peak_bytes == 2 * GiB  # both wait during [7, 12)
    assert together.gib_seconds == pytest.approx(2 * 10)
    held = dict(zip(together.times_s, together.bytes_, strict=False))
    assert (held[2], held[7], held[12]) == (GiB, 2 * GiB, GiB)


def test_json_trajectory(tmp_path):
    import json

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"steps": [{"id": "m", "kind": "model", "duration_s": 2},
                                          {"id": "t", "kind": "tool", "duration_s": 3,
                                           "after": ["m"]}]}))
    assert analyze(load_trajectory(path)).dag.makespan_s == 5
