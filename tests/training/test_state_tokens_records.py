"""Issue 38's training items: ``train``'s parameter-state subtotal (GB and GiB, fits alone and
with activations), the run without a price, the effective FLOP/s, the activation conventions,
``rl``'s answers and tokens, ``eval grpo --group``, run records and the two figures. Each
number against the chapter's or the question bank's printed value or a hand derivation."""

import json
import math
from pathlib import Path

import pytest

import napkin
from napkin.errors import NapkinError
from napkin.reinforcement.cycle import generated_for
from napkin.training.memory import activation_bytes_per_layer, mlp_coefficient

QWEN3_8B_PARAMS = 8_190_735_360
KORTHIKANTI = Path("/work/shared/data/korthikanti2022_activation_memory.json")


def _json(cli, *args: str) -> dict:
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def _refused(result: tuple[int, str, str], field: str) -> None:
    code, out, err = result
    assert code == 2 and out == "" and "Traceback" not in err, (code, err)
    assert err.count("\n") == 1 and field in err, err


# --- train: the parameter state apart ----------------------------------------------------------


@pytest.mark.parametrize("gpu", ["h100-sxm", "rtx-pro-6000", "h200"])
def test_example_3_3_state_alone_exceeds_every_card(cli, gpu):
    """Example 3-3: "на каждый параметр требуется 2+4+4+4+4=18 байт, всего 147,433 GB, или
    около 137,308 GiB. Даже без учёта активаций эти состояния уже превышают заявленный объём
    видеопамяти одной H100 SXM (80 GB), RTX PRO 6000 … (96 GB) и даже H200 (141 GB)"."""
    doc = _json(cli, "train", "qwen3-8b", "--optimizer", "adamw-fp32-grads", "--gpu", gpu,
                "--mfu", "0.4")
    state = QWEN3_8B_PARAMS * 18
    assert doc["state_bytes"] == state
    assert round(state / 1e9, 3) == 147.433 and round(state / 2**30, 3) == 137.308
    assert doc["state_bytes"] > doc["datasheet_memory_bytes"]  # 80, 96 and 141 GB
    assert not doc["fits"]
    if gpu == "h200":
        # the chapter's 141 GB is the datasheet's; the device reports 143,771 MiB =
        # 150,754,820,096 B, which the state alone (147.43 GB) does not reach
        assert doc["datasheet_memory_bytes"] == 141e9
        assert doc["device_memory_bytes"] == 143_771 * 2**20
        assert doc["state_fits"]
    else:
        assert not doc["state_fits"]


def test_memory_table_prints_the_state_in_gb_and_gib(cli):
    code, out, _ = cli("train", "qwen3-8b", "--optimizer", "adamw-fp32-grads", "--gpu",
                       "h200", "--mfu", "0.4", "--format", "md", "--wide")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("| parameter state ("))
    assert "147.43" in row and "137.31" in row
    assert "| GB | GiB |" in out.replace("  ", " ")
    assert "| parameter state alone fits | yes |" in out
    assert "| state + activations and the rest fit (total) | no |" in out
    assert "exceeds the datasheet's 141 GB" in out


def test_state_fits_but_not_with_activations(cli):
    """Qwen3-8B at 16 B/param sharded over 8 ranks with ZeRO-3: 8,190,735,360 × 16 / 8 =
    16.38 GB of state on an 80 GB H100; 64 sequences of 4,096 tokens bring (18 + 4·12,288/4,096)
    = 30 × 4,096 × 4,096 × 36 B = 18.12 GB of activations each, far past 80 GB."""
    doc = _json(cli, "train", "qwen3-8b", "--zero", "3", "--devices", "8", "--micro-batch",
                "64", "--mfu", "0.4")
    assert doc["state_bytes"] == pytest.approx(QWEN3_8B_PARAMS * 16 / 8)
    assert doc["memory"]["activations_bytes"] == pytest.approx(64 * 30 * 4096 * 4096 * 36)
    assert doc["state_fits"] and not doc["fits"]


def test_effective_flops_is_peak_times_mfu(cli):
    """Chapter §3.6.1: "Пиковая производительность H100 SXM для плотных вычислений BF16
    составляет 989,4 TFLOP/s … примем 40%, что соответствует 395,76 TFLOP на одну
    GPU-секунду"."""
    doc = _json(cli, "train", "qwen3-8b", "--gpu", "h100-sxm", "--mfu", "0.4")
    assert doc["effective_flops_per_s"] == pytest.approx(395.76e12)
    code, out, _ = cli("train", "qwen3-8b", "--gpu", "h100-sxm", "--mfu", "0.4")
    assert code == 0 and "395.8 TFLOP/s = 989.4 × 0.4" in out
    profiled = _json(cli, "train", "qwen3-8b", "--gpu", "h100-sxm")
    # the profile's rate is the update's FLOPs over its compute seconds
    assert profiled["effective_flops_per_s"] == pytest.approx(
        profiled["update_flops_all_ranks"] / profiled["compute_s"])


def test_run_without_a_price_gives_days(cli):
    """h100-pcie has no price in the catalog. 1e9 tokens at 4,096 per update: ⌈244,140.625⌉ =
    244,141 updates; without failures the wall time is updates × update time, GPU-hours =
    wall s / 3,600 on one GPU, days = wall s / 86,400; no $."""
    doc = _json(cli, "train", "qwen3-8b", "--gpu", "h100-pcie", "--mfu", "0.4", "--tokens",
                "1e9", "--failures-per-gpu-hour", "0")
    run = doc["run"]
    assert run["updates"] == 244_141
    assert run["wall_s"] == pytest.approx(244_141 * doc["update_s"])
    assert run["gpu_hours"] == pytest.approx(run["wall_s"] / 3600)
    assert run["days"] == pytest.approx(run["wall_s"] / 86_400)
    assert "usd" not in run
    assert "--usd-per-gpu-hour" in doc["assumptions"]["price_source"]
    code, out, _ = cli("train", "qwen3-8b", "--gpu", "h100-pcie", "--mfu", "0.4", "--tokens",
                       "1e9")
    assert code == 0 and "no price: give --usd-per-gpu-hour" in out
    priced = _json(cli, "train", "qwen3-8b", "--gpu", "h100-pcie", "--mfu", "0.4", "--tokens",
                   "1e9", "--usd-per-gpu-hour", "2")
    assert priced["run"]["usd"] == pytest.approx(2 * priced["run"]["gpu_hours"])


# --- activation conventions ---------------------------------------------------------------------


def test_question_bank_34h_convention(cli):
    """Bank task 1: "около 34·h байт на токен на слой … При h = 4096, 32 слоях и
    последовательности 4096 токенов: 34 · 4096 · 4096 · 32 ≈ 18 ГБ на одну последовательность.
    С пересчётом активаций хранятся только входы слоёв: 32 · 4096 · 4096 · 2 ≈ 1.1 ГБ"
    (Llama 2 7B: h = 4,096, 32 layers, FFN 11,008)."""
    bank = _json(cli, "train", "llama-2-7b", "--seq", "4096", "--activations", "korthikanti",
                 "--mfu", "0.4")
    assert bank["memory"]["activations_bytes"] == 34 * 4096 * 4096 * 32
    assert round(bank["memory"]["activations_bytes"] / 1e9) == 18
    ffn = _json(cli, "train", "llama-2-7b", "--seq", "4096", "--mfu", "0.4")
    # napkin's convention: 18 + 4 · 11,008 / 4,096 = 28.75 per token per layer, × h bytes
    assert ffn["memory"]["activations_bytes"] == pytest.approx(28.75 * 4096 * 4096 * 32)
    assert ffn["assumptions"]["activations"] == "ffn"
    for convention in ("ffn", "korthikanti"):
        full = _json(cli, "train", "llama-2-7b", "--seq", "4096", "--recompute", "full",
                     "--activations", convention, "--mfu", "0.4")
        assert full["memory"]["activations_bytes"] == 32 * 4096 * 4096 * 2
        assert round(full["memory"]["activations_bytes"] / 1e9, 1) == 1.1


def _per_layer(formula: str, s: int, b: int, h: int, a: int) -> float:
    """One of the JSON file's explicit formulas (``11*s*b*h + 5*a*s^2*b``) evaluated."""
    return float(eval(formula.replace("^", "**"), {}, {"s": s, "b": b, "h": h, "a": a}))


@pytest.mark.skipif(not KORTHIKANTI.exists(), reason="shared data file absent")
@pytest.mark.parametrize(("s", "b", "h", "a"), [(2048, 4, 6144, 64), (4096, 1, 4096, 32)])
def test_korthikanti_published_per_layer_terms(s, b, h, a):
    """Korthikanti et al. 2022 §4.1 (the data file's ``per_layer_breakdown_no_parallelism``):
    attention ``11sbh + 5as²b``, MLP ``19sbh``, layer norms ``4sbh``; the sum is Table 2's
    ``sbh(34 + 5as/h)``; with tensor parallel t Table 2 gives ``sbh(10 + 24/t + 5as/(ht))``,
    ``sbh(34/t + 5as/(ht))`` with sequence parallel and ``2sbh`` under full recompute. The
    first shape is the paper's 22B model (s 2,048, micro-batch 4, h 6,144, 64 heads)."""
    data = json.loads(KORTHIKANTI.read_text())
    parts = data["per_layer_breakdown_no_parallelism"]
    total = sum(_per_layer(parts[k], s, b, h, a) for k in ("attention", "mlp", "layernorms"))
    c = mlp_coefficient(0, h, "korthikanti")
    assert activation_bytes_per_layer(s, b, h, a, mlp_coefficient=c) == pytest.approx(total)
    assert data["table2_per_layer"]["no_parallelism"] == "sbh(34 + 5as/h)"
    assert total == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    sbh, t = s * b * h, 8
    assert data["table2_per_layer"]["tensor_parallel_baseline"] == "sbh(10 + 24/t + 5as/(h t))"
    assert activation_bytes_per_layer(s, b, h, a, tensor_parallel=t, mlp_coefficient=c) == \
        pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert activation_bytes_per_layer(s, b, h, a, tensor_parallel=t, sequence_parallel=True,
                                      mlp_coefficient=c) == \
        pytest.approx(sbh * (34 / t + 5 * a * s / (h * t)))
    assert activation_bytes_per_layer(s, b, h, a, "full", mlp_coefficient=c) == 2 * sbh


def test_korthikanti_without_flash_through_the_cli(cli):
    """Llama 2 7B, no FlashAttention, the paper's convention: 32 layers × sbh(34 + 5as/h) with
    a = 32, s = h = 4,096: 5as/h = 160, so 194 × 4,096 × 4,096 × 32 B."""
    doc = _json(cli, "train", "llama-2-7b", "--seq", "4096", "--activations", "korthikanti",
                "--no-flash", "--mfu", "0.4")
    assert doc["memory"]["activations_bytes"] == 194 * 4096 * 4096 * 32


def test_unknown_activation_convention(cli):
    _refused(cli("train", "qwen3-8b", "--activations", "megatron"), "activations")
    with pytest.raises(NapkinError, match="activations"):
        mlp_coefficient(4096, 4096, "bank")


# --- rl: answers and tokens ---------------------------------------------------------------------


def test_keep_rate_typed_to_ten_digits_is_a_third():
    """16 / 0.3333333333 = 48.0000000048: within 1e-6 of 48, so 48 answers (it gave 49); a
    genuine fraction still rounds up: 16 / 0.33 = 48.48 → 49; the chapter's ½ and ¼: 32, 64."""
    assert generated_for(16, 0.3333333333) == 48
    assert generated_for(16, 1 / 3) == 48
    assert generated_for(16, 0.33) == 49
    assert generated_for(16, 0.5) == 32 and generated_for(16, 0.25) == 64


def test_rl_tokens_example_3_4(cli):
    """Example 3-4: 32 answers, P = 1,024, G = 256, 16 kept: "Для 16 сохранённых примеров
    общее количество входных токенов за одно обновление составляет 20,464, а контролируемых
    выходов — 4096". By hand: prompts 32 × 1,024 = 32,768; generated 32 × 256 = 8,192."""
    doc = _json(cli, "rl", "qwen3-8b", "--prompt-len", "1024", "--gen-len", "256", "--keep",
                "16", "--keep-rate", "0.5")
    assert doc["tokens"] == {"prompt_tokens": 32_768, "generated_tokens": 8192,
                             "update_input_tokens": 20_464, "kept_tokens": 4096}
    code, out, _ = cli("rl", "qwen3-8b")
    assert code == 0 and "20,464" in out and "4,096" in out and "32,768" in out


def test_generate_replaces_keep_rate(cli):
    """--generate 64 is the chapter's keep rate ¼: "общий объём матричных вычислений
    возрастает до 3,410.701 TFLOPs"; --generate 48 equals --keep-rate 0.3333333333."""
    doc = _json(cli, "rl", "qwen3-8b", "--keep", "16", "--generate", "64")
    assert doc["cycle"]["generated"] == 64 and doc["inputs"]["keep_rate"] == 0.25
    assert round(doc["cycle"]["total_flops"] / 1e12, 3) == 3410.701
    third = _json(cli, "rl", "qwen3-8b", "--keep-rate", "0.3333333333")
    forty_eight = _json(cli, "rl", "qwen3-8b", "--generate", "48")
    assert third["cycle"] == forty_eight["cycle"] and third["cycle"]["generated"] == 48
    assert forty_eight["tokens"]["generated_tokens"] == 48 * 256


@pytest.mark.parametrize(("args", "field"), [
    (["--generate", "48", "--keep-rate", "0.5"], "generate"),
    (["--generate", "8"], "generate"),
    (["--generate", "0"], "generate"),
    (["--generate", "1000000"], "generate"),
])
def test_generate_refused(cli, args, field):
    _refused(cli("rl", "qwen3-8b", *args), field)


# --- eval grpo --group --------------------------------------------------------------------------


def test_grpo_group_q34(cli):
    """q34: "При точности модели p на промпте вероятность сигнала 1 − p^G − (1 − p)^G: при
    p = 0.1 и G = 8 это 0.57". By hand 1 − 1e-8 − 0.9^8 = 0.56953278; 8 / that = 14.05
    answers per group with signal."""
    doc = _json(cli, "eval", "grpo", "--group", "8", "--p", "0.1")
    assert round(doc["signal_probability"], 2) == 0.57
    assert doc["signal_probability"] == pytest.approx(1 - 0.1**8 - 0.9**8)
    assert doc["generations_per_useful_group"] == pytest.approx(8 / (1 - 1e-8 - 0.43046721))
    assert doc["group_size"] == 8 and "advantages" not in doc
    # with rewards of that length, the advantages too: q33's [1, 0, 0, 0] → +1.7321
    both = _json(cli, "eval", "grpo", "--rewards", "1,0,0,0", "--group", "4", "--p", "0.5")
    assert both["advantages"][0] == pytest.approx(0.75 / math.sqrt(0.1875))
    assert both["signal_probability"] == pytest.approx(1 - 2 * 0.5**4)
    code, out, _ = cli("eval", "grpo", "--group", "1", "--p", "0.3")
    assert code == 0 and "no group has signal" in out


@pytest.mark.parametrize(("args", "field"), [
    (["--group", "8"], "group"),
    (["--group", "0", "--p", "0.1"], "group"),
    (["--group", "3", "--rewards", "1,0", "--p", "0.1"], "group"),
    (["--group", "8", "--p", "1.5"], "p"),
])
def test_grpo_group_refused(cli, args, field):
    _refused(cli("eval", "grpo", *args), field)


# --- run records --------------------------------------------------------------------------------

TRAIN_RECORD = """\
kind: train
name: Example 3-3's state on one H200
stage: fine-tuning
source: chapter 3, Example 3-3
model: qwen3-8b
gpu: h200
optimizer: adamw-fp32-grads
seq: 4096
mfu: 0.4
tokens: 1e9
"""
TRAIN_FLAGS = ["qwen3-8b", "--gpu", "h200", "--optimizer", "adamw-fp32-grads", "--seq", "4096",
               "--mfu", "0.4", "--tokens", "1e9"]
RL_RECORD = """\
kind: rl
model: qwen3-8b
prompt_len: 1024
gen_len: 256
keep: 16
generate: 48
teacher: qwen3-8b
replicas: 4
"""
RL_FLAGS = ["qwen3-8b", "--prompt-len", "1024", "--gen-len", "256", "--keep", "16",
            "--generate", "48", "--teacher", "qwen3-8b", "--replicas", "4"]


def test_record_replays_the_flags(cli, tmp_path):
    train_file, rl_file = tmp_path / "train.yaml", tmp_path / "rl.json"
    train_file.write_text(TRAIN_RECORD)
    rl_file.write_text(json.dumps({"kind": "rl", "model": "qwen3-8b", "prompt_len": 1024,
                                   "gen_len": 256, "keep": 16, "generate": 48,
                                   "teacher": "qwen3-8b", "replicas": 4}))
    assert _json(cli, "train", "--run", str(train_file)) == _json(cli, "train", *TRAIN_FLAGS)
    assert _json(cli, "rl", "--run", str(rl_file)) == _json(cli, "rl", *RL_FLAGS)
    # Exercise 3-7: 48 answers, a same-size teacher, BF16 weights to 4 replicas: 65.526 GB
    replay = _json(cli, "rl", "--run", str(rl_file))
    assert round(replay["cycle"]["sync_bytes"] / 1e9, 3) == 65.526
    # the Python way gives the same document
    options = napkin.run_record(train_file).value["options"]
    assert options["tokens"] == 1e9 and options["model"] == "qwen3-8b"
    assert napkin.train(**options).data == napkin.train(
        "qwen3-8b", gpu="h200", optimizer="adamw-fp32-grads", mfu=0.4, tokens=1e9).data


def test_command_line_overrides_the_record(cli, tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text(TRAIN_RECORD)
    doc = _json(cli, "train", "--run", str(path), "--mfu", "0.5", "--gpu", "h100-sxm")
    assert doc["assumptions"]["mfu"] == 0.5 and doc["assumptions"]["gpu"] == "h100-sxm"
    assert doc["effective_flops_per_s"] == pytest.approx(989.4e12 * 0.5)
    assert doc["assumptions"]["optimizer"] == "adamw-fp32-grads"  # kept from the file
    other = _json(cli, "train", "qwen3-0.6b", "--run", str(path))
    assert other["inputs"]["model"] == "qwen3-0.6b"
    rl_path = tmp_path / "rl.yaml"
    rl_path.write_text(RL_RECORD)
    assert _json(cli, "rl", "--run", str(rl_path), "--generate", "64")["cycle"][
        "generated"] == 64


@pytest.mark.parametrize(("text", "field"), [
    ("kind: train\nmodel: qwen3-8b\nmfuu: 0.4\n", "field mfuu"),
    ("kind: train\nmodel: qwen3-8b\ndevices: many\n", "field devices"),
    ("kind: train\nseq: 4096\n", "field model"),
    ("kind: rl\nmodel: qwen3-8b\n", "field kind"),
    ("kind: pretrain\nmodel: qwen3-8b\n", "field kind"),
    ("model: qwen3-8b\n", "field kind"),
    ("- kind: train\n", "mapping"),
    ("kind: train\nmodel: qwen3-8b\nmfu: 3\n", "mfu"),
    ("kind: train\nmodel: qwen3-8b\ntokens: .nan\n", "field tokens"),
    ("kind: train\nmodel: [\n", "not valid YAML"),
])
def test_bad_records_are_one_line(cli, tmp_path, text, field):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    _refused(cli("train", "--run", str(path)), field)


def test_missing_record_and_model(cli, tmp_path):
    _refused(cli("train", "--run", str(tmp_path / "nope.yaml")), "run")
    _refused(cli("train"), "model")
    _refused(cli("rl"), "model")


# --- help and figures ---------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "flags"), [
    (["train"], ["--run", "--activations", "--plot"]),
    (["rl"], ["--run", "--generate", "--plot"]),
    (["eval", "grpo"], ["--group"]),
])
def test_help_lists_the_options(cli, args, flags):
    code, out, _ = cli(*args, "--help")
    assert code == 0 and all(f in out for f in flags)


def _png(path: Path) -> None:
    assert path.stat().st_size > 1000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_memory_figure(cli, tmp_path):
    target = tmp_path / "train-memory.png"
    code, _, err = cli("train", "qwen3-8b", "--optimizer", "adamw-fp32-grads", "--gpu", "h200",
                       "--mfu", "0.4", "--plot", str(target))
    assert code == 0, err
    _png(target)


def test_rl_cycle_figure(cli, tmp_path):
    flops_only, timed = tmp_path / "rl.png", tmp_path / "rl-timed.png"
    code, _, err = cli("rl", "qwen3-8b", "--plot", str(flops_only))
    assert code == 0, err
    _png(flops_only)
    code, _, err = cli("rl", "qwen3-0.6b", "--prompt-len", "64", "--gen-len", "16", "--keep",
                       "4", "--gpu", "h100-sxm", "--count", "2", "--calibration", "roofline",
                       "--plot", str(timed))
    assert code == 0, err
    _png(timed)
    _refused(cli("rl", "qwen3-8b", "--plot", str(tmp_path / "x.txt")), "plot")


# --- rl --compare-generate (Fig. 3-26) ----------------------------------------------------------


def test_compare_generate_fig_3_26(cli):
    """Example 3-4 / Fig. 3-26: 16 kept, 32 → 64 answers; "общий объём вычислений ... 2181,559
    ... 3410,701 TFLOP" — the rollout and reference roles double with the answers (n·(f_g +
    f_r)), the update F_u = 952.416 TFLOP does not."""
    code, out, err = cli("rl", "qwen3-8b", "--keep", "16", "--generate", "32",
                         "--compare-generate", "64", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    a, b = doc["cycle"], doc["compare"]
    assert a["total_flops"] / 1e12 == pytest.approx(2181.559, abs=5e-4)
    assert b["total_flops"] / 1e12 == pytest.approx(3410.701, abs=5e-4)
    assert b["update_flops"] == a["update_flops"] == pytest.approx(952.416e12, rel=1e-6)
    for role in ("prefill_flops", "decode_flops", "reference_flops"):
        assert b[role] == pytest.approx(2 * a[role])
    # F_cycle(n) = n(f_g + f_r) + F_u: 32 extra answers add 32 × 38.411 TFLOP
    assert b["total_flops"] - a["total_flops"] == pytest.approx(32 * 38.411e12, rel=1e-4)


def test_compare_generate_table_and_bounds(cli, tmp_path):
    code, out, _ = cli("rl", "qwen3-8b", "--generate", "32", "--compare-generate", "64")
    assert code == 0 and "32 vs 64 answers (16 kept)" in out and "2.00×" in out
    _refused(cli("rl", "qwen3-8b", "--compare-generate", "0"), "compare-generate")
    path = tmp_path / "rl.png"
    code, _, err = cli("rl", "qwen3-8b", "--generate", "32", "--compare-generate", "64",
                       "--plot", str(path))
    assert code == 0 and path.stat().st_size > 10_000, err
