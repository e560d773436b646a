"""``napkin train | rl | pretrain | scaling | lifecycle | cost``: acceptance commands, errors."""

import json

import pytest

from napkin.catalog import scaling_data


def test_train_chapter_figures(cli):
    code, out, _ = cli("train", "qwen3-8b", "--seq", "8192", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    # §3.4.3: 143.789 / 287.579 / 431.368 TFLOPs, 59.381 of attention
    assert round(doc["forward_flops"] / 1e12, 3) == 143.789
    assert round(doc["backward_flops"] / 1e12, 3) == 287.579
    assert round(doc["total_flops"] / 1e12, 3) == 431.368
    assert round(doc["attention_flops"] / 1e12, 3) == 59.381
    code, out, _ = cli("train", "qwen3-8b", "--seq", "8192", "--labels", "4096", "--head",
                       "labelled", "--format", "json")
    assert round(json.loads(out)["total_flops"] / 1e12, 3) == 416.074


def test_train_memory_and_sharding(cli):
    code, out, _ = cli("train", "qwen3-8b", "--seq", "4096", "--optimizer", "adamw-fp32-grads",
                       "--zero", "3", "--devices", "8", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    # 18 B/param sharded 8 ways: 8,190,735,360 × 18 / 8
    assert doc["memory"]["state"]["bytes"] == pytest.approx(8_190_735_360 * 18 / 8)
    assert doc["communication"]["scheme"] == "zero3"


def test_rl_example_3_4(cli):
    code, out, _ = cli("rl", "qwen3-8b", "--prompt-len", "1024", "--gen-len", "256", "--keep",
                       "16", "--keep-rate", "0.5", "--format", "json")
    c = json.loads(out)["cycle"]
    assert code == 0 and c["generated"] == 32
    assert round(c["total_flops"] / 1e12, 3) == 2181.559
    code, out, _ = cli("rl", "qwen3-8b", "--prompt-len", "1024", "--gen-len", "256", "--keep",
                       "16", "--keep-rate", "0.25", "--format", "json")
    assert round(json.loads(out)["cycle"]["total_flops"] / 1e12, 3) == 3410.701


def test_pretrain_task_4(cli):
    code, out, _ = cli("pretrain", "--gpu", "rtx-4080", "--count", "4", "--days", "30",
                       "--alt", "0.5e9", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["budget_flops"] == pytest.approx(4 * 97.5e12 * 0.4 * 30 * 86_400)
    rule, _, alt = doc["options"]
    assert rule["params"] == pytest.approx((doc["budget_flops"] / 120) ** 0.5)
    assert round(rule["loss"], 2) == 2.43 and round(alt["loss"], 2) == 2.45  # task 4
    # task 4: "state at 16 B/param ≈ 29 GB, FSDP on 4 cards ≈ 7 GB" against 16 GB cards
    assert round(rule["ddp_state_bytes"] / 1e9) == 29 and not rule["ddp_fits"]
    assert round(rule["fsdp_state_bytes"] / 1e9) == 7 and rule["fsdp_fits"]
    assert alt["ddp_state_bytes"] == pytest.approx(0.5e9 * 16) and alt["ddp_fits"]


def test_scaling_commands(cli, tmp_path):
    code, out, _ = cli("scaling", "optimum", "--flops", "5.76e23", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["rule_params"] == pytest.approx((5.76e23 / 120) ** 0.5)
    png = tmp_path / "fit.png"
    code, out, _ = cli("scaling", "fit", str(scaling_data("chinchilla_fig4_N_D_loss.csv")),
                       "--n-col", "model_size_N", "--d-col", "training_tokens_D",
                       "--holdout-min-n", "1e10", "--plot", str(png), "--format", "json")
    assert code == 0 and png.stat().st_size > 10_000
    assert json.loads(out)["rmse"] > 0


def test_lifecycle_and_cost(cli, tmp_path):
    png = tmp_path / "life.png"
    code, out, _ = cli("lifecycle", "--target-loss", "2.5", "--sizes", "1e9,4e9", "--law",
                       "chinchilla", "--plot", str(png), "--format", "json")
    sizes = json.loads(out)["sizes"]
    assert code == 0 and png.exists()
    # 2N[P + G − 1] per call at 395.76 TFLOP per GPU-second
    assert sizes[0]["call_gpu_s"] == pytest.approx(2 * 1e9 * 639 / 395.76e12)
    code, out, _ = cli("cost", "breakeven", "--extra-upfront", "3.6e8", "--saving", "0.72",
                       "--format", "json")
    assert json.loads(out)["break_even_tasks"] == pytest.approx(5e8)
    code, out, _ = cli("cost", "success", "--cost", "1,2", "--success", "0.5,0.8", "--format",
                       "json")
    assert json.loads(out)["cost_per_success"] == [2, 2.5]


@pytest.mark.parametrize("args, field", [
    (["train", "qwen3-8b", "--seq", "999999"], "seq"),
    (["train", "qwen3-8b", "--optimizer", "lion"], "optimizer"),
    (["train", "qwen3-8b", "--qlora"], "qlora"),
    (["rl", "qwen3-8b", "--keep-rate", "1.5"], "keep-rate"),
    (["pretrain", "--law", "kaplan"], "law"),
    (["lifecycle", "--target-loss", "1.0", "--sizes", "1e9"], "target-loss"),
    (["scaling", "fit", "missing.csv"], "missing.csv"),
    (["cost", "success", "--cost", "1", "--success", "0"], "success"),
])
def test_errors_are_one_line(cli, args, field):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err


def test_data_parallel_ranks_each_run_their_micro_batches(cli):
    """Question-bank task 1's shape: 4 cards × one 4,096-token sequence = 16,384 tokens per
    update; each rank computes its own sequence, so the compute per update is one rank's (as
    on one card) and tokens/s is 4× one card's while the ZeRO-3 traffic is hidden."""
    def run(devices: int) -> dict:
        code, out, _ = cli("train", "llama-2-7b", "--seq", "4096", "--gpu", "rtx-4080",
                           "--gpu-mem-gb", "32", "--devices", str(devices), "--zero", "3",
                           "--link-gbs", "10", "--mfu", "0.4", "--format", "json")
        assert code == 0
        return json.loads(out)
    one, four = run(1), run(4)
    assert four["tokens_per_update"] == 16_384 and four["tokens_per_update_per_rank"] == 4096
    assert four["communication"]["compute_s"] == pytest.approx(one["communication"]["compute_s"])
    # ≈ 4.4 s in the question bank: 6 × 6.74e9 × 4,096 FLOPs + attention at MFU 0.4 of the
    # RTX 4080's dense BF16 peak
    assert four["communication"]["compute_s"] == pytest.approx(4.4, rel=0.03)
    assert four["update_flops_all_ranks"] == pytest.approx(4 * four["update_flops"])


def test_eight_a100s_train_qwen2_5_7b_at_about_22k_tokens_per_s(cli):
    """6ND at MFU 0.4: 8 × 0.4 × 312 TFLOP/s / (6 × 7.62e9 FLOPs per token) ≈ 21.9k tokens/s;
    napkin also counts attention (4,096 tokens) and the optimizer step, a few % more time. The
    gradient all-reduce goes over NVLink 3 (600 GB/s bidirectional → 300 GB/s per direction,
    the catalog's default) and hides behind compute."""
    code, out, _ = cli("train", "qwen2.5-7b", "--seq", "4096", "--gpu", "a100-80gb-sxm",
                       "--devices", "8", "--mfu", "0.4", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    six_nd = 8 * 0.4 * 312e12 / (6 * 7_615_616_512)
    assert doc["tokens_per_s"] == pytest.approx(six_nd, rel=0.07)
    assert doc["tokens_per_s"] < six_nd
    assert doc["communication"]["link_bytes_per_s"] == pytest.approx(300e9)
    assert doc["communication"]["hidden"]


@pytest.mark.parametrize(("dtype", "wire"), [("bf16", 2), ("fp32", 4)])
def test_zero3_traffic_with_the_gradient_dtype_on_the_wire(cli, dtype, wire):
    """ZeRO-3 on 4 ranks sends ¾ of (weights gathered twice + gradients reduce-scattered):
    6,738,415,616 × (2 + 2 + wire) × ¾ B — 30.3 GB in BF16, 40.4 GB with FP32 gradients (the
    question bank's 42 GB and 4.2 s at 10 GB/s count 7e9 parameters: 7e9 × 8 × ¾)."""
    code, out, _ = cli("train", "llama-2-7b", "--seq", "4096", "--gpu", "rtx-4080",
                       "--gpu-mem-gb", "32", "--devices", "4", "--zero", "3", "--link-gbs", "10",
                       "--grad-dtype", dtype, "--format", "json")
    c = json.loads(out)["communication"]
    assert code == 0
    assert c["bytes_per_device"] == pytest.approx(6_738_415_616 * (4 + wire) * 0.75)
    assert c["link_bytes_per_s"] == 10e9
    if dtype == "fp32":
        assert c["bytes_per_device"] == pytest.approx(42e9, rel=0.04)
        assert c["bytes_per_device"] / c["link_bytes_per_s"] == pytest.approx(4.2, rel=0.04)


@pytest.mark.parametrize(("option", "value"), [("--grad-dtype", "fp8"), ("--link-gbs", "0"),
                                               ("--link-gbs", "nan"), ("--link-gbs", "inf")])
def test_train_link_and_grad_errors(cli, option, value):
    code, out, err = cli("train", "llama-2-7b", option, value)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert option.removeprefix("--") in err, err


def test_whole_run_time_gpu_hours_days_and_cost(cli):
    """Qwen2.5-7B on 8 × A100: 8 ranks × 4 × 4,096 = 131,072 tokens per update; 1e9 tokens
    are ⌈7,629.4⌉ = 7,630 updates; GPU-hours = updates × update time × 8 / 3,600; $ at 2.5."""
    base = ["train", "qwen2.5-7b", "--gpu", "a100-80gb-sxm", "--devices", "8",
            "--accumulation", "4", "--format", "json"]
    code, out, err = cli(*base, "--tokens", "1e9", "--usd-per-gpu-hour", "2.5")
    assert code == 0, err
    doc = json.loads(out)
    run = doc["run"]
    assert doc["tokens_per_update"] == 131_072 and run["updates"] == 7630
    assert run["train_s"] == pytest.approx(7630 * doc["update_s"])
    assert run["wall_s"] == pytest.approx(run["train_s"] / (1 - 8 * 1.974e-5 * 0.25), rel=1e-4)
    assert run["goodput"] == pytest.approx(run["train_s"] / run["wall_s"])
    assert run["gpu_hours"] == pytest.approx(run["wall_s"] * 8 / 3600)
    assert run["days"] == pytest.approx(run["wall_s"] / 86_400)
    assert run["usd"] == pytest.approx(run["gpu_hours"] * 2.5)
    code, out, _ = cli(*base, "--epochs", "2", "--dataset-tokens", "5e8")
    epochs = json.loads(out)
    assert epochs["run"]["updates"] == 7630  # 2 × 5e8 = 1e9 tokens
    assert epochs["assumptions"]["price_source"].startswith("Mercatus")  # the price catalog


@pytest.mark.parametrize(("args", "field"), [
    (["--tokens", "nan"], "tokens"), (["--tokens", "0"], "tokens"),
    (["--tokens", "1e30"], "tokens"), (["--tokens", "1e9", "--epochs", "1"], "tokens"),
    (["--epochs", "2"], "dataset-tokens"), (["--dataset-tokens", "1e9"], "tokens"),
    (["--epochs", "inf", "--dataset-tokens", "1e9"], "epochs"),
    (["--tokens", "1e9", "--usd-per-gpu-hour", "-1"], "usd-per-gpu-hour"),
    (["--usd-per-gpu-hour", "2"], "usd-per-gpu-hour"),
])
def test_whole_run_errors(cli, args, field):
    code, out, err = cli("train", "llama-2-7b", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err, err


def test_offload_costs_the_host_link_and_the_cpu_step(cli):
    """ZeRO-2 + offload on 8 ranks: each rank's shard N/8 sends its BF16 gradients down and
    gets BF16 weights back over PCIe 4 ×16 (32 GB/s): N/8 × 4 B; CPU Adam moves N/8 × 30 B
    (FP32 gradient 4, master and moments read+written 24, BF16 weights 2) at 100 GB/s."""
    n = 6_738_415_616
    code, out, err = cli("train", "llama-2-7b", "--gpu", "a100-80gb-sxm", "--devices", "8",
                         "--zero", "2", "--offload", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    off = doc["offload"]
    assert off["link_bytes"] == pytest.approx(n / 8 * 4)
    assert off["cpu_bytes"] == pytest.approx(n / 8 * 30)
    assert doc["optimizer_s"] == pytest.approx(n / 8 * 4 / 32e9 + n / 8 * 30 / 100e9)
    code, out, _ = cli("train", "llama-2-7b", "--gpu", "a100-80gb-sxm", "--devices", "8",
                       "--zero", "2", "--offload", "--cpu-mem-gbs", "200", "--format", "json")
    assert json.loads(out)["offload"]["cpu_s"] == pytest.approx(n / 8 * 30 / 200e9)


def test_qlora_pays_dequantization_and_lora_zero3_gathers_the_frozen_base(cli):
    base = ["train", "llama-2-7b", "--lora-rank", "16", "--format", "json"]
    lora = json.loads(cli(*base, "--gpu", "rtx-4090")[1])
    qlora = json.loads(cli(*base, "--gpu", "rtx-4090", "--qlora")[1])
    # the blocks' linears in NF4, the embedding (32,000 × 4,096), the head (the same) and the
    # norms (2 a layer and the final one, 4,096 each) in BF16, as bitsandbytes leaves them
    frozen = qlora["frozen_params"]
    sixteen = 2 * 32000 * 4096 + (2 * 32 + 1) * 4096
    nf4 = frozen - sixteen
    assert qlora["memory"]["state"]["weights_bytes"] == pytest.approx(
        sixteen * 2 + nf4 * (4 + 8 / 64 + 32 / (64 * 256)) / 8 + qlora["trainable_params"] * 2)
    # forward + backward dX, each reading 0.5 B of NF4, writing and reading 2 B of BF16, at
    # the RTX 4090's 1,008 GB/s
    assert qlora["dequant_s"] == pytest.approx(2 * nf4 * 4.5 / 1008e9)
    assert lora["dequant_s"] == 0 and qlora["update_s"] > lora["update_s"]
    z3 = json.loads(cli(*base, "--zero", "3", "--devices", "4")[1])["communication"]
    z3_params = json.loads(cli(*base, "--zero", "3", "--devices", "4")[1])
    n_lora = z3_params["trainable_params"]
    # ring gathers of ¾: weights twice and gradients once for the adapters, the frozen BF16
    # base twice (forward, backward)
    assert z3["bytes_per_device"] == pytest.approx(
        0.75 * (n_lora * (2 + 2 + 2) + 2 * z3_params["frozen_params"] * 2))


@pytest.mark.parametrize(("args", "field"), [
    (["--offload", "--host-link-gbs", "0"], "host-link-gbs"),
    (["--offload", "--cpu-mem-gbs", "nan"], "cpu-mem-gbs"),
    (["--cpu-mem-gbs", "50"], "cpu-mem-gbs"),
    (["--host-link-gbs", "50"], "host-link-gbs"),
])
def test_offload_option_errors(cli, args, field):
    code, out, err = cli("train", "llama-2-7b", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err, err


def test_rl_cycle_in_seconds_and_dollars(cli):
    """Example 3-4's cycle (Qwen3-8B, 32 answers of 1,024 + 256 tokens, 16 kept) on 8 H100s.
    Reads and the update are FLOPs / (8 × 989.4 TFLOP/s × 0.4). The roofline rollout at
    MFU 0.4 and MBU 0.8 on 8 replicas of 4 answers each: one prefill of 4 × 1,024 tokens
    (2·N per token) then 255 decode steps, each reading the weights but the embedding."""
    base = ["rl", "qwen3-8b", "--gpu", "h100-sxm", "--count", "8", "--usd-per-gpu-hour", "3",
            "--format", "json"]
    code, out, err = cli(*base, "--calibration", "roofline")
    assert code == 0, err
    doc = json.loads(out)
    c, t = doc["cycle"], doc["timing"]
    rate = 8 * 989.4e12 * 0.4
    assert t["read_s"] == pytest.approx(c["reference_flops"] / rate)
    assert t["update_s"] == pytest.approx(c["update_flops"] / rate)
    assert t["cycle_s"] == pytest.approx(t["rollout_s"] + t["read_s"] + t["update_s"]
                                         + t["sync_s"])
    assert t["usd"] == pytest.approx(8 * t["cycle_s"] / 3600 * 3)
    assert t["usd_per_kept"] == pytest.approx(t["usd"] / 16)
    from napkin.catalog import load_model

    m = load_model("qwen3-8b")
    matmul = m.params - m.embedding_params  # the lookup is no matmul and is not read
    hand = 4 * 1024 * 2 * matmul / (989.4e12 * 0.4) + 255 * matmul * 2 / (3.35e12 * 0.8)
    assert t["rollout_s"] == pytest.approx(hand, rel=0.05)  # + attention and KV reads
    assert t["rollout_s"] > t["read_s"] + t["update_s"]  # decode-bound rollouts dominate
    code, out, _ = cli(*base[:-2], "--separate", "--rollout-gpus", "4", "--count", "4",
                       "--format", "json")
    sep = json.loads(out)["timing"]
    assert sep["gpus"] == 8
    assert sep["cycle_s"] == pytest.approx(max(sep["rollout_s"], sep["read_s"]
                                               + sep["update_s"] + sep["sync_s"]))


@pytest.mark.parametrize(("args", "field"), [
    (["--gpu", "h100-sxm", "--rollout-gpus", "4"], "rollout-gpus"),
    (["--gpu", "h100-sxm", "--count", "0"], "count"),
    (["--gpu", "h100-sxm", "--count", "4", "--rollout-tp", "3"], "rollout-tp"),
    (["--gpu", "h100-sxm", "--mfu", "nan"], "mfu"),
    (["--gpu", "h100-sxm", "--usd-per-gpu-hour", "inf"], "usd-per-gpu-hour"),
    (["--separate"], "gpu"),
    (["--gpu", "tpu9"], "tpu9"),
])
def test_rl_timing_errors(cli, args, field):
    code, out, err = cli("rl", "qwen3-8b", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err, err


def test_tensor_and_pipeline_parallel_traffic_and_topology(cli):
    """Llama-3.1-70B, TP 8 × DP 4 (32 GPUs, 4 nodes of 8), 8 micro-batches of one 4,096-token
    sequence: each layer all-reduces B_μ·s·h BF16 activations 4 times per micro-batch, a ring
    sending 2·7/8 of them, over NVLink 4 (450 GB/s per direction); a rank's data-parallel
    peers are all on other nodes (TP fills a node), so its ZeRO-1 reduce-scatter and
    all-gather, 3/4 of the BF16 gradients and weights of its 1/8 of the model, go at the
    400 Gb/s InfiniBand port's 50 GB/s."""
    code, out, err = cli("train", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "8",
                         "--devices", "4", "--zero", "1", "--accumulation", "8",
                         "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    act = 1 * 4096 * 8192 * 2
    mp = doc["model_parallel"]
    assert mp["tp_bytes"] == pytest.approx(8 * 4 * 80 * 2 * 7 / 8 * act)
    assert mp["tp_link_bytes_per_s"] == pytest.approx(450e9)
    assert doc["gpus"] == 32 and doc["tokens_per_update"] == 4 * 8 * 4096
    n = 70_553_706_496
    c = doc["communication"]
    assert c["inter_node_bytes_per_s"] == 50e9 and c["bytes_per_device"] == 0
    assert c["inter_node_bytes"] == pytest.approx(3 / 4 * -(-n // 8) * (2 + 2))
    assert doc["memory"]["state"]["weights_bytes"] == pytest.approx(-(-n // 8) * 2)
    one_node = json.loads(cli("train", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4",
                              "--devices", "2", "--zero", "1", "--format", "json")[1])
    assert one_node["communication"]["link_bytes_per_s"] == pytest.approx(450e9)  # 8 GPUs
    pp = json.loads(cli("train", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "8",
                        "--pipeline", "2", "--accumulation", "8", "--format", "json")[1])
    # a stage boundary sends activations forward and gradients back per micro-batch, each of
    # the 8 TP ranks its eighth (Narayanan et al. 2021 §4.1, scatter/gather); the 16 GPUs span
    # two nodes, so it crosses InfiniBand
    assert pp["model_parallel"]["pp_bytes"] == pytest.approx(8 * 2 * act / 8)
    assert pp["model_parallel"]["pp_link_bytes_per_s"] == 50e9
    assert pp["bubble_frac"] == pytest.approx(1 / (8 + 1))


@pytest.mark.parametrize(("args", "field"), [
    (["--tp", "3"], "tp"), (["--tp", "0"], "tp"),
    (["--pipeline", "1000"], "pipeline"), (["--inter-node-gbs", "inf"], "inter-node-gbs"),
    (["--gpus-per-node", "0"], "gpus-per-node"),
    (["--virtual-stages", "2"], "virtual-stages"), (["--virtual-stages", "0"], "virtual-stages"),
    (["--pipeline", "16", "--virtual-stages", "4"], "virtual-stages"),
])
def test_model_parallel_errors(cli, args, field):
    code, out, err = cli("train", "llama-2-7b", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err, err


def test_lifecycle_over_a_task_mix(cli):
    """A call is the mix's mean: 0.7 × 2N·(512 + 127) + 0.3 × 2N·(4096 + 511) per call."""
    base = ["lifecycle", "--target-loss", "2.5", "--sizes", "1e9,4e9", "--format", "json"]
    code, out, err = cli(*base, "--mix", "512:128:7,4096:512:3")  # shares normalized
    assert code == 0, err
    sizes = json.loads(out)["sizes"]
    for s in sizes:
        assert s["call_flops"] == pytest.approx(
            0.7 * 2 * s["params"] * 639 + 0.3 * 2 * s["params"] * 4607)
    for bad in ("512:128", "512:x:1", "0:128:1", "512:128:nan", "512:128:-1", ","):
        code, out, err = cli(*base, "--mix", bad)
        assert code == 2 and out == "" and "mix" in err and err.count("\n") == 1, err
