"""The commands that reproduce each worked example with the user's own inputs.

Every example of the catalog is also a set of ``napkin`` command lines: change an input on the
command line and the same formulas answer the new question. ``tests/examples/
test_example_commands.py`` runs every line with ``--format json`` and checks that each row's
computed value appears in their output (at the row's unit scale), so no row is reproduced only
by the stored example; rows whose value the commands do not print are listed in
:data:`DERIVED` with the arithmetic that gets them from printed figures.
"""

COMMANDS: dict[str, tuple[str, ...]] = {
    "3-1-ex": (
        "napkin call qwen3-8b --new 1024 --gen 1024 --gpu h100-sxm",
        "napkin call qwen3-8b --new 1024 --gen 128 --batch 8 --gpu h100-sxm",
    ),
    "3-1": (
        "napkin serve demand examples/chapter-3-1-uniform.workload.yaml --window-s 120",
        "napkin serve demand examples/chapter-3-1-shifted.workload.yaml",
        "napkin decode qwen3-8b --gpu rtx-pro-6000 --batch 64 --context 2742",
        "napkin serve fluid examples/chapter-3-1-shifted.workload.yaml --gpu rtx-pro-6000 "
        "--count 2",
    ),
    "§3.2.4-ced": ("napkin ced --prompt 8192",),
    "§3.2.4-decision": (
        "napkin decision qwen3-8b --prompt 1929 --questions 8 --gen 64 --mfu 0.4 --mbu 0.5 "
        "--usd-per-gpu-hour 2 --decode-batch 64 --gen-range 64,512 --request-usd 0.000081 "
        "--usd-per-million-input 0.042",
        "napkin cost escalation --decision-cost 0.000081 --llm-cost 0.013880",
    ),
    "task-2": (
        "napkin decode qwen3-8b --gpu rtx-4080 --gpu-mem-gb 32 --batch 1,8,16,32 "
        "--context 4096 --read-embedding",
        "napkin decode qwen3-8b --gpu rtx-4080 --gpu-mem-gb 32 --batch 1 --context 0 "
        "--read-embedding",
        "napkin decode qwen3-8b --gpu rtx-4080 --gpu-mem-gb 32 --batch 1 --context 0 "
        "--read-embedding --weights q4_k_m",
        "napkin flops --params 8.19e9",
    ),
    "task-3": (
        "napkin capacity llama-3.1-70b --gpu rtx-4080 --gpu-mem-gb 32 --count 4 "
        "--context 32768 --avg-context 4096 --reserve-gb 2 --weights int4-g128",
        "napkin capacity llama-3.1-70b --gpu rtx-4080 --gpu-mem-gb 32 --count 4 "
        "--context 32768 --reserve-gb 2 --weights int4-g128 --kv-dtype fp8",
    ),
    "task-5": (
        "napkin moe qwen3-30b-a3b --gpu rtx-4080 --weights q4_k_m --read-embedding "
        "--batch 1,4,16,64",
        "napkin decode qwen3-32b --gpu rtx-4080 --weights q4_k_m --read-embedding --batch 1 "
        "--context 0",
        "napkin flops qwen3-30b-a3b",
        "napkin flops qwen3-32b",
    ),
    "q13": ("napkin model llama-3-8b", "napkin capacity llama-3.1-8b --gpu h100-sxm "
            "--context 131072"),
    "q15": ("napkin model deepseek-v3",),
    "q39": ("napkin speculative --alpha 0.8 --k 4",),
    "q40": ("napkin decode llama-3-8b --gpu h100-sxm --weights int4-g128",),
    "self-1": ("napkin model llama-3.1-8b",),
    "self-2": ("napkin decode qwen3-8b --gpu rtx-4080 --gpu-bw-gbs 717 --weights int8 "
               "--context 0",),
    "3-2": (
        "napkin serve fluid examples/exercise-3-2-burst.workload.yaml --capacity-steps-s 5592",
        "napkin serve fluid examples/exercise-3-2-burst.workload.yaml --capacity-steps-s 8388",
        "napkin serve little --rate-per-s 2 --wait-s 10 --state-gib 1",
        "napkin serve little --rate-per-s 2 --wait-s 30 --state-gib 1",
    ),
    "§3.1.2": (
        "napkin serve metrics examples/requests-4.csv --percentiles 95",
        "napkin serve metrics examples/requests-480.csv --percentiles 95",
        "napkin serve little --rate-per-s 2 --wait-s 10 --state-gib 1",
    ),
    "sim-3-1": ("napkin serve simulate examples/chapter-3-1-uniform.yaml "
                "examples/chapter-3-1-shifted.yaml",),
    "mlperf-mixtral": ("napkin serve simulate examples/mlperf-mixtral-h100.yaml",),
    "§3.2.1": (
        "napkin context edit --context 2000 --edit append:100",
        "napkin context edit --context 2000 --edit replace:501:1:1",
        "napkin context rounds qwen3-8b --rounds 233:0,1443:1392,1542:1436,2079:1652",
    ),
    "3-2-amdahl": ("napkin agent examples/agent-code-fix-reasoning.yaml --speedup round1=2",),
    "§3.2.4": ("napkin agent examples/agent-dag.yaml",),
    "§3.2.4-reasoning": ("napkin agent examples/agent-code-fix-no-reasoning.yaml",
                         "napkin agent examples/agent-code-fix-reasoning.yaml"),
    "3-4": (
        "napkin agent examples/agent-dag.yaml",
        "napkin agent examples/agent-code-fix-reasoning.yaml --speedup round1=4",
        "napkin agent examples/agent-code-fix-reasoning.yaml --speedup kind:tool=2",
    ),
    "q46": ("napkin context growth --system 1000 --step 300 --steps 10",),
    "§3.3.1": (
        "napkin media vision --image 640x640",
        "napkin media vision --image 640x640 --image 640x640 --image 640x640 "
        "--image 640x640 --text-tokens 400",
        "napkin model qwen3-vl-4b",
    ),
    "§3.3.2": ("napkin media diffusion --size 1024x1024 --steps 50", "napkin media audio"),
    "§3.3.3": ("napkin media jitter --buffer-ms 40,60", "napkin media interrupt"),
    "3-5": ("napkin media vision --image 1280x1280", "napkin media jitter --buffer-ms 40,60",
            "napkin media drain --buffered-s 0.3 --arrival-rate 0.9"),
    "3-3-mem": ("napkin train qwen3-8b --optimizer adamw-fp32-grads --gpu h200",),
    "§3.4.2": ("napkin train qwen3-8b --seq 8192 --docs 4096,4096",
               "napkin train qwen3-8b --seq 8192 --docs 7168,1024"),
    "§3.4.3": ("napkin train qwen3-8b --seq 8192",
               "napkin train qwen3-8b --seq 8192 --labels 4096 --head labelled"),
    "3-6": (
        "napkin train qwen3-8b --optimizer adamw-fp32-grads",
        "napkin train qwen3-8b --optimizer adamw",
        "napkin train qwen3-8b --seq 4096 --micro-batch 2 --accumulation 8 --labels 1024",
        "napkin train qwen3-8b --seq 4096 --micro-batch 2 --accumulation 8 --labels 1024 "
        "--head labelled",
    ),
    "§3.5.2": ("napkin rl qwen3-8b --keep 16 --keep-rate 0.5",
               "napkin rl qwen3-8b --keep 16 --keep-rate 0.25"),
    "3-4-rl": ("napkin rl qwen3-8b --prompt-len 1024 --gen-len 256 --keep 16 --generate 32 "
               "--compare-generate 64",),
    "3-7": ("napkin rl qwen3-8b --keep 16 --generate 32",
            "napkin rl qwen3-8b --keep 16 --generate 64",
            "napkin rl qwen3-8b --keep 16 --generate 48 --teacher qwen3-8b --replicas 4"),
    "§3.6.2": (
        "napkin flops --params 6.7e9 --tokens 1e12",
        "napkin flops --params 7e9 --tokens 2e12",
        "napkin flops --params 8e9 --tokens 15e12",
        "napkin flops --params 7e9 --tokens 18e12",
        "napkin flops --params 8e9 --tokens 36e12",
        "napkin gpu-hours 1022362 --gpu a100-80gb-sxm --devices 2048",
        "napkin gpu-hours 1022362 --gpu a100-80gb-sxm --devices 1024",
        "napkin gpu-hours 2664000 --gpu h800 --devices 2048",
        "napkin gpu-hours 30840000 --gpu h100-sxm --devices 16384",
        "napkin gpu-hours 1 --gpu h100-sxm --as a100-80gb-sxm",
        "napkin flops deepseek-v4-flash --tokens 32e12",
        "napkin flops deepseek-v4-pro --tokens 33e12",
    ),
    "§3.6.3": ("napkin cost breakeven --extra-upfront 360000000 --saving 0.72 --unit gpu-s",),
    "3-10": ("napkin gpu-hours 1022362 --gpu a100-80gb-sxm --devices 2048",
             "napkin gpu-hours 1022362 --gpu a100-80gb-sxm --devices 1024",
             "napkin cost breakeven --extra-upfront 100000 --saving 0.0002 --unit gpu-h "
             "--tasks 2e8,1e9"),
    "§3.2.2": ("napkin cost price --price-ratio 0.1 --tokens-ratio 20 --success-old 0.5 "
               "--success-new 0.8",),
    "3-3": ("napkin cost success --cost 1,2 --success 0.5,0.8",
            "napkin cost success --cost 1,1.5 --success 0.5,0.9",
            "napkin cost escalation --decision-cost 0.000081 --llm-cost 0.013880"),
    "task-1": (
        "napkin train llama-2-7b --seq 4096 --gpu rtx-4080 --gpu-mem-gb 32 --devices 4 "
        "--zero 3 --activations korthikanti --mfu 0.4 --link-gbs 10 --tokens 140e9",
        "napkin train llama-2-7b --seq 4096 --gpu rtx-4080 --gpu-mem-gb 32 --devices 4 "
        "--zero 3 --activations korthikanti --recompute full",
        "napkin flops --params 7e9",
        "napkin pretrain --gpu rtx-4080 --count 4 --alt 7e9",
    ),
    "q18": ("napkin flops llama-2-7b --context 4096", "napkin flops llama-2-7b --context 32768"),
    "q21": ("napkin train llama-2-7b --optimizer adamw", "napkin pretrain --alt 7e9"),
    "q22": ("napkin train qwen3-8b --pipeline 4 --accumulation 8",
            "napkin train qwen3-8b --pipeline 4 --accumulation 32"),
    "q23": ("napkin pretrain --count 8 --alt 7e9", "napkin train llama-2-7b --devices 8 --zero 3",
            "napkin train llama-2-7b --devices 8 --zero 1"),
    "q24": ("napkin loss-norm --tokens 100,900 --mean-losses 1,2",),
    "q27": ("napkin lora --rank 8 --d-in 4096 --d-out 4096",),
    "q28": ("napkin train qwen2.5-7b", "napkin train qwen2.5-7b --lora-rank 16",
            "napkin train qwen2.5-7b --lora-rank 16 --qlora"),
    "q34": ("napkin eval grpo --p 0.1 --group 8",),
    "q48": ("napkin eval ci --p 0.5 --n 164", "napkin eval ci --p 0.5 --n 30"),
    "q50": ("napkin eval passk --n 10 --c 2 --k 5",),
    "self-4": ("napkin eval dpo --chosen 0 --rejected 0",),
    "self-5": ("napkin eval grpo --rewards 1,0,0,0",),
    "self-6": ("napkin lora --rank 16 --d-in 4096 --d-out 4096",),
    "self-7": ("napkin flops --params 1e9 --tokens 20e9",),
    "self-12": ("napkin eval bpb --loss 2.0 --tokens 250 --bytes 1000",
                "napkin eval bpb --loss 1.6 --tokens 400 --bytes 1000"),
    "self-13": ("napkin eval passk --n 10 --c 3 --k 2",),
    "3-5-fit": ("napkin scaling fit examples/c4-example-3-5.csv --loss-col c4_val_loss "
                "--holdout-min-n 2e9 --fix-E 1.69 --grid full",),
    "3-8": ("napkin scaling optimum --flops 1e21", "napkin scaling optimum --flops 4e21",
            "napkin scaling optimum --flops 9e21"),
    "§3.6.1-life": ("napkin lifecycle --target-loss 2.9 --sizes 1e8,5e8 --law c4",),
    "task-4": ("napkin pretrain --gpu rtx-4080 --count 4 --days 30 --alt 5e8",),
    "q19": ("napkin flops --params 70e9 --tokens 1.4e12",),
}
"""Example id → command lines (``napkin …``, without ``--format``)."""

NOMINAL_7B = ("the question's nominal N = 7e9 in the same formula (`napkin train llama-2-7b` "
              "prints it for Llama 2 7B's 6.74e9 parameters)")

DERIVED: dict[str, dict[str, str]] = {
    "3-1-ex": {"8×128: decode steps, all requests": "8 sequences × 127 decode steps each"},
    "§3.2.4-decision": {
        "GPU time of 64 generated tokens, decode batched at 64":
            "the gen-range row for 64 tokens: GPU time ratio − 1"},
    "task-2": {
        "compute time per token": "2N FLOPs ÷ the GPU's dense peak",
        "memory/compute time ratio": "weight-read time ÷ compute time per token"},
    "task-3": {"MHA (64 KV heads): KV per token":
               "the GQA figure × 64/8 KV heads (or `napkin model` on a config.json with "
               "num_key_value_heads: 64)"},
    "task-5": {"compute advantage of MoE": "dense 6ND ÷ MoE 6ND of the two flops runs"},
    "self-2": {"INT8 8.2 B params: decode ceiling, batch 1": "717 GB/s ÷ 8.2 GB"},
    "mlperf-mixtral": {
        "Offline: output tokens/s, 8 × H100":
            "8 × one GPU's output tokens/s with every sample queued at t = 0",
        "Server: largest rate under p99 TTFT ≤ 2 s, TPOT ≤ 200 ms, 8 × H100":
            "8 × `napkin serve sweep examples/mlperf-mixtral-h100.yaml`'s max sustainable"},
    "3-2-amdahl": {"the other stages": "task time before − round 1's time"},
    "3-1": {"their time on one card": "total decode steps ÷ one card's decode steps/s"},
    "§3.4.3": {"itemized over 6ND": "forward + backward FLOPs ÷ 6ND − 1"},
    "3-4-rl": {"increase": "cycle total at keep rate ¼ ÷ at ½ − 1",
               "extra work of the 32 extra answers": "cycle total at ¼ − at ½"},
    "3-7": {"48 answers: cycle without teacher": "cycle total − the teacher's FLOPs"},
    "§3.4.2": {
        **{f"{d}: causal pairs": "Σ d·(d + 1)/2 over the --docs lengths"
           for d in ("4096 + 4096", "7168 + 1024")},
        **{f"{d}: QKᵀ + AV forward, one layer": "attention FLOPs ÷ 3 (forward of fwd + bwd) "
           "÷ the layers" for d in ("4096 + 4096", "7168 + 1024")}},
    "§3.6.2": {f"DeepSeek {v}: active parameters, input embedding excluded":
               "active parameters − embedding parameters of `napkin model`"
               for v in ("V4-Flash", "V4-Pro")},
    "task-1": {label: NOMINAL_7B for label in (
        "FSDP traffic per card per step", "at 10 GB/s", "compute for 16,384 tokens at 40% MFU",
        "on the 4 cards at 40% MFU")},
    "q23": {"ZeRO-1 per device: 7B on 8": NOMINAL_7B},
    "q28": {"QLoRA (NF4 base + adapter state)":
            "the bank counts every base parameter at NF4; `--qlora` keeps the embedding and "
            "head in BF16 as bitsandbytes does",
            "NF4 with double quantization": "4 bits + an FP8 scale per 64 + an FP32 scale per "
            "256 scales: 4 + 8/64 + 32/(64·256) bits"},
    "3-8": {f"budget ×{k}: {x} grows": f"params (tokens) at {k}·C ÷ at C"
            for k in (4, 9) for x in ("N", "D")},
}
"""Example id → row label → how the row follows from figures its commands print."""
