"""The public API of ``napkin agent`` and ``napkin context``: same answers as the CLI, typed
values, the chapter's numbers."""

import json
from pathlib import Path

import pytest
import yaml

from napkin.agents.context import Edit
from napkin.agents.trajectory import load_trajectory
from napkin.api.agents import analyze_trajectory, context_edit, context_growth, context_rounds
from napkin.catalog import scenario_file
from napkin.errors import NapkinError

DAG = str(scenario_file("agent-dag.yaml"))
CODE_FIX = str(scenario_file("agent-code-fix-reasoning.yaml"))
BRANCHES = str(scenario_file("agent-branches.yaml"))
FAILED = {"check": {"passed": False, "reason": "tests fail"},
          "prices": {"usd_per_gpu_hour": 2},
          "steps": [{"id": "m", "kind": "model", "duration_s": 36}]}


def _json(cli, *args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_dag_matches_cli_and_chapter(cli):
    """§3.2.4: model 2 s → tools 6 s ‖ 10 s → model 3 s, 1 GiB held during the tools."""
    r = analyze_trajectory(DAG)
    assert r.data == _json(cli, "agent", DAG)
    a = r.value["analysis"]
    assert a.serial.makespan_s == 2 + 6 + 10 + 3
    assert a.dag.makespan_s == 2 + 10 + 3  # the longer tool is on the critical path
    # held while either tool runs: 10 s side by side, 6 + 10 s one after another
    assert (a.dag_state.gib_seconds, a.serial_state.gib_seconds) == (10, 16)
    assert r.value["playback"] is None
    # the same task as a mapping or as a loaded trajectory
    raw = yaml.safe_load(Path(DAG).read_text())
    for ref in (raw, load_trajectory(DAG)):
        other = analyze_trajectory(ref)
        assert other.value["analysis"].dag.makespan_s == 15
        assert other.data["inputs"]["files"] == ["trajectory"]


def test_speedup_mapping_or_strings(cli):
    """Serial chain: halving round 1 (36.375 s) saves 18.1875 s of the 76.510 s task."""
    r = analyze_trajectory(CODE_FIX, speedup={"round1": 2})
    assert r.data == analyze_trajectory(CODE_FIX, speedup=["round1=2"]).data
    assert r.data == _json(cli, "agent", CODE_FIX, "--speedup", "round1=2")
    sp = r.value["analysis"].speedup
    assert sp.after.makespan_s == pytest.approx(76.510 - 36.375 / 2)
    assert sp.amdahl == pytest.approx(sp.speedup)  # equal on a serial chain


def test_logged_set_cost_per_success(cli, tmp_path):
    failed = tmp_path / "failed.yaml"
    failed.write_text(yaml.safe_dump(FAILED))
    r = analyze_trajectory([str(failed), CODE_FIX])
    assert r.data == _json(cli, "agent", str(failed), CODE_FIX)
    outcome = r.value["outcome"]
    # $2 per GPU-hour: 36 s failed + 76.294 s of model calls that passed, over 1 success
    assert outcome.cost.per_success == pytest.approx((36 + 76.294) * 2 / 3600)
    assert outcome.failures == (("tests fail", 1),)
    two = analyze_trajectory([FAILED, FAILED])
    assert two.value["outcome"].cost.per_success is None
    assert two.data["inputs"]["files"] == ["trajectory 1", "trajectory 2"]
    assert not two.can_plot


def test_computed_durations_and_plot(cli, tmp_path):
    r = analyze_trajectory(BRANCHES, gpu="h100-sxm")
    assert r.data == _json(cli, "agent", BRANCHES, "--gpu", "h100-sxm")
    assert r.data["assumptions"] == {"mfu": 1, "mbu": 1, "weights": "bf16", "kv_dtype": "bf16"}
    assert r.plot(tmp_path / "t.png").stat().st_size > 0


def test_agent_errors(tmp_path):
    with pytest.raises(NapkinError, match=r"^mfu: only used with --gpu"):
        analyze_trajectory(DAG, mfu=0.5)
    with pytest.raises(NapkinError, match=r"^speedup:"):
        analyze_trajectory(DAG, speedup={"round1": 0})
    with pytest.raises(NapkinError, match=r"^trajectory:"):
        analyze_trajectory([])
    with pytest.raises(NapkinError, match=r"^trajectory:"):
        analyze_trajectory({"steps": []})
    with pytest.raises(NapkinError, match=r"^plot:"):
        analyze_trajectory([FAILED, FAILED]).plot(tmp_path / "m.png")


def test_context_rounds(cli):
    r = context_rounds("qwen3-8b", rounds=[(700, 0), (1443, 1392)])
    assert r.data == _json(cli, "context", "rounds", "qwen3-8b", "--rounds", "700:0,1443:1392")
    first, second = r.value
    assert first.flops_cached == first.flops_uncached  # nothing cached: the same prefill
    assert second.round.new_tokens == 1443 - 1392
    assert second.flops_cached < second.flops_uncached
    assert r.data["new_tokens"] == 700 + 51
    with pytest.raises(NapkinError, match=r"^cached:"):
        context_rounds("qwen3-8b", rounds=[(10, 20)])


def test_context_edit(cli):
    r = context_edit(context=2000, edits=["append:100", "replace:501:1:1"])
    assert r.data == _json(cli, "context", "edit", "--context", "2000", "--edit", "append:100",
                           "--edit", "replace:501:1:1")
    same = context_edit(context=2000, edits=[Edit("append", 100), Edit("replace", 1, 501, 1)])
    assert same.data == r.data
    append, replace = r.value
    # appending keeps all 2,000 tokens; replacing token 501 keeps the 500 before it
    assert (append.reusable_tokens, append.prefill_tokens) == (2000, 100)
    assert (replace.reusable_tokens, replace.prefill_tokens) == (500, 2000 - 500)
    with pytest.raises(NapkinError, match=r"^edit:"):
        context_edit(context=100, edits=["move:1"])


def test_context_growth(cli):
    r = context_growth(system=1000, step=300, steps=10, usd_per_m_input=1,
                       usd_per_m_cached=0.1, model="qwen3-8b")
    assert r.data == _json(cli, "context", "growth", "--system", "1000", "--step", "300",
                           "--steps", "10", "--usd-per-m-input", "1", "--usd-per-m-cached",
                           "0.1", "--model", "qwen3-8b")
    v = r.value
    assert v["input_tokens"] == 10 * 1000 + 300 * 10 * 9 // 2  # n·S + d·n(n−1)/2
    assert v["prefill_tokens_with_cache"] == 1000 + 300 * 9  # S + d·(n−1)
    assert v["usd_with_cache"] == pytest.approx((3700 + 19_800 * 0.1) / 1e6)
    assert v["flops_cached"] < v["flops_uncached"]
    with pytest.raises(NapkinError, match=r"^system:"):
        context_growth(system=0, step=1, steps=2)
    with pytest.raises(NapkinError, match=r"^price:"):
        context_growth(system=1, step=1, steps=2, usd_per_m_cached=-1)
