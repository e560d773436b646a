"""Worked examples of chapter 3.4–3.6 (training, RL, budgets, lifecycle arithmetic), the
question bank's task 1 and its training, RL and evaluation questions."""

from functools import cache

from napkin.accounting.rules import train_flops_6nd
from napkin.catalog import load_accelerator, load_model, training_records
from napkin.economics import (
    break_even_tasks,
    cost_per_success,
    escalated_cost,
    min_success_gain,
    min_success_rate,
    price_change_ratio,
)
from napkin.evaluation import (
    confidence_interval,
    dpo_loss,
    grpo_advantages,
    grpo_signal_probability,
    pass_at_k,
    total_loss_nats,
)
from napkin.examples.row import Example, Row, rounded
from napkin.reinforcement.cycle import generated_for, rl_cycle
from napkin.specs.lora import adapter_params, lora_params, with_lora
from napkin.training.attention_share import attention_share
from napkin.training.flops import TrainShape, expert_train_flops_per_token, train_flops
from napkin.training.loss_norm import loss_normalization
from napkin.training.memory import (
    FROZEN_WEIGHT_BYTES,
    activation_bytes_per_layer,
    recipe,
    state_memory,
)
from napkin.training.parallel import communication, pipeline_bubble
from napkin.training.schedule import SECONDS_PER_DAY, calendar_days, equivalent_hours, step_time_s
from napkin.units import GB, HOUR_S, TFLOP, GiB

QWEN3_8B = "qwen3-8b"


@cache
def _chapter_step():
    return train_flops(load_model(QWEN3_8B), TrainShape((8192,)))


def ex_3_3_mem() -> list[Row]:
    """Example 3-3: Qwen3-8B full fine-tuning state at 2 + 4 + 4 + 4 + 4 bytes per parameter."""
    mem = state_memory(load_model(QWEN3_8B).params, 0, recipe("adamw-fp32-grads"))
    return [Row("state, BF16 weights + FP32 grads/master/m/v", mem.bytes / GB, 147.433, "GB"),
            Row("same in GiB", mem.bytes / GiB, 137.308, "GiB",
                note="napkin train qwen3-8b --optimizer adamw-fp32-grads: parameter state, "
                     "GB and GiB")]


def ex_3_4_2() -> list[Row]:
    """§3.4.2: two 8,192-token packs, 4,096 + 4,096 vs 7,168 + 1,024 documents."""
    model = load_model(QWEN3_8B)
    rows = []
    for docs, pairs in (((4096, 4096), 16_781_312), ((7168, 1024), 26_218_496)):
        shape = TrainShape(docs)
        step = train_flops(model, shape)
        attn_fwd = step.gap.attention_flops / 3 / model.num_layers
        rows += [Row(f"{' + '.join(map(str, docs))}: causal pairs",
                     shape.batch().attention_pairs(None), pairs, "pairs"),
                 rounded(f"{' + '.join(map(str, docs))}: QKᵀ + AV forward, one layer",
                         attn_fwd / TFLOP, 0.275 if docs[0] == 4096 else 0.430, 3, "TFLOP")]
    return rows


def ex_3_4_3() -> list[Row]:
    """§3.4.3: Qwen3-8B, B = 1, P = 8,192, full head, no recompute; then 4,096 labels with
    the head on labelled positions only."""
    step = _chapter_step()
    labelled = train_flops(load_model(QWEN3_8B), TrainShape((8192,), labels=4096,
                                                            head="labelled"))
    return [
        Row("forward matmuls", step.forward.flops / TFLOP, 143.789, "TFLOP"),
        Row("backward matmuls", step.backward.flops / TFLOP, 287.579, "TFLOP"),
        Row("forward + backward", step.micro_batch_flops / TFLOP, 431.368, "TFLOP"),
        Row("of which QKᵀ and AV", step.attention_flops / TFLOP, 59.381, "TFLOP"),
        Row("6ND with all parameters", step.six_nd_flops / TFLOP, 402.591, "TFLOP"),
        rounded("itemized over 6ND", 100 * (step.micro_batch_flops / step.six_nd_flops - 1),
                7.15, 2, "%"),
        Row("4,096 labels, head on labelled only", labelled.micro_batch_flops / TFLOP, 416.074,
            "TFLOP"),
    ]


def ex_3_6() -> list[Row]:
    """Exercise 3-6: state at 18 B/param and with BF16 gradients; tokens and labels per update
    of 8 micro-batches × 2 sequences × 4,096 tokens with 1,024 labelled."""
    model = load_model(QWEN3_8B)
    full = state_memory(model.params, 0, recipe("adamw-fp32-grads")).bytes
    bf16 = state_memory(model.params, 0, recipe("adamw")).bytes
    shape = TrainShape((4096,), micro_batch=2, accumulation=8, labels=1024, head="labelled")
    masked = train_flops(model, TrainShape((4096,), 2, 8, 1024, "all"))
    gathered = train_flops(model, shape)
    return [
        Row("state at 18 B/param", full / GB, 147.433, "GB",
            note="napkin train qwen3-8b --optimizer adamw-fp32-grads: parameter state"),
        Row("saved by BF16 gradients", (full - bf16) / GB, None, "GB"),
        Row("input tokens per update (a·B_μ·P)", shape.tokens_per_update, 65_536, "tokens"),
        Row("labelled tokens per update", shape.labels_per_update, 16_384, "tokens"),
        Row("update FLOPs, loss masked, head everywhere", masked.update_flops / TFLOP, None,
            "TFLOP"),
        Row("update FLOPs, head on labelled only", gathered.update_flops / TFLOP, None, "TFLOP"),
    ]


def ex_3_5_2() -> list[Row]:
    return [Row("generated to keep 16 at keep rate ½", generated_for(16, 0.5), 32, "answers"),
            Row("generated to keep 16 at keep rate ¼", generated_for(16, 0.25), 64, "answers")]


def ex_3_4_rl() -> list[Row]:
    """Example 3-4: Qwen3-8B, 8 prompts × 4 answers, P = 1,024, G = 256, keep 16, reference."""
    model = load_model(QWEN3_8B)
    half, quarter = rl_cycle(model, 1024, 256, 16, 0.5), rl_cycle(model, 1024, 256, 16, 0.25)
    return [
        Row("rollout prefill, 32 answers", half.prefill_flops / TFLOP, 465.143, "TFLOP"),
        Row("rollout decode, 255 steps each", half.decode_flops / TFLOP, 129.056, "TFLOP"),
        Row("reference forward, 32 answers", half.reference_flops / TFLOP, 634.944, "TFLOP"),
        Row("policy update, 16 kept", half.update_flops / TFLOP, 952.416, "TFLOP"),
        Row("cycle total", half.total_flops / TFLOP, 2181.559, "TFLOP"),
        Row("input tokens of the update (16 × 1,279)", half.update_input_tokens, 20_464,
            "tokens", note="napkin rl qwen3-8b: tokens per cycle"),
        Row("keep rate ¼ (64 answers): cycle total", quarter.total_flops / TFLOP, 3410.701,
            "TFLOP"),
        rounded("increase", 100 * (quarter.total_flops / half.total_flops - 1), 56.3, 1, "%"),
        Row("per kept sample at ½", half.per_kept_flops / TFLOP, 136.347, "TFLOP"),
        Row("per kept sample at ¼", quarter.per_kept_flops / TFLOP, 213.169, "TFLOP"),
        Row("extra work of the 32 extra answers",
            (quarter.total_flops - half.total_flops) / TFLOP, 1229.142, "TFLOP"),
    ]


def ex_3_7() -> list[Row]:
    """Exercise 3-7: per-answer and fixed cost; 48 answers; a same-size teacher; BF16 sync."""
    model = load_model(QWEN3_8B)
    c32, c64 = rl_cycle(model, 1024, 256, 16, 0.5), rl_cycle(model, 1024, 256, 16, 0.25)
    per_answer = (c64.total_flops - c32.total_flops) / 32
    fixed = c32.total_flops - 32 * per_answer
    c48 = rl_cycle(model, 1024, 256, 16, 16 / 48, teacher=model, replicas=4)
    return [
        Row("per extra answer, f_g + f_r", per_answer / TFLOP, None, "TFLOP"),
        Row("fixed update cost, F_u", fixed / TFLOP, 952.416, "TFLOP"),
        Row("48 answers: cycle without teacher", (c48.total_flops - c48.teacher_flops) / TFLOP,
            None, "TFLOP"),
        Row("same-size teacher on 48 answers", c48.teacher_flops / TFLOP, None, "TFLOP"),
        Row("BF16 weights, one copy", model.params * 2 / GB, 16.381, "GB"),
        Row("sync to 4 replicas", c48.sync_bytes / GB, 65.526, "GB"),
    ]


def ex_3_6_2() -> list[Row]:
    """§3.6.2: D/N and 6ND of 7–8B models; GPU-hours to calendar days; H100 → A100 hours;
    DeepSeek V4's parameters and expert-matmul FLOPs."""
    rec = training_records()
    rows = []
    printed = {"llama-1-6.7b": (149, 4.02e22), "llama-2-7b": (286, 8.40e22),
               "llama-3.1-8b": (1875, 7.20e23), "qwen2.5-7b": (2571, 7.56e23),
               "qwen3-8b": (4500, 1.728e24)}
    for rid, (dn, c) in printed.items():
        r = rec[rid]
        rows += [rounded(f"{rid}: D/N", r["tokens"] / r["params"], dn, unit="tokens/param"),
                 Row(f"{rid}: 6ND", train_flops_6nd(r["params"], r["tokens"]), c, "FLOP")]
    a100, h100 = load_accelerator("a100-80gb-sxm"), load_accelerator("h100-sxm")
    llama65 = rec["llama-1-65b"]
    rows += [
        rounded("Llama 1 65B on 2,048 A100", calendar_days(llama65["gpu_hours"], 2048), 20.80, 2,
                "days"),
        rounded("Llama 1 65B on 1,024 A100", calendar_days(llama65["gpu_hours"], 1024), 41.60, 2,
                "days"),
        rounded("DeepSeek-V3 on 2,048 H800", calendar_days(rec["deepseek-v3"]["gpu_hours"], 2048),
                54.20, 2, "days"),
        rounded("Llama 3.1 405B on 16,384 H100",
                calendar_days(rec["llama-3.1-405b"]["gpu_hours"], 16384), 78.43, 2, "days"),
        rounded("one H100 hour in A100 hours", equivalent_hours(1, h100, a100), 3.17, 2, "×"),
    ]
    return rows + _deepseek_v4_rows(rec)


def _deepseek_v4_rows(rec: dict[str, dict]) -> list[Row]:
    """§3.6.2: DeepSeek V4 total and active parameters from the shipped config.json, and the
    routed + shared expert matmuls 18·n_L·h·f·(6 + 1) per token through the accounting layer,
    × the published pre-training tokens. The published "active" figures leave out the input
    embedding (a lookup): napkin's ``active_params`` includes it (13.80 B, 49.78 B)."""
    rows = []
    printed = {"deepseek-v4-flash": ("V4-Flash", 284, 0, 13, 45.4495, 1.45438),
               "deepseek-v4-pro": ("V4-Pro", 1.6, 1, 49, 169.2465, 5.58513)}
    for mid, (name, total, decimals, active, gflops, flops_e24) in printed.items():
        model = load_model(mid)
        per_token = expert_train_flops_per_token(model)
        scale = 1e9 if decimals == 0 else 1e12
        rows += [
            rounded(f"DeepSeek {name}: total parameters (MTP apart)", model.params / scale,
                    total, decimals, "B" if decimals == 0 else "T"),
            rounded(f"DeepSeek {name}: active parameters, input embedding excluded",
                    (model.active_params - model.embedding_params) / 1e9, active, 0, "B"),
            rounded(f"DeepSeek {name}: expert matmuls per training token", per_token / 1e9,
                    gflops, 4, "GFLOP"),
            rounded(f"DeepSeek {name}: expert matmuls × {rec[mid]['tokens'] / 1e12:g}T tokens",
                    per_token * rec[mid]["tokens"] / 1e24, flops_e24, 5, "1e24 FLOP"),
        ]
    return rows


def ex_3_6_3() -> list[Row]:
    return [Row("Q* = ΔC₀/Δc, 100k H100-hours vs 0.72 GPU-s per task",
                break_even_tasks(100_000 * HOUR_S, 0.72), 5e8, "tasks")]


def ex_3_10() -> list[Row]:
    """Exercise 3-10: calendar days; which model at 200M and 1B tasks."""
    hours = training_records()["llama-1-65b"]["gpu_hours"]
    extra, saving = 100_000 * HOUR_S, 0.72
    rows = [rounded("2,048 A100", calendar_days(hours, 2048), 20.80, 2, "days"),
            rounded("1,024 A100", calendar_days(hours, 1024), 41.60, 2, "days")]
    for tasks in (2e8, 1e9):
        diff = (extra - tasks * saving) / HOUR_S  # small model's total minus large model's
        rows.append(Row(f"{tasks:.0e} tasks: small − large model total", diff, None, "H100-h",
                        note="positive: the larger model is cheaper overall"))
    rows.append(Row("tasks where the choice flips", break_even_tasks(extra, saving), 5e8,
                    "tasks"))
    return rows


def ex_3_2_2() -> list[Row]:
    return [Row("cost per success, new over old", price_change_ratio(0.1, 20, 0.5, 0.8), 1.25,
                "×")]


def ex_3_3() -> list[Row]:
    """Exercise 3-3: two methods; the break-even success rate; the decision model's escalation."""
    dec, llm = 0.000081, 0.013880
    return [
        Row("old method: c/p", cost_per_success(1, 0.5), 2, "units"),
        Row("new method: c/p", cost_per_success(2, 0.8), 2.5, "units"),
        Row("c = 1.5: minimum success rate", min_success_rate(1.5, cost_per_success(1, 0.5)),
            None, ""),
        Row("escalating 1%: cost per request", escalated_cost(dec, llm, 0.01), None, "$"),
        Row("escalating 5%: cost per request", escalated_cost(dec, llm, 0.05), None, "$"),
        Row("1%: minimum p₂/p₁", min_success_gain(dec, llm, 0.01), None, "×"),
        Row("5%: minimum p₂/p₁", min_success_gain(dec, llm, 0.05), None, "×"),
    ]


def ex_task_1() -> list[Row]:
    """Task 1: a 7B model (h 4,096, 32 layers, s 4,096) on 4 × RTX 4080 32 GB, AdamW mixed."""
    n, h, layers, seq = 7e9, 4096, 32, 4096
    rec = recipe("adamw")
    acc = load_accelerator("rtx-4080")
    full = state_memory(int(n), 0, rec)
    act = activation_bytes_per_layer(seq, 1, h, 32, flash=True) * layers
    act_rc = activation_bytes_per_layer(seq, 1, h, 32, recompute="full") * layers
    zero3 = state_memory(int(n), 0, rec, devices=4, zero=3)
    compute = step_time_s(train_flops_6nd(n, 4 * seq), acc, devices=4, mfu=0.4)
    comm = communication("fsdp", int(n), 4, weight_bytes=2, grad_bytes=4, link_bytes_per_s=10e9,
                         compute_s=compute)
    chinchilla = train_flops_6nd(n, 20 * n)
    days = chinchilla / (4 * acc.peak_flops_per_s("bf16") * 0.4 * SECONDS_PER_DAY)
    return [
        Row("state at 16 B/param", full.bytes / GB, 112, "GB"),
        rounded("activations per sequence, 34·s·h·L", act / GB, 18, unit="GB"),
        rounded("with full recomputation, 2·s·h·L", act_rc / GB, 1.1, 1, "GB"),
        Row("ZeRO-3 state per card", zero3.bytes / GB, 28, "GB"),
        Row("FSDP traffic per card per step", comm.bytes_per_device / GB, 42, "GB",
            note="BF16 weights gathered twice, FP32 gradients reduce-scattered"),
        Row("at 10 GB/s", comm.time_s, 4.2, "s"),
        rounded("compute for 16,384 tokens at 40% MFU", compute, 4.4, 1, "s"),
        Row("communication hidden behind compute", float(comm.hidden), 1, "bool"),
        rounded("Chinchilla pretraining of 7B", chinchilla / 1e21, 5.9, 1, "1e21 FLOP"),
        Row("on the 4 cards at 40% MFU", days, 440, "days", 0.01,
            "published '≈ 440 days' (two significant digits)"),
    ]


def ex_q18() -> list[Row]:
    """q18: attention's share over 6ND for d = 4,096 at 4K and 32K context (Llama 2 7B
    geometry: MHA, d = 4,096; N without embeddings ≈ 12·L·d²)."""
    model = load_model("llama-2-7b")
    why = ("published n/(12d) for an idealized 12·L·d² model; Llama 2 7B's SwiGLU "
           "(3·d·11,008 = 8.06·d²) makes N 12.06·L·d²; `napkin flops llama-2-7b --context "
           "32768` (past its 4,096 positions, with a warning)")
    share = {ctx: 100 * attention_share(model, ctx).share for ctx in (4096, 32768)}
    return [rounded("attention over 6ND at 4,096 tokens", share[4096], 8, unit="%", note=why),
            Row("attention over 6ND at 32,768 tokens", share[32768], 67, "%", 0.015, why)]


def ex_q21() -> list[Row]:
    rec = recipe("adamw")
    return [Row("bytes per parameter, AdamW mixed", rec.bytes_per_param, 16, "B"),
            Row("7B model", state_memory(int(7e9), 0, rec).bytes / GB, 112, "GB")]


def ex_q22() -> list[Row]:
    return [Row("pipeline bubble (p−1)/(m+p−1), p = 4, m = 8", pipeline_bubble(4, 8), None, ""),
            Row("p = 4, m = 32", pipeline_bubble(4, 32), None, "")]


def ex_q23() -> list[Row]:
    rec = recipe("adamw")
    return [Row("ZeRO-3 per device, 16N/n: 7B on 8", state_memory(int(7e9), 0, rec, 8, 3).bytes
                / GB, None, "GB"),
            Row("ZeRO-1 per device: 7B on 8", state_memory(int(7e9), 0, rec, 8, 1).bytes / GB,
                None, "GB")]


def ex_q24() -> list[Row]:
    """q24: accumulating a micro-batch with 100 labels (mean loss 1.0) and one with 900 (2.0)."""
    trap = loss_normalization([100, 900], [1.0, 2.0])
    return [Row("loss over all labelled tokens", trap.token_mean, None, "nats"),
            Row("mean of micro-batch means (the trap)", trap.mean_of_means, None, "nats"),
            Row("weight of a short-batch token under the trap", trap.token_weight(0), None,
                "×", note="napkin loss-norm --tokens 100,900 --mean-losses 1,2")]


def ex_q27() -> list[Row]:
    return [Row("adapter parameters, 4096 × 4096, r = 8", adapter_params(4096, 4096, 8), 65_536,
                "", note="napkin lora --rank 8 --d-in 4096 --d-out 4096")]


def ex_q28() -> list[Row]:
    """q28: Qwen2.5-7B full fine-tuning, LoRA (r 16, all linears), QLoRA (NF4 base)."""
    base = load_model("qwen2.5-7b")
    adapters = lora_params(with_lora(base, 16))
    rec = recipe("adamw")
    full = state_memory(base.params, 0, rec).bytes
    lo = state_memory(adapters, base.params, rec).bytes
    q = state_memory(adapters, base.params, rec, frozen_format="nf4-dq").bytes
    return [
        Row("full fine-tuning state", full / GB, 122, "GB"),
        rounded("LoRA (BF16 base + adapter state)", lo / GB, 16, unit="GB"),
        rounded("QLoRA (NF4 base + adapter state)", q / GB, 5, unit="GB"),
        Row("NF4 with double quantization", FROZEN_WEIGHT_BYTES["nf4-dq"] * 8, None,
            "bits/param"),
    ]


def ex_q34() -> list[Row]:
    return [rounded("group carries signal, p = 0.1, G = 8", grpo_signal_probability(0.1, 8),
                    0.57, 2)]


def ex_q48() -> list[Row]:
    low, high = confidence_interval(0.5, 164)
    low30, high30 = confidence_interval(0.5, 30)
    return [rounded("95% half-width, n = 164 (p = 0.5)", 100 * (high - low) / 2, 7.7, 1, "pp"),
            rounded("95% half-width, n = 30", 100 * (high30 - low30) / 2, 18, unit="pp")]


def ex_q50() -> list[Row]:
    return [rounded("pass@5, n = 10, c = 2", pass_at_k(10, 2, 5), 0.778, 3)]


def ex_self_4() -> list[Row]:
    return [rounded("DPO loss at step 0", dpo_loss(0.0, 0.0), 0.693, 3)]


def ex_self_5() -> list[Row]:
    return [rounded("GRPO advantage of the right answer of [1, 0, 0, 0]",
                    float(grpo_advantages([1, 0, 0, 0])[0]), 1.73, 2)]


def ex_self_6() -> list[Row]:
    return [Row("LoRA r = 16 on 4096 × 4096", adapter_params(4096, 4096, 16), 131_072, "")]


def ex_self_7() -> list[Row]:
    return [Row("6ND for 1B params, 20B tokens", train_flops_6nd(1e9, 20e9) / 1e20, 1.2,
                "1e20 FLOP")]


def ex_self_12() -> list[Row]:
    return [Row("model A total loss", total_loss_nats(2.0, 250), 500, "nats"),
            Row("model B total loss", total_loss_nats(1.6, 400), 640, "nats",
                note="same text: A predicts it better")]


def ex_self_13() -> list[Row]:
    return [rounded("pass@2, n = 10, c = 3", pass_at_k(10, 3, 2), 0.533, 3)]


EXAMPLES_TRAINING: tuple[Example, ...] = (
    Example("3-3-mem", "Qwen3-8B training state at 18 bytes per parameter",
            "chapter 3, Example 3-3", ex_3_3_mem),
    Example("§3.4.2", "packing: causal pairs and attention FLOPs", "chapter 3, §3.4.2", ex_3_4_2),
    Example("§3.4.3", "from 6ND to itemized training FLOPs", "chapter 3, §3.4.3", ex_3_4_3),
    Example("3-6", "state, tokens and labels per update", "chapter 3, Exercise 3-6", ex_3_6),
    Example("§3.5.2", "answers generated per kept sample", "chapter 3, §3.5.2", ex_3_5_2),
    Example("3-4-rl", "RL cycle FLOPs at keep rates ½ and ¼", "chapter 3, Example 3-4",
            ex_3_4_rl),
    Example("3-7", "extra answers, teacher, weight sync", "chapter 3, Exercise 3-7", ex_3_7),
    Example("§3.6.2", "D/N, 6ND and calendar days of published runs", "chapter 3, §3.6.2",
            ex_3_6_2),
    Example("§3.6.3", "break-even number of tasks", "chapter 3, §3.6.3", ex_3_6_3),
    Example("3-10", "training duration and lifecycle choice", "chapter 3, Exercise 3-10",
            ex_3_10),
    Example("§3.2.2", "price cut, more tokens, higher success", "chapter 3, §3.2.2", ex_3_2_2),
    Example("3-3", "cost per success and escalation", "chapter 3, Exercise 3-3", ex_3_3),
    Example("task-1", "train a 7B model on 4 × RTX 4080 32 GB?", "question bank, task 1",
            ex_task_1),
    Example("q18", "attention on top of 6ND at 4K and 32K", "question bank, q18", ex_q18),
    Example("q21", "bytes per parameter with AdamW", "question bank, q21", ex_q21),
    Example("q22", "pipeline bubble", "question bank, q22", ex_q22),
    Example("q23", "ZeRO stages per device", "question bank, q23", ex_q23),
    Example("q24", "the loss-normalization trap of accumulation", "question bank, q24",
            ex_q24),
    Example("q27", "LoRA parameters", "question bank, q27", ex_q27),
    Example("q28", "full, LoRA and QLoRA memory of Qwen2.5-7B", "question bank, q28", ex_q28),
    Example("q34", "degenerate GRPO groups", "question bank, q34", ex_q34),
    Example("q48", "benchmark confidence intervals", "question bank, q48", ex_q48),
    Example("q50", "unbiased pass@k", "question bank, q50", ex_q50),
    Example("self-4", "DPO loss at step 0", "question bank, self-check 4", ex_self_4),
    Example("self-5", "GRPO advantage", "question bank, self-check 5", ex_self_5),
    Example("self-6", "LoRA r = 16", "question bank, self-check 6", ex_self_6),
    Example("self-7", "6ND", "question bank, self-check 7", ex_self_7),
    Example("self-12", "comparing models across tokenizers", "question bank, self-check 12",
            ex_self_12),
    Example("self-13", "pass@2", "question bank, self-check 13", ex_self_13),
)
