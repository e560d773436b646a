"""The CED path in a decision forward, the price ÷ compute ratio, the tariff split and the memory
fit of ``napkin decision`` (chapter §3.2.4)."""

import json
import math

import pytest

from napkin.accounting.batch import Batch, Segment
from napkin.api.specs import deployment
from napkin.catalog import catalog_config
from napkin.errors import NapkinError
from napkin.inference.ced import EXPERT_WORK, CedPath, ced_prefill
from napkin.inference.decision import (
    decision_vs_generation,
    memory_fit,
    price_over_compute,
    tariff_split,
)
from napkin.specs.hf_config import from_hf_config


@pytest.fixture(scope="module")
def qwen():
    return deployment("qwen3-8b", "h100-sxm", mfu=0.4, mbu=0.5)


@pytest.fixture(scope="module")
def v41_flash():
    """DeepSeek V4.1 Flash as the chapter describes it (line 210: "архитектуру CED с 20 слоями
    причинного кодировщика и 20 слоями декодировщика"): the shipped V4-Flash config.json with
    40 main layers instead of 43 (its compress ratios cut to match); not in the catalog."""
    cfg = catalog_config("deepseek-v4-flash")
    cfg = {**cfg, "num_hidden_layers": 40,
           "compress_ratios": [*cfg["compress_ratios"][:40], cfg["compress_ratios"][-1]]}
    return deployment(from_hf_config(cfg, "v4.1-flash-40"), "h100-sxm", mfu=0.4, mbu=0.5)


def test_ced_prefill_counts_expert_passes_by_hand(qwen):
    # Qwen3-8B: h = 4096, FFN width f = 12288, 36 layers; one layer's FFN on one token is
    # 3 matmuls · 2·h·f = 301,989,888 FLOPs. CED with E = 20, D = 16, replay 128 at P = 1929:
    # passes 20·1929 + 16·128 = 40,628 instead of 36·1929 = 69,444.
    per_pass = 3 * 2 * 4096 * 12288
    cost = ced_prefill(qwen, 1929, 8, encoder_layers=20, replay_tokens=128)
    ffn = sum(op.flops for op in cost.ops if op.kind in EXPERT_WORK)
    assert ffn == 40_628 * per_pass
    full = qwen.cost(Batch((Segment(0, 1929, 8),)))
    assert sum(op.flops for op in full.ops if op.kind in EXPERT_WORK) == 69_444 * per_pass
    # every other op (attention, projections, LM head at 8 positions) is unchanged
    rest = [op for op in full.ops if op.kind not in EXPERT_WORK]
    assert [op for op in cost.ops if op.kind not in EXPERT_WORK] == rest
    assert cost.flops == pytest.approx(full.flops - (69_444 - 40_628) * per_pass)


def test_v41_flash_ced_forward_is_a_quarter_more_than_qwen3_8b(qwen, v41_flash):
    # §3.2.4: "При замене на DeepSeek V4.1 Flash и использовании пути CED объём вычислений
    # увеличится лишь примерно на четверть" (against Qwen3-8B's ≈ 28 TFLOPs)
    dense = decision_vs_generation(qwen, 1929, 8, 64)
    ced = decision_vs_generation(v41_flash, 1929, 8, 64, ced=CedPath(20, 128))
    ratio = ced.decision.flops / dense.decision.flops
    assert 1.2 <= ratio <= 1.3
    # the plain V4.1 path through all 40 layers is far more: CED saves the experts' passes
    plain = decision_vs_generation(v41_flash, 1929, 8, 64)
    assert plain.decision.flops / dense.decision.flops > 1.7
    # "вычислительная стоимость обработки миллиона входных токенов плотной моделью 8B или V4.1
    # Flash составит около 0,02–0,025 доллара, а цена Jev превышает её в 1,7–2 раза"
    assert dense.compute_usd_per_million_input_tokens == pytest.approx(0.02, rel=0.05)
    assert ced.compute_usd_per_million_input_tokens == pytest.approx(0.025, rel=0.05)
    assert price_over_compute(0.042, dense.compute_usd_per_million_input_tokens) == \
        pytest.approx(2.0, rel=0.05)
    assert price_over_compute(0.042, ced.compute_usd_per_million_input_tokens) == \
        pytest.approx(1.7, rel=0.05)


def test_compute_cost_by_hand(qwen):
    c = decision_vs_generation(qwen, 1929, 8, 64)
    # FLOPs / (989.4e12 · 0.4) seconds at $2/3600 per second, per 1929 tokens, × 1e6
    seconds = c.decision.flops / (989.4e12 * 0.4)
    assert c.compute_usd_per_million_input_tokens == pytest.approx(
        seconds * 2 / 3600 * 1e6 / 1929)


def test_tariff_split_of_the_demo():
    # §3.2.4: Jev $0.000081 vs GPT-5.6 Terra $0.013880 ("стоимость Jev составила лишь 1/171");
    # skipping 64 tokens saves 1.28× GPU time, so 171.36 / 1.28 = 133.9× is the rest
    t = tariff_split(0.000081, 0.013880, 1.28)
    assert round(t.bill_ratio) == 171
    assert t.rest_ratio == pytest.approx(0.013880 / 0.000081 / 1.28)
    with pytest.raises(NapkinError, match=r"^llm-usd:"):
        tariff_split(0.000081, math.inf, 1.28)


def test_memory_fit_of_v4_flash_on_one_h100():
    # 284B parameters in BF16 ≈ 568 GB (the "568 GB of weights on one 80 GB GPU"):
    # ⌈568.7 / 80⌉ = 8 GPUs
    dep = deployment("deepseek-v4-flash", "h100-sxm")
    fit = memory_fit(dep, 1929 + 63)
    assert fit.weights_bytes == pytest.approx(2 * dep.model.params)
    assert round(fit.weights_bytes / 1e9) == 569
    assert not fit.fits and fit.devices_needed == math.ceil(fit.needed_bytes / 80e9) == 8
    assert memory_fit(deployment("qwen3-8b", "h100-sxm"), 1992).fits


def test_ced_bad_inputs_name_the_field(qwen):
    with pytest.raises(NapkinError, match=r"^encoder-layers:"):
        ced_prefill(qwen, 1929, 8, encoder_layers=36)
    with pytest.raises(NapkinError, match=r"^replay:"):
        ced_prefill(qwen, 1929, 8, encoder_layers=18, replay_tokens=0)
    with pytest.raises(NapkinError, match=r"^questions:"):
        ced_prefill(qwen, 1929, 200, encoder_layers=18, replay_tokens=128)


def test_decision_cli_ced_price_and_tariff(cli):
    code, out, _ = cli("decision", "qwen3-8b", "--request-usd", "0.000081",
                       "--usd-per-million-input", "0.042", "--llm-usd", "0.013880", "--ced",
                       "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["inputs"]["encoder_layers"] == 18  # half of Qwen3-8B's 36 layers
    assert doc["ced"]["ced"] == 18 * 1929 + 18 * 128
    assert doc["price_over_compute"] == pytest.approx(
        0.042 / doc["compute_usd_per_million_input_tokens"])
    assert doc["tariff"]["bill_ratio"] == pytest.approx(0.013880 / 0.000081)
    assert doc["tariff"]["rest_ratio"] == pytest.approx(
        doc["tariff"]["bill_ratio"] / doc["gpu_time_ratio"])
    assert doc["fit"]["fits"] is True
