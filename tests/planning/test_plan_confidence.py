"""The plan ranks by cost among configurations sure to meet the SLO: a knife-edge case by hand.

A toy profile times every step at exactly 100 ms (its only coefficient, ``step``), with a TTFT
band (0.8, 1.25) — log-normal, μ = 0, σ = ln 1.25 / z₀.₉ = 0.174120 — and an exact TPOT.
Requests come in simultaneous pairs every 3 s (20 pairs; 16-token prompts, 10-token answers),
one sequence per engine:

- one replica: the first of a pair prefills at once (TTFT 0.1 s) and holds the engine for
  10 steps; the second is scheduled at 1.0 s and prefills by 1.1 s (TTFT 1.1 s). Under
  TTFT ≤ 1.2 s every request meets it at the predicted times, but 36 of 40 (share 0.9) must:
  the 36th largest headroom is 1.2/1.1, so P(SLO met) = Φ(ln(1.2/1.1)/σ) = 0.6914 —
  knife-edge under confidence 0.9;
- two replicas: the pair splits, every TTFT is 0.1 s, headroom 12, P ≈ 1: the winner, at twice
  the price.
"""

import math
from pathlib import Path
from statistics import NormalDist

import pytest

from napkin.calibration.basis import StepModel
from napkin.calibration.profile import Band, Domain, Profile
from napkin.planning.search import run_plan
from napkin.planning.spec import PlanFile
from napkin.report.plan_views import evaluation_record, plan_doc

P_ONE = NormalDist().cdf(math.log(1.2 / 1.1) / (math.log(1.25) / NormalDist().inv_cdf(0.9)))


def _plan(tmp_path: Path, confidence: float) -> PlanFile:
    profile = Profile("toy", "vllm", StepModel.of({"step": 0.1}), Domain(gpus=("b200",)),
                      {"ttft": Band(0.8, 1.25, 0.1, 10), "tpot": Band(1.0, 1.0, 0.0, 10)})
    profile.save(tmp_path / "toy.yaml")
    rows = "".join(f"{3 * i},16,10\n{3 * i},16,10\n" for i in range(20))
    (tmp_path / "pairs.csv").write_text("arrival,input,output\n" + rows)
    return PlanFile.model_validate({
        "name": "pairs", "model": "qwen3-0.6b", "calibration": str(tmp_path / "toy.yaml"),
        "workload": {"seed": 0, "classes": {"a": {"input_tokens": 16, "output_tokens": 10}},
                     "arrivals": {"kind": "trace", "format": "csv",
                                  "path": str(tmp_path / "pairs.csv"),
                                  "arrival_column": "arrival", "input_column": "input",
                                  "output_column": "output"}},
        "slo": {"ttft_s": 1.2, "tpot_s": 1.0, "share": 0.9, "confidence": confidence},
        "search": {"gpus": ["h100-sxm"], "tensor_parallel": [1], "replicas": [1, 2, 3],
                   "max_num_seqs": [1]},
        "prices": {"h100-sxm": 2.0}, "seeds": 2})


def test_knife_edge_is_not_the_winner(tmp_path):
    result = run_plan(_plan(tmp_path, 0.9), tmp_path, jobs=1)
    one, two, three = result.evaluations
    assert one.status == "knife-edge"
    assert one.slo_met_frac == 1.0 and one.p95_ttft_s == pytest.approx(1.1, abs=1e-6)
    assert one.p_slo_met == pytest.approx(P_ONE, abs=1e-6)  # 0.6914
    assert two.status == "feasible" and two.p_slo_met == pytest.approx(1.0, abs=1e-9)
    assert two.p95_ttft_s == pytest.approx(0.1, abs=1e-6)
    assert three.status == "pruned" and three.reason.startswith("dominated")
    assert result.cheapest is two and result.knife_edge == [one]
    assert (one.usd_per_hour, two.usd_per_hour) == (2.0, 4.0)
    # every candidate carries its profile, bands and the ways it lies outside the profile
    record = evaluation_record(one)
    assert record["profile"] == "toy" and record["p_slo_met"] == one.p_slo_met
    assert (record["ttft_band_low"], record["ttft_band_high"]) == (0.8, 1.25)
    assert "GPU h100-sxm (fitted on b200" in record["warnings"]
    doc = plan_doc(result)
    titles = [s.title for s in doc.sections]
    assert any(t.startswith("knife-edge") for t in titles)
    cheapest = doc.sections[0]
    assert cheapest.rows[0][cheapest.columns.index("P(SLO met)")] == "1.00"
    assert any("cheaper configuration(s) meet the SLO at the predicted times" in n
               for n in cheapest.notes)
    assert any(n.startswith("1: outside profile 'toy': GPU h100-sxm") for n in cheapest.notes)
    assert doc.data["knife_edge"] == [0]


def test_a_lower_confidence_takes_the_knife_edge_one(tmp_path):
    result = run_plan(_plan(tmp_path, 0.6), tmp_path, jobs=1)
    one = result.evaluations[0]
    assert one.status == "feasible" and result.cheapest is one
    assert result.evaluations[1].status == "pruned"  # dominated: one replica is sure enough


def test_the_winner_s_energy_by_hand(tmp_path):
    """Two replicas on H100 SXM (700 W): each runs 20 requests of 10 steps (1 s) and is idle
    the rest of the 58 s makespan (first arrival 0 s, last finish 57 + 1 s). The busy seconds
    split by the mean request's cheapest work: prefill 16 tokens at 0.1 s per 8,192-token
    budget, decode 9 tokens at 0.1 s each, so prefill share s = (16·0.1/8192)/(that + 0.9).
    E per seed = 2 · 700 · (20·(s·1.0 + (1 − s)·0.43) + 38·0.1) J for 400 output tokens."""
    two = run_plan(_plan(tmp_path, 0.9), tmp_path, jobs=1).evaluations[1]
    pf = 16 * 0.1 / 8192
    s = pf / (pf + 0.9)
    joules = 2 * 700 * (20 * (s * 1.0 + (1 - s) * 0.43) + 38 * 0.1)
    assert two.energy is not None
    assert two.energy.joules == pytest.approx(2 * joules, rel=1e-6)  # two seeds
    assert two.energy.output_tokens == 800
    record = evaluation_record(two)
    assert record["energy_kwh_per_m_output_tokens"] == pytest.approx(
        joules / 400 * 1e6 / 3.6e6, rel=1e-6)
    assert record["energy_usd_per_hour"] is None  # no price given
