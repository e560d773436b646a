"""Output that names its units and figures behind the commands (issue 38): ``gpu-hours``
echoes a typed number in full and draws Figure 3-31; ``cost escalation | breakeven`` and
``media interrupt`` carry units in table and JSON; ``agent`` with several runs shows each
run's rounds, tokens and prefix-cache hit rate; ``cost success``, ``media vision`` and
``gpu-hours`` draw the chapter's Figures 3-9, 3-16 and 3-31 with the user's inputs."""

import json
from pathlib import Path

import pytest

from napkin.report.econ_views import full_number

PNG = b"\x89PNG\r\n\x1a\n"
NO_REASONING = "examples/agent-code-fix-no-reasoning.yaml"
REASONING = "examples/agent-code-fix-reasoning.yaml"


def _json(cli, *args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _table(cli, *args: str) -> str:
    code, out, err = cli(*args, "--format", "table")
    assert code == 0, err
    return out


@pytest.mark.parametrize(("x", "text"), [
    (1022362, "1,022,362"), (1022362.0, "1,022,362"), (30.84e6, "30,840,000"), (0.05, "0.05"),
    (123456.789, "123,456.789"), (1e25, "1e+25"), (0, "0")])
def test_full_number_keeps_every_typed_digit(x, text):
    assert full_number(x) == text


def test_gpu_hours_llama_1_65b_exercise_3_10(cli):
    """Seed line 544: "Обучение Llama 1 65B потребовало 1 022 362 GPU-часа A100. При
    непрерывном использовании 2048 ускорителей … 20,80 дня; … вдвое меньшем их количестве …
    около 41,60 дня"."""
    out = _table(cli, "gpu-hours", "1022362", "--gpu", "a100-80gb-sxm", "--devices", "2048")
    assert "1,022,362" in out and "e+06" not in out
    assert "20.80" in out
    doc = _json(cli, "gpu-hours", "1022362", "--gpu", "a100-80gb-sxm", "--devices", "1024")
    assert round(doc["days"], 2) == 41.60
    # 1,022,362 × 989.4/312 = 3,242,067 A100-hours as H100 at the same utilization, reversed
    out = _table(cli, "gpu-hours", "1022362", "--as", "a100-80gb-sxm")
    assert "3,242,067" in out


def test_gpu_hours_plot(cli, tmp_path):
    png = tmp_path / "gpu-hours.png"
    code, _, err = cli("gpu-hours", "1022362", "--gpu", "a100-80gb-sxm", "--devices", "2048",
                       "--as", "h100-sxm", "--plot", str(png))
    assert code == 0, err
    assert png.read_bytes().startswith(PNG) and png.stat().st_size > 10_000


def test_cost_escalation_units_exercise_3_3(cli):
    """Seed line 160: "моделью принятия решений стоит 0,000081 доллара, а передача одного
    запроса LLM — 0,013880 доллара … при доле передачи 1% и 5%". By hand: 0.000081 +
    0.01·0.013880 = $0.0002198 and 0.000081 + 0.05·0.013880 = $0.000775 per request; p₂/p₁ >
    0.0002198/0.000081 = 2.714 and 0.000775/0.000081 = 9.568."""
    args = ("cost", "escalation", "--decision-cost", "0.000081", "--llm-cost", "0.013880")
    doc = _json(cli, *args)
    assert doc["mean_usd_per_request"] == pytest.approx([0.0002198, 0.000775])
    assert doc["min_success_gain"] == pytest.approx([0.0002198 / 0.000081, 0.000775 / 0.000081])
    assert doc["inputs"] == {"decision_usd_per_request": 0.000081, "llm_usd_per_request": 0.01388}
    out = _table(cli, *args)
    assert "$ per request" in out and "$0.0002198" in out and "$0.000775" in out
    assert "2.714×" in out and "9.568×" in out


def test_cost_breakeven_units_chapter_3_6_3(cli):
    """Seed line 568: "100 тысяч GPU-часов H100, то есть 3.6×10^8 GPU-секунд, а каждая задача
    экономит 0,72 GPU-секунды H100, тогда Q* = 3.6×10^8/0.72 = 5×10^8"."""
    doc = _json(cli, "cost", "breakeven", "--extra-upfront", "1e5", "--saving", "0.0002",
                "--unit", "gpu-h", "--tasks", "1e8")
    assert doc["break_even_tasks"] == pytest.approx(5e8)
    # ΔC₀ − Q·Δc = 1e5 − 1e8 × 0.0002 = 80,000 GPU-hours still ahead for the other model
    assert doc["differences_gpu_h"] == pytest.approx([8e4])
    assert set(doc["inputs"]) == {"extra_upfront_gpu_h", "saving_per_task_gpu_h"}
    out = _table(cli, "cost", "breakeven", "--extra-upfront", "3.6e8", "--saving", "0.72",
                 "--unit", "gpu-s", "--tasks", "1e9")
    assert "500,000,000 tasks" in out
    # 3.6e8 − 1e9 × 0.72 = −3.6e8 GPU-s
    assert "after 1,000,000,000 tasks" in out and "-360,000,000 GPU-s" in out
    out = _table(cli, "cost", "breakeven", "--extra-upfront", "1000", "--saving", "0.05",
                 "--tasks", "50000")
    assert "20,000 tasks" in out and "-$1,500" in out  # 1000/0.05; 1000 − 50,000 × 0.05


@pytest.mark.parametrize(("args", "field"), [
    (["cost", "breakeven", "--extra-upfront", "1", "--saving", "1", "--unit", "eur"], "unit"),
    (["cost", "breakeven", "--extra-upfront", "1", "--saving", "0"], "saving"),
    (["cost", "escalation", "--decision-cost", "0", "--llm-cost", "1"], "decision cost"),
    (["cost", "success", "--cost", "1", "--success", "0.5", "--plot", "x.txt"], "plot"),
    (["media", "vision", "--plot", "x.doc"], "plot"),
    (["gpu-hours", "10", "--plot", "x.doc"], "plot"),
])
def test_refused_in_one_line(cli, args, field):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and field in err, err


def test_media_interrupt_units(cli):
    """Chapter Figure 3-20: "На 123-й мс подаётся команда, на 130-й мс устройство отключает
    звук". By hand: 123 + 5 ms control = 128 ms, next 10 ms poll at 130 ms: 7 ms perceived,
    2 ms of it waiting for the poll."""
    out = _table(cli, "media", "interrupt")
    for text in ("123.0 ms", "128.0 ms", "130.0 ms", "2.0 ms", "7.0 ms", "instant", "duration"):
        assert text in out
    doc = _json(cli, "media", "interrupt", "--stop-compute-ms", "20")
    i = doc["interruption"]
    assert i["muted_s"] == pytest.approx(0.130) and i["latency_s"] == pytest.approx(0.007)
    assert i["poll_wait_s"] == pytest.approx(0.002) and i["stop_compute_s"] == pytest.approx(0.143)
    assert doc["inputs"]["stop_compute_ms"] == 20


def test_agent_runs_show_rounds_tokens_and_prefix_hits(cli):
    """Seed line 182: reasoning off, "доля попаданий в кэш составляла около 83,4%"; line 128:
    reasoning on, "5 297 токенов, из которых 4 480 попали в кэш". By hand from the files:
    reasoning off, 12 rounds, I = 1,000 + 1,060 + … + 1,660 = 12 × 1,330 = 15,960, K = 943 +
    996 + 1,050 + 1,103 + 1,157 + 1,210 + 1,263 + 1,317 + 1,370 + 1,424 + 1,477 = 13,310
    (83.4 %), O = 11 × 64 + 61 = 765; reasoning on, 4 rounds, O = 1,303 + 700 + 420 + 310 =
    2,733; both: 16 rounds, 17,790 / 21,257 = 83.7 %."""
    doc = _json(cli, "agent", NO_REASONING, REASONING)
    off, on = doc["tasks"]
    assert (off["rounds"], off["input_tokens"], off["cached_tokens"], off["output_tokens"]) == (
        12, 15_960, 13_310, 765)
    assert round(off["prefix_hit_frac"], 3) == 0.834 and off["passed"] is False
    assert (on["rounds"], on["input_tokens"], on["cached_tokens"], on["output_tokens"]) == (
        4, 5_297, 4_480, 2_733)
    assert on["prefix_hit_frac"] == pytest.approx(4_480 / 5_297) and on["passed"] is True
    assert (doc["rounds"], doc["input_tokens"], doc["cached_tokens"]) == (16, 21_257, 17_790)
    assert doc["prefix_hit_frac"] == pytest.approx(17_790 / 21_257)
    out = _table(cli, "agent", NO_REASONING, REASONING)
    for text in ("rounds", "prefix hits", "83.4%", "84.6%", "83.7%", "15,960", "13,310",
                 "all tasks", "passed", "failed"):
        assert text in out
    one = _json(cli, "agent", REASONING)
    assert (one["rounds"], one["prefix_hit_frac"]) == (4, pytest.approx(4_480 / 5_297))
    assert "4 rounds; 84.6% (4,480 of 5,297 input tokens)" in _table(cli, "agent", REASONING)


def test_cost_success_plot_figure_3_9(cli, tmp_path):
    """Seed line 154 (Figure 3-9): "стоимость успешной задачи для двух стратегий составляет
    соответственно 2 и 2,5 единицы" — 1/0.5 and 2/0.8."""
    png = tmp_path / "cost.png"
    code, out, err = cli("cost", "success", "--cost", "1,2", "--success", "0.5,0.8", "--plot",
                         str(png), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["cost_per_success"] == pytest.approx([2, 2.5])
    assert png.read_bytes().startswith(PNG) and png.stat().st_size > 10_000


def test_media_vision_plot_figure_3_16(cli, tmp_path):
    """Seed (Figure 3-16): "Квадратное изображение 640×640 разбивается на сетку из 40×40
    фрагментов, … образуя сетку 20×20, всего 400 визуальных токенов"."""
    png = tmp_path / "vision.png"
    code, out, err = cli("media", "vision", "--image", "640x640", "--image", "1080x1920",
                         "--plot", str(png), "--format", "json")
    assert code == 0, err
    images = json.loads(out)["images"]
    # 1080×1920 rounds to 1088×1920 (multiples of 32): 34 × 60 = 2,040 tokens
    assert [(i["patches"], i["tokens"]) for i in images] == [(1600, 400), (8160, 2040)]
    assert png.read_bytes().startswith(PNG) and png.stat().st_size > 10_000


def test_plots_from_the_api(tmp_path: Path):
    import napkin

    for name, result in (("g.png", napkin.gpu_hours(1e6, devices=64)),
                         ("c.svg", napkin.cost_success(cost=[1], success=[0.5])),
                         ("v.png", napkin.media_vision(images=[(4096, 4096)]))):
        result.plot(tmp_path / name)
        assert (tmp_path / name).stat().st_size > 1_000


def test_cost_success_prints_typed_costs_in_full(cli):
    # c/p = 1,234,567 / 0.5 = 2,469,134 by hand; neither in scientific notation
    out = _table(cli, "cost", "success", "--cost", "1234567,2", "--success", "0.5,0.8")
    assert "1,234,567" in out and "2,469,134" in out and "e+06" not in out


@pytest.mark.parametrize(("args", "option"), [
    (["gpu-hours"], "--plot"), (["cost", "success"], "--plot"), (["media", "vision"], "--plot"),
    (["cost", "breakeven"], "--unit"), (["media", "interrupt"], "--command-ms")])
def test_help_names_the_new_options(cli, args, option):
    code, out, _ = cli(*args, "--help")
    assert code == 0 and option in out
