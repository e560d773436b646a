"""The public API of ``napkin pretrain | scaling fit | scaling optimum | lifecycle``: the CLI's
JSON, question-bank task 4 and hand algebra through the typed values, errors naming the
field."""

import csv
import json
import math

import pytest

from napkin.api.scaling import fit_scaling, lifecycle, pretrain, scaling_optimum
from napkin.errors import NapkinError
from napkin.scaling.law import ScalingLaw

# A hand-chosen law and a 4 × 4 grid of noise-free runs on it: the fit must return it.
TRUE = ScalingLaw(E=1.8, A=520.0, B=1800.0, alpha=0.36, beta=0.31)


@pytest.fixture
def runs_csv(tmp_path):
    path = tmp_path / "runs.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["params", "tokens", "loss"])
        for n in (5e7, 2e8, 8e8, 3.2e9):
            for d in (1e9, 4e9, 1.6e10, 6.4e10):
                w.writerow([repr(n), repr(d), repr(float(TRUE.loss(n, d)))])
    return path


def test_pretrain_task_4(cli):
    """4 × RTX 4080 (97.5 TFLOP/s dense BF16) at MFU 0.4 for 30 days: C = 4.04e20 FLOPs; the
    rule's N = √(C/120); state 16 B/param ≈ 29 GB replicated, ≈ 7 GB over 4 cards (task 4)."""
    r = pretrain(gpu="rtx-4080", count=4, days=30, alt=[0.5e9])
    _, out, _ = cli("pretrain", "--gpu", "rtx-4080", "--count", "4", "--days", "30", "--alt",
                    "0.5e9", "--format", "json")
    assert r.data == json.loads(out)
    plan = r.value
    assert plan.budget_flops == pytest.approx(4 * 97.5e12 * 0.4 * 30 * 86_400)
    rule, _, alt = plan.options
    assert rule.params == pytest.approx(math.sqrt(plan.budget_flops / 120))
    assert rule.tokens == pytest.approx(20 * rule.params)
    assert round(rule.loss, 2) == 2.43 and round(alt.loss, 2) == 2.45
    assert round(rule.ddp_state_bytes / 1e9) == 29 and not rule.ddp_fits
    assert round(rule.fsdp_state_bytes / 1e9) == 7 and rule.fsdp_fits


def test_fit_recovers_the_law_writes_it_and_plots(cli, runs_csv, tmp_path):
    law_file = tmp_path / "law.json"
    r = fit_scaling(runs_csv, out=law_file)
    _, out, _ = cli("scaling", "fit", str(runs_csv), "--out", str(law_file), "--format", "json")
    assert r.data == json.loads(out)
    got = r.value.law
    assert pytest.approx((TRUE.E, TRUE.A, TRUE.B), rel=1e-6) == (got.E, got.A, got.B)
    assert pytest.approx((TRUE.alpha, TRUE.beta), rel=1e-6) == (got.alpha, got.beta)
    assert json.loads(law_file.read_text())["data_range"]["points"] == 16
    png = r.plot(tmp_path / "fit.png")
    assert png.stat().st_size > 10_000
    held = fit_scaling(runs_csv, holdout_min_n=3e9)
    # the four 3.2e9-parameter runs are held out and predicted from the other twelve
    assert len(held.value.test) == 4 and held.value.fit.num_points == 12
    assert held.value.rmse == pytest.approx(0, abs=1e-4)


def test_optimum_by_hand_and_with_a_law_object(cli):
    """A = 4B, α = β = ½: N_opt = (αA/(βB))^(1/(α+β)) · (C/6)^½ = 4·(C/6)^½; C = 6e18 →
    N = 4e9, D = C/(6N) = 2.5e8; the rule N = √(C/120)."""
    r = scaling_optimum(flops=6e18, law="1.5,400,100,0.5,0.5")
    _, out, _ = cli("scaling", "optimum", "--flops", "6e18", "--law", "1.5,400,100,0.5,0.5",
                    "--format", "json")
    assert r.data == json.loads(out)
    assert r.value["params"] == pytest.approx(4e9) and r.value["tokens"] == pytest.approx(2.5e8)
    assert r.value["rule_params"] == pytest.approx(math.sqrt(6e18 / 120))
    assert r.value["exponents"].n_exponent == pytest.approx(0.5)
    typed = scaling_optimum(flops=6e18, law=ScalingLaw(E=1.5, A=400, B=100, alpha=0.5,
                                                       beta=0.5))
    assert typed.value["params"] == pytest.approx(4e9)
    assert typed.data["assumptions"]["law"] == "1.5,400.0,100.0,0.5,0.5"


def test_lifecycle_call_cost_mix_and_plot(cli, tmp_path):
    """A call costs 2N·[P + (G − 1)] FLOPs at 395.76 TFLOP per GPU-second (H100 989.4 × 0.4);
    over a mix, the share-weighted mean (shares 7 : 3 normalized)."""
    r = lifecycle(target_loss=2.5, sizes=[1e9, 4e9])
    _, out, _ = cli("lifecycle", "--target-loss", "2.5", "--sizes", "1e9,4e9", "--format",
                    "json")
    assert r.data == json.loads(out)
    small, _ = r.value["sizes"]
    assert small.call_gpu_s == pytest.approx(2 * 1e9 * 639 / 395.76e12)
    assert r.value["break_even_calls"] == [None]  # 1e9 is also cheaper to train
    assert r.plot(tmp_path / "life.png").exists()
    m = lifecycle(target_loss=2.5, sizes=[1e9, 4e9], mix=[(512, 128, 7), (4096, 512, 3)])
    _, out, _ = cli("lifecycle", "--target-loss", "2.5", "--sizes", "1e9,4e9", "--mix",
                    "512:128:7,4096:512:3", "--format", "json")
    assert m.data == json.loads(out)
    for s in m.value["sizes"]:
        assert s.call_flops == pytest.approx(0.7 * 2 * s.params * 639 + 0.3 * 2 * s.params * 4607)


def test_lifecycle_break_even():
    """At loss 2.3 under Chinchilla's law the 1e9 model needs ~2.8e11 tokens, more training
    than 4e9 on ~6.3e10: it pays back after Q* = ΔC₀/Δc calls (GPU-seconds)."""
    r = lifecycle(target_loss=2.3, sizes=[1e9, 4e9])
    small, large = r.value["sizes"]
    law = ScalingLaw(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)  # Hoffmann Approach 3
    d_small = (law.B / (2.3 - law.E - law.A / 1e9**law.alpha)) ** (1 / law.beta)
    assert small.tokens == pytest.approx(d_small, rel=1e-3)
    extra_s = (6 * 1e9 * small.tokens - 6 * 4e9 * large.tokens) / 395.76e12
    saving_s = 2 * 3e9 * 639 / 395.76e12
    (q,) = r.value["break_even_calls"]
    assert extra_s > 0 and q == pytest.approx(extra_s / saving_s, rel=1e-6)


@pytest.mark.parametrize(("call", "field"), [
    (lambda: pretrain(law="kaplan"), "law"),
    (lambda: pretrain(count=-1), "count"),
    (lambda: pretrain(alt=[5e-324]), "alt"),
    (lambda: scaling_optimum(flops=1e41), "flops"),
    (lambda: fit_scaling("missing.csv"), "observations"),
    (lambda: fit_scaling("missing.csv", grid="fine"), "grid"),
    (lambda: lifecycle(target_loss=1.0, sizes=[1e9]), "target-loss"),
    (lambda: lifecycle(target_loss=2.5, sizes=[]), "sizes"),
    (lambda: lifecycle(target_loss=2.5, sizes=[1e9], mix=[(0, 128, 1.0)]), "mix"),
    (lambda: lifecycle(target_loss=2.5, sizes=[1e9], mix=[(512, 128, math.nan)]), "mix"),
])
def test_errors_name_the_field(call, field):
    with pytest.raises(NapkinError, match=f"^{field}:"):
        call()
