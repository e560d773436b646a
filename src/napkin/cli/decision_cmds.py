"""``napkin decision`` (prefill-only decision request vs generation) and ``napkin ced``."""

from typing import Annotated

import typer

from napkin.cli.common import (
    Format,
    FormatOpt,
    GpuOpt,
    KvOpt,
    MbuOpt,
    MfuOpt,
    ModelArg,
    WeightsOpt,
    accelerator,
    deployment,
    emit,
)
from napkin.errors import require


def decision(
    ref: ModelArg,
    prompt: Annotated[int, typer.Option("--prompt", help="Input tokens P (state + questions).")]
    = 1929,
    questions: Annotated[int, typer.Option("--questions", help="Read-out positions Q.")] = 8,
    gen: Annotated[int, typer.Option("--gen", help="Tokens the generating LLM writes.")] = 64,
    gpu: GpuOpt = "h100-sxm",
    weights: WeightsOpt = "bf16",
    kv: KvOpt = "bf16",
    mfu: MfuOpt = 0.4,
    mbu: MbuOpt = 0.5,
    usd_per_gpu_hour: Annotated[float, typer.Option("--usd-per-gpu-hour")] = 2.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """One P-token forward reading out Q answers vs prefill + G generated tokens: latency, GPU
    time, $ per million input tokens (§3.2.4; defaults are the chapter's)."""
    from napkin.catalog import load_model
    from napkin.inference.decision import decision_vs_generation, usd_per_million
    from napkin.report.econ_views import table_doc
    from napkin.units import MS, TFLOP

    require(gpu is not None, "gpu: give an accelerator id")
    dep = deployment(load_model(ref), accelerator(gpu, None, None, None), weights, kv, False,
                     mfu, mbu, 0.0)
    c = decision_vs_generation(dep, prompt, questions, gen, usd_per_gpu_hour)
    g = c.generation
    gen_usd = usd_per_million(g.e2e_s, prompt, usd_per_gpu_hour)
    rows = [
        ["decision forward", f"{c.decision.flops / TFLOP:,.2f} TFLOPs",
         f"{c.decision_time.time_s / MS:,.1f} ms",
         f"${c.decision_usd_per_million_input_tokens:.4f}"],
        [f"prefill + {gen} tokens", f"{(g.prefill.flops + g.decode_flops) / TFLOP:,.2f} TFLOPs",
         f"{g.e2e_s / MS:,.1f} ms (TPOT {g.tpot_s / MS:,.2f} ms)",
         f"${gen_usd:.4f} (one sequence alone)"],
    ]
    emit(table_doc("Decision request vs generation", "one request",
                   ["path", "work", "latency", "$ per 1M input tokens"], rows,
                   {"comparison": c, "generation_usd_per_million_input_tokens": gen_usd,
                    "latency_ratio": c.latency_ratio},
                   {"model": ref, "prompt": prompt, "questions": questions, "gen": gen,
                    "gpu": gpu},
                   {"mfu": mfu, "mbu": mbu, "weights": weights, "usd_per_gpu_hour":
                    usd_per_gpu_hour},
                   [f"generation is {c.latency_ratio:.1f}× the decision latency; batched decode "
                    "shares the GPU, so its GPU time per request is far below its latency",
                    "escalation: napkin cost escalation --decision-cost … --llm-cost …"]), fmt)


def ced(
    prompt: Annotated[int, typer.Option("--prompt", help="Prompt tokens P.")] = 8192,
    encoder_layers: Annotated[int, typer.Option("--encoder-layers")] = 20,
    decoder_layers: Annotated[int, typer.Option("--decoder-layers")] = 20,
    replay: Annotated[int, typer.Option("--replay", help="Prompt tokens replayed through "
                                                         "the decoder.")] = 128,
    fmt: FormatOpt = Format.table,
) -> None:
    """Expert-layer passes of a prefill: (E + D)·P vs CED's E·P + D·min(P, replay)."""
    from napkin.inference.ced import expert_layer_passes
    from napkin.report.econ_views import table_doc

    require(min(encoder_layers, decoder_layers, replay) >= 0, "layers, replay: must be >= 0")
    p = expert_layer_passes(prompt, encoder_layers, decoder_layers, replay)
    emit(table_doc("CED expert-layer passes", f"P = {prompt:,}", ["path", "passes"],
                   [["all layers (E + D)·P", f"{p.full:,}"],
                    ["CED E·P + D·min(P, replay)", f"{p.ced:,}"],
                    ["CED / full", f"{p.ced_frac:.1%}"]],
                   {"passes": p}, {"prompt": prompt, "encoder_layers": encoder_layers,
                                   "decoder_layers": decoder_layers, "replay": replay}), fmt)
