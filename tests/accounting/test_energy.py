"""Energy per million tokens, by hand from the catalog's board power (H100 SXM: 700 W,
NVIDIA H100 datasheet "up to 700 W")."""

import pytest

import napkin
from napkin.accounting.energy import PowerModel, energy
from napkin.catalog import load_accelerator
from napkin.errors import NapkinError


def test_catalog_power_is_the_datasheet_tdp():
    assert load_accelerator("h100-sxm").tdp_watts == 700
    assert load_accelerator("b200").tdp_watts == 1000
    assert load_accelerator("tpu-v5e").tdp_watts is None


def test_energy_by_phase_and_idle():
    """2 GPUs over 10 s, each 1 s prefill at 700 W, 6 s decode at 0.43 · 700 = 301 W, 3 s idle
    at 70 W: 2 · (700 + 1,806 + 210) = 5,432 J; PUE 1.2 → 6,518.4 J; 1,000 output tokens →
    6,518.4/3.6e6 · 1e3 = 1.8107 kWh per million; at $0.12/kWh $0.21728 per million."""
    e = energy(load_accelerator("h100-sxm"), 2, 1.0, 6.0, 10.0, 1000,
               PowerModel(pue=1.2, usd_per_kwh=0.12))
    assert e.joules == pytest.approx(6518.4)
    assert e.mean_power_w == pytest.approx(651.84)
    assert e.kwh_per_m_output_tokens == pytest.approx(6518.4 / 3.6e6 * 1e3)
    assert e.usd_per_m_output_tokens == pytest.approx(6518.4 / 3.6e6 * 1e3 * 0.12)
    assert e.usd_per_hour == pytest.approx(0.65184 * 0.12)


def test_call_energy_per_million_tokens_by_hand():
    """Llama-3.1-8B, 2,000 in / 300 out on one H100 SXM at the roofline: E = 700 W ·
    (TTFT · 1.0 + decode seconds · 0.43); per million output tokens E/300 · 1e6 / 3.6e6 kWh."""
    r = napkin.call("llama-3.1-8b", new=2000, gen=300, gpu="h100-sxm", usd_per_kwh=0.1)
    chain, e = r.value["chain"], r.value["energy"]
    joules = 700 * (chain.ttft_s * 1.0 + chain.decode_s * 0.43)
    assert e.joules == pytest.approx(joules)
    assert r.data["energy"]["kwh_per_m_output_tokens"] == pytest.approx(
        joules / 300 * 1e6 / 3.6e6)
    assert r.data["energy"]["usd_per_m_output_tokens"] == pytest.approx(
        joules / 300 * 1e6 / 3.6e6 * 0.1)
    # the decode of 299 steps reads ~15 GB each at 3.35 TB/s · 0.8: about 1.4 s at 301 W
    assert 0.39 < r.data["energy"]["kwh_per_m_output_tokens"] < 0.41


def test_bad_power_inputs_name_the_field():
    with pytest.raises(NapkinError, match=r"^decode-power-frac: must be a share"):
        napkin.call("llama-3.1-8b", new=10, gpu="h100-sxm", decode_power_frac=-0.1)
    with pytest.raises(NapkinError, match="pue"):
        napkin.call("llama-3.1-8b", new=10, gpu="h100-sxm", pue=0.5)
    with pytest.raises(NapkinError, match="usd-per-kwh"):
        napkin.call("llama-3.1-8b", new=10, usd_per_kwh=0.1)
