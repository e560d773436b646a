"""Issue 38's scaling items from the command line: ``scaling fit --fix-E`` reproduces the
chapter's Example 3-5 fit, ``scaling optimum --law kaplan`` (Kaplan et al. 2020's allocation),
and ``lifecycle --law c4`` saying that its law is napkin's reconstruction, within 5% of the
chapter, with Fig. 3-29's break-even line and dashed extrapolated sizes."""

import csv
import json
import math
from pathlib import Path

import pytest

from napkin.catalog import scaling_data
from napkin.examples.scaling import (
    C4_EXAMPLE_FILE,
    FITTED,
    HELD_OUT,
    c4_reproduce_command,
    example_3_5_holdout,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def eight_runs(tmp_path):
    """The six fitted and two held-out runs of Example 3-5, as a user would copy them out of
    the shipped datablations file (first row of each run name)."""
    src = scaling_data("datablations_c4_runs.csv")
    with src.open(newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        rows: dict[str, dict[str, str]] = {}
        for row in reader:
            if row["run_name"] in FITTED + HELD_OUT:
                rows.setdefault(row["run_name"], row)
    path = tmp_path / "runs.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows.values())
    assert len(rows) == 8
    return path


def _fit_args(path) -> list[str]:
    return c4_reproduce_command(str(path)).split()[1:]


def test_example_file_holds_the_eight_runs(eight_runs):
    """``examples/c4-example-3-5.csv`` (the file the c4 note names) is exactly the eight runs
    taken out of the shipped datablations file."""
    root = Path(__file__).resolve().parents[2]
    assert (root / C4_EXAMPLE_FILE).read_text().splitlines() == eight_runs.read_text(
    ).splitlines()


def test_the_note_s_command_runs_from_the_repository(cli, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    code, out, _ = cli(*c4_reproduce_command().split()[1:], "--format", "json")
    assert code == 0
    assert json.loads(out)["predicted"] == pytest.approx([2.583, 2.363], abs=0.001)


def test_fix_e_reproduces_example_3_5(cli, eight_runs):
    """Chapter 3, Example 3-5: "прогноз аппроксимированной кривой — 2,583 и 2,363 ...
    среднеквадратичная ошибка составляет приблизительно 0,0193 нат/токен". The command on the
    user's file gives the stored example's 2.5833 / 2.3636 (±0.001 of the chapter) and its
    RMSE 0.0201 (±5% of 0.0193)."""
    code, out, err = cli(*_fit_args(eight_runs), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    stored = example_3_5_holdout()
    assert doc["law"]["E"] == 1.69 and doc["assumptions"]["fix_E"] == 1.69
    assert doc["predicted"] == pytest.approx(list(stored.predicted), abs=1e-9)
    assert doc["rmse"] == pytest.approx(stored.rmse, abs=1e-9)
    assert doc["predicted"] == pytest.approx([2.583, 2.363], abs=0.001)
    assert doc["observed"] == pytest.approx([2.574, 2.337], abs=0.0005)
    assert doc["rmse"] == pytest.approx(0.0193, rel=0.05)


def test_fix_e_table_and_law_file(cli, eight_runs, tmp_path):
    out_law = tmp_path / "c4.json"
    code, table, _ = cli(*_fit_args(eight_runs), "--out", str(out_law))
    assert code == 0
    assert "E (held fixed)" in table and "predicted 2.5833" in table and "predicted 2.3636" in table
    assert json.loads(out_law.read_text())["fit"]["fix_E"] == 1.69
    # the refitted file and the preset give the same optimum
    code, via_file, _ = cli("scaling", "optimum", "--flops", "1e21", "--law", str(out_law),
                            "--format", "json")
    code2, via_preset, _ = cli("scaling", "optimum", "--flops", "1e21", "--law", "c4",
                               "--format", "json")
    assert code == code2 == 0
    assert json.loads(via_file)["params"] == pytest.approx(json.loads(via_preset)["params"],
                                                           rel=1e-6)


def test_fix_e_without_holdout_holds_e(cli, eight_runs):
    code, out, _ = cli("scaling", "fit", str(eight_runs), "--loss-col", "c4_val_loss",
                       "--fix-E", "1.5", "--format", "json")
    assert code == 0 and json.loads(out)["law"]["E"] == 1.5


@pytest.mark.parametrize("value", ["-0.1", "nan", "inf", "x"])
def test_bad_fix_e_is_one_line(cli, eight_runs, value):
    code, out, err = cli("scaling", "fit", str(eight_runs), "--loss-col", "c4_val_loss",
                         "--fix-E", value)
    assert code == 2 and out == "" and err.count("\n") == 1 and "fix-E" in err


def test_c4_note_says_how_to_reproduce(cli):
    code, out, _ = cli("scaling", "optimum", "--flops", "1e21", "--law", "c4")
    assert code == 0
    assert "reconstruction" in out and "--fix-E 1.69" in " ".join(out.split())


def test_kaplan_allocation_by_hand(cli):
    """Kaplan et al. 2020, eq. (6.1): N = 1.3e9·(C / 1 PF-day)^0.73. At C = 1 PF-day =
    1e15 FLOP/s × 86,400 s = 8.64e19 FLOPs, N = 1.3e9 and D = C/(6N) = 8.64e19/7.8e9 =
    1.1077e10. Ten times the budget: N × 10^0.73 = 5.3703, D × 10^0.27 = 1.8621 (the chapter,
    §3.6.1: "N ∝ C^0.73, D ∝ C^0.27")."""
    code, out, _ = cli("scaling", "optimum", "--flops", "8.64e19", "--law", "kaplan",
                       "--format", "json")
    one = json.loads(out)
    assert code == 0
    assert one["params"] == pytest.approx(1.3e9)
    assert one["tokens"] == pytest.approx(8.64e19 / (6 * 1.3e9))
    assert (one["n_exponent"], one["d_exponent"]) == (0.73, 0.27)
    code, out, _ = cli("scaling", "optimum", "--flops", "8.64e20", "--law", "kaplan",
                       "--format", "json")
    ten = json.loads(out)
    assert code == 0
    assert ten["params"] / one["params"] == pytest.approx(10**0.73) == pytest.approx(5.3703,
                                                                                      abs=1e-4)
    assert ten["tokens"] / one["tokens"] == pytest.approx(10**0.27) == pytest.approx(1.8621,
                                                                                     abs=1e-4)
    # beside it, Chinchilla's Approach 3: N_opt = (αA/(βB))^(1/(α+β))·(C/6)^(β/(α+β))
    a, b, alpha, beta = 406.4, 410.7, 0.34, 0.28
    s = alpha + beta
    chin = (alpha * a / (beta * b)) ** (1 / s) * (8.64e19 / 6) ** (beta / s)
    assert one["chinchilla_params"] == pytest.approx(chin)
    assert one["rule_params"] == pytest.approx(math.sqrt(8.64e19 / 120))


def test_kaplan_table_names_its_source(cli):
    code, out, _ = cli("scaling", "optimum", "--flops", "1e22", "--law", "kaplan")
    assert code == 0
    assert "Kaplan et al. 2020" in out and "chinchilla law optimum" in out


@pytest.mark.parametrize("command", [["pretrain"],
                                     ["lifecycle", "--target-loss", "2.5", "--sizes", "1e9"]])
def test_kaplan_is_refused_where_a_loss_law_is_needed(cli, command):
    code, out, err = cli(*command, "--law", "kaplan")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "law: kaplan" in err and "scaling optimum" in err


def test_lifecycle_c4_within_5_percent_of_the_chapter_and_says_why(cli):
    """Chapter 3, §3.6.1: "Для модели 0,1B требуется приблизительно 298,6B обучающих токенов ...
    обучение модели 0,1B требует приблизительно 125,7 GPU-часа H100 — на 73,5 GPU-часа больше,
    чем для модели 0,5B ... Когда число вызовов достигнет приблизительно 204,8 миллиона"."""
    code, out, _ = cli("lifecycle", "--target-loss", "2.9", "--sizes", "1e8,5e8", "--law", "c4",
                       "--format", "json")
    doc = json.loads(out)
    assert code == 0
    small, large = doc["sizes"]
    assert small["tokens"] == pytest.approx(298.6e9, rel=0.05)
    # the chapter's 125.7 − 73.5 = 52.2 GPU-h for 0.5B
    assert large["train_gpu_hours"] == pytest.approx(125.7 - 73.5, rel=0.05)
    # 6ND over 395.76 TFLOP per GPU-second (989.4 TFLOP/s × 0.4), in hours
    assert small["train_gpu_hours"] == pytest.approx(
        6 * 1e8 * small["tokens"] / 395.76e12 / 3600)
    assert small["train_gpu_hours"] == pytest.approx(125.7, rel=0.05)
    (pair,) = doc["pairs"]
    assert pair["extra_train_gpu_hours"] == pytest.approx(73.5, rel=0.05)
    # "каждый вызов расходует приблизительно на 0,00129 GPU-секунды меньше": 2·0.4e9·639 FLOPs
    assert pair["call_saving_gpu_s"] == pytest.approx(2 * 0.4e9 * 639 / 395.76e12)
    assert pair["call_saving_gpu_s"] == pytest.approx(0.00129, abs=5e-6)
    assert pair["break_even_calls"] == doc["break_even_calls"][0]
    assert doc["break_even_calls"][0] == pytest.approx(204.8e6, rel=0.05)
    note = doc["law_notes"][0]
    assert "reconstruction" in note and "298.6B" in note and "204.8M" in note
    assert c4_reproduce_command() in note
    code, table, _ = cli("lifecycle", "--target-loss", "2.9", "--sizes", "1e8,5e8", "--law", "c4")
    assert code == 0 and "napkin's reconstruction" in table


def test_lifecycle_plot_draws_break_even_and_dashes_extrapolated(tmp_path, monkeypatch):
    """Fig. 3-29: "пунктиром показаны варианты, выходящие за диапазон ... вертикальной линией —
    точка равенства затрат". The 0.1B model lies outside c4's data (N 2.81e8-1.52e9): dashed;
    0.5B inside: solid; one vertical line at the break-even."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import napkin

    result = napkin.lifecycle(target_loss=2.9, sizes=[1e8, 5e8], law="c4")
    saved = {}
    monkeypatch.setattr(plt, "close", lambda fig: saved.setdefault("fig", fig))
    path = tmp_path / "life.png"
    result.plot(path)
    assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 1000
    ax = saved["fig"].axes[0]
    styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines()
              if "params" in str(line.get_label())}
    assert styles == {"0.1B params (extrapolated)": "--", "0.5B params": "-"}
    vertical = [line for line in ax.get_lines() if "params" not in str(line.get_label())]
    q = result.value["break_even_calls"][0]
    assert len(vertical) == 1 and list(vertical[0].get_xdata()) == [q, q]


def test_lifecycle_plot_cli_writes_png(cli, tmp_path):
    path = tmp_path / "life.png"
    code, _, _ = cli("lifecycle", "--target-loss", "2.9", "--sizes", "1e8,5e8", "--law", "c4",
                     "--plot", str(path))
    assert code == 0 and path.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("law", ["kaplan", "chinchilla"])
def test_optimum_plot_writes_png(cli, tmp_path, law):
    path = tmp_path / "alloc.png"
    code, _, _ = cli("scaling", "optimum", "--flops", "1e22", "--law", law, "--plot", str(path))
    assert code == 0 and path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 1000


def test_optimum_plot_slopes_are_the_exponents(tmp_path, monkeypatch):
    """The plotted N over a 10⁶ range of budgets has slope 0.73 for Kaplan and
    β/(α+β) = 0.28/0.62 = 0.4516 for Chinchilla's Approach 3, in log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import napkin

    saved = {}
    monkeypatch.setattr(plt, "close", lambda fig: saved.setdefault("fig", fig))
    napkin.scaling_optimum(flops=1e22, law="kaplan").plot(tmp_path / "a.png")
    lines = {line.get_label(): line for line in saved["fig"].axes[0].get_lines()}

    def slope(label: str) -> float:
        x, y = lines[label].get_xdata(), lines[label].get_ydata()
        return math.log(y[-1] / y[0]) / math.log(x[-1] / x[0])

    assert slope("Kaplan et al. 2020, N ∝ C^0.73") == pytest.approx(0.73)
    assert slope("chinchilla law optimum") == pytest.approx(0.28 / 0.62)
    assert slope("20 tokens per parameter") == pytest.approx(0.5)
