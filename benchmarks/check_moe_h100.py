"""MoE layouts on H100 against public measurements napkin may fit on: TensorRT-LLM's
perf-overview H100 rows (the shipped set ``trtllm-perf-overview``,
:mod:`napkin.validation.perf_overview`: gpt-oss-120b DEP4, gpt-oss-20b TP1, Qwen3-235B-A22B
DEP8, Llama-3.3-70B TP2; ``trtllm-bench`` offline maximum throughput, output tokens/s per GPU)
and SGLang's DeepSeek-V3 large-scale EP blog (``shared/validation/
sglang_deepseek_v3_h100_blog.csv``: prefill-only throughput per node over EP32 and decode-only
throughput per node over EP72).

Each perf-overview row is replayed as a burst of its ``num_requests`` (1,000 where the table
gives none; ``--requests`` for all) requests of its fixed lengths through the ``trtllm`` policy,
in the row's layout (``DEPn`` = attention data parallel n with expert parallelism over n GPUs),
with the batch cap and token budget ``trtllm-bench`` derives when given none
(:mod:`napkin.validation.trtllm_bench`; chunked prefill off, ``kv_cache_free_gpu_mem_fraction``
``--kv-fraction``, 0.95 as the table's notes say of "many cases"), the FP8 checkpoints' KV cache
in ``--kv`` (default FP8: ``trtllm-bench`` gives an FP8 checkpoint whose
``hf_quant_config.json`` names no KV quantization an FP8 KV cache — TensorRT-LLM's benchmarking
guide, "FP8 | null | FP8: set to FP8 via benchmark"; gpt-oss runs ``kv_cache_config.dtype:
auto`` on Hopper, BF16, either way), under the roofline at MFU 1 / MBU 1 (the ceiling), the
roofline at ``--mfu/--mbu``, and the shipped TensorRT-LLM profile; the table prints
napkin/published − 1 for each. Each blog row is one step of the busiest rank at the stated load
(a phase measured with the other assumed unlimited runs at a fixed batch: its throughput is
tokens / step time), in the blog's layout (EP72 with 32 redundant experts).

No profile is fitted on these rows: they are held out (``napkin validate trtllm-perf-overview``
scores the same rows under the shipped profile).

Usage: python benchmarks/check_moe_h100.py [--mfu 0.5] [--mbu 0.8] [--requests N]
       [--kv-fraction 0.95] [--kv fp8|bf16]
"""

import argparse
import csv
from pathlib import Path

from arguments import whole_number
from napkin.accounting.forward import Precision
from napkin.accounting.linear import LinearCost
from napkin.calibration.basis import layout_timer
from napkin.calibration.profile import load_profile
from napkin.catalog import load_accelerator, load_model
from napkin.errors import NapkinError
from napkin.serving.engine_spec import EngineSpec
from napkin.serving.step import StepShape
from napkin.specs.layout import ParallelLayout
from napkin.timing.efficiency import MIN_EFFICIENCY, Efficiency, check_efficiency
from napkin.timing.steps import RooflineTimer
from napkin.validation.fit import fitted_timer
from napkin.validation.perf_overview import perf_overview_rows
from napkin.validation.replay import replay, roofline_timer

SHARED = Path(__file__).resolve().parents[2] / "shared/validation"
def perf_overview(requests: int | None, eff: Efficiency, fraction: float, fp8_kv: str) -> None:
    timers = {"roofline": roofline_timer(), f"mfu {eff.mfu:g}/mbu {eff.mbu:g}":
              roofline_timer(eff), "trtllm profile": fitted_timer(load_profile("trtllm").model)}
    print("perf-overview H100 (output tokens/s per GPU), napkin / published − 1:")
    print(f"{'model':16} {'layout':6} {'isl/osl':>12} {'published':>9}  "
          + "  ".join(f"{k:>18}" for k in timers))
    errors: dict[str, list[float]] = {k: [] for k in timers}
    for m in perf_overview_rows(kv=fp8_kv, kv_fraction=fraction, requests=requests):
        gpus = m.tensor_parallel * m.attention_data_parallel
        assert m.output_tokens_per_s is not None and m.launch is not None
        want = m.output_tokens_per_s / gpus
        cells = []
        for name, timer in timers.items():
            try:
                got = replay(m, timer).output_tokens_per_s / gpus
            except NapkinError as e:
                cells.append(f"{'refused':>18}")
                print(f"  ({m.source}: {e})")
                continue
            errors[name].append(got / want - 1)
            cells.append(f"{got:>9,.0f} ({got / want - 1:+6.1%})")
        layout = (f"DEP{m.attention_data_parallel}" if m.attention_data_parallel > 1
                  else f"TP{m.tensor_parallel}")
        launch = m.launch
        print(f"{m.model:16} {layout:6} {f'{m.input_tokens}/{m.output_tokens}':>12} "
              f"{want:>9,.0f}  " + "  ".join(cells)
              + f"  (batch {launch.max_num_seqs}, {launch.max_num_batched_tokens} tokens)")
    for name, e in errors.items():
        if e:
            e.sort(key=abs)
            print(f"  {name}: median |error| {abs(e[len(e) // 2]):.1%} over {len(e)} rows")


def sglang_blog(path: Path, eff: Efficiency) -> None:
    """The blog's prefill-only and decode-only rows, one step each at the stated load per GPU:
    prefill 16,384 tokens a GPU (the blog's profile table, stated for 4,096-token prompts and
    assumed for 1K and 2K) over EP32 (4 nodes); decode 256 (or 128) sequences a GPU at the
    stated context over EP72 with 32 redundant experts (288 slots, 4 a GPU), as the blog ran
    it, each GPU timed by the roofline (at MFU = MBU = 1 and at ``--mfu/--mbu``) and by the
    shipped SGLang profile (fitted on dense models). Throughput per node = 8 GPUs × tokens a
    GPU / step time. The perfect-EPLB prefill row
    is the TBO configuration with random (balanced) expert choice, napkin's uniform routing;
    the simulated-MTP decode row (twice the batch, half the KV, dummy attention kernels) is
    not a decode napkin can run, and is listed, not compared."""
    m, acc = load_model("deepseek-v3"), load_accelerator("h100-sxm")
    p = Precision.of("fp8", "bf16")
    cost = LinearCost.of(m, p)
    for row in csv.DictReader(path.open()):
        phase = row["phase"]
        if phase not in ("prefill", "decode") or not row["gpus"]:
            continue
        gpus, want = int(row["gpus"]), float(row["value"])
        if "simulated MTP" in row["parallelism"]:
            print(f"SGLang DeepSeek-V3 {phase} ({row['parallelism']}): {want:,.0f} tok/s per "
                  "node, not compared")
            continue
        tbo = "TBO" in row["parallelism"] or "perfect EPLB" in row["parallelism"]
        layout = ParallelLayout(1, gpus, gpus, two_batch_overlap=tbo,
                                redundant_experts=32 if gpus == 72 else 0)
        if phase == "prefill":
            isl = int(row["isl"])
            prompts = 16384 // isl * gpus
            shape, tokens, per_gpu = StepShape(0, 0, [(0, isl, 1)] * prompts), prompts * isl, \
                16384
        else:
            per_gpu, ctx = int(row["batch"].split()[0]), int(row["kv_len"])
            seqs = per_gpu * gpus
            shape, tokens = StepShape(seqs, seqs * ctx, []), seqs
        devices = {"roofline": RooflineTimer.of(m, acc, "fp8", Efficiency()),
                   f"mfu {eff.mfu:g}/mbu {eff.mbu:g}": RooflineTimer.of(m, acc, "fp8", eff),
                   "sglang profile": fitted_timer(load_profile("sglang").model)(
                       m, acc, p, EngineSpec(num_blocks=1, backend="sglang"))}
        for label, device in devices.items():
            timer = layout_timer(m, p, layout, device, acc.allreduce_bytes_per_s, 10e-6,
                                 engine="sglang")
            step = timer.step_s(cost.parts(shape), tokens, phase == "prefill")
            got = per_gpu * 8 / step
            print(f"SGLang DeepSeek-V3 {phase} {layout.label()} ({row['isl'] or row['kv_len']}),"
                  f" {label}: step {step * 1e3:.1f} ms, {got:,.0f} vs {want:,.0f} tok/s per "
                  f"node ({got / want - 1:+.1%})")


def share(text: str) -> float:
    """An MFU or MBU for argparse: a number in [0.001, 1] (a bad one is one usage line naming
    the option, not a traceback)."""
    try:
        value = float(text)
        check_efficiency(value, "share")
    except (ValueError, NapkinError):
        raise argparse.ArgumentTypeError(f"must be a number in [{MIN_EFFICIENCY:g}, 1], "
                                         f"got {text!r}") from None
    return value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mfu", type=share, default=0.5)
    ap.add_argument("--mbu", type=share, default=0.8)
    ap.add_argument("--requests", type=whole_number, default=None,
                    help="requests per perf-overview row (default: the row's, or 1,000)")
    ap.add_argument("--kv-fraction", type=share, default=0.95,
                    help="trtllm-bench's kv_cache_free_gpu_mem_fraction (default 0.95)")
    ap.add_argument("--kv", choices=("fp8", "bf16"), default="fp8",
                    help="KV-cache format of the FP8 checkpoints' runs (default fp8)")
    args = ap.parse_args()
    eff = Efficiency(args.mfu, args.mbu)
    perf_overview(args.requests, eff, args.kv_fraction, args.kv)
    sglang_blog(SHARED / "sglang_deepseek_v3_h100_blog.csv", eff)


if __name__ == "__main__":
    main()
