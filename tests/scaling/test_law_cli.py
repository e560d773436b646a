"""The batched Approach-3 fit against known optima, and laws on the command line:
``scaling fit --out``, ``--law PATH.json | E,A,B,alpha,beta``, bad ``--law`` values, and the
warning for predictions outside a fitted law's data range. Expected values are hand-chosen laws,
hand algebra, or the pre-batching implementation's optimum (named where used)."""

import csv
import json
import math

import numpy as np
import pytest

from napkin.catalog import scaling_data
from napkin.scaling.law import (
    COARSE_GRID,
    HOFFMANN_GRID,
    Observation,
    ScalingLaw,
    fit,
    read_observations,
)
from napkin.scaling.lawfile import DataRange, NamedLaw, parse_numbers, range_warnings

# A hand-chosen law (not a preset) and a 4 × 4 grid of runs on it.
TRUE = ScalingLaw(E=1.8, A=520.0, B=1800.0, alpha=0.36, beta=0.31)
GRID_N = (5e7, 2e8, 8e8, 3.2e9)
GRID_D = (1e9, 4e9, 1.6e10, 6.4e10)


def _runs(law: ScalingLaw) -> list[Observation]:
    return [Observation(n, d, float(law.loss(n, d))) for n in GRID_N for d in GRID_D]


@pytest.fixture
def runs_csv(tmp_path):
    path = tmp_path / "runs.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["params", "tokens", "loss"])
        for o in _runs(TRUE):
            w.writerow([repr(o.N), repr(o.D), repr(o.loss)])
    return path


@pytest.mark.parametrize("grid", [HOFFMANN_GRID, COARSE_GRID], ids=["full", "coarse"])
def test_fit_recovers_a_noise_free_law(grid):
    """Points generated from TRUE: the optimum is TRUE itself (objective 0)."""
    result = fit(_runs(TRUE), grid=grid)
    got = result.law
    assert result.success
    assert result.objective < 1e-20
    assert pytest.approx((TRUE.E, TRUE.A, TRUE.B), rel=1e-6) == (got.E, got.A, got.B)
    assert (got.alpha, got.beta) == pytest.approx((TRUE.alpha, TRUE.beta), rel=1e-6)


def test_fit_with_e_fixed_recovers_the_other_four():
    result = fit(_runs(TRUE), grid=COARSE_GRID, fixed_E=TRUE.E)
    got = result.law
    assert got.E == TRUE.E and result.fixed_E == TRUE.E
    assert (got.A, got.B, got.alpha, got.beta) == pytest.approx(
        (TRUE.A, TRUE.B, TRUE.alpha, TRUE.beta), rel=1e-6)


def test_fit_finds_an_optimum_on_the_boundary_e_zero():
    """Runs from A/N^α + B/D^β alone (E = 0): the infimum lies at e → −∞, which a descent in
    e only approaches; the fit returns E = 0 and the other four coefficients."""
    no_floor = ScalingLaw(E=0.0, A=60.0, B=900.0, alpha=0.2, beta=0.25)
    result = fit(_runs(no_floor), grid=COARSE_GRID)
    got = result.law
    assert pytest.approx(0.0, abs=1e-12) == got.E
    assert (got.A, got.B, got.alpha, got.beta) == pytest.approx((60.0, 900.0, 0.2, 0.25),
                                                                rel=1e-6)


@pytest.mark.slow
def test_full_grid_equals_the_per_start_lbfgsb_optimum_on_chinchilla_figure_4():
    """Epoch's 240 points of Hoffmann's Figure 4. The pre-batching fit (one scipy L-BFGS-B run
    per start of all 4,500, ftol 1e-15, gtol 1e-10; 190-980 s) ended at (a, b, e, α, β) below,
    objective 0.0010182740178006. The batched fit must predict every point to 1e-6."""
    a, b, e = 6.1692463696999535, 7.6701567340601065, 0.5973068145982993
    reference = ScalingLaw(E=math.exp(e), A=math.exp(a), B=math.exp(b),
                           alpha=0.34731049863329916, beta=0.3671724326921273)
    runs = read_observations(scaling_data("chinchilla_fig4_N_D_loss.csv"), "model_size_N",
                             "training_tokens_D", "loss")
    fifth_highest = sorted(o.loss for o in runs)[-5]
    kept = [o for o in runs if o.loss < fifth_highest]
    result = fit(kept, grid=HOFFMANN_GRID)
    n, d = np.array([o.N for o in kept]), np.array([o.D for o in kept])
    assert result.objective == pytest.approx(0.0010182740178006, rel=1e-9)
    assert np.max(np.abs(result.law.loss(n, d) / reference.loss(n, d) - 1)) < 1e-6


def test_out_round_trips_through_law_file(cli, runs_csv, tmp_path):
    out = tmp_path / "law.json"
    code, _, _ = cli("scaling", "fit", str(runs_csv), "--out", str(out), "--format", "json")
    assert code == 0
    doc = json.loads(out.read_text())
    assert (doc["E"], doc["A"], doc["B"]) == pytest.approx((TRUE.E, TRUE.A, TRUE.B), rel=1e-6)
    assert (doc["alpha"], doc["beta"]) == pytest.approx((TRUE.alpha, TRUE.beta), rel=1e-6)
    assert doc["data_range"] == {"n_min": 5e7, "n_max": 3.2e9, "d_min": 1e9, "d_max": 6.4e10,
                                 "points": 16, "source": str(runs_csv)}
    # the file and the same five numbers typed out give the same optimum, C = 1e20 FLOPs
    code, via_file, _ = cli("scaling", "optimum", "--flops", "1e20", "--law", str(out),
                            "--format", "json")
    assert code == 0
    numbers = ",".join(repr(doc[k]) for k in ("E", "A", "B", "alpha", "beta"))
    code, via_numbers, _ = cli("scaling", "optimum", "--flops", "1e20", "--law", numbers,
                               "--format", "json")
    assert code == 0
    assert json.loads(via_file)["params"] == pytest.approx(json.loads(via_numbers)["params"])


def test_law_as_five_numbers_by_hand(cli):
    # A = 4B, α = β = ½: N_opt = 4·(C/6)^½; C = 6e18 → N = 4e9, D = C/(6N) = 2.5e8.
    code, out, _ = cli("scaling", "optimum", "--flops", "6e18", "--law", "1.5,400,100,0.5,0.5",
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["params"] == pytest.approx(4e9) and doc["tokens"] == pytest.approx(2.5e8)
    assert doc["warnings"] == []  # typed-in laws carry no data range
    # 1.5 + 400/√(4e9) + 100/√(2.5e8) = 1.5 + 2 × 0.0063246
    code, out, _ = cli("lifecycle", "--target-loss", "2.0", "--sizes", "1e9", "--law",
                       "1.5,400,100,0.5,0.5", "--format", "json")
    tokens = json.loads(out)["sizes"][0]["tokens"]
    assert code == 0
    # D = (B/(L − E − A/√N))² = (100/(0.5 − 400/√1e9))²
    assert tokens == pytest.approx((100 / (0.5 - 400 / math.sqrt(1e9))) ** 2)


@pytest.mark.parametrize("value", ["1.7,400,400,0.3", "1,2,3,4,5,6", "1.7,400,x,0.3,0.3",
                                   "nan,400,400,0.3,0.3", "1.7,inf,400,0.3,0.3",
                                   "1.7,-400,400,0.3,0.3", "1.7,400,400,0.3,", "missing.json",
                                   "kaplan", "DIR", "NOTJSON"])
@pytest.mark.parametrize("command", [["scaling", "optimum", "--flops", "1e21"], ["pretrain"],
                                     ["lifecycle", "--target-loss", "2.5", "--sizes", "1e9"]],
                         ids=["optimum", "pretrain", "lifecycle"])
def test_bad_law_is_one_line_naming_law(cli, tmp_path, command, value):
    if value == "kaplan" and command[0] == "scaling":
        pytest.skip("scaling optimum takes Kaplan's allocation (test_fix_e_kaplan_lifecycle)")
    if value == "DIR":
        value = str(tmp_path)
    elif value == "NOTJSON":
        bad = tmp_path / "law.json"
        bad.write_text("E = 1.7\n")
        value = str(bad)
    elif value == "missing.json":
        value = str(tmp_path / "missing.json")
    code, out, err = cli(*command, "--law", value)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "law" in err


def test_law_file_without_coefficients_is_an_error(cli, tmp_path):
    path = tmp_path / "law.json"
    path.write_text(json.dumps({"E": 1.7, "A": 400, "B": 400, "alpha": 0.3}))
    code, _, err = cli("scaling", "optimum", "--flops", "1e21", "--law", str(path))
    assert code == 2 and "law" in err and "beta" in err


def test_range_warning_for_an_out_of_range_query(cli, runs_csv, tmp_path):
    out = tmp_path / "law.json"
    assert cli("scaling", "fit", str(runs_csv), "--out", str(out))[0] == 0
    # inside the box (N 5e7-3.2e9, D 1e9-6.4e10): no warning
    code, text, _ = cli("lifecycle", "--target-loss", "3.0", "--sizes", "1e9", "--law", str(out),
                        "--format", "json")
    doc = json.loads(text)
    d = doc["sizes"][0]["tokens"]
    assert code == 0 and 1e9 <= d <= 6.4e10 and doc["warnings"] == []
    # 2e10 parameters lies above the fitted N (3.2e9): one warning naming N
    code, text, _ = cli("lifecycle", "--target-loss", "3.0", "--sizes", "1e9,2e10", "--law",
                        str(out), "--format", "json")
    warnings = json.loads(text)["warnings"]
    assert code == 0 and len(warnings) == 1
    assert "N = 2e+10" in warnings[0] and "outside" in warnings[0]
    code, table, _ = cli("lifecycle", "--target-loss", "3.0", "--sizes", "1e9,2e10", "--law",
                         str(out))
    assert code == 0 and "warning:" in table and "extrapolated" in table


def test_range_warnings_by_hand():
    span = DataRange(n_min=1e8, n_max=1e9, d_min=1e9, d_max=1e10, points=6, source="x.csv")
    named = NamedLaw(parse_numbers("1.7,400,400,0.3,0.3"), "x", span)
    assert range_warnings(named, [("in", 5e8, 5e9)]) == []
    low_n, high_d = range_warnings(named, [("out", 5e7, 2e10)])
    assert low_n.startswith("out: N = 5e+07") and high_d.startswith("out: D = 2e+10")
    assert range_warnings(NamedLaw(named.law, "x"), [("out", 5e7, 2e10)]) == []


def test_c4_law_carries_its_range(cli):
    """``--law c4`` is Example 3-5's fit (six runs, N 2.81e8-1.52e9, D 2.7e9-6.6e10): the
    0.1B model at loss 2.9 lies outside it in N and in D."""
    code, out, _ = cli("lifecycle", "--target-loss", "2.9", "--sizes", "0.1e9,0.5e9", "--law",
                       "c4", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert [w.split(":")[1].split("=")[0].strip() for w in doc["warnings"]] == ["N", "D"]
