"""The public API of ``napkin cost``: the CLI's JSON, typed values, the chapters' worked
numbers (§3.2.2, §3.2.4, §3.6.3)."""

import json

import pytest

from napkin.api.cost import cost_breakeven, cost_escalation, cost_price, cost_success
from napkin.errors import NapkinError


def test_cost_success_matches_cli_and_counts_every_component(cli):
    r = cost_success(cost=[1, 2], success=[0.5, 0.8], verification=[0, 0.2], tools=[0, 0.1],
                     environment=[0, 0.2])
    _, out, _ = cli("cost", "success", "--cost", "1,2", "--success", "0.5,0.8",
                    "--verification", "0,0.2", "--tools", "0,0.1", "--environment", "0,0.2",
                    "--format", "json")
    assert r.data == json.loads(out)
    # c = 2 + 0.2 + 0.1 + 0.2 = 2.5 per attempt; c/p = 1/0.5 and 2.5/0.8
    assert r.value["cost_per_attempt"] == pytest.approx([1, 2.5])
    assert r.value["cost_per_success"] == pytest.approx([2, 2.5 / 0.8])
    # Exercise 3-3: 1.5 per attempt against 2 per success needs p ≥ 1.5/2 = 0.75
    m = cost_success(cost=[1, 1.5], success=[0.5, 0.9])
    assert m.value["min_success_rate"] == pytest.approx([0.5, 0.75])
    assert m.data["cost_per_success"] == pytest.approx([2, 1.5 / 0.9])


def test_cost_price_chapter_example(cli):
    # §3.2.2: price ÷10, tokens ×20, success 50 % → 80 %: 0.1 · 20 · 0.5/0.8 = 1.25
    r = cost_price(price_ratio=0.1, tokens_ratio=20, success_old=0.5, success_new=0.8)
    assert r.value == pytest.approx(1.25)
    _, out, _ = cli("cost", "price", "--price-ratio", "0.1", "--tokens-ratio", "20",
                    "--success-old", "0.5", "--success-new", "0.8", "--format", "json")
    assert r.data == json.loads(out)


def test_cost_escalation_by_hand(cli):
    r = cost_escalation(decision_cost=1e-4, llm_cost=1e-2, share=[0.01, 0.05])
    _, out, _ = cli("cost", "escalation", "--decision-cost", "1e-4", "--llm-cost", "1e-2",
                    "--format", "json")
    assert r.data == json.loads(out)
    # c_dec + e·c_LLM: 1e-4 + 0.01·1e-2 = 2e-4, 1e-4 + 0.05·1e-2 = 6e-4; gain = that / c_dec
    assert r.value["mean_usd_per_request"] == pytest.approx([2e-4, 6e-4])
    assert r.value["min_success_gain"] == pytest.approx([2.0, 6.0])
    assert r.value["break_even_share"] == pytest.approx(1e-4 / 1e-2)


def test_cost_breakeven_chapter_example(cli):
    # §3.6.3: 100k H100-hours (3.6e8 GPU-s) extra at 0.72 GPU-s saved per task → Q* = 5e8
    r = cost_breakeven(extra_upfront=3.6e8, saving=0.72, tasks=[1e8, 1e9], unit="gpu-s")
    assert r.value["break_even_tasks"] == pytest.approx(5e8)
    assert r.value["differences_gpu_s"] == pytest.approx([3.6e8 - 0.72e8, 3.6e8 - 7.2e8])
    _, out, _ = cli("cost", "breakeven", "--extra-upfront", "3.6e8", "--saving", "0.72",
                    "--tasks", "1e8,1e9", "--unit", "gpu-s", "--format", "json")
    assert r.data == json.loads(out)
    assert r.to_markdown().startswith("# Lifecycle break-even")


def test_errors_name_the_field():
    with pytest.raises(NapkinError, match=r"^success: give one rate per cost"):
        cost_success(cost=[1, 2], success=[0.5])
    with pytest.raises(NapkinError, match=r"^tools: give one value per method"):
        cost_success(cost=[1, 2], success=[0.5, 0.8], tools=[1])
    with pytest.raises(NapkinError, match=r"^price-ratio:"):
        cost_price(price_ratio=-1, tokens_ratio=1, success_old=0.5, success_new=0.6)
    with pytest.raises(NapkinError, match=r"^escalation share:"):
        cost_escalation(decision_cost=1, llm_cost=2, share=[1.5])
    with pytest.raises(NapkinError, match=r"^saving per task:"):
        cost_breakeven(extra_upfront=1, saving=0)
    with pytest.raises(NapkinError, match=r"^unit:"):
        cost_breakeven(extra_upfront=1, saving=1, unit="eur")
