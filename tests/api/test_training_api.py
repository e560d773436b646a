"""The public API of ``napkin train | rl``: the CLI's JSON, the chapter's figures through the
typed values, errors naming the field."""

import json
import math

import pytest

from napkin.api.training import rl, train
from napkin.errors import NapkinError


def test_train_matches_cli_and_chapter_figures(cli):
    """§3.4.3: Qwen3-8B on one 8,192-token sequence, 431.368 TFLOPs per micro-batch (143.789
    forward + 287.579 backward), 59.381 of them QKᵀ and AV."""
    r = train("qwen3-8b", seq=8192)
    _, out, _ = cli("train", "qwen3-8b", "--seq", "8192", "--format", "json")
    assert r.data == json.loads(out)
    f = r.value.plan.flops
    assert round(f.forward.flops / 1e12, 3) == 143.789
    assert round(f.backward.flops / 1e12, 3) == 287.579
    assert round(f.micro_batch_flops / 1e12, 3) == 431.368
    assert round(f.attention_flops / 1e12, 3) == 59.381
    assert r.value.run is None


def test_train_sharded_state_and_packed_documents(cli):
    """18 B/param (FP32 gradients) sharded over 8 ZeRO-3 ranks: 8,190,735,360 × 18 / 8 bytes;
    packed documents 7,168 + 1,024 make one 8,192-token sequence."""
    r = train("qwen3-8b", docs=[7168, 1024], optimizer="adamw-fp32-grads", zero=3, devices=8,
              recompute="selective", freeze=["embed"])
    _, out, _ = cli("train", "qwen3-8b", "--docs", "7168,1024", "--optimizer",
                    "adamw-fp32-grads", "--zero", "3", "--devices", "8", "--recompute",
                    "selective", "--freeze", "embed", "--format", "json")
    assert r.data == json.loads(out)
    plan = r.value.plan
    assert plan.flops.shape.sequence_tokens == 8192
    assert plan.tokens_per_update == 8 * 8192
    assert r.data["inputs"]["frozen"] == ["embed"]
    full = train("qwen3-8b", seq=4096, optimizer="adamw-fp32-grads", zero=3, devices=8)
    assert full.value.plan.fit.state.bytes == pytest.approx(8_190_735_360 * 18 / 8)


def test_train_whole_run(cli):
    """8 ranks × 4 micro-batches × 4,096 tokens = 131,072 tokens per update; 1e9 tokens take
    ⌈7,629.39⌉ = 7,630 updates; GPU-hours = wall hours × 8; $ at 2.5 per GPU-hour."""
    kw = {"gpu": "a100-80gb-sxm", "devices": 8, "accumulation": 4}
    r = train("qwen2.5-7b", **kw, tokens=1e9, usd_per_gpu_hour=2.5)
    _, out, _ = cli("train", "qwen2.5-7b", "--gpu", "a100-80gb-sxm", "--devices", "8",
                    "--accumulation", "4", "--tokens", "1e9", "--usd-per-gpu-hour", "2.5",
                    "--format", "json")
    assert r.data == json.loads(out)
    run = r.value.run
    assert run.updates == math.ceil(1e9 / (8 * 4 * 4096)) == 7630
    assert run.train_s == pytest.approx(7630 * r.value.plan.update_s)
    # Llama 3's failures a GPU-hour (1.974e-5) on 8 GPUs, each losing 15 minutes
    assert run.gpu_hours == pytest.approx(run.train_s * 8 / 3600 / (1 - 8 * 1.974e-5 * 0.25),
                                          rel=1e-4)
    assert run.usd == pytest.approx(run.gpu_hours * 2.5)


def test_rl_matches_cli_and_example_3_4(cli):
    """Example 3-4: keeping 16 at ½ generates ⌈16 / 0.5⌉ = 32 answers, 2,181.559 TFLOPs."""
    r = rl("qwen3-8b", prompt_len=1024, gen_len=256, keep=16, keep_rate=0.5)
    _, out, _ = cli("rl", "qwen3-8b", "--prompt-len", "1024", "--gen-len", "256", "--keep",
                    "16", "--keep-rate", "0.5", "--format", "json")
    assert r.data == json.loads(out)
    cycle = r.value["cycle"]
    assert cycle.generated == 32 and cycle.kept == 16
    assert round(cycle.total_flops / 1e12, 3) == 2181.559
    # GRPO holds the trained policy (16 B/param, AdamW) and a frozen reference (BF16, 2 B)
    policy, reference = r.value["models_held"]
    assert (policy.role, reference.role) == ("policy", "reference")
    assert policy.memory.bytes == 16 * policy.params
    assert reference.memory.bytes == 2 * reference.params
    assert r.value["timing"] is None


def test_rl_timed_cycle(cli):
    """Colocated: cycle = rollout + reads + update + sync; $ = GPUs × cycle hours × price."""
    kw = {"prompt_len": 64, "gen_len": 16, "keep": 4, "gpu": "h100-sxm", "count": 2,
          "calibration": "roofline", "usd_per_gpu_hour": 3.0}
    r = rl("qwen3-0.6b", **kw)
    _, out, _ = cli("rl", "qwen3-0.6b", "--prompt-len", "64", "--gen-len", "16", "--keep", "4",
                    "--gpu", "h100-sxm", "--count", "2", "--calibration", "roofline",
                    "--usd-per-gpu-hour", "3", "--format", "json")
    assert r.data == json.loads(out)
    t = r.value["timing"]
    assert t.cycle_s == pytest.approx(t.rollout_s + t.read_s + t.update_s + t.sync_s)
    assert t.usd == pytest.approx(2 * t.cycle_s / 3600 * 3.0)
    # reads and the update at FLOPs / (2 × 989.4 TFLOP/s × 0.4)
    assert t.update_s == pytest.approx(r.value["cycle"].update_flops / (2 * 989.4e12 * 0.4))


@pytest.mark.parametrize(("call", "field"), [
    (lambda: train("qwen3-8b", seq=999_999), "seq"),
    (lambda: train("qwen3-8b", docs=[]), "seq"),
    (lambda: train("qwen3-8b", optimizer="lion"), "optimizer"),
    (lambda: train("qwen3-8b", tp=0), "tp"),
    (lambda: train("qwen3-8b", gpus_per_node=0), "gpus-per-node"),
    (lambda: train("qwen3-8b", cpu_mem_gbs=50.0), "cpu-mem-gbs"),
    (lambda: train("qwen3-8b", usd_per_gpu_hour=2.0), "usd-per-gpu-hour"),
    (lambda: rl("qwen3-8b", keep_rate=1.5), "keep-rate"),
    (lambda: rl("qwen3-8b", separate=True), "gpu"),
    (lambda: rl("qwen3-8b", gpu="h100-sxm", count=0), "count"),
    (lambda: rl("qwen3-8b", rollout_tp=65), "rollout-tp"),
])
def test_errors_name_the_field(call, field):
    with pytest.raises(NapkinError, match=f"^{field}:"):
        call()
